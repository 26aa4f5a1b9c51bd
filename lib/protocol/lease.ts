/**
 * The lease: who may start work on a key, until when, and with which generation (the fencing
 * token). A lease lets a successor start; it does NOT stop an obsolete holder (fence.ts does).
 *
 * Item (Leases table, lib/schema.ts): pk, owner, generation, expiresAt, version, durationMs.
 * `generation` is never removed: release keeps it, and nothing here can delete a lease item,
 * so a counter can never restart below a token a resource has already seen.
 */
import { randomUUID } from 'node:crypto';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Brand } from './brand.js';
import { defaultBackoff, fullJitter, untilExpiry, type BackoffPolicy, type Random } from './backoff.js';
import { leaseDeadline, systemClock, validateDeadlineRule, type Clock, type DeadlineRule } from './clock.js';
import { conditionFailureItem, fromAttributes, isConditionalCheckFailed, marshallOptionsOf, sendLowLevel, toAttributes } from './dynamo.js';
import type { marshallOptions } from '@aws-sdk/util-dynamodb';
import {
  AcquireTimeoutError,
  EpochBehindError,
  InvalidInputError,
  LeaseLostError,
  SequenceExhaustedError,
} from './errors.js';
import { assertEpoch, epochCeiling, epochFloor, type Generation } from './generation.js';
import { err, ok, type Result } from './result.js';
import { LEASE_ATTR as A } from '../workflow/schema.js';

export type LeaseKey = Brand<string, 'LeaseKey'>;
export type OwnerId = Brand<string, 'OwnerId'>;

export function asLeaseKey(key: string): LeaseKey {
  if (typeof key !== 'string' || key.length === 0 || key.length > 1024) {
    throw new InvalidInputError('key', 'must be a non-empty string of at most 1024 characters');
  }
  return key as LeaseKey;
}

export function asOwnerId(owner: string): OwnerId {
  if (typeof owner !== 'string' || owner.length === 0 || owner.length > 256) {
    throw new InvalidInputError('owner', 'must be a non-empty string of at most 256 characters');
  }
  return owner as OwnerId;
}

/**
 * How a contender decides that a holder is gone.
 * - wall-clock: compare the holder's `expiresAt` with our wall clock; correct only while the
 *   offset between any two hosts' clocks stays under `maxClockSkewMs`.
 * - version-watch: observe the item's `version`, wait a full lease duration on our own
 *   monotonic clock, and claim only if the version is unchanged. Compares no clocks.
 */
export type LeaseMode = { kind: 'wall-clock'; maxClockSkewMs: number } | { kind: 'version-watch' };

export interface LeaseConfig {
  doc: DynamoDBDocumentClient;
  table: string;
  owner: string;
  /** The issuing epoch (configuration, raised after any restore: see epochs.ts). */
  epoch: number;
  durationMs: number;
  mode: LeaseMode;
  /** Bound on clock rate error, e.g. 0.01. Default 0.01. */
  maxDrift?: number;
  /** Time reserved to stop protected work before the deadline. Default min(1000, duration/10). */
  marginMs?: number;
  clock?: Clock;
  random?: Random;
  backoff?: BackoffPolicy;
}

export interface Lease {
  readonly key: LeaseKey;
  readonly owner: OwnerId;
  readonly generation: Generation;
  /** The version this holder last wrote; rotates on every acquire, renew and release. */
  readonly version: string;
  /** Local deadline on the monotonic clock: stop issuing protected work at this instant. */
  readonly deadline: number;
  /** The holder's wall-clock view of the expiry, as written to the store. */
  readonly expiresAt: number;
  readonly durationMs: number;
  /** Set when this grant replaced an owner that had not released (its lease had expired): a takeover. */
  readonly takeoverFrom?: string;
}

/** What a contender learned about the current holder (from ALL_OLD, no extra read). */
export interface Holder {
  owner?: string;
  generation?: number;
  expiresAt?: number;
  version?: string;
  durationMs?: number;
}

/** A version-watch observation: the version seen and when (our monotonic clock). */
export interface Observation {
  version: string;
  at: number;
  waitMs: number;
}

/** The expected outcome "someone else holds it": a value, not an exception. */
export interface Contended {
  readonly key: LeaseKey;
  readonly holder: Holder;
  /** How long to wait before the next attempt can succeed (expiry, or the watch maturing). */
  readonly retryAfterMs: number;
  readonly observation?: Observation;
}

type Item = Record<string, unknown>;

