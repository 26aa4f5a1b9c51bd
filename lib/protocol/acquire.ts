/**
 * Acquiring a lease: ONE conditional UpdateItem that sets the owner, increments the generation
 * and returns it (`ALL_NEW`); on failure `ALL_OLD` tells who holds it and until when, with no
 * extra read. The paths, each a function:
 *
 *   claim condition   wall-clock (expiresAt < now - maxSkew) | version-watch (version unchanged
 *                     for a full duration on our own clock)
 *   grant             the next generation of this epoch
 *   new epoch         the first grant after an unsealed epoch raise (epoch * 2^32 + 1)
 *   contended         what the holder's item tells a contender: when to try again
 */
import { randomUUID } from 'node:crypto';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { untilExpiry } from './backoff.js';
import type { LeaseKey } from './brand.js';
import { conditionFailureItem, fromAttributes, isConditionalCheckFailed, sendLowLevel } from './dynamo.js';
import { EpochBehindError, InvalidInputError, SequenceExhaustedError } from './errors.js';
import { epochCeiling, epochFloor } from './generation.js';
import { LEASE_ATTR as A } from './items.js';
import {
  asLeaseKey,
  holderOf,
  keyOf,
  leaseFrom,
  NO_OWNER,
  takenFrom,
  valuesOf,
  type Contended,
  type Holder,
  type Item,
  type Lease,
  type LeaseContext,
  type Observation,
} from './lease-model.js';
import { err, ok, type Result } from './result.js';

/** When the lease is free to claim: the condition DynamoDB evaluates, and the same judgement on the item it returns. */
interface Claim {
  readonly free: string;
  readonly values: Item;
  isFree(holder: Holder): boolean;
}

/** Free when unowned or expired by our wall clock, allowing for the stated bound on clock offset. */
function wallClockClaim(ctx: LeaseContext, maxClockSkewMs: number): Claim {
  const staleBefore = ctx.clock.wallNow() - maxClockSkewMs;
  return {
    free: 'attribute_not_exists(#owner) OR #expiresAt < :staleBefore',
    values: { ':staleBefore': staleBefore },
    isFree: (h) => h.owner === undefined || (h.expiresAt ?? 0) < staleBefore,
  };
}

/** Free when unowned, or when the observed version has stayed unchanged for the observation's full wait. */
function versionWatchClaim(ctx: LeaseContext, observation: Observation | undefined): Claim {
  const matured = observation !== undefined && ctx.clock.monotonicNow() - observation.at >= observation.waitMs;
  if (!matured) return { free: 'attribute_not_exists(#owner)', values: {}, isFree: (h) => h.owner === undefined };
  return {
    free: 'attribute_not_exists(#owner) OR #version = :observed',
    values: { ':observed': observation.version },
    isFree: (h) => h.owner === undefined || h.version === observation.version,
  };
}

/** One attempt's fixed parts: the version it writes, and its send time and expiry. */
interface Attempt {
  readonly key: LeaseKey;
  readonly claim: Claim;
  readonly version: string;
  readonly sendTime: number;
  readonly expiresAt: number;
}

const NAMES = {
  '#owner': A.owner,
  '#generation': A.generation,
  '#expiresAt': A.expiresAt,
  '#version': A.version,
  '#durationMs': A.durationMs,
  '#takenFrom': A.takenFrom,
};

/**
 * The grant request. `next`: the counter + 1, within this epoch (`seq < 2^32` is part of the
 * condition: an exhausted epoch is refused, never wrapped). `new-epoch`: the epoch's first token,
 * only while the counter is still below the epoch's floor.
 */
