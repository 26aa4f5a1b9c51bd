/**
 * Steps 4 and 5 of the worker protocol: while work remains, the lease is safe and the invocation
 * has time, commit ONE fenced transaction per unit; then finish (the last unit set DONE) or hand
 * off (release and enqueue a continuation).
 */
import {
  CheckpointMovedError,
  EffectAlreadyExistsError,
  FencedError,
  InvalidInputError,
  LeaseKeeper,
  StaleGenerationError,
  TransactionConflictError,
  TransactionFailedError,
  type Effect,
} from '../protocol/index.js';
import { recordUnitFailure } from './job-writes.js';
import { release, superseded, type Ready } from './job-steps.js';
import { METRIC } from './ports.js';
import { UnitDrafter, type Draft } from './unit-draft.js';
import { publishUnit } from './unit-documents.js';
import type { WorkOutcome } from './worker.js';

/** Where the loop stands: the next unit, the last heartbeat stamped, the next unit's early draft. */
interface Loop {
  cursor: number;
  lastBeat: number;
  ahead: Draft | undefined;
}

export async function runUnits(r: Ready): Promise<WorkOutcome> {
  const drafter = new UnitDrafter(r);
  // -Infinity: the invocation's first unit always stamps the heartbeat (and the last one always does).
  const loop: Loop = { cursor: r.cursor, lastBeat: Number.NEGATIVE_INFINITY, ahead: undefined };
  // Renewal when less than half the lease remains, checked before every unit (nothing in the background).
  const keeper = new LeaseKeeper(r.leases, r.lease, {
    renewBelowMs: r.deps.lease.durationMs / 2,
    beforeRenew: () => r.hooks.at('before-renew', { jobId: r.jobId, owner: r.owner, generation: r.g, unit: loop.cursor }),
  });
  while (loop.cursor < r.totalUnits) {
    const stop = await beforeUnit(r, keeper, loop.cursor);
    if (stop !== undefined) return stop;
    const published = await publishUnit(r, loop.cursor);
    if ('end' in published) return published.end;
    const wall = r.deps.clock.wallNow();
    // `ahead` is only ever drafted for the unit after the one that then committed: this cursor.
    let current: Draft;
    try {
      current = loop.ahead !== undefined && wall - loop.ahead.now <= drafter.maxAgeMs ? loop.ahead : drafter.draft(loop.cursor, wall, loop.lastBeat, published.documents);
    } catch (e) {
      if (isPermanent(e)) return unitFailed(r, loop.cursor, e); // the processor cannot build this unit
      throw e;
    }
    loop.ahead = undefined;
    await r.hooks.at('before-commit', { jobId: r.jobId, owner: r.owner, generation: r.g, unit: loop.cursor });
    const end = await commitUnit(r, drafter, loop, current);
    if (end !== undefined) return end;
    await r.hooks.at('after-commit', { jobId: r.jobId, owner: r.owner, generation: r.g, unit: loop.cursor });
    loop.cursor++;
  }
  // 5. Finished: the last unit set DONE inside its transaction.
  r.t.count(METRIC.jobsCompleted);
  r.t.event('job-done', { jobId: r.jobId, owner: r.owner, generation: r.g, units: r.units });
  await release(r);
  return { kind: 'done', jobId: r.jobId, units: r.units, generation: r.g };
}

/** Before a unit: hand off when the invocation runs short; keep the lease (renew when due); stop when it is not safe. */
async function beforeUnit(r: Ready, keeper: LeaseKeeper, cursor: number): Promise<WorkOutcome | undefined> {
  const { jobId, owner, g } = r;
  if (r.req.remainingTimeMs() < r.safetyMs) {
    await release(r);
    await r.deps.queue.send({ jobId, reason: 'continuation' });
    r.t.event('handed-off', { jobId, owner, generation: g, cursor });
    return { kind: 'handed-off', jobId, units: r.units, generation: g };
  }
  const kept = await keeper.keep();
  if (kept.kind === 'lost') {
    // Refused: someone else holds it now. Nothing to release.
    r.t.count(METRIC.leaseLost);
    r.t.event('lease-lost', { jobId, owner, generation: g, holder: kept.error.holder });
    return { kind: 'superseded', jobId, units: r.units, generation: g, ...(kept.error.holder?.generation === undefined ? {} : { by: kept.error.holder.generation }) };
  }
  if (kept.kind === 'uncertain') {
    r.t.event('lease-uncertain', { jobId, owner, generation: g, error: String(kept.cause) });
    await release(r);
    return { kind: 'uncertain', jobId, units: r.units, generation: g, cause: kept.cause };
  }
  r.lease = kept.lease;
  if (kept.renewed) r.t.event('lease-renewed', { jobId, owner, generation: g });
  if (!keeper.isSafe()) {
    r.t.event('lease-uncertain', { jobId, owner, generation: g, error: 'local deadline passed' });
    await release(r);
    return { kind: 'uncertain', jobId, units: r.units, generation: g, cause: 'deadline' };
  }
  return undefined;
}

/**
 * Commits the current unit: ONE fenced transaction, the next unit drafted while it is in flight.
 * Duplicates of once-only effects are dropped and the rest committed; an ambiguous failure
 * resends the identical request while the lease is safe. Returns an outcome only when the run ends.
 */