const NO_OWNER = '-';
function takenFrom(item: Item | undefined): string | undefined {
  const v = item?.[A.takenFrom];
  return typeof v === 'string' && v !== NO_OWNER ? v : undefined;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function holderOf(item: Item | undefined): Holder {
  if (item === undefined) return {};
  const h: Holder = {};
  const owner = str(item[A.owner]);
  const generation = num(item[A.generation]);
  const expiresAt = num(item[A.expiresAt]);
  const version = str(item[A.version]);
  const durationMs = num(item[A.durationMs]);
  if (owner !== undefined) h.owner = owner;
  if (generation !== undefined) h.generation = generation;
  if (expiresAt !== undefined) h.expiresAt = expiresAt;
  if (version !== undefined) h.version = version;
  if (durationMs !== undefined) h.durationMs = durationMs;
  return h;
}

export class LeaseManager {
  readonly owner: OwnerId;
  readonly rule: DeadlineRule;
  readonly mode: LeaseMode;
  readonly clock: Clock;
  private readonly doc: DynamoDBDocumentClient;
  private readonly table: string;
  private readonly epoch: number;
  private readonly random: Random;
  private readonly backoff: BackoffPolicy;
  /** The document client's marshalling options, for the low-level requests this class marshals itself. */
  private readonly marshalling: marshallOptions | undefined;

  constructor(cfg: LeaseConfig) {
    this.owner = asOwnerId(cfg.owner);
    assertEpoch(cfg.epoch);
    if (typeof cfg.table !== 'string' || cfg.table.length < 3) {
      throw new InvalidInputError('table', 'must be a table name');
    }
    this.rule = {
      durationMs: cfg.durationMs,
      maxDrift: cfg.maxDrift ?? 0.01,
      marginMs: cfg.marginMs ?? Math.min(1_000, cfg.durationMs / 10),
    };
    validateDeadlineRule(this.rule);
    if (cfg.mode.kind === 'wall-clock' && !(cfg.mode.maxClockSkewMs >= 0)) {
      throw new InvalidInputError('maxClockSkewMs', 'must be >= 0');
    }
    this.mode = cfg.mode;
    this.doc = cfg.doc;
    this.marshalling = marshallOptionsOf(cfg.doc);
    this.table = cfg.table;
    this.epoch = cfg.epoch;
    this.clock = cfg.clock ?? systemClock;
    this.random = cfg.random ?? Math.random;
    this.backoff = cfg.backoff ?? defaultBackoff;
  }

  /**
   * One attempt, one UpdateItem (two only on the first acquisition after an unsealed epoch raise).
   * In version-watch mode pass the previous attempt's `observation` back in: the claim
   * succeeds only once that version has stayed unchanged for a full lease duration.
   */
  async tryAcquire(keyIn: string, opts: { observation?: Observation } = {}): Promise<Result<Lease, Contended>> {
    const key = asLeaseKey(keyIn);
    const floor = epochFloor(this.epoch);
    const ceiling = epochCeiling(this.epoch);
    const version = randomUUID();
    const matured =
      this.mode.kind === 'version-watch' &&
      opts.observation !== undefined &&
      this.clock.monotonicNow() - opts.observation.at >= opts.observation.waitMs;

    const values: Item = {
      ':me': this.owner,
      ':one': 1,
      ':floor': floor,
      ':ceiling': ceiling,
      ':v': version,
      ':d': this.rule.durationMs,
      ':none': NO_OWNER,
    };
    let free: string;
    if (this.mode.kind === 'wall-clock') {
      free = 'attribute_not_exists(#owner) OR #expiresAt < :staleBefore';
      values[':staleBefore'] = this.clock.wallNow() - this.mode.maxClockSkewMs;
    } else if (matured) {
      free = 'attribute_not_exists(#owner) OR #version = :observed';
      values[':observed'] = opts.observation!.version;
    } else {
      free = 'attribute_not_exists(#owner)';
    }
    const names = {
      '#owner': A.owner,
      '#generation': A.generation,
      '#expiresAt': A.expiresAt,
      '#version': A.version,
      '#durationMs': A.durationMs,
      '#takenFrom': A.takenFrom,
    };

    const sendTime = this.clock.monotonicNow();
    const expiresAt = this.clock.wallNow() + this.rule.durationMs;
    values[':exp'] = expiresAt;
    let old: Item | undefined;
    try {
      // Low-level, marshalled here: one UpdateItem, without the document client's marshalling pass.
      const out = await sendLowLevel(
        this.doc,
        new UpdateItemCommand({
          TableName: this.table,
          Key: this.keyOf(key),
          // `seq < 2^32` is part of the condition: an exhausted epoch is refused, never wrapped.
          ConditionExpression: `(${free}) AND (attribute_not_exists(#generation) OR (#generation >= :floor AND #generation < :ceiling))`,
          UpdateExpression:
            'SET #takenFrom = if_not_exists(#owner, :none), #owner = :me, #generation = if_not_exists(#generation, :floor) + :one, #expiresAt = :exp, #version = :v, #durationMs = :d',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: this.values(values),
          // The new generation comes back with the grant; on failure, the holder comes back.
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const attributes = fromAttributes(this.doc, out.Attributes);
      const granted = holderOf(attributes).generation;
      if (granted === undefined) throw new InvalidInputError('table', `${this.table} returned no generation`);
      return ok(this.leaseFrom(key, granted, version, sendTime, expiresAt, takenFrom(attributes)));
    } catch (e) {
      if (!isConditionalCheckFailed(e)) throw e;
      old = conditionFailureItem(e);
    }

    const holder = holderOf(old);
    // The SDK retried a request whose first response was lost, and the first one applied.
    if (holder.version === version && holder.owner === this.owner && holder.generation !== undefined) {
      return ok(this.leaseFrom(key, holder.generation, version, sendTime, expiresAt, takenFrom(old)));
    }
    const isFree =
      holder.owner === undefined ||
      (this.mode.kind === 'wall-clock'
        ? (holder.expiresAt ?? 0) < (values[':staleBefore'] as number)
        : matured && holder.version === opts.observation!.version);
    if (!isFree) return err(this.contended(key, holder, opts.observation));

    const g = holder.generation ?? 0;
    if (g >= epochFloor(this.epoch + 1)) throw new EpochBehindError(key, this.epoch, g);
    if (g >= ceiling) throw new SequenceExhaustedError(key, this.epoch);
    // g < floor: the epoch was raised but this counter not sealed yet. Start the new epoch.
    return this.claimNewEpoch(key, free, values, names, sendTime, expiresAt);
  }

  private keyOf(key: LeaseKey) {
    return this.values({ [A.key]: key });
  }

  private values(values: Item) {
    return toAttributes(values, this.marshalling);
  }

  private async claimNewEpoch(
    key: LeaseKey,
    free: string,
    values: Item,
    names: Record<string, string>,
    sendTime: number,
    expiresAt: number,
  ): Promise<Result<Lease, Contended>> {
    const floor = epochFloor(this.epoch);
    const { ':one': _one, ':ceiling': _ceiling, ...rest } = values;
    try {
      const out = await sendLowLevel(
        this.doc,
        new UpdateItemCommand({
          TableName: this.table,
          Key: this.keyOf(key),
          ConditionExpression: `(${free}) AND #generation < :floor`,
          UpdateExpression:
            'SET #takenFrom = if_not_exists(#owner, :none), #owner = :me, #generation = :first, #expiresAt = :exp, #version = :v, #durationMs = :d',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: this.values({ ...rest, ':first': floor + 1 }),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return ok(this.leaseFrom(key, floor + 1, values[':v'] as string, sendTime, expiresAt, takenFrom(fromAttributes(this.doc, out.Attributes))));
    } catch (e) {
      if (!isConditionalCheckFailed(e)) throw e;
      // Someone else took it in between: report them as the holder.
      return err(this.contended(key, holderOf(conditionFailureItem(e)), undefined));
    }
  }

  private leaseFrom(
    key: LeaseKey,
    generation: number,
    version: string,
    sendTime: number,
    expiresAt: number,
    takeoverFrom: string | undefined,
  ): Lease {
    return {
      key,
      owner: this.owner,
      generation: generation as Generation,
      version,
      deadline: leaseDeadline(sendTime, this.rule),
      expiresAt,
      durationMs: this.rule.durationMs,
      ...(takeoverFrom === undefined ? {} : { takeoverFrom }),
    };
  }

  private contended(key: LeaseKey, holder: Holder, previous: Observation | undefined): Contended {
    // Spreads a herd's attempts after the expiry. It saves no request (each sleeping contender
    // makes one attempt per lease period whatever the jitter), and every millisecond of it is
    // added to a takeover: keep it small (was min(250, duration/10); bench/takeover.ts).
    const jitterMs = Math.min(100, this.rule.durationMs / 20);
    if (this.mode.kind === 'wall-clock') {
      const retryAfterMs = untilExpiry(
        holder.expiresAt ?? this.clock.wallNow(),
        this.clock.wallNow(),
        { maxClockSkewMs: this.mode.maxClockSkewMs, jitterMs },
        this.random,
      );
      return { key, holder, retryAfterMs };
    }
    // Version-watch: the watch restarts whenever the version moved (the holder renewed).
    const now = this.clock.monotonicNow();
    const observation: Observation =
      previous !== undefined && previous.version === holder.version
        ? previous
        : {
            version: holder.version ?? '',
            at: now,
            // A full duration of the holder's lease on our clock, stretched by the drift bound.
            waitMs: Math.max(holder.durationMs ?? 0, this.rule.durationMs) * (1 + this.rule.maxDrift),
          };
    const retryAfterMs = Math.max(0, observation.at + observation.waitMs - now) + this.random() * jitterMs;
    return { key, holder, retryAfterMs, observation };
  }

  /**
   * Acquire with waiting: sleeps until the holder's expiry (or the watch matures) plus jitter,
   * with exponential full-jitter backoff when nothing better is known. Gives up with
   * AcquireTimeoutError when `timeoutMs` passes or `signal` aborts.
   */
  async acquire(key: string, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Lease> {
    const start = this.clock.monotonicNow();
    const timeoutMs = opts.timeoutMs ?? Number.POSITIVE_INFINITY;
    let observation: Observation | undefined;
    let attempts = 0;
    for (;;) {
      if (opts.signal?.aborted) throw new AcquireTimeoutError(key, attempts, { cause: opts.signal.reason });
      attempts++;
      const r = await this.tryAcquire(key, observation === undefined ? {} : { observation });
      if (r.ok) return r.value;
      observation = r.error.observation;
      const remaining = start + timeoutMs - this.clock.monotonicNow();
      if (remaining <= 0) throw new AcquireTimeoutError(key, attempts);
      const wait = Math.max(r.error.retryAfterMs, fullJitter(Math.min(attempts, 4), this.backoff, this.random));
      try {
        await this.clock.sleep(Math.min(wait, remaining), opts.signal);
      } catch (e) {
        throw new AcquireTimeoutError(key, attempts, { cause: e });
      }
    }
  }

  /**
   * Extends the lease. Conditional on owner AND generation, never on the version we rotated:
   * if the response is lost, the retry (the SDK's or ours) still matches and succeeds.
   * The new deadline counts from the send time of this call. Throws LeaseLostError.
   */
  async renew(lease: Lease, opts: { abortSignal?: AbortSignal } = {}): Promise<Lease> {
    const version = randomUUID();
    const sendTime = this.clock.monotonicNow();
    const expiresAt = this.clock.wallNow() + this.rule.durationMs;
    try {
      await sendLowLevel(
        this.doc,
        new UpdateItemCommand({
          TableName: this.table,
          Key: this.keyOf(lease.key),
          ConditionExpression: '#owner = :me AND #generation = :g',
          UpdateExpression: 'SET #expiresAt = :exp, #version = :v, #durationMs = :d',
          ExpressionAttributeNames: {
            '#owner': A.owner,
            '#generation': A.generation,
            '#expiresAt': A.expiresAt,
            '#version': A.version,
            '#durationMs': A.durationMs,
          },
          ExpressionAttributeValues: this.values({
            ':me': lease.owner,
            ':g': lease.generation,
            ':exp': expiresAt,
            ':v': version,
            ':d': this.rule.durationMs,
          }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
        opts.abortSignal ? { abortSignal: opts.abortSignal } : {},
      );
    } catch (e) {
      if (isConditionalCheckFailed(e)) {
        throw new LeaseLostError(lease.key, lease.generation, holderOf(conditionFailureItem(e)));
      }
      throw e;
    }
    return { ...lease, version, expiresAt, deadline: leaseDeadline(sendTime, this.rule) };
  }

  /**
   * Gives the lease up. Conditional on owner AND generation: a late release from an obsolete
   * holder matches nothing and changes nothing. Removes owner and expiresAt, KEEPS generation.
   */
  async release(lease: Lease): Promise<{ released: boolean }> {
    const version = randomUUID();
    try {
      await sendLowLevel(
        this.doc,
        new UpdateItemCommand({
          TableName: this.table,
          Key: this.keyOf(lease.key),
          ConditionExpression: '#owner = :me AND #generation = :g',
          UpdateExpression: 'SET #version = :v REMOVE #owner, #expiresAt',
          ExpressionAttributeNames: {
            '#owner': A.owner,
            '#generation': A.generation,
            '#expiresAt': A.expiresAt,
            '#version': A.version,
          },
          ExpressionAttributeValues: this.values({ ':me': lease.owner, ':g': lease.generation, ':v': version }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { released: true };
    } catch (e) {
      if (!isConditionalCheckFailed(e)) throw e;
      // A retried release whose first attempt applied sees its own version.
      return { released: holderOf(conditionFailureItem(e)).version === version };
    }
  }

  /** True while the local deadline has not passed: protected work may still be issued. */
  isSafe(lease: Lease): boolean {
    return this.clock.monotonicNow() < lease.deadline;
  }
}
