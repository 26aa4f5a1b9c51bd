/**
 * Takeover latency: a holder crashes right after writing its lease (the worst moment: the whole
 * lease is still ahead), and a successor, already waiting, takes over with the library's own
 * steps: LeaseManager.acquire (sleeps until the expiry it learned, plus the skew bound and
 * jitter, instead of polling), raise the fence, read the checkpoint, commit the first unit
 * (commitFencedUnit). Measured from the crash to that commit's response. Trials run on separate
 * jobs, started `spacingMs` apart: they wait side by side, but their takeovers do not queue behind
 * each other on DynamoDB Local (which executes transactions one at a time). One warm-up trial on
 * the fresh tables is not counted. Expected ratio to the lease duration:
 * 1 + (skew bound + jitter (≤ min(100 ms, duration/20), lib/protocol/lease.ts) + 4 requests) / duration.
 */
import { randomUUID } from 'node:crypto';
import { commitFencedUnit, LeaseManager, raiseFence, systemClock, type LeaseMode } from '../lib/protocol/index.js';
import { leaseKeyOf, readJob } from '../lib/workflow/index.js';
import type { BenchEnv } from './env.js';
import { max, median, sleep } from './stats.js';
import { benchFence, createBenchJob, fencedBenchUnit } from './workload.js';
import { BenchError } from './errors.js';

export interface Takeover {
  trials: number;
  leaseMs: number;
  maxClockSkewMs: number;
  /** Crash → successor's first fenced commit, ms: median and max over the trials. */
  medianMs: number;
  maxMs: number;
  medianRatio: number;
  maxRatio: number;
}

export async function measureTakeover(
  env: BenchEnv,
  opts: { trials: number; leaseMs: number; maxClockSkewMs: number; spacingMs: number; onProgress?: (label: string) => void },
): Promise<Takeover> {
  const tables = await env.tables('takeover');
  const dynamo = env.dynamo();
  const mode: LeaseMode = { kind: 'wall-clock', maxClockSkewMs: opts.maxClockSkewMs };
  const manager = (owner: string) =>
    new LeaseManager({ doc: dynamo.doc, table: tables.leases, owner, epoch: 0, durationMs: opts.leaseMs, mode, clock: systemClock });
  let done = 0;
  const trial = async (i: number): Promise<number> => {
    const jobId = `takeover-${i}-${randomUUID().slice(0, 8)}`;
    const input = { tag: jobId, units: 10 };
    await createBenchJob(dynamo.doc, tables, jobId, input);
    await sleep(Math.max(0, i) * opts.spacingMs);
    const holder = await manager(`holder-${i}`).tryAcquire(leaseKeyOf(jobId));
    if (!holder.ok) throw new BenchError(`takeover trial ${i}: holder could not acquire`);
    const crashedAt = performance.now(); // the holder stops here: no renewal, no release, ever
    const successor = manager(`successor-${i}`);
    const lease = await successor.acquire(leaseKeyOf(jobId), { timeoutMs: opts.leaseMs * 3 });
    await raiseFence({ doc: dynamo.doc }, benchFence(tables, jobId), lease.generation);
    const job = await readJob(dynamo.doc, tables.jobs, jobId);
    if (job === undefined) throw new BenchError(`takeover trial ${i}: job vanished`);
    const now = systemClock.wallNow();
    await commitFencedUnit({ doc: dynamo.doc }, fencedBenchUnit(tables, input, jobId, lease.generation, job.cursor, now), { now });
    const ms = performance.now() - crashedAt;
    if (i >= 0) opts.onProgress?.(`takeover trial ${++done}/${opts.trials}`); // the warm-up trial is not a tick
    return ms;
  };
  try {
    await trial(-1); // warm-up: first writes to fresh tables
    const takeoverMs = await Promise.all(Array.from({ length: opts.trials }, (_, i) => trial(i)));
    return {
      trials: opts.trials,
      leaseMs: opts.leaseMs,
      maxClockSkewMs: opts.maxClockSkewMs,
      medianMs: median(takeoverMs),
      maxMs: max(takeoverMs),
      medianRatio: median(takeoverMs) / opts.leaseMs,
      maxRatio: max(takeoverMs) / opts.leaseMs,
    };
  } finally {
    dynamo.client.destroy();
  }
}
