/**
 * The workflow's own failures (the protocol's are in lib/protocol/errors.ts): each a FencedError
 * subclass, so callers branch on the class (or `code`), never on a message.
 */
import { describeValue, FencedError } from '../protocol/index.js';

/** A fenced write to a job found no job item: it was never created, or was removed by hand. */
export class JobNotFoundError extends FencedError {
  readonly code = 'JOB_NOT_FOUND';
  constructor(readonly jobId: string) {
    super(`job ${jobId} does not exist`);
  }
}

/** A job item that breaks the Jobs contract (an unknown status, a cursor that is not a count): never run. */
export class InvalidJobItemError extends FencedError {
  readonly code = 'INVALID_JOB_ITEM';
  constructor(
    readonly jobId: string,
    readonly field: string,
    message: string,
  ) {
    super(`job ${jobId}: ${field} ${message}`);
  }
}

/** A run record that breaks its contract (lib/workflow/runs.ts): a shard list that is not `shardCount` distinct job ids. */
export class InvalidRunItemError extends FencedError {
  readonly code = 'INVALID_RUN_ITEM';
  constructor(
    readonly runId: string,
    readonly field: string,
    message: string,
  ) {
    super(`run ${runId}: ${field} ${message}`);
  }
}

/**
 * A start of a run that exists already, with another input than the stored one (another item
 * count, another seed, another unit size): a run is defined by its stored record, so its missing
 * shards are built from the stored input, and a start that disagrees with it is refused, never
 * reconciled. Nothing was written by the refused call.
 */
export class RunInputMismatchError extends FencedError {
  readonly code = 'RUN_INPUT_MISMATCH';
  constructor(
    readonly runId: string,
    readonly stored: Record<string, unknown>,
    readonly given: Record<string, unknown>,
  ) {
    super(`run ${runId} exists with input ${describeValue(stored, 300)}; this start asked for ${describeValue(given, 300)}: start it with the stored input, or give the new one another run id`);
  }
}

/** DynamoDB kept leaving keys of a BatchGetItem unprocessed (throttling that outlasted the retries). */
export class UnprocessedKeysError extends FencedError {
  readonly code = 'UNPROCESSED_KEYS';
  constructor(
    readonly table: string,
    readonly keys: number,
    readonly attempts: number,
  ) {
    super(`BatchGetItem left ${keys} keys of ${table} unprocessed ${attempts} times`);
  }
}

/**
 * S3 kept answering 409 ConditionalRequestConflict to a conditional write (a PUT with
 * If-None-Match, a DELETE with If-Match): another write to the same key raced each attempt. S3
 * says "retry the request", and the SDK's retry strategy does not (409 is no transient code in
 * it), so the adapter retries with backoff; this is the end of that bound. Nothing was written
 * by the refused attempts: a 409 is a refusal before the write, so the call may be made again.
 */
export class ObjectWriteConflictError extends FencedError {
  readonly code = 'OBJECT_WRITE_CONFLICT';
  constructor(
    readonly operation: 'put' | 'delete',
    readonly key: string,
    readonly attempts: number,
  ) {
    super(`conditional ${operation} of ${key} answered 409 ConditionalRequestConflict ${attempts} times (a racing write on the key each time)`);
  }
}

/**
 * S3 answered 403 AccessDenied where the adapter had to learn whether an object exists (the HEAD
 * that resolves a 412). Without s3:ListBucket S3 answers 403 for a missing key, so a 403 means
 * "missing, or not readable": reading it as "exists" would fail a put that could land, reading
 * it as "missing" would re-put blindly. Neither is guessed: the caller fails the attempt, and
 * the role's grants (s3:ListBucket on the documents prefix, docs/external-effects.md) are what
 * to check.
 */
export class ObjectStateUnknownError extends FencedError {
  readonly code = 'OBJECT_STATE_UNKNOWN';
  constructor(
    readonly key: string,
    readonly status: number,
  ) {
    super(`cannot tell whether ${key} exists: S3 answered ${status} (AccessDenied) to the HEAD; a missing key reads as 403 to a role without s3:ListBucket on its prefix`);
  }
}

/**
 * A new attempt of an outbox item (effects/attempts.ts) that the item's state refuses: it is
 * missing, neither declined (FAILED as a refusal of the effect) nor UNKNOWN, or already retried.
 * Nothing was written by the refused call.
 */
export class AttemptRefusedError extends FencedError {
  readonly code = 'ATTEMPT_REFUSED';
  constructor(
    readonly id: string,
    readonly why: string,
  ) {
    super(`outbox item ${id} ${why}: only a declined item (FAILED, refusal effect) or an UNKNOWN one its provider has no record of takes a new attempt, once`);
  }
}

/**
 * A person's decision on an outbox item (effects/decisions.ts) that the item's state refuses: it
 * is missing, or not UNKNOWN (settled by its provider's answer, or moved while the decision was
 * being written). Nothing was written by the refused call.
 */
export class DecisionRefusedError extends FencedError {
  readonly code = 'DECISION_REFUSED';
  constructor(
    readonly id: string,
    readonly status: string | undefined,
  ) {
    super(`outbox item ${id} ${status === undefined ? 'does not exist' : `is ${status}, not UNKNOWN`}: only an UNKNOWN item takes a person's decision (read it with status, or look for a follow-up's own id)`);
  }
}
