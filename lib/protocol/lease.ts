/**
 * The lease: who may start work on a key, until when, and with which generation (the fencing
 * token). A lease lets a successor start; it does NOT stop an obsolete holder (fence.ts does).
 *
 * Item (items.ts LEASE_ATTR): pk, owner, generation, expiresAt, version, durationMs, takenFrom.
 * `generation` is never removed: release keeps it, and nothing here can delete a lease item,
 * so a counter can never restart below a token a resource has already seen.
 *
 * LeaseManager is the facade; the protocol's steps are their own modules: the acquire paths
 * (acquire.ts), renew and release (lease-holder.ts), the lease's data (lease-model.ts).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { tryAcquire } from './acquire.js';
import { defaultBackoff, fullJitter, type BackoffPolicy, type Random } from './backoff.js';
import { systemClock, validateDeadlineRule, type Clock, type DeadlineRule } from './clock.js';
import { marshallOptionsOf } from './dynamo.js';
import { AcquireTimeoutError, InvalidInputError } from './errors.js';
import { assertEpoch } from './generation.js';
import { releaseLease, renewLease } from './lease-holder.js';
import { asOwnerId, type Contended, type Lease, type LeaseContext, type LeaseMode, type Observation, type OwnerId } from './lease-model.js';
import type { Result } from './result.js';

export { asLeaseKey, asOwnerId } from './lease-model.js';
export type { Contended, Holder, Lease, LeaseKey, LeaseMode, Observation, OwnerId } from './lease-model.js';

/** A LeaseManager's settings: the client, the lease table, who we are, the epoch, the duration and how contenders judge expiry. */
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

function contextOf(cfg: LeaseConfig): LeaseContext {
  const owner = asOwnerId(cfg.owner);
  assertEpoch(cfg.epoch);
  if (typeof cfg.table !== 'string' || cfg.table.length < 3) throw new InvalidInputError('table', 'must be a table name');
  const rule: DeadlineRule = {
    durationMs: cfg.durationMs,
    maxDrift: cfg.maxDrift ?? 0.01,
    marginMs: cfg.marginMs ?? Math.min(1_000, cfg.durationMs / 10),
  };
  validateDeadlineRule(rule);
  if (cfg.mode.kind === 'wall-clock' && !(cfg.mode.maxClockSkewMs >= 0)) throw new InvalidInputError('maxClockSkewMs', 'must be >= 0');
  return {
    doc: cfg.doc,
    table: cfg.table,
    owner,
    epoch: cfg.epoch,
    rule,
    mode: cfg.mode,
    clock: cfg.clock ?? systemClock,
    random: cfg.random ?? Math.random,
    backoff: cfg.backoff ?? defaultBackoff,
    marshalling: marshallOptionsOf(cfg.doc),
  };
}

/**
 * The lease protocol for one owner over one table: tryAcquire (one conditional UpdateItem) and
 * acquire (waiting politely), renew and release (conditional on owner and generation), isSafe.
 */
export class LeaseManager {
  readonly owner: OwnerId;
  readonly rule: DeadlineRule;
  readonly mode: LeaseMode;
  readonly clock: Clock;
  private readonly ctx: LeaseContext;

  constructor(cfg: LeaseConfig) {
    this.ctx = contextOf(cfg);
    this.owner = this.ctx.owner;
    this.rule = this.ctx.rule;
    this.mode = this.ctx.mode;
    this.clock = this.ctx.clock;
  }

  /** One attempt (acquire.ts). In version-watch mode pass the previous attempt's `observation` back in. */
  tryAcquire(key: string, opts: { observation?: Observation } = {}): Promise<Result<Lease, Contended>> {
    return tryAcquire(this.ctx, key, opts);
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
      const wait = Math.max(r.error.retryAfterMs, fullJitter(Math.min(attempts, 4), this.ctx.backoff, this.ctx.random));
      try {
        await this.clock.sleep(Math.min(wait, remaining), opts.signal);
      } catch (e) {
        throw new AcquireTimeoutError(key, attempts, { cause: e });
      }
    }
  }

  /** Extends the lease (lease-holder.ts): conditional on owner AND generation. Throws LeaseLostError. */
  renew(lease: Lease, opts: { abortSignal?: AbortSignal } = {}): Promise<Lease> {
    return renewLease(this.ctx, lease, opts);
  }

  /** Gives the lease up (lease-holder.ts): a late release from an obsolete holder changes nothing. */
  release(lease: Lease): Promise<{ released: boolean }> {
    return releaseLease(this.ctx, lease);
  }

  /** True while the local deadline has not passed: protected work may still be issued. */
  isSafe(lease: Lease): boolean {
    return this.clock.monotonicNow() < lease.deadline;
  }
}
