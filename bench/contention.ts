/**
 * Contention: N contenders want one key (think: N deliveries of one job's message) for `periods`
 * lease periods. Each runs the library's waiting acquire (LeaseManager.acquire: a failed attempt
 * returns the holder's expiry from ALL_OLD, and the contender sleeps until then plus the skew
 * bound and jitter instead of polling), holds the lease for half a period of work, releases and
 * leaves. Counts every DynamoDB request (SDK middleware) per contender per lease period, and the
 * waits from wanting the lease to holding it; a wait still open when the run ends counts up to
 * the end.
 */
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { AcquireTimeoutError, LeaseManager } from '../lib/protocol/index.js';
import type { BenchEnv } from './env.js';
import { countRequests } from '../test/support/request-counter.js';
import { max, median, sleep } from './stats.js';
import { BenchError } from './errors.js';

export interface Contention {
  contenders: number;
  periods: number;
  leaseMs: number;
  maxClockSkewMs: number;
  requests: number;
  requestsPerContenderPerLease: number;
  /** Leases granted: one per contender served (each contender acquires at most once). */
  acquisitions: number;
  /** Longest wait, ms (open waits at the end included). */
  maxWaitMs: number;
  /** Longest wait of a contender that did get the lease, ms. */
  maxServedWaitMs: number;
  medianWaitMs: number;
  /** Contenders that never held the lease during the run. */
  neverServed: number;
  /** True if two holders ever overlapped (must be false). */
  overlap: boolean;
}

export async function measureContention(
  env: BenchEnv,
  opts: { contenders: number; periods: number; leaseMs: number; maxClockSkewMs: number; onProgress?: (label: string) => void },
): Promise<Contention> {
  const tables = await env.tables('contention');
  const dynamo = env.dynamo();
  const counter = countRequests(dynamo.client);
  const key = `contended-${randomUUID().slice(0, 8)}`;
  const runMs = opts.periods * opts.leaseMs;
  const stop = new AbortController();
  setMaxListeners(opts.contenders * 2, stop.signal); // every sleeping contender listens for the end of the run
  const waits: number[] = [];
  const openWaits: number[] = [];
  let holders = 0;
  let overlap = false;
  const start = performance.now();
  const contender = async (i: number) => {
    const leases = new LeaseManager({
      doc: dynamo.doc,
      table: tables.leases,
      owner: `contender-${i}`,
      epoch: 0,
      durationMs: opts.leaseMs,
      mode: { kind: 'wall-clock', maxClockSkewMs: opts.maxClockSkewMs },
    });
    const wanted = performance.now();
    let lease;
    try {
      lease = await leases.acquire(key, { signal: stop.signal });
    } catch (e) {
      if (!(e instanceof AcquireTimeoutError)) throw e;
      openWaits.push(performance.now() - wanted); // still waiting when the run ended
      return;
    }
    waits.push(performance.now() - wanted); // each contender acquires at most once: one wait per lease served
    if (++holders > 1) overlap = true;
    await sleep(opts.leaseMs / 2);
    holders--;
    await leases.release(lease);
  };
  const timer = setTimeout(() => stop.abort(new BenchError('run over')), runMs);
  const progress = setInterval(() => opts.onProgress?.(`contention ${Math.min(100, Math.round(((performance.now() - start) / runMs) * 100))}%`), 1_000);
  try {
    await Promise.all(Array.from({ length: opts.contenders }, (_, i) => contender(i)));
  } finally {
    clearTimeout(timer);
    clearInterval(progress);
    dynamo.client.destroy();
  }
  const periods = (performance.now() - start) / opts.leaseMs;
  const requests = counter.total();
  return {
    contenders: opts.contenders,
    periods: opts.periods,
    leaseMs: opts.leaseMs,
    maxClockSkewMs: opts.maxClockSkewMs,
    requests,
    requestsPerContenderPerLease: requests / opts.contenders / periods,
    acquisitions: waits.length,
    maxWaitMs: max([...waits, ...openWaits]),
    maxServedWaitMs: max(waits),
    medianWaitMs: median([...waits, ...openWaits]),
    neverServed: opts.contenders - waits.length,
    overlap,
  };
}
