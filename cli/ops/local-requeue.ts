/**
 * `requeue <jobId> --endpoint URL --table-prefix P` without a work queue: no queue outlives
 * `npm start` locally, so the requeue is claimed as on AWS (the conditional update of the job's
 * heartbeat and requeue count) and then this process is the queue and the worker: the same
 * worker handler Lambda runs, fed by the local runtime's queue, until the job is done or someone
 * else turns out to hold it.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { readEpoch, systemClock } from '../../lib/protocol/index.js';
import { readJob, type TableNames, type Workload } from '../../lib/workflow/index.js';
import { createWorkerHandler } from '../../functions/worker-handler.js';
import { LocalQueue } from '../local/queue.js';
import { LEASE_MS, LocalRuntime, STALL_MS } from '../local/runtime.js';
import { LocalTelemetry } from '../local/telemetry.js';


export interface LocalRequeueResult {
  status: string;
  cursor: number;
  totalUnits: number;
  invocations: number;
  /** The worker found a live holder: the job goes on there, not here. */
  busy: boolean;
}

/** The local telemetry, also noting whether the worker met a live holder. */
class Watched extends LocalTelemetry {
  busy = false;
  override event(name: string, fields: Record<string, unknown>): void {
    if (name === 'lease-busy') this.busy = true;
    super.event(name, fields);
  }
}

export async function runJobHere(doc: DynamoDBDocumentClient, tables: TableNames, jobId: string, workload: Workload<any>): Promise<LocalRequeueResult> {
  const clock = systemClock;
  const telemetry = new Watched(undefined);
  const invocationTimeoutMs = LEASE_MS * 8;
  const queue = new LocalQueue({ clock, visibilityTimeoutMs: invocationTimeoutMs * 2, maxReceiveCount: 5 });
  // The workers issue tokens in the recorded epoch: after a seal, an older one is refused.
  const epoch = (await readEpoch(doc, tables.leases)) ?? 0;
  const worker = createWorkerHandler(
    {
      doc,
      tables,
      clock,
      queue,
      telemetry,
      processor: workload.processor,
      ...(workload.fenceKeyPrefix === undefined ? {} : { fenceKeyPrefix: workload.fenceKeyPrefix }),
      lease: { epoch, durationMs: LEASE_MS, mode: { kind: 'wall-clock', maxClockSkewMs: 50 } },
    },
    { safetyMarginMs: Math.round(LEASE_MS / 2) },
  );
  const runtime = new LocalRuntime({ clock, queue, worker, concurrency: 1, batchSize: 1, invocationTimeoutMs, sweepIntervalMs: 60_000 });
  await queue.send({ jobId, reason: 'requeue' });
  runtime.start();
  let last = '';
  let movedAt = clock.monotonicNow();
  let job = await readJob(doc, tables.jobs, jobId);
  try {
    // Until the job ends, or every message is handled (done, busy, superseded), or nothing moves.
    while (job !== undefined && job.status !== 'DONE' && job.status !== 'FAILED' && queue.depth > 0) {
      const now = `${job.cursor}/${job.status}/${queue.depth}`;
      if (now !== last) [last, movedAt] = [now, clock.monotonicNow()];
      if (clock.monotonicNow() - movedAt > STALL_MS) break;
      await clock.sleep(100);
      job = await readJob(doc, tables.jobs, jobId);
    }
  } finally {
    await runtime.stop();
  }
  job = await readJob(doc, tables.jobs, jobId);
  return { status: job?.status ?? 'MISSING', cursor: job?.cursor ?? 0, totalUnits: job?.totalUnits ?? 0, invocations: runtime.invocations, busy: telemetry.busy };
}
