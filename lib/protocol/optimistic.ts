/**
 * Optimistic version check: read a record with its version, compute the new record, write it
 * only if the version is still the one read (`version = :seen`), retry on conflict with jittered
 * backoff up to a bound. The article: "optimistic version checks when conflicts are rare." No
 * lease and no fence: when two writers meet, one retries. Under steady contention every attempt
 * can lose; after `maxAttempts` the caller gets a VersionConflictError, which is the signal that
 * coordinating (a lease) would do less work than retrying.
 *
 * `version` (S) is a random token rotated by every write, as on a lease item: it orders nothing,
 * it only says "unchanged". Being unique per attempt, it also settles the ambiguous case: when a
 * write's response is lost and the SDK resends it, the resend is refused by the write itself
 * (the version moved), and the refusal's ALL_OLD shows OUR version, so the attempt counts as
 * written. Re-reading and re-applying instead would apply the change twice (an increment, a
 * debit). When another writer changed the record between the lost response and the resend,
 * nothing can tell whether ours applied: OptimisticWriteUncertainError, never a second apply.
 * So is a write that got no answer and was not resent (a timeout or a cut connection on the last
 * attempt, a server error): the error says "maybe applied", never a raw error a caller retries.
 * A refusal's ALL_OLD is also the next attempt's starting point: no extra read.
 *
 * Cost per attempt: 1 PutItem (1 WCU up to 1 KB; a refused one costs its WCU too), plus one
 * strongly consistent GetItem (1 RCU up to 4 KB) on the first attempt only. Every writer of the
 * record must use this path: an unconditional write elsewhere is not seen as a conflict unless it
 * also rotates `version`.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { defaultBackoff, fullJitter, type BackoffPolicy, type Random } from './backoff.js';
import { systemClock, type Clock } from './clock.js';
import { conditionFailureItem, isConditionalCheckFailed, isUnanswered } from './dynamo.js';
import { InvalidInputError, OptimisticWriteUncertainError, VersionConflictError } from './errors.js';

/** The attribute that carries a record's version. */
export const VERSION_ATTR = 'version';

/** A record read and written by updateOptimistic: any attributes; `pk` and `version` are the library's. */
export type VersionedRecord = Record<string, unknown>;

/**
 * Computes the new record from the current one (undefined: there is none). Return the whole new
 * record (its `pk` and `version` are set by the library), or undefined to write nothing. It may
 * run several times (once per attempt), so it must not have effects of its own.
 */
export type Change = (current: Readonly<VersionedRecord> | undefined) => VersionedRecord | undefined | Promise<VersionedRecord | undefined>;

/** Where the record is, and how hard to try. */
export interface OptimisticOptions {
  doc: DynamoDBDocumentClient;
  table: string;
  /** The record's `pk`. */
  key: string;
  /** Attempts before VersionConflictError (default 5). */
  maxAttempts?: number;
  clock?: Clock;
  random?: Random;
  backoff?: BackoffPolicy;
}

/** `written`: the change landed on the version it was computed from. `unchanged`: the change function returned undefined. */
export type OptimisticOutcome =
  | { readonly status: 'written'; readonly record: VersionedRecord; readonly attempts: number }
  | { readonly status: 'unchanged'; readonly record: VersionedRecord | undefined; readonly attempts: number };

/** Read, change, write if unchanged; retry a conflict from the record the refusal returned. */
export async function updateOptimistic(opts: OptimisticOptions, change: Change): Promise<OptimisticOutcome> {
  const maxAttempts = opts.maxAttempts ?? 5;
  if (!(Number.isSafeInteger(maxAttempts) && maxAttempts >= 1)) throw new InvalidInputError('maxAttempts', 'must be an integer >= 1');
  if (typeof opts.key !== 'string' || opts.key.length === 0) throw new InvalidInputError('key', 'must be a non-empty string');
  const clock = opts.clock ?? systemClock;
  const read = await opts.doc.send(new GetCommand({ TableName: opts.table, Key: { pk: opts.key }, ConsistentRead: true }));
  let current = read.Item;
  for (let attempt = 1; ; attempt++) {
    const next = await change(current === undefined ? undefined : structuredClone(current));
    if (next === undefined) return { status: 'unchanged', record: current, attempts: attempt };
    const written = await writeIfUnchanged(opts, current, next);
    if (written.ok) return { status: 'written', record: written.record, attempts: attempt };
    current = written.current;
    if (attempt >= maxAttempts) throw new VersionConflictError(opts.table, opts.key, attempt, current);
    await clock.sleep(fullJitter(attempt - 1, opts.backoff ?? defaultBackoff, opts.random));
  }
}

type Written = { ok: true; record: VersionedRecord } | { ok: false; current: VersionedRecord | undefined };

/** One conditional put: the record must still carry the version that was read (or still be absent). */
async function writeIfUnchanged(opts: OptimisticOptions, seen: VersionedRecord | undefined, next: VersionedRecord): Promise<Written> {
  const version = randomUUID();
  const record = { ...next, pk: opts.key, [VERSION_ATTR]: version };
  const seenVersion = seen?.[VERSION_ATTR];
  // Absent, or present without a version (written before this path was used), or at the version read.
  const condition: { expr: string; values?: Record<string, unknown> } =
    seen === undefined ? { expr: 'attribute_not_exists(pk)' } : seenVersion === undefined ? { expr: 'attribute_exists(pk) AND attribute_not_exists(#v)' } : { expr: '#v = :seen', values: { ':seen': seenVersion } };
  try {
    await opts.doc.send(
      new PutCommand({
        TableName: opts.table,
        Item: record,
        ConditionExpression: condition.expr,
        ...(condition.expr.includes('#v') ? { ExpressionAttributeNames: { '#v': VERSION_ATTR } } : {}),
        ...(condition.values === undefined ? {} : { ExpressionAttributeValues: condition.values }),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { ok: true, record };
  } catch (e) {
    if (!isConditionalCheckFailed(e)) {
      if (mayHaveApplied(e)) throw new OptimisticWriteUncertainError(opts.table, opts.key, undefined, { cause: e });
      throw e;
    }
    const current = conditionFailureItem(e);
    // A resend of a put that was applied (its response lost): the refusal shows our own version.
    if (current?.[VERSION_ATTR] === version) return { ok: true, record };
    // A resend refused with another writer's version: ours may have applied before theirs.
    // Retrying would apply the change a second time; only the caller can decide.
    if (attemptsOf(e) > 1) throw new OptimisticWriteUncertainError(opts.table, opts.key, current);
    return { ok: false, current };
  }
}

const attemptsOf = (e: unknown): number => (e as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1;

/**
 * May a put that failed with `e` (other than a condition refusal) have been applied? The
 * classification the fair queue uses (isUnanswered, dynamo.ts), minus what is a refusal here:
 * - no `$metadata`: thrown before any request went out (marshalling, the SDK's own checks): no;
 * - more than one attempt: an earlier attempt's answer may be the one that was lost: yes;
 * - one attempt without an answer (a timeout, a cut connection) or a server fault (a 5xx, which
 *   DynamoDB documents as possibly applied): yes;
 * - one attempt answered with a client fault (validation, a missing table, throttling: refused
 *   before anything was applied): no.
 */
function mayHaveApplied(e: unknown): boolean {
  if (!(e instanceof Error) || !('$metadata' in e)) return false;
  if (attemptsOf(e) > 1) return true;
  return isUnanswered(e) && (e as { $fault?: string }).$fault !== 'client';
}
