/**
 * The worker protocol for one job (DESIGN.md, "Worker protocol"):
 *
 *   acquire the job's lease ─> raise the fence ─> consistent read of the checkpoint
 *   ─> loop { build unit ─> ONE fenced transaction ─> renew when the deadline nears }
 *   ─> finished: the last unit sets DONE; release.  Out of time: release, enqueue a continuation.
 *
 * The lease decides who may START; the fence (inside every commit) decides whose writes
 * LAND; operation keys stop the current holder from repeating a once-only effect.
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  CheckpointMovedError,
  commitFencedUnit,
  EffectAlreadyExistsError,
  FencedError,
  InvalidInputError,
  LeaseLostError,
  LeaseManager,
  marshallOptionsOf,
  prepareFencedUnit,
  raiseFence,
  StaleGenerationError,
  type Clock,
  type Effect,
  type FencedUnit,
  type Generation,
  type Lease,
  type LeaseMode,
  type PreparedUnit,
} from '../protocol/index.js';
import { fenceKeyOf, leaseKeyOf, markFailed, readJob, type Job } from './jobs.js';
import { METRIC, type Telemetry, type WorkMessage, type WorkQueue } from './ports.js';
import type { Processor } from './processor.js';
import { JOB_ATTR, type TableNames } from './schema.js';

/** Named points in the protocol where fault injection (local runtime, chaos) may pause or crash. */
export type WorkerPoint =
  | 'after-acquire'
  | 'after-fence-raise'
  | 'after-checkpoint-read'
  | 'before-commit'
  | 'after-commit'
  | 'before-renew';

export interface WorkerHooks {
  /**
   * Awaited at each point. Resolve later to model a pause (GC, page fault, a stalled host);
   * never resolve to model a crash: nothing after it runs, nothing is released.
   */
  at(point: WorkerPoint, info: { jobId: string; owner: string; generation?: Generation; unit?: number }): Promise<void>;
}

/**
 * The protocol's write operations. The defaults are the library's; the seam exists so the
 * chaos harness can run deliberately broken variants (negative controls, test code only) and
 * prove that its independent checker catches them.
 */
export interface ProtocolOps {
  raiseFence: typeof raiseFence;
  commitUnit: typeof commitFencedUnit;
  release: (leases: LeaseManager, lease: Lease) => Promise<{ released: boolean }>;
}

export const fencedProtocol: ProtocolOps = {
  raiseFence,
  commitUnit: commitFencedUnit,
  release: (leases, lease) => leases.release(lease),
};

export interface WorkerDeps {
  doc: DynamoDBDocumentClient;
  tables: TableNames;
  clock: Clock;
  queue: WorkQueue;
  telemetry: Telemetry;
  // The worker never inspects the input type: the processor parses and consumes it.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  processor: Processor<any>;
  lease: { epoch: number; durationMs: number; mode: LeaseMode; maxDrift?: number; marginMs?: number };
  hooks?: WorkerHooks;
  /** Attempts to resend an ambiguous commit (response lost, timeout) before giving up. Default 3. */
  commitAttempts?: number;
  /**
   * How often a running job's `heartbeatAt` is stamped, at most (ms). Default: a quarter of the
   * lease duration; 0 stamps every unit. The heartbeat is the sort key of the sweeper's index, so
   * each stamp moves the job in the index (two index writes, billed): stamping every unit costs
   * more than the fence. The sweeper needs no more: it reads progress from the cursor (its
   * requeue is conditional on cursor AND heartbeat) and acts only on a heartbeat older than
   * `staleAfterMs`, which exceeds the lease duration. The first unit of a run and the last unit
   * always stamp.
   */
  heartbeatEveryMs?: number;
  protocol?: ProtocolOps;
}

export interface WorkRequest {
  message: WorkMessage;
  /** Unique per invocation: the lease owner id. */
  owner?: string;
  /** Time left in this invocation (Lambda's getRemainingTimeInMillis). */
  remainingTimeMs: () => number;
  /** Stop starting units when less than this remains. Default 10 s. */
  safetyMarginMs?: number;
}

