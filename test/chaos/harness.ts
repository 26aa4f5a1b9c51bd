/**
 * One chaos run: a schedule (schedule.ts) executed against the real handlers on DynamoDB Local,
 * the workers' DynamoDB traffic through a fault proxy (lost and delayed responses), the local
 * runtime's queue and scheduler, then the independent invariant checker on the tables and
 * streams. The variant is the real protocol or a negative control (controls.ts).
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { createDynamo, systemClock, type Dynamo } from '../../lib/protocol/index.js';
import { invoiceJobId, invoiceProcessor } from '../../lib/workloads/invoices.js';
import { ensureTables, readJob, TABLE_ROLES, tableNames } from '../../lib/workflow/index.js';
import { createStarterHandler } from '../../functions/starter-handler.js';
import { createSweeperHandler } from '../../functions/sweeper-handler.js';
import { createWorkerHandler } from '../../functions/worker-handler.js';
import { FaultPlan } from '../../cli/faults.js';
import { checkInvariants, type InvariantReport } from '../../cli/invariants.js';
import { LocalQueue } from '../../cli/queue.js';
import { LocalRuntime } from '../../cli/runtime.js';
import { LocalTelemetry } from '../../cli/telemetry.js';
import { startFaultProxy } from '../support/proxy.js';
import { controlProtocol, type Variant } from './controls.js';
import { forControl, makeSchedule, rng, type Schedule } from './schedule.js';

export interface RunRecord {
  seed: number;
  variant: Variant;
  ok: boolean;
  elapsedMs: number;
  report: InvariantReport;
  schedule: Schedule;
  faultsFired: string[];
  metrics: Record<string, number>;
  history: string[];
  error?: string;
}

const isRenewal = (json: unknown) => {
  const u = (json as { UpdateExpression?: string } | undefined)?.UpdateExpression;
  return typeof u === 'string' && u.startsWith('SET #expiresAt');
};

export async function chaosRun(
  env: { endpoint: string; direct: Dynamo; streams: DynamoDBStreamsClient },
  seed: number,
  variant: Variant,
  opts: { deadlineMs?: number; keepTables?: boolean } = {},
): Promise<RunRecord> {
  const base = makeSchedule(seed);
  const schedule = variant === 'fenced' ? base : forControl(base, variant);
  const clock = systemClock;
  const started = clock.monotonicNow();
  const tables = tableNames(`chaos-${seed}-${variant}-`);
  const history: string[] = [];
  await ensureTables(env.direct.client, tables);
  const proxy = await startFaultProxy(env.endpoint);
  const r = rng(seed ^ 0x5bd1e995);
  if (schedule.dropCommitP > 0) proxy.drop({ target: 'TransactWriteItems', when: () => r() < schedule.dropCommitP, times: Infinity });
  if (schedule.renewDelayP > 0) proxy.delay({ target: 'UpdateItem', when: (q) => isRenewal(q.json) && r() < schedule.renewDelayP, times: Infinity }, Math.round(schedule.leaseMs * 0.4));
  if (schedule.delayP > 0) proxy.delay({ when: () => r() < schedule.delayP, times: Infinity }, Math.round(schedule.delayMaxMs * r()));
  const viaProxy = createDynamo({ endpoint: proxy.endpoint, maxAttempts: 3, requestTimeoutMs: 5_000 });

  const telemetry = new LocalTelemetry(undefined, (line) => history.push(`${Math.round(clock.monotonicNow() - started)} ${line}`));
  const queue = new LocalQueue({ clock, visibilityTimeoutMs: schedule.leaseMs * 48, maxReceiveCount: 10 });
  let runtime: LocalRuntime | undefined;
  const plan = new FaultPlan(
    schedule.faults,
    clock,
    undefined,
    (owner) => {
      history.push(`${Math.round(clock.monotonicNow() - started)} CRASH ${owner}`);
      runtime?.crash(owner);
    },
    async (jobId, unit) => ((await readJob(env.direct.doc, tables.jobs, jobId))?.cursor ?? 0) > unit,
  );
  const lease = { epoch: 0, durationMs: schedule.leaseMs, mode: { kind: 'wall-clock' as const, maxClockSkewMs: 20 } };
  const deps = { doc: viaProxy.doc, tables, clock, queue, telemetry };
  const protocol = controlProtocol(variant, (point, info) => plan.at(point, info), { doc: viaProxy.doc, leasesTable: tables.leases });
  const worker = createWorkerHandler({ ...deps, processor: invoiceProcessor, lease, hooks: plan, protocol }, { safetyMarginMs: schedule.leaseMs });
  const sweepOnce = createSweeperHandler({ ...deps, lease, staleAfterMs: schedule.leaseMs * 2, sweepIntervalMs: Math.round(schedule.leaseMs / 3) });
  // Overlapping sweeps: the scheduler fires twice at once (EventBridge is at-least-once).
  const sweeper = schedule.overlappingSweeps
    ? async () => (await Promise.all([sweepOnce({}), sweepOnce({})]))[0]!
    : sweepOnce;
  const starter = createStarterHandler({ ...deps, doc: env.direct.doc, unitSize: schedule.unitSize, customers: 0 });
  runtime = new LocalRuntime({
    clock,
    queue,
    worker,
    sweeper,
    concurrency: schedule.workers,
    batchSize: 1,
    invocationTimeoutMs: schedule.leaseMs * 8,
    sweepIntervalMs: Math.round(schedule.leaseMs / 3),
    onError: (e) => history.push(`ERROR ${String(e)}`),
  });

  const jobIds = schedule.jobs.map((j) => invoiceJobId(j.period));
  let error: string | undefined;
  let report: InvariantReport;
  try {
    for (const j of schedule.jobs) await starter({ period: j.period, customers: j.customers, seed: j.seed });
    const timers = schedule.duplicates.map((d) =>
      setTimeout(() => {
        history.push(`${Math.round(clock.monotonicNow() - started)} DUPLICATE ${jobIds[d.job]}`);
        void queue.send({ jobId: jobIds[d.job]!, reason: 'start' });
      }, d.atMs),
    );
    runtime.start();
    // PROGRESS is judged by a stall watchdog, not a stopwatch: the run fails when no job has
    // advanced for `stallMs` (a protocol that stopped making progress), not when a loaded
    // machine makes every round trip slow. A hard cap bounds the run anyway.
    const stallMs = opts.deadlineMs ?? Math.max(15_000, schedule.leaseMs * 60);
    const hardCap = started + stallMs * 8;
    let lastProgress = clock.monotonicNow();
    let lastCursors = '';
    for (;;) {
      const jobs = await Promise.all(jobIds.map((id) => readJob(env.direct.doc, tables.jobs, id)));
      if (jobs.every((j) => j?.status === 'DONE' || j?.status === 'FAILED')) break;
      const cursors = jobs.map((j) => j?.cursor ?? 0).join(',');
      if (cursors !== lastCursors) {
        lastCursors = cursors;
        lastProgress = clock.monotonicNow();
      }
      if (clock.monotonicNow() > lastProgress + stallMs || clock.monotonicNow() > hardCap) {
        history.push(`DEADLINE with jobs ${jobs.map((j) => `${j?.id}:${j?.status}:${j?.cursor}/${j?.totalUnits}`).join(' ')}`);
        break;
      }
      await clock.sleep(50);
    }
    timers.forEach(clearTimeout);
    // Paused workers wake up and try their writes: wait for them before reading back.
    const settle = clock.monotonicNow() + schedule.leaseMs * 40;
    while (plan.activePauses > 0 && clock.monotonicNow() < settle) await clock.sleep(25);
    await clock.sleep(schedule.delayMaxMs + 100);
    await runtime.stop();
  } catch (e) {
    error = String(e);
    await runtime.stop();
  } finally {
    await proxy.close();
    viaProxy.client.destroy();
  }
  report = await checkInvariants({ client: env.direct.client, doc: env.direct.doc, streams: env.streams }, tables);
  if (!opts.keepTables) {
    await Promise.all(TABLE_ROLES.map((role) => env.direct.client.send(new DeleteTableCommand({ TableName: tables[role] })).catch(() => undefined)));
  }
  return {
    seed,
    variant,
    ok: report.ok && error === undefined,
    elapsedMs: Math.round(clock.monotonicNow() - started),
    report,
    schedule,
    faultsFired: plan.fired.map((f) => f.name),
    metrics: Object.fromEntries(telemetry.counts),
    history,
    ...(error === undefined ? {} : { error }),
  };
}