async function sendGrant(ctx: LeaseContext, a: Attempt, step: 'next' | 'new-epoch'): Promise<{ lease: Lease } | { holder: Item | undefined }> {
  const floor = epochFloor(ctx.epoch);
  const stepValues: Item = step === 'next' ? { ':one': 1, ':ceiling': epochCeiling(ctx.epoch) } : { ':first': floor + 1 };
  const generationRange = step === 'next' ? 'attribute_not_exists(#generation) OR (#generation >= :floor AND #generation < :ceiling)' : '#generation < :floor';
  const next = step === 'next' ? 'if_not_exists(#generation, :floor) + :one' : ':first';
  try {
    const out = await sendLowLevel(
      ctx.doc,
      new UpdateItemCommand({
        TableName: ctx.table,
        Key: keyOf(ctx, a.key),
        ConditionExpression: `(${a.claim.free}) AND (${generationRange})`,
        UpdateExpression: `SET #takenFrom = if_not_exists(#owner, :none), #owner = :me, #generation = ${next}, #expiresAt = :exp, #version = :v, #durationMs = :d`,
        ExpressionAttributeNames: NAMES,
        ExpressionAttributeValues: valuesOf(ctx, {
          ':me': ctx.owner,
          ':floor': floor,
          ':v': a.version,
          ':d': ctx.rule.durationMs,
          ':none': NO_OWNER,
          ':exp': a.expiresAt,
          ...stepValues,
          ...a.claim.values,
        }),
        // The new generation comes back with the grant; on failure, the holder comes back.
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    const attributes = fromAttributes(ctx.doc, out.Attributes);
    const granted = holderOf(attributes).generation;
    if (granted === undefined) throw new InvalidInputError('table', `${ctx.table} returned no generation`);
    return { lease: leaseFrom(ctx, a.key, granted, a.version, a.sendTime, a.expiresAt, takenFrom(attributes)) };
  } catch (e) {
    if (!isConditionalCheckFailed(e)) throw e;
    return { holder: conditionFailureItem(e) };
  }
}

/**
 * One attempt, one UpdateItem (two only on the first acquisition after an unsealed epoch raise).
 * In version-watch mode pass the previous attempt's `observation` back in: the claim
 * succeeds only once that version has stayed unchanged for a full lease duration.
 */
export async function tryAcquire(ctx: LeaseContext, keyIn: string, opts: { observation?: Observation } = {}): Promise<Result<Lease, Contended>> {
  const key = asLeaseKey(keyIn);
  const claim = ctx.mode.kind === 'wall-clock' ? wallClockClaim(ctx, ctx.mode.maxClockSkewMs) : versionWatchClaim(ctx, opts.observation);
  const attempt: Attempt = {
    key,
    claim,
    version: randomUUID(),
    sendTime: ctx.clock.monotonicNow(),
    expiresAt: ctx.clock.wallNow() + ctx.rule.durationMs,
  };
  const first = await sendGrant(ctx, attempt, 'next');
  if ('lease' in first) return ok(first.lease);
  const own = ownEarlierGrant(ctx, attempt, first.holder);
  if (own !== undefined) return ok(own);
  const holder = holderOf(first.holder);
  if (!claim.isFree(holder)) return err(contended(ctx, key, holder, opts.observation));

  // Free, but the counter is outside this epoch's range. Compared with the ceiling, not with the
  // next epoch's floor: at the highest epoch there is no next epoch to build a floor from.
  const g = holder.generation ?? 0;
  if (g > epochCeiling(ctx.epoch)) throw new EpochBehindError(key, ctx.epoch, g);
  if (g === epochCeiling(ctx.epoch)) throw new SequenceExhaustedError(key, ctx.epoch);
  // g < floor: the epoch was raised but this counter not sealed yet. Start the new epoch.
  const second = await sendGrant(ctx, attempt, 'new-epoch');
  if ('lease' in second) return ok(second.lease);
  const again = ownEarlierGrant(ctx, attempt, second.holder);
  if (again !== undefined) return ok(again);
  // Someone else took it in between: report them as the holder.
  return err(contended(ctx, key, holderOf(second.holder), undefined));
}

/**
 * The SDK retried a request whose first response was lost, and the first one applied: the item
 * carries this attempt's own version and owner. Either grant step can be the one retried.
 */
function ownEarlierGrant(ctx: LeaseContext, a: Attempt, item: Item | undefined): Lease | undefined {
  const holder = holderOf(item);
  if (holder.version !== a.version || holder.owner !== ctx.owner || holder.generation === undefined) return undefined;
  return leaseFrom(ctx, a.key, holder.generation, a.version, a.sendTime, a.expiresAt, takenFrom(item));
}

/** What a contender does next: sleep until the holder's expiry (wall-clock) or until its watch matures. */
export function contended(ctx: LeaseContext, key: LeaseKey, holder: Holder, previous: Observation | undefined): Contended {
  // Spreads a herd's attempts after the expiry. It saves no request (each sleeping contender
  // makes one attempt per lease period whatever the jitter), and every millisecond of it is
  // added to a takeover: keep it small (was min(250, duration/10); bench/takeover.ts).
  const jitterMs = Math.min(100, ctx.rule.durationMs / 20);
  if (ctx.mode.kind === 'wall-clock') {
    const retryAfterMs = untilExpiry(
      holder.expiresAt ?? ctx.clock.wallNow(),
      ctx.clock.wallNow(),
      { maxClockSkewMs: ctx.mode.maxClockSkewMs, jitterMs },
      ctx.random,
    );
    return { key, holder, retryAfterMs };
  }
  // Version-watch: the watch restarts whenever the version moved (the holder renewed).
  const now = ctx.clock.monotonicNow();
  const observation: Observation =
    previous !== undefined && previous.version === holder.version
      ? previous
      : {
          version: holder.version ?? '',
          at: now,
          // A full duration of the holder's lease on our clock, stretched by the drift bound.
          waitMs: Math.max(holder.durationMs ?? 0, ctx.rule.durationMs) * (1 + ctx.rule.maxDrift),
        };
  const retryAfterMs = Math.max(0, observation.at + observation.waitMs - now) + ctx.random() * jitterMs;
  return { key, holder, retryAfterMs, observation };
}
