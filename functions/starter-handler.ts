/**
 * The starter Lambda: on the workload's schedule, creates its run idempotently (one run id per
 * schedule slot, the workload's `start.runOf`: its record and its `shards` shard jobs,
 * lib/workflow/start-run.ts) and enqueues every unfinished shard. A repeated or overlapping
 * invocation finds the run and its shards and at most re-enqueues them, which the worker treats
 * as duplicates.
 */
import { describeValue, InvalidInputError, type Clock } from '../lib/protocol/index.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startRun, type TableNames, type Telemetry, type WorkQueue, type Workload } from '../lib/workflow/index.js';
import { parseStartPayload } from './messages.js';

export interface StarterDeps {
  doc: DynamoDBDocumentClient;
  tables: TableNames;
  clock: Clock;
  queue: WorkQueue;
  telemetry: Telemetry;
  workload: Workload<any>;
  unitSize: number;
  /** Items per run when the payload names none (RUN_ITEMS). */
  items: number;
  /** Shard jobs per run (1: one job per run). */
  shards?: number;
}

export interface StartResult {
  runId: string;
  /** The first shard's job (the run's only job when it has one shard). */
  jobId: string;
  /** Whether this call created the run record. */
  created: boolean;
  /** Whether any shard was enqueued. */
  enqueued: boolean;
  /** The first shard's status. */
  status: string;
  jobs: { jobId: string; created: boolean; enqueued: boolean; status: string }[];
}

/** Accepts EventBridge Scheduler's input (our JSON payload as the event) or an EventBridge ScheduledEvent. */
export type StarterHandler = (event?: unknown) => Promise<StartResult>;

/**
 * `items`: the run's size in any workload's payload (`npm run cli -- start --items 50`), where
 * RUN_ITEMS would apply; the workload's own field (customers, tenants...) still wins when given.
 */
function runItemsOf(v: unknown, max: number): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > max) throw new InvalidInputError('payload.items', `must be an integer in [0, ${max}], got ${describeValue(v)}`);
  return v;
}

export function createStarterHandler(deps: StarterDeps): StarterHandler {
  return async (event) => {
    // EventBridge Scheduler passes our JSON input as the event; EventBridge rules wrap it in `detail`.
    const e = (typeof event === 'object' && event !== null ? event : {}) as Record<string, unknown>;
    const isScheduledEvent = 'detail-type' in e || 'detail' in e;
    const raw = isScheduledEvent ? (e.detail ?? {}) : e;
    const { time: _time, items: sized, ...rest } = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    const payload = parseStartPayload(rest, deps.workload.start.payloadFields);
    const items = runItemsOf(sized, deps.workload.start.maxItems) ?? deps.items;
    const time = typeof e.time === 'string' ? new Date(e.time) : new Date(deps.clock.wallNow());
    const start = deps.workload.start.runOf({ payload, time, items, unitSize: deps.unitSize });
    const { run, created, shards } = await startRun(deps.doc, deps.tables.jobs, deps.workload, start, deps.shards ?? 1, deps.clock);
    const jobs = await Promise.all(
      shards.map(async ({ job, created: jobCreated }) => {
        const unfinished = job.status === 'PENDING' || job.status === 'RUNNING';
        if (unfinished) await deps.queue.send({ jobId: job.id, reason: 'start' });
        deps.telemetry.event('job-started', { jobId: job.id, runId: run.id, created: jobCreated, status: job.status, enqueued: unfinished });
        return { jobId: job.id, created: jobCreated, enqueued: unfinished, status: job.status };
      }),
    );
    const first = jobs[0]!;
    return { runId: run.id, jobId: first.jobId, created, enqueued: jobs.some((j) => j.enqueued), status: first.status, jobs };
  };
}
