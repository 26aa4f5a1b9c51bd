/**
 * The worker's steps before its first unit, each over the state the previous one established:
 *
 *   startRun ─> screenMessage ─> acquireLease ─> raiseJobFence ─> readCheckpoint
 *    (Run)                        (Held: lease, generation, fence)   (Ready: input, cursor)
 *
 * and the two ways a holder leaves: release, and superseded (a newer generation owns the job).
 */
import { randomUUID } from 'node:crypto';
import {
  err,
  InvalidInputError,
  LeaseManager,
  StaleGenerationError,
  type Contended,
  type FenceRef,
  type Generation,
  type Lease,
  type Result,
} from '../protocol/index.js';
import { JobNotFoundError } from './errors.js';
import { markFailed } from './job-writes.js';
import { fenceKeyOf, leaseKeyOf, readJob, type Job } from './jobs.js';
import { METRIC, type Telemetry } from './ports.js';
import { fencedProtocol, type ProtocolOps, type WorkerDeps, type WorkerHooks, type WorkOutcome, type WorkRequest } from './worker.js';

/** What every step shares: the request, its owner id and the lease manager for it. */
export interface Run {
  readonly deps: WorkerDeps;
  readonly req: WorkRequest;
  readonly jobId: string;
  readonly owner: string;
  readonly hooks: WorkerHooks;
  readonly ops: ProtocolOps;
  readonly t: Telemetry;
  readonly leases: LeaseManager;
  /** Stop starting units when less invocation time than this remains. */
  readonly safetyMs: number;
}

/** After the grant: the lease (renewed in place), its generation and the job's fence. */
export interface Held extends Run {
  lease: Lease;
  readonly g: Generation;
  readonly fence: FenceRef;
  /** Units this holder committed so far. */
  units: number;
}

/** After the checkpoint read: where the job stands and its parsed input. */
export interface Ready extends Held {
  /** The job as read after the fence raise (its failure count among it). */
  readonly job: Job;
  readonly input: unknown;
  readonly totalUnits: number;
  readonly cursor: number;
}

const noHooks: WorkerHooks = { at: async () => undefined };

export function startRun(deps: WorkerDeps, req: WorkRequest): Run {
  const owner = req.owner ?? `worker-${randomUUID()}`;
  return {
    deps,
    req,
    jobId: req.message.jobId,
    owner,
    hooks: deps.hooks ?? noHooks,
    ops: deps.protocol ?? fencedProtocol,
    t: deps.telemetry,
    leases: new LeaseManager({ doc: deps.doc, table: deps.tables.leases, owner, clock: deps.clock, ...deps.lease }),
    // Never hand off before the first unit: a margin as large as the whole invocation would
    // otherwise hand the job from invocation to invocation forever.
    safetyMs: Math.min(req.safetyMarginMs ?? 10_000, req.remainingTimeMs() / 2),
  };
}

/**
 * Step 0: nothing is written for a job that does not exist or has ended, not even a lease or a
 * fence item (which could never be deleted). The authoritative read comes after the fence
 * raise; this one only filters.
 */
export async function screenMessage(run: Run): Promise<WorkOutcome | undefined> {
  const { jobId } = run;
  const before = await readJob(run.deps.doc, run.deps.tables.jobs, jobId);
  if (before === undefined) {
    run.t.event('job-not-found', { jobId, owner: run.owner });
    return { kind: 'not-found', jobId };
  }
  if (before.status === 'DONE') return { kind: 'done', jobId, units: 0 };
  if (before.status === 'FAILED') return { kind: 'failed', jobId, reason: before.failureReason ?? 'failed' };
  return undefined;
}

/**
 * Step 1: acquire. Held by someone else: a duplicate delivery, acknowledged at once, except for
 * the sweeper's requeue in version-watch mode, where this worker watches the lease itself.
 */
export async function acquireLease(run: Run): Promise<Held | WorkOutcome> {
  const { jobId, owner, t } = run;
  let attempt = await run.leases.tryAcquire(leaseKeyOf(jobId));
  if (!attempt.ok && run.leases.mode.kind === 'version-watch' && run.req.message.reason === 'requeue') {
    attempt = await watchAndClaim(run, attempt.error);
  }
  if (!attempt.ok) {
    t.count(METRIC.leaseBusy);
    t.event('lease-busy', { jobId, owner, holder: attempt.error.holder.owner, holderGeneration: attempt.error.holder.generation });
    return { kind: 'busy', jobId, holder: attempt.error.holder.owner };
  }
  const lease = attempt.value;
  const g = lease.generation;
  t.count(METRIC.leaseAcquired);
  if (lease.takeoverFrom !== undefined) t.count(METRIC.leaseTakeover);
  t.event('lease-acquired', { jobId, owner, generation: g, takeoverFrom: lease.takeoverFrom });
  await run.hooks.at('after-acquire', { jobId, owner, generation: g });
  return { ...run, lease, g, fence: { table: run.deps.tables.fences, resource: fenceKeyOf(jobId, run.deps.fenceKeyPrefix) }, units: 0 };
}

