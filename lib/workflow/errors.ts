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
 * A start of a run that exists already, with another input than the stored one (another customer
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
