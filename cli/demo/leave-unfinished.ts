/**
 * `npm start -- --leave-unfinished`: one job left part way for the ops loop to finish (README,
 * "Ops CLI"). After the checked run, the scheduler's starter starts one more period; one worker
 * runs its job and crashes right after its first commit (before the first unit on a one-unit
 * job), holding its lease; no sweeper and no queue outlive the run to bring it back, as when a
 * laptop is closed mid-run. Nothing left to chance: the crash is a fault at a named point, and
 * nothing else ever drives this job. Outside the invariant check, which has run by then.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { FencedError, systemClock } from '../../lib/protocol/index.js';
import { readJob, type TableNames } from '../../lib/workflow/index.js';
import { invoiceProcessor } from '../../lib/workloads/invoices/invoices.js';
import { invoices } from '../../lib/workloads/invoices/index.js';
import { createStarterHandler } from '../../functions/starter-handler.js';
import { createWorkerHandler } from '../../functions/worker-handler.js';
import { FaultPlan, type Fault } from './faults.js';
import { LocalQueue } from '../local/queue.js';
import { LocalRuntime } from '../local/runtime.js';
import { LocalTelemetry } from '../local/telemetry.js';
import { LEASE_MS, PERIODS, STALL_MS, UNIT_SIZE } from './run.js';

/** The period after the run's last: its job is the one left. */
export const LEFT_PERIOD = '2026-12';
const MAX_SKEW_MS = 50;

/** The job's worker never reached its crash: the job is not left as promised, and the run says so. */
export class LeaveUnfinishedError extends FencedError {
  readonly code = 'LEAVE_UNFINISHED';
}

export interface LeftJob {
  jobId: string;
  status: string;
  cursor: number;
  totalUnits: number;
  /** Why it stopped, for the report. */
  how: string;
}

export async function leaveUnfinished(o: { doc: DynamoDBDocumentClient; tables: TableNames; customers: number; seed: number }): Promise<LeftJob> {
  if (PERIODS.includes(LEFT_PERIOD)) throw new LeaveUnfinishedError(`period ${LEFT_PERIOD} is one of the run's own`);
  const clock = systemClock;
  const telemetry = new LocalTelemetry(undefined);
  const invocationTimeoutMs = LEASE_MS * 8;
  const queue = new LocalQueue({ clock, visibilityTimeoutMs: invocationTimeoutMs * 2, maxReceiveCount: 5 });
  const base = { doc: o.doc, tables: o.tables, clock, queue, telemetry };
  const start = await createStarterHandler({ ...base, workload: invoices, unitSize: UNIT_SIZE, items: o.customers, shards: 1 })({ period: LEFT_PERIOD, customers: o.customers, seed: o.seed + PERIODS.length });
  const totalUnits = (await readJob(o.doc, o.tables.jobs, start.jobId))?.totalUnits ?? 0;
  const fault: Fault =
    totalUnits >= 2
      ? { name: 'crash after the first commit (left for the ops loop)', point: 'after-commit', jobId: start.jobId, unit: 0, action: { kind: 'crash' } }
      : { name: 'crash after fence raise (left for the ops loop)', point: 'after-fence-raise', jobId: start.jobId, action: { kind: 'crash' } };
  let runtime: LocalRuntime | undefined;
  const plan = new FaultPlan([fault], clock, undefined, (owner) => runtime?.crash(owner));
  const lease = { epoch: 0, durationMs: LEASE_MS, mode: { kind: 'wall-clock' as const, maxClockSkewMs: MAX_SKEW_MS } };
  const worker = createWorkerHandler({ ...base, processor: invoiceProcessor, fenceKeyPrefix: invoices.fenceKeyPrefix!, lease, hooks: plan }, { safetyMarginMs: Math.round(LEASE_MS / 2) });
  // No sweeper: with one, the crashed job would be requeued and finished here.
  runtime = new LocalRuntime({ clock, queue, worker, concurrency: 1, batchSize: 1, invocationTimeoutMs, sweepIntervalMs: 60_000 });
  runtime.start();
  const giveUpAt = clock.monotonicNow() + STALL_MS;
  while (plan.fired.length === 0 && clock.monotonicNow() < giveUpAt) await clock.sleep(50);
  await runtime.stop();
  if (plan.fired.length === 0) throw new LeaveUnfinishedError(`the worker of ${start.jobId} did not reach its crash within ${STALL_MS / 1000} s`);
  // The crashed holder's lease lapses before the report is read, so the requeue it prints finishes the job at once.
  await clock.sleep(LEASE_MS + MAX_SKEW_MS);
  const job = await readJob(o.doc, o.tables.jobs, start.jobId);
  return { jobId: start.jobId, status: job?.status ?? 'MISSING', cursor: job?.cursor ?? 0, totalUnits, how: `its worker crashed (${fault.name}); no sweeper or queue outlives this run` };
}
