/**
 * Every failure this library reports is one of these classes: callers branch on the class
 * (or on `code`), never on a message. Each carries what a caller needs to act on it.
 */
import type { Generation } from './brand.js';

/**
 * A bad value, rendered for an error message without ever throwing: JSON where it can be
 * (bigints as `12n`), a placeholder for what JSON cannot show (cycles, symbols, functions),
 * truncated. `${v}` or JSON.stringify(v) alone throw a TypeError on some inputs (a symbol, a
 * null-prototype object, a bigint, a cycle), which would replace the typed error being built.
 */
export function describeValue(v: unknown, max = 120): string {
  let s: string | undefined;
  try {
    s = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x));
  } catch {
    s = undefined;
  }
  if (s === undefined) {
    s = typeof v === 'object' && v !== null ? (Array.isArray(v) ? '[array]' : '[object]') : typeof v === 'symbol' || typeof v === 'function' ? `[${typeof v}]` : String(v);
  }
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** The base of every error this library throws: branch on the subclass or on `code`. */
export abstract class FencedError extends Error {
  abstract readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bad input: nothing was sent, nothing was written. */
export class InvalidInputError extends FencedError {
  readonly code = 'INVALID_INPUT';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** A configuration value (environment variable, flag) is missing or malformed. */
export class ConfigError extends FencedError {
  readonly code = 'CONFIG';
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
  }
}

/** Renew or protected work found that the lease belongs to someone else (or to a newer generation). */
export class LeaseLostError extends FencedError {
  readonly code = 'LEASE_LOST';
  constructor(
    readonly key: string,
    readonly generation: Generation,
    readonly holder: { owner?: string; generation?: number; expiresAt?: number } | undefined,
  ) {
    super(`lease ${key} at generation ${generation} is no longer held by us`);
  }
}

/** Renewal could not be confirmed before the local deadline: stop issuing protected work. */
export class LeaseExpiredError extends FencedError {
  readonly code = 'LEASE_EXPIRED';
  constructor(
    readonly key: string,
    readonly generation: Generation,
    options?: { cause?: unknown },
  ) {
    super(`lease ${key} at generation ${generation} passed its local deadline without a confirmed renewal`, options);
  }
}

/** acquire() gave up: its deadline passed or its AbortSignal fired. */
export class AcquireTimeoutError extends FencedError {
  readonly code = 'ACQUIRE_TIMEOUT';
  constructor(
    readonly key: string,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(`could not acquire lease ${key} after ${attempts} attempt(s)`, options);
  }
}

/** The issuer cannot hand out another token in this epoch: raise the epoch (never wrap). */
export class SequenceExhaustedError extends FencedError {
  readonly code = 'SEQUENCE_EXHAUSTED';
  constructor(
    readonly key: string,
    readonly epoch: number,
  ) {
    super(`lease ${key}: sequence exhausted in epoch ${epoch} (2^32 - 1 tokens issued); raise the epoch`);
  }
}

/** The store has tokens from a newer epoch than this process is configured with. */
export class EpochBehindError extends FencedError {
  readonly code = 'EPOCH_BEHIND';
  constructor(
    readonly key: string,
    readonly configuredEpoch: number,
    readonly storedGeneration: number,
  ) {
    super(
      `${key}: stored generation belongs to a newer epoch than the configured epoch ${configuredEpoch}; ` +
        'this process runs with an outdated epoch configuration',
    );
  }
}

/** The fence has accepted a newer generation: this holder is obsolete. Nothing of its unit was written. */
export class StaleGenerationError extends FencedError {
  readonly code = 'STALE_GENERATION';
  constructor(
    readonly resource: string,
    readonly attempted: Generation,
    readonly current: Generation | undefined,
  ) {
    super(
      `fence ${resource} rejected generation ${attempted}` + (current === undefined ? '' : ` (fence is at ${current})`),
    );
  }
}

/** The checkpoint is not where this holder expected it: someone else progressed. Nothing was written. */
export class CheckpointMovedError extends FencedError {
  readonly code = 'CHECKPOINT_MOVED';
  constructor(
    readonly key: string,
    readonly expected: number,
    readonly actual: number | undefined,
  ) {
    super(`checkpoint ${key} expected cursor ${expected}, found ${actual ?? 'none'}`);
  }
}

/** A once-only effect's operation key exists already: the effect is a duplicate. Nothing was written. */
export class EffectAlreadyExistsError extends FencedError {
  readonly code = 'EFFECT_EXISTS';
  /** Every once-only effect of the unit that exists already (the first is `table`/`key`). */
  readonly duplicates: readonly { table: string; key: string }[];
  constructor(
    readonly table: string,
    readonly key: string,
    duplicates?: readonly { table: string; key: string }[],
  ) {
    super(`once-only effect ${key} in ${table} exists already`);
    this.duplicates = duplicates ?? [{ table, key }];
  }
}

/** The transaction kept conflicting with concurrent transactions after all retries. Nothing was written. */
export class TransactionConflictError extends FencedError {
  readonly code = 'TRANSACTION_CONFLICT';
  constructor(
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(`transaction conflicted ${attempts} time(s)`, options);
  }
}

/** A transaction was cancelled for a reason this library does not decode (validation, throughput...). */
export class TransactionFailedError extends FencedError {
  readonly code = 'TRANSACTION_FAILED';
  constructor(
    readonly reasons: readonly { Code?: string; Message?: string }[],
    options?: { cause?: unknown },
  ) {
    super(`transaction cancelled: ${reasons.map((r) => r.Code ?? 'None').join(', ')}`, options);
  }
}

/**
 * A guarded single-record write (conditional.ts) found the record at a higher generation than
 * the writer's: the writer is obsolete for this record. Nothing was written.
 */
export class StaleRecordError extends FencedError {
  readonly code = 'STALE_RECORD';
  constructor(
    readonly table: string,
    readonly key: string,
    readonly attempted: Generation,
    readonly current: Generation | undefined,
    /** The record as it is (ReturnValuesOnConditionCheckFailure: ALL_OLD). */
    readonly existing: Readonly<Record<string, unknown>> | undefined,
  ) {
    super(`record ${key} in ${table} is at generation ${current ?? 'unknown'}, above the writer's ${attempted}`);
  }
}

/**
 * An optimistic update (optimistic.ts) found the record changed under it on every attempt: its
 * bound of attempts is used up. Nothing of the last attempt was written.
 */
export class VersionConflictError extends FencedError {
  readonly code = 'VERSION_CONFLICT';
  constructor(
    readonly table: string,
    readonly key: string,
    readonly attempts: number,
    /** The record as the last conflicting write left it (ALL_OLD of the last refusal). */
    readonly current: Readonly<Record<string, unknown>> | undefined,
  ) {
    super(`record ${key} in ${table} changed under ${attempts} optimistic attempt(s) in a row`);
  }
}

/**
 * An optimistic write whose outcome cannot be told: the SDK resent it after a lost response, and
 * by then another writer had changed the record; or it got no answer at all (a timeout, a cut
 * connection, a server error: `cause`) and the SDK did not resend it. Ours may have applied;
 * applying the change again could apply it twice. Re-read and decide (or make the change idempotent).
 */
export class OptimisticWriteUncertainError extends FencedError {
  readonly code = 'OPTIMISTIC_WRITE_UNCERTAIN';
  constructor(
    readonly table: string,
    readonly key: string,
    /** The record as the refusal found it (another writer's version); undefined when no answer came. */
    readonly current: Readonly<Record<string, unknown>> | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      options?.cause === undefined
        ? `record ${key} in ${table}: a resent optimistic write met another writer's version; it may or may not have applied`
        : `record ${key} in ${table}: an optimistic write got no answer (${describeValue((options.cause as { name?: unknown }).name)}); it may or may not have applied`,
      options,
    );
  }
}
