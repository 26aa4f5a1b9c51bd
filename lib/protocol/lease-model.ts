/**
 * The lease's data: what a grant gives a holder, what a contender learns about the holder, and
 * how both are read from the lease item (items.ts LEASE_ATTR). Shared by the acquire paths
 * (acquire.ts), the holder's requests (lease-holder.ts) and the facade (lease.ts).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { marshallOptions } from '@aws-sdk/util-dynamodb';
import type { BackoffPolicy, Random } from './backoff.js';
import type { LeaseKey, OwnerId } from './brand.js';
import { leaseDeadline, type Clock, type DeadlineRule } from './clock.js';
import { toAttributes } from './dynamo.js';
import { InvalidInputError } from './errors.js';
import type { Generation } from './generation.js';
import { LEASE_ATTR as A } from './items.js';

export type { LeaseKey, OwnerId };

/** Checks and brands a lease key: a non-empty string of at most 1024 characters. */
export function asLeaseKey(key: string): LeaseKey {
  if (typeof key !== 'string' || key.length === 0 || key.length > 1024) {
    throw new InvalidInputError('key', 'must be a non-empty string of at most 1024 characters');
  }
  return key as LeaseKey;
}

/** Checks and brands an owner id: a non-empty string of at most 256 characters, unique per holder and invocation. */
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

/** A grant, as the holder sees it: the token (`generation`) to carry to every fence, and when to stop. */
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

/** Everything a lease request needs, validated once by LeaseManager's constructor. */
export interface LeaseContext {
  readonly doc: DynamoDBDocumentClient;
  readonly table: string;
  readonly owner: OwnerId;
  readonly epoch: number;
  readonly rule: DeadlineRule;
  readonly mode: LeaseMode;
  readonly clock: Clock;
  readonly random: Random;
  readonly backoff: BackoffPolicy;
  /** The document client's marshalling options, for the low-level requests the library marshals itself. */
  readonly marshalling: marshallOptions | undefined;
}

export type Item = Record<string, unknown>;

/** `takenFrom` when a grant replaced nobody. */
export const NO_OWNER = '-';

export function takenFrom(item: Item | undefined): string | undefined {
  const v = item?.[A.takenFrom];
  return typeof v === 'string' && v !== NO_OWNER ? v : undefined;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export function holderOf(item: Item | undefined): Holder {
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

/** The lease item's key, marshalled. */
export const keyOf = (ctx: LeaseContext, key: LeaseKey): Record<string, AttributeValue> => toAttributes({ [A.key]: key }, ctx.marshalling);

/** Expression values, marshalled with the document client's options. */
export const valuesOf = (ctx: LeaseContext, values: Item): Record<string, AttributeValue> => toAttributes(values, ctx.marshalling);

/** A grant as the holder sees it. `sendTime` was read before the request left (clock.ts leaseDeadline). */
export function leaseFrom(
  ctx: LeaseContext,
  key: LeaseKey,
  generation: number,
  version: string,
  sendTime: number,
  expiresAt: number,
  takeoverFrom: string | undefined,
): Lease {
  return {
    key,
    owner: ctx.owner,
    generation: generation as Generation,
    version,
    deadline: leaseDeadline(sendTime, ctx.rule),
    expiresAt,
    durationMs: ctx.rule.durationMs,
    ...(takeoverFrom === undefined ? {} : { takeoverFrom }),
  };
}
