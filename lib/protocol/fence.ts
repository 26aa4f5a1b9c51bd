/**
 * The fence: the resource remembers the greatest generation it accepted and never accepts a
 * lower one, in the SAME transaction as the effect. This, not the lease, stops an obsolete
 * holder: a lease only lets a successor start.
 *
 * A fenced unit is ONE TransactWriteItems:
 *   [0] fence      SET generation = :g          IF generation <= :g   (equal is allowed)
 *   [1] checkpoint SET cursor = :next, ...      IF cursor = :expected
 *   [2..] effects  upserts (fence only) and once-only creations (attribute_not_exists(pk))
 * All or nothing: a stale holder's unit leaves no effect behind.
 */
import { createHash } from 'node:crypto';
import { TransactWriteItemsCommand, UpdateItemCommand, type AttributeValue, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { marshallOptions } from '@aws-sdk/util-dynamodb';
import { defaultBackoff, fullJitter, type BackoffPolicy, type Random } from './backoff.js';
import { systemClock, type Clock } from './clock.js';
import { conditionFailureItem, fromAttributes, isConditionalCheckFailed, itemBytes, marshallOptionsOf, MAX_ITEM_BYTES, sendLowLevel, toAttributes } from './dynamo.js';
import {
  CheckpointMovedError,
  EffectAlreadyExistsError,
  InvalidInputError,
  StaleGenerationError,
  TransactionConflictError,
  TransactionFailedError,
} from './errors.js';
import { asGeneration, type Generation } from './generation.js';
import { assertEffectItem, ONCE_CONDITION, type Effect } from './idempotency.js';
import { FENCE_ATTR, JOB_ATTR } from '../workflow/schema.js';

export const MAX_TRANSACTION_ACTIONS = 100;
export const MAX_TRANSACTION_BYTES = 4 * 1024 * 1024;

export interface FenceRef {
  readonly table: string;
  /** The protected resource's key, e.g. `invoices#<jobId>`. */
  readonly resource: string;
}

export interface FenceContext {
  doc: DynamoDBDocumentClient;
  clock?: Clock;
  random?: Random;
  backoff?: BackoffPolicy;
  /** Attempts for a transaction cancelled by a conflict with another transaction. */
  maxConflictAttempts?: number;
}

/**
 * Raises the fence to `generation` (or confirms it is there). A successor calls this right
 * after acquiring, BEFORE reading the state it will modify: from then on no lower generation
 * can commit through this fence. Returns the generation the fence held before.
 * Throws StaleGenerationError if the fence is already higher: this holder is obsolete.
 */
export async function raiseFence(ctx: FenceContext, fence: FenceRef, generation: Generation): Promise<Generation | undefined> {
  assertFenceRef(fence);
  const clock = ctx.clock ?? systemClock;
  try {
    const options = marshallOptionsOf(ctx.doc);
    const out = await sendLowLevel(
      ctx.doc,
      new UpdateItemCommand({
        TableName: fence.table,
        Key: toAttributes({ [FENCE_ATTR.key]: fence.resource }, options),
        ConditionExpression: 'attribute_not_exists(#g) OR #g <= :g',
        UpdateExpression: 'SET #g = :g, #u = :now',
        ExpressionAttributeNames: { '#g': FENCE_ATTR.generation, '#u': FENCE_ATTR.updatedAt },
        ExpressionAttributeValues: toAttributes({ ':g': generation, ':now': clock.wallNow() }, options),
        ReturnValues: 'UPDATED_OLD',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    const before = fromAttributes(ctx.doc, out.Attributes)?.[FENCE_ATTR.generation];
    return before === undefined ? undefined : asGeneration(before);
  } catch (e) {
    if (!isConditionalCheckFailed(e)) throw e;
    const current = conditionFailureItem(e)?.[FENCE_ATTR.generation];
    throw new StaleGenerationError(fence.resource, generation, typeof current === 'number' ? asGeneration(current) : undefined);
  }
}

export interface Checkpoint {
  readonly table: string;
  readonly key: string;
  /** The cursor this unit starts from: the commit fails if anyone moved it. */
  readonly expected: number;
  readonly next: number;
  /** Further attributes to set with the advance (heartbeat, status...). */
  readonly set?: Readonly<Record<string, unknown>>;
  /** Attributes to remove with the advance (e.g. the sparse index key when the job is done). */
  readonly remove?: readonly string[];
}

export interface FencedUnit {
  readonly fence: FenceRef;
  readonly generation: Generation;
  readonly checkpoint: Checkpoint;
  readonly effects: readonly Effect[];
  /** Identifies the unit for the idempotency token: (job, generation, unit[, variant]). */
  readonly token: { readonly job: string; readonly unit: number; readonly variant?: string };
}

export type CommitOutcome =
  /** This call's transaction committed. */
  | { readonly status: 'committed'; readonly attempts: number }
  /** The unit had already been committed under this generation (an ambiguous earlier attempt). */
  | { readonly status: 'already-committed'; readonly attempts: number };

/**
 * The ClientRequestToken (<= 36 chars) for a unit. Derived, not random: a retry of an
 * ambiguous commit is then the SAME request, and DynamoDB applies it at most once (10 min).
 */
export function unitToken(job: string, generation: Generation, unit: number, variant = ''): string {
  return createHash('sha256').update(`${job}\u0000${generation}\u0000${unit}\u0000${variant}`).digest('base64url').slice(0, 36);
}

function assertFenceRef(fence: FenceRef): void {
  if (typeof fence?.table !== 'string' || fence.table.length < 3) throw new InvalidInputError('fence.table', 'must be a table name');
  if (typeof fence.resource !== 'string' || fence.resource.length === 0) {
    throw new InvalidInputError('fence.resource', 'must be a non-empty string');
  }
}

type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

/** Builds the transaction, validating everything DynamoDB would reject, before anything is sent. */
export function buildFencedUnit(unit: FencedUnit, now: number): { items: TransactItem[]; token: string } {
  if (typeof unit !== 'object' || unit === null) throw new InvalidInputError('unit', 'must be an object');
  assertFenceRef(unit.fence);
  asGeneration(unit.generation);
  const cp = unit.checkpoint;
  if (typeof cp?.table !== 'string' || cp.table.length < 3) throw new InvalidInputError('checkpoint.table', 'must be a table name');
  if (typeof cp.key !== 'string' || cp.key.length === 0) throw new InvalidInputError('checkpoint.key', 'must be a non-empty string');
  if (!Number.isSafeInteger(cp.expected) || cp.expected < 0) throw new InvalidInputError('checkpoint.expected', 'must be an integer >= 0');
  if (!Number.isSafeInteger(cp.next) || cp.next <= cp.expected) throw new InvalidInputError('checkpoint.next', 'must be an integer > expected');
  if (cp.set != null && (typeof cp.set !== 'object' || Array.isArray(cp.set))) throw new InvalidInputError('checkpoint.set', 'must be an object of attribute values');
  if (cp.set != null) itemBytes(cp.set, 'checkpoint.set');
  if (cp.remove != null && (!Array.isArray(cp.remove) || cp.remove.some((a) => typeof a !== 'string'))) {
    throw new InvalidInputError('checkpoint.remove', 'must be an array of attribute names');
  }
  const token = unit.token;
  if (typeof token?.job !== 'string' || token.job.length === 0 || !Number.isSafeInteger(token.unit) || (token.variant !== undefined && typeof token.variant !== 'string')) {
    throw new InvalidInputError('token', 'must be { job: non-empty string, unit: integer, variant?: string }');
  }
  if (!Array.isArray(unit.effects)) throw new InvalidInputError('effects', 'must be an array');
  const total = unit.effects.length + 2;
  if (total > MAX_TRANSACTION_ACTIONS) {
    throw new InvalidInputError('effects', `a unit is one transaction of at most ${MAX_TRANSACTION_ACTIONS} actions; got ${total} (fence + checkpoint + ${unit.effects.length} effects)`);
  }

  const seen = new Set<string>([`${unit.fence.table}\u0000${unit.fence.resource}`]);
  const claim = (table: string, key: string, field: string) => {
    const id = `${table}\u0000${key}`;
    if (seen.has(id)) throw new InvalidInputError(field, `two actions on one item (${table} ${key}) in one transaction`);
    seen.add(id);
  };
  claim(cp.table, cp.key, 'checkpoint');

  const items: TransactItem[] = [
    {
      Update: {
        TableName: unit.fence.table,
        Key: { [FENCE_ATTR.key]: unit.fence.resource },
        // Equal generations pass: one holder commits many units. The fence orders holders, it does not dedupe.
        ConditionExpression: 'attribute_not_exists(#g) OR #g <= :g',
        UpdateExpression: 'SET #g = :g, #u = :now',
        ExpressionAttributeNames: { '#g': FENCE_ATTR.generation, '#u': FENCE_ATTR.updatedAt },
        ExpressionAttributeValues: { ':g': unit.generation, ':now': now },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    checkpointItem(cp, unit.generation),
  ];

  let effectBytes = 0;
  unit.effects.forEach((effect, i) => {
    const field = `effects[${i}]`;
    if (effect?.kind !== 'upsert' && effect?.kind !== 'once') throw new InvalidInputError(`${field}.kind`, 'must be "upsert" or "once"');
    if (typeof effect.table !== 'string' || effect.table.length < 3) throw new InvalidInputError(`${field}.table`, 'must be a table name');
    assertEffectItem(effect.item, `${field}.item`);
    claim(effect.table, effect.item.pk, field);
    const size = itemBytes(effect.item, `${field}.item`);
    effectBytes += size;
    if (size > MAX_ITEM_BYTES) throw new InvalidInputError(`${field}.item`, `item of ~${size} bytes exceeds DynamoDB's 400 KB item limit`);
    items.push({
      Put:
        effect.kind === 'once'
          ? { TableName: effect.table, Item: effect.item, ConditionExpression: ONCE_CONDITION }
          : { TableName: effect.table, Item: effect.item },
    });
  });

  // The effects' items, plus the fence and checkpoint actions as a stand-in for their items.
  const bytes = effectBytes + Buffer.byteLength(JSON.stringify(items.slice(0, 2), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
  if (bytes > MAX_TRANSACTION_BYTES) {
    throw new InvalidInputError('effects', `transaction of ~${bytes} bytes exceeds DynamoDB's 4 MB limit`);
  }
  return { items, token: unitToken(unit.token.job, unit.generation, unit.token.unit, unit.token.variant) };
}

function checkpointItem(cp: Checkpoint, generation: Generation): TransactItem {
  const names: Record<string, string> = { '#cursor': JOB_ATTR.cursor, '#gen': JOB_ATTR.generation };
  const values: Record<string, unknown> = { ':expected': cp.expected, ':next': cp.next, ':g': generation };
  const sets = ['#cursor = :next', '#gen = :g'];
  const managed = (attr: string) => attr === JOB_ATTR.cursor || attr === JOB_ATTR.generation || attr === JOB_ATTR.key;
  Object.entries(cp.set ?? {}).forEach(([attr, value], i) => {
    if (managed(attr)) throw new InvalidInputError(`checkpoint.set.${attr}`, 'is managed by the fenced unit');
    if (attr === '') throw new InvalidInputError('checkpoint.set', 'attribute names must be non-empty');
    names[`#s${i}`] = attr;
    values[`:s${i}`] = value;
    sets.push(`#s${i} = :s${i}`);
  });
  const removes = (cp.remove ?? []).map((attr, i) => {
    // DynamoDB refuses a REMOVE of a key or of a path the same update SETs ("overlapping paths").
    if (attr === '' || managed(attr) || Object.hasOwn(cp.set ?? {}, attr)) throw new InvalidInputError(`checkpoint.remove[${i}]`, `cannot remove ${JSON.stringify(attr)}: empty, managed by the fenced unit, or also set`);
    names[`#r${i}`] = attr;
    return `#r${i}`;
  });
  return {
    Update: {
      TableName: cp.table,
      Key: { pk: cp.key },
      ConditionExpression: '#cursor = :expected',
      UpdateExpression: `SET ${sets.join(', ')}` + (removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

interface CancellationReason {
  Code?: string;
  Message?: string;
  Item?: Record<string, AttributeValue>;
}

const isCancelled = (e: unknown): e is Error & { CancellationReasons?: CancellationReason[] } =>
  e instanceof Error && e.name === 'TransactionCanceledException';

const isIdempotentMismatch = (e: unknown): boolean => e instanceof Error && e.name === 'IdempotentParameterMismatchException';

/** Worth sending the identical request again (same token) after a pause. */
const isTransient = (e: unknown): boolean =>
  e instanceof Error &&
  (e.name === 'TransactionInProgressException' ||
    e.name === 'ProvisionedThroughputExceededException' ||
    e.name === 'ThrottlingException' ||
    e.name === 'RequestLimitExceeded');

/**
 * A unit ready to send: the transaction of buildFencedUnit, marshalled once into DynamoDB's wire
 * form (the low-level TransactWriteItems input), with its token. Preparing is pure CPU and does
 * not depend on the previous unit's outcome, so a worker prepares unit n+1 while unit n is in
 * flight. Tied to the exact unit object and `now` it was built from: commitFencedUnit uses it
 * only for that unit and that `now`, and builds afresh otherwise.
 */
export interface PreparedUnit {
  readonly unit: FencedUnit;
  readonly now: number;
  readonly items: TransactWriteItem[];
  readonly token: string;
}

export function prepareFencedUnit(unit: FencedUnit, now: number, options?: marshallOptions): PreparedUnit {
  const { items, token } = buildFencedUnit(unit, now);
  const wire = items.map((item): TransactWriteItem => {
    if (item.Put !== undefined) return { Put: { ...item.Put, Item: toAttributes(item.Put.Item ?? {}, options) } };
    const u = item.Update!;
    return {
      Update: {
        ...u,
        Key: toAttributes(u.Key ?? {}, options),
        ...(u.ExpressionAttributeValues === undefined ? {} : { ExpressionAttributeValues: toAttributes(u.ExpressionAttributeValues, options) }),
      },
    } as TransactWriteItem;
  });
  return { unit, now, items: wire, token };
}

/**
 * Commits one fenced unit: ONE TransactWriteItems. Returns how it went, or throws:
 * StaleGenerationError (fence moved past us), CheckpointMovedError (someone else progressed),
 * EffectAlreadyExistsError (a once-only effect is a duplicate), TransactionConflictError.
 * In every thrown case nothing of the unit was written.
 *
 * The request is the low-level TransactWriteItems with items marshalled once (prepareFencedUnit),
 * sent through the document client's own stack (same connection pool, middleware and retries):
 * the document client's marshalling pass is skipped on the hot path, nothing else changes.
 */
export async function commitFencedUnit(
  ctx: FenceContext,
  unit: FencedUnit,
  opts: { now?: number; prepared?: PreparedUnit } = {},
): Promise<CommitOutcome> {
  const clock = ctx.clock ?? systemClock;
  // A caller retrying an ambiguous commit passes the same `now`: identical parameters under
  // the same token are the same request to DynamoDB (different ones would be refused).
  const now = opts.now ?? opts.prepared?.now ?? clock.wallNow();
  const prepared =
    opts.prepared !== undefined && opts.prepared.unit === unit && opts.prepared.now === now
      ? opts.prepared
      : prepareFencedUnit(unit, now, marshallOptionsOf(ctx.doc));
  let command = new TransactWriteItemsCommand({ TransactItems: prepared.items, ClientRequestToken: prepared.token });
  const maxAttempts = ctx.maxConflictAttempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    try {
      // The identical command on every attempt: same token, same parameters.
      await sendLowLevel(ctx.doc, command);
      return { status: 'committed', attempts: attempt };
    } catch (e) {
      if (isCancelled(e)) {
        const decoded = decodeCancellation(unit, e.CancellationReasons ?? [], e);
        if (decoded === 'already-committed') return { status: 'already-committed', attempts: attempt };
        if (decoded !== 'conflict') throw decoded;
        if (attempt >= maxAttempts) throw new TransactionConflictError(attempt, { cause: e });
      } else if (isIdempotentMismatch(e) && command.input.ClientRequestToken !== undefined) {
        // The token was used within DynamoDB's 10-minute window by a request with other
        // parameters: an earlier call for this same unit (another `now`, another heartbeat),
        // which may have committed. Resend WITHOUT the token: every condition is evaluated
        // afresh and the checkpoint tells whether our generation already committed the unit.
        command = new TransactWriteItemsCommand({ TransactItems: prepared.items });
        continue;
      } else if (!isTransient(e) || attempt >= maxAttempts) {
        throw e;
      }
      await clock.sleep(fullJitter(attempt, ctx.backoff ?? defaultBackoff, ctx.random));
    }
  }
}

/**
 * CancellationReasons are positional: [0] fence, [1] checkpoint, [2..] effects. The fence
 * verdict comes first: an obsolete holder is told it is obsolete, whatever else failed.
 */
export function decodeCancellation(
  unit: FencedUnit,
  reasons: readonly CancellationReason[],
  cause: unknown,
): Error | 'conflict' | 'already-committed' {
  const item = (r: CancellationReason | undefined) => (r === undefined ? undefined : conditionFailureItem(r));
  const failed = (r: CancellationReason | undefined) => r?.Code === 'ConditionalCheckFailed';

  const [fence, checkpoint, ...effects] = reasons;
  if (failed(fence)) {
    const current = item(fence)?.[FENCE_ATTR.generation];
    return new StaleGenerationError(unit.fence.resource, unit.generation, typeof current === 'number' ? asGeneration(current) : undefined);
  }
  if (failed(checkpoint)) {
    const old = item(checkpoint);
    const cursor = old?.[JOB_ATTR.cursor];
    // Our generation moved the cursor past this unit: an earlier attempt of ours committed it.
    if (typeof cursor === 'number' && cursor >= unit.checkpoint.next && old?.[JOB_ATTR.generation] === unit.generation) {
      return 'already-committed';
    }
    return new CheckpointMovedError(unit.checkpoint.key, unit.checkpoint.expected, typeof cursor === 'number' ? cursor : undefined);
  }
  const duplicates = unit.effects.filter((_, i) => failed(effects[i])).map((e) => ({ table: e.table, key: e.item.pk }));
  const first = duplicates[0];
  if (first !== undefined) return new EffectAlreadyExistsError(first.table, first.key, duplicates);
  if (reasons.some((r) => r.Code === 'TransactionConflict')) return 'conflict';
  return new TransactionFailedError(reasons, { cause });
}