export type WorkOutcome =
  /** The job is DONE (by this run or before it). */
  | { kind: 'done'; jobId: string; units: number; generation?: Generation }
  /** A live holder has the lease: a duplicate delivery. Acknowledge and drop. */
  | { kind: 'busy'; jobId: string; holder: string | undefined }
  /** Ran out of invocation time: released and enqueued a continuation. */
  | { kind: 'handed-off'; jobId: string; units: number; generation: Generation }
  /** A newer generation owns the job (fence or lease said so). Acknowledge: it continues. */
  | { kind: 'superseded'; jobId: string; units: number; generation: Generation; by?: number }
  /** Renewal or commit could not be confirmed: stopped protected work. Retry the message. */
  | { kind: 'uncertain'; jobId: string; units: number; generation: Generation; cause: unknown }
  /** Bad input: the job is FAILED with the reason, never retried. */
  | { kind: 'failed'; jobId: string; reason: string }
  | { kind: 'not-found'; jobId: string };

/** Outcomes after which the queue message must be redelivered. */
export const shouldRetry = (o: WorkOutcome): boolean => o.kind === 'uncertain';

const noHooks: WorkerHooks = { at: async () => undefined };

export async function runJob(deps: WorkerDeps, req: WorkRequest): Promise<WorkOutcome> {
  const { message } = req;
  const jobId = message.jobId;
  const owner = req.owner ?? `worker-${randomUUID()}`;
  // Never hand off before the first unit: a margin as large as the whole invocation would
  // otherwise hand the job from invocation to invocation forever.
  const safety = Math.min(req.safetyMarginMs ?? 10_000, req.remainingTimeMs() / 2);
  const hooks = deps.hooks ?? noHooks;
  const ops = deps.protocol ?? fencedProtocol;
  const t = deps.telemetry;
  const leases = new LeaseManager({ doc: deps.doc, table: deps.tables.leases, owner, clock: deps.clock, ...deps.lease });

  // 0. A message for a job that does not exist, or that has ended, writes nothing (not even a
  // lease or a fence item, which could never be deleted). The authoritative read comes after
  // the fence raise; this one only filters.
  const before = await readJob(deps.doc, deps.tables.jobs, jobId);
  if (before === undefined) {
    t.event('job-not-found', { jobId, owner });
    return { kind: 'not-found', jobId };
  }
  if (before.status === 'DONE') return { kind: 'done', jobId, units: 0 };
  if (before.status === 'FAILED') return { kind: 'failed', jobId, reason: before.failureReason ?? 'failed' };

  // 1. Acquire. A version-watch sweeper hands over its matured observation with the message.
  const attempt = await leases.tryAcquire(
    leaseKeyOf(jobId),
    message.observedVersion === undefined
      ? {}
      : { observation: { version: message.observedVersion, at: Number.NEGATIVE_INFINITY, waitMs: 0 } },
  );
  if (!attempt.ok) {
    t.count(METRIC.leaseBusy);
    t.event('lease-busy', { jobId, owner, holder: attempt.error.holder.owner, holderGeneration: attempt.error.holder.generation });
    return { kind: 'busy', jobId, holder: attempt.error.holder.owner };
  }
  let lease = attempt.value;
  const g = lease.generation;
  t.count(METRIC.leaseAcquired);
  if (lease.takeoverFrom !== undefined) t.count(METRIC.leaseTakeover);
  t.event('lease-acquired', { jobId, owner, generation: g, takeoverFrom: lease.takeoverFrom });
  await hooks.at('after-acquire', { jobId, owner, generation: g });

  let units = 0;
  const release = async () => {
    const r = await ops.release(leases, lease).catch(() => ({ released: false }));
    t.event('lease-released', { jobId, owner, generation: g, released: r.released });
  };
  const superseded = async (by: number | undefined, why: string): Promise<WorkOutcome> => {
    t.event('superseded', { jobId, owner, generation: g, by, why });
    await release();
    return { kind: 'superseded', jobId, units, generation: g, ...(by === undefined ? {} : { by }) };
  };

  // 2. Raise the fence BEFORE reading: from here on no lower generation can commit.
  const fence = { table: deps.tables.fences, resource: fenceKeyOf(jobId) };
  try {
    await ops.raiseFence({ doc: deps.doc, clock: deps.clock }, fence, g);
  } catch (e) {
    if (e instanceof StaleGenerationError) {
      t.count(METRIC.staleGenerationRejected);
      return superseded(e.current, 'fence-raise');
    }
    throw e;
  }
  t.event('fence-raised', { jobId, owner, generation: g });
  await hooks.at('after-fence-raise', { jobId, owner, generation: g });

  // 3. The checkpoint, read consistently after the raise.
  const job: Job | undefined = await readJob(deps.doc, deps.tables.jobs, jobId);
  await hooks.at('after-checkpoint-read', { jobId, owner, generation: g });
  if (job === undefined) {
    await release();
    return { kind: 'not-found', jobId };
  }
  if (job.status === 'DONE' || job.status === 'FAILED') {
    await release();
    return job.status === 'DONE' ? { kind: 'done', jobId, units: 0, generation: g } : { kind: 'failed', jobId, reason: job.failureReason ?? 'failed' };
  }

  let input: unknown;
  try {
    input = deps.processor.parseInput(job.input);
  } catch (e) {
    if (!(e instanceof InvalidInputError)) throw e;
    try {
      await markFailed(deps.doc, deps.tables, jobId, g, e.message, deps.clock);
    } catch (stale) {
      if (stale instanceof StaleGenerationError) return superseded(undefined, 'mark-failed');
      throw stale;
    }
    t.count(METRIC.jobsFailed);
    t.event('job-failed', { jobId, owner, generation: g, reason: e.message });
    await release();
    return { kind: 'failed', jobId, reason: e.message };
  }
  const totalUnits = job.totalUnits;
  let cursor = job.cursor;
  const renewWhenBelow = deps.lease.durationMs / 2;
  const heartbeatEveryMs = deps.heartbeatEveryMs ?? deps.lease.durationMs / 4;
  // -Infinity: the invocation's first unit always stamps the heartbeat (and the last one always does, below).
  let lastBeat = Number.NEGATIVE_INFINITY;
  const marshalling = marshallOptionsOf(deps.doc);

  // A unit, built and marshalled (prepareFencedUnit): pure CPU that needs nothing from the previous
  // unit's outcome, so unit n+1 is drafted while unit n is in flight. A draft carries the `now` it
  // was built with (heartbeat, item stamps); one older than `draftMaxAgeMs` when its turn comes
  // (a pause, a slow renewal in between) is drafted again.
  interface Draft {
    now: number;
    beat: boolean;
    unit: FencedUnit;
    prepared?: PreparedUnit;
  }
  const draftMaxAgeMs = Math.min(1_000, deps.lease.durationMs / 10);
  const unitOf = (at: number, now: number, beat: boolean, effects: readonly Effect[], variant: string): FencedUnit => {
    const last = at + 1 === totalUnits;
    return {
      fence,
      generation: g,
      checkpoint: {
        table: deps.tables.jobs,
        key: jobId,
        expected: at,
        next: at + 1,
        set: { ...(beat ? { [JOB_ATTR.heartbeatAt]: now } : {}), [JOB_ATTR.status]: last ? 'DONE' : 'RUNNING' },
        ...(last ? { remove: [JOB_ATTR.unfinished] } : {}),
      },
      effects,
      token: { job: jobId, unit: at, variant },
    };
  };
  const draft = (at: number, now: number, lastBeatBefore: number): Draft => {
    const beat = at + 1 === totalUnits || now - lastBeatBefore >= heartbeatEveryMs;
    const effects: Effect[] = deps.processor.unitEffects(input, { jobId, generation: g, unit: at, tables: deps.tables, now });
    const unit = unitOf(at, now, beat, effects, '');
    let prepared: PreparedUnit | undefined;
    try {
      prepared = prepareFencedUnit(unit, now, marshalling);
    } catch {
      // Invalid: commitUnit builds it again and throws the typed error, at the unit's turn.
    }
    return { now, beat, unit, ...(prepared === undefined ? {} : { prepared }) };
  };
  let ahead: Draft | undefined;

  // 4. Units.
  while (cursor < totalUnits) {
    if (req.remainingTimeMs() < safety) {
      await release();
      await deps.queue.send({ jobId, reason: 'continuation' });
      t.event('handed-off', { jobId, owner, generation: g, cursor });
      return { kind: 'handed-off', jobId, units, generation: g };
    }
    if (lease.deadline - deps.clock.monotonicNow() < renewWhenBelow) {
      await hooks.at('before-renew', { jobId, owner, generation: g, unit: cursor });
      try {
        lease = await leases.renew(lease);
        t.event('lease-renewed', { jobId, owner, generation: g });
      } catch (e) {
        if (e instanceof LeaseLostError) {
          t.count(METRIC.leaseLost);
          t.event('lease-lost', { jobId, owner, generation: g, holder: e.holder });
          return { kind: 'superseded', jobId, units, generation: g, ...(e.holder?.generation === undefined ? {} : { by: e.holder.generation }) };
        }
        // Timeout or network error: the renewal is uncertain. Stop issuing protected work.
        t.event('lease-uncertain', { jobId, owner, generation: g, error: String(e) });
        await release();
        return { kind: 'uncertain', jobId, units, generation: g, cause: e };
      }
    }
    if (!leases.isSafe(lease)) {
      t.event('lease-uncertain', { jobId, owner, generation: g, error: 'local deadline passed' });
      await release();
      return { kind: 'uncertain', jobId, units, generation: g, cause: 'deadline' };
    }

    const wall = deps.clock.wallNow();
    // `ahead` is only ever drafted for the unit after the one that then committed: this cursor.
    const current = ahead !== undefined && wall - ahead.now <= draftMaxAgeMs ? ahead : draft(cursor, wall, lastBeat);
    ahead = undefined;
    const now = current.now;
    let effects: readonly Effect[] = current.unit.effects;
    let variant = '';
    await hooks.at('before-commit', { jobId, owner, generation: g, unit: cursor });

    let committed = false;
    for (let attempt = 1; !committed; attempt++) {
      const unit = variant === '' ? current.unit : unitOf(cursor, now, current.beat, effects, variant);
      try {
        const prepared = unit === current.unit ? current.prepared : undefined;
        const committing = ops.commitUnit({ doc: deps.doc, clock: deps.clock }, unit, prepared === undefined ? { now } : { now, prepared });
        if (ahead === undefined && cursor + 1 < totalUnits) {
          // Handled here so that an early rejection is not reported as unhandled; awaited below.
          committing.catch(() => undefined);
          // Let the request leave first (the SDK sends from its promise chain), then draft the
          // next unit while this one is in flight.
          await new Promise<void>((resolve) => setImmediate(resolve));
          try {
            ahead = draft(cursor + 1, deps.clock.wallNow(), current.beat ? now : lastBeat);
          } catch {
            ahead = undefined; // drafted again at its turn, where any error is thrown in order
          }
        }
        const outcome = await committing;
        if (current.beat) lastBeat = now;
        committed = true;
        units++;
        t.count(METRIC.unitsCommitted);
        t.event('unit-committed', { jobId, owner, generation: g, unit: cursor, status: outcome.status, effects: effects.length });
      } catch (e) {
        if (e instanceof StaleGenerationError) {
          t.count(METRIC.staleGenerationRejected);
          t.event('commit-rejected', { jobId, owner, generation: g, unit: cursor, fenceAt: e.current });
          return superseded(e.current, 'commit');
        }
        if (e instanceof CheckpointMovedError) return superseded(undefined, `checkpoint moved to ${e.actual}`);
        if (e instanceof EffectAlreadyExistsError) {
          // Once-only effects that exist already were done before (a duplicate): drop them, commit the rest.
          const dup = new Set(e.duplicates.map((d) => `${d.table}\u0000${d.key}`));
          const remaining = effects.filter((x) => !(x.kind === 'once' && dup.has(`${x.table}\u0000${x.item.pk}`)));
          // Only once-only effects can be duplicates; anything else means the store disagrees with us.
          if (remaining.length === effects.length) throw e;
          effects = remaining;
          variant = `dedup-${attempt}`;
          t.count(METRIC.duplicatesSuppressed, dup.size);
          t.event('duplicate-suppressed', { jobId, owner, generation: g, unit: cursor, keys: [...dup].map((k) => k.split('\u0000')[1]) });
          continue;
        }
        if (e instanceof FencedError) throw e;
        // Ambiguous (timeout, connection reset): resend the identical request while the lease is safe.
        if (attempt >= (deps.commitAttempts ?? 3) || !leases.isSafe(lease)) {
          t.event('commit-uncertain', { jobId, owner, generation: g, unit: cursor, error: String(e) });
          await release();
          return { kind: 'uncertain', jobId, units, generation: g, cause: e };
        }
      }
    }
    await hooks.at('after-commit', { jobId, owner, generation: g, unit: cursor });
    cursor++;
  }

  // 5. Finished: the last unit set DONE inside its transaction.
  t.count(METRIC.jobsCompleted);
  t.event('job-done', { jobId, owner, generation: g, units });
  await release();
  return { kind: 'done', jobId, units, generation: g };
}