/**
 * Version-watch: the version seen now must stay unchanged for a full lease duration ON THIS
 * WORKER'S monotonic clock (the larger of its own duration and the holder's recorded one, with
 * drift) before the claim. Nothing stands in for this wait: not the sweeper's count of unchanged
 * sweeps (sweeps can run back to back), not another process's observation. Too little invocation
 * time left to wait: busy (the sweeper triggers again).
 */
async function watchAndClaim(run: Run, seen: Contended): Promise<Result<Lease, Contended>> {
  const { jobId, owner } = run;
  if (seen.observation === undefined || seen.retryAfterMs > run.req.remainingTimeMs() - run.safetyMs) {
    run.t.event('lease-watch-skipped', { jobId, owner, waitMs: seen.retryAfterMs, remainingMs: run.req.remainingTimeMs() });
    return err(seen);
  }
  run.t.event('lease-watch', { jobId, owner, version: seen.observation.version, waitMs: seen.retryAfterMs, holder: seen.holder.owner });
  return run.ops.watch(run.leases, leaseKeyOf(jobId), { ...seen, observation: seen.observation }, run.deps.clock);
}

/** Step 2: raise the fence to our generation. A refusal means we are obsolete already. */
export async function raiseJobFence(held: Held): Promise<WorkOutcome | undefined> {
  const { jobId, owner, g } = held;
  try {
    await held.ops.raiseFence({ doc: held.deps.doc, clock: held.deps.clock }, held.fence, g);
  } catch (e) {
    if (!(e instanceof StaleGenerationError)) throw e;
    held.t.count(METRIC.staleGenerationRejected);
    return superseded(held, e.current, 'fence-raise');
  }
  held.t.event('fence-raised', { jobId, owner, generation: g });
  await held.hooks.at('after-fence-raise', { jobId, owner, generation: g });
  return undefined;
}

/** Step 3: the checkpoint, read consistently after the raise, and the input it carries. */
export async function readCheckpoint(held: Held): Promise<Ready | WorkOutcome> {
  const { jobId, owner, g } = held;
  const job = await readJob(held.deps.doc, held.deps.tables.jobs, jobId);
  await held.hooks.at('after-checkpoint-read', { jobId, owner, generation: g });
  if (job === undefined) {
    await release(held);
    return { kind: 'not-found', jobId };
  }
  if (job.status === 'DONE' || job.status === 'FAILED') {
    await release(held);
    return job.status === 'DONE' ? { kind: 'done', jobId, units: 0, generation: g } : { kind: 'failed', jobId, reason: job.failureReason ?? 'failed' };
  }
  // Stored by an older version or by hand: a job with no units would be "done" and never DONE.
  if (job.totalUnits < 1) return failJob(held, 'totalUnits must be >= 1: a job with no units can never be marked DONE');
  let input: unknown;
  try {
    input = held.deps.processor.parseInput(job.input);
  } catch (e) {
    if (!(e instanceof InvalidInputError)) throw e;
    return failJob(held, e.message);
  }
  return Object.assign(held, { job, input, totalUnits: job.totalUnits, cursor: job.cursor });
}

/** Input that can never succeed: the job ends FAILED (a fenced write), out of the sweeper's reach. */
async function failJob(held: Held, reason: string): Promise<WorkOutcome> {
  const { jobId, owner, g } = held;
  try {
    await markFailed(held.deps.doc, { ...held.deps.tables, fencePrefix: held.deps.fenceKeyPrefix }, jobId, g, reason, held.deps.clock);
  } catch (e) {
    if (e instanceof StaleGenerationError) return superseded(held, e.current, 'mark-failed');
    if (e instanceof JobNotFoundError) {
      await release(held);
      return { kind: 'not-found', jobId };
    }
    throw e;
  }
  held.t.count(METRIC.jobsFailed);
  held.t.event('job-failed', { jobId, owner, generation: g, reason });
  await release(held);
  return { kind: 'failed', jobId, reason };
}

/** Gives the lease up; a failed release changes nothing (the lease lapses by itself). */
export async function release(held: Held): Promise<void> {
  const r = await held.ops.release(held.leases, held.lease).catch(() => ({ released: false }));
  held.t.event('lease-released', { jobId: held.jobId, owner: held.owner, generation: held.g, released: r.released });
}

/** A newer generation owns the job: release (a no-op if it took the lease already) and acknowledge. */
export async function superseded(held: Held, by: number | undefined, why: string): Promise<WorkOutcome> {
  held.t.event('superseded', { jobId: held.jobId, owner: held.owner, generation: held.g, by, why });
  await release(held);
  return { kind: 'superseded', jobId: held.jobId, units: held.units, generation: held.g, ...(by === undefined ? {} : { by }) };
}