async function commitUnit(r: Ready, drafter: UnitDrafter, loop: Loop, current: Draft): Promise<WorkOutcome | undefined> {
  const { now } = current;
  let effects: readonly Effect[] = current.unit.effects;
  let variant = '';
  for (let attempt = 1; ; attempt++) {
    const unit = variant === '' ? current.unit : drafter.unitOf(loop.cursor, now, current.beat, effects, variant);
    try {
      const prepared = unit === current.unit ? current.prepared : undefined;
      const stillSafe = () => r.leases.isSafe(r.lease);
      const committing = r.ops.commitUnit({ doc: r.deps.doc, clock: r.deps.clock }, unit, prepared === undefined ? { now, stillSafe } : { now, prepared, stillSafe });
      // A unit that publishes documents is drafted only once they are put: nothing to draft ahead.
      if (loop.ahead === undefined && loop.cursor + 1 < r.totalUnits && !drafter.publishes) {
        // Handled here so that an early rejection is not reported as unhandled; awaited below.
        committing.catch(() => undefined);
        // Let the request leave first (the SDK sends from its promise chain), then draft the
        // next unit while this one is in flight.
        await new Promise<void>((resolve) => setImmediate(resolve));
        try {
          loop.ahead = drafter.draft(loop.cursor + 1, r.deps.clock.wallNow(), current.beat ? now : loop.lastBeat);
        } catch {
          loop.ahead = undefined; // drafted again at its turn, where any error is thrown in order
        }
      }
      const outcome = await committing;
      if (current.beat) loop.lastBeat = now;
      r.units++;
      r.t.count(METRIC.unitsCommitted);
      r.t.event('unit-committed', { jobId: r.jobId, owner: r.owner, generation: r.g, unit: loop.cursor, status: outcome.status, effects: effects.length });
      return undefined;
    } catch (e) {
      const next = await afterFailedCommit(r, loop.cursor, e, effects, attempt);
      if ('end' in next) return next.end;
      if (next.effects !== effects) {
        effects = next.effects;
        variant = `dedup-${attempt}`;
      }
    }
  }
}

/** What a failed commit means: the run ends, or the unit is sent again (with fewer effects after a duplicate). */
async function afterFailedCommit(
  r: Ready,
  cursor: number,
  e: unknown,
  effects: readonly Effect[],
  attempt: number,
): Promise<{ end: WorkOutcome } | { effects: readonly Effect[] }> {
  const { jobId, owner, g } = r;
  if (e instanceof StaleGenerationError) {
    r.t.count(METRIC.staleGenerationRejected);
    r.t.event('commit-rejected', { jobId, owner, generation: g, unit: cursor, fenceAt: e.current });
    return { end: await superseded(r, e.current, 'commit') };
  }
  if (e instanceof CheckpointMovedError) return { end: await superseded(r, undefined, `checkpoint moved to ${e.actual}`) };
  if (e instanceof EffectAlreadyExistsError) {
    // Once-only effects that exist already were done before (a duplicate): drop them, commit the rest.
    const dup = new Set(e.duplicates.map((d) => `${d.table}\u0000${d.key}`));
    const remaining = effects.filter((x) => !(x.kind === 'once' && dup.has(`${x.table}\u0000${x.item.pk}`)));
    // Only once-only effects can be duplicates; anything else means the store disagrees with us.
    if (remaining.length === effects.length) throw e;
    r.t.count(METRIC.duplicatesSuppressed, dup.size);
    r.t.event('duplicate-suppressed', { jobId, owner, generation: g, unit: cursor, keys: [...dup].map((k) => k.split('\u0000')[1]) });
    return { effects: remaining };
  }
  if (isPermanent(e)) return { end: await unitFailed(r, cursor, e) };
  // Conflicts or throttling outlasted the commit's own retries: nothing was written; try later.
  if (e instanceof TransactionConflictError) {
    r.t.event('commit-contended', { jobId, owner, generation: g, unit: cursor, attempts: e.attempts });
    await release(r);
    return { end: { kind: 'uncertain', jobId, units: r.units, generation: g, cause: e } };
  }
  if (e instanceof FencedError) throw e;
  // Ambiguous (timeout, connection reset): resend the identical request while the lease is safe.
  if (attempt >= (r.deps.commitAttempts ?? 3) || !r.leases.isSafe(r.lease)) {
    r.t.event('commit-uncertain', { jobId, owner, generation: g, unit: cursor, error: String(e) });
    await release(r);
    return { end: { kind: 'uncertain', jobId, units: r.units, generation: g, cause: e } };
  }
  return { effects };
}

/**
 * Errors no resend can fix: the request itself is wrong (DynamoDB's ValidationException, a
 * cancellation for a reason the library does not decode, a unit the library refuses to build).
 * Configuration errors (AccessDenied, a missing table) are NOT among them: fixed, the job goes on.
 */
const isPermanent = (e: unknown): boolean =>
  e instanceof TransactionFailedError || e instanceof InvalidInputError || (e instanceof Error && e.name === 'ValidationException');

/** Counts the failed attempt on the job (fenced); at MAX_UNIT_FAILURES the job ends FAILED with the reason. */
async function unitFailed(r: Ready, cursor: number, e: unknown): Promise<WorkOutcome> {
  const { jobId, owner, g } = r;
  const error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  let recorded: { failures: number; failed: boolean };
  try {
    recorded = await recordUnitFailure(r.deps.doc, { ...r.deps.tables, fencePrefix: r.deps.fenceKeyPrefix }, r.job, g, cursor, error, r.deps.clock);
  } catch (x) {
    if (x instanceof StaleGenerationError) return superseded(r, x.current, 'record-failure');
    throw x;
  }
  r.t.event('unit-failed', { jobId, owner, generation: g, unit: cursor, failures: recorded.failures, error });
  await release(r);
  if (!recorded.failed) return { kind: 'uncertain', jobId, units: r.units, generation: g, cause: e };
  r.t.count(METRIC.jobsFailed);
  r.t.event('job-failed', { jobId, owner, generation: g, reason: error });
  return { kind: 'failed', jobId, reason: `unit ${cursor} failed ${recorded.failures} times: ${error}` };
}
