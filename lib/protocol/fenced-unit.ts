/**
 * A fenced unit is ONE TransactWriteItems:
 *   [0] fence      SET generation = :g          IF generation <= :g   (equal is allowed)
 *   [1] checkpoint SET cursor = :next, ...      IF cursor = :expected
 *   [2..] effects  upserts (fence only) and once-only creations (attribute_not_exists(pk)),
 *                  each stamped with the fence's generation and updatedAt (the tie, items.ts)
 * All or nothing: a stale holder's unit leaves no effect behind. This module builds and
 * validates it (everything DynamoDB would reject is refused before anything is sent) and
 * marshals it once; commit.ts sends it.
 */
import { createHash } from 'node:crypto';
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { marshallOptions } from '@aws-sdk/util-dynamodb';
import { itemBytes, MAX_ITEM_BYTES, toAttributes } from './dynamo.js';
import { InvalidInputError } from './errors.js';
import { assertFenceRef, type FenceRef } from './fence.js';
import { asGeneration, type Generation } from './generation.js';
import { assertEffectItem, ONCE_CONDITION, type Effect } from './idempotency.js';
import { CHECKPOINT_ATTR, FENCE_ATTR, TIE_ATTR } from './items.js';

/** DynamoDB's limit on the actions of one TransactWriteItems: fence + checkpoint + 98 effects. */
export const MAX_TRANSACTION_ACTIONS = 100;
/** A fenced unit's transaction carries the fence and the checkpoint; the rest is effects. */
export const MAX_UNIT_EFFECTS = MAX_TRANSACTION_ACTIONS - 2;
/** DynamoDB's limit on the aggregate size of one transaction. */
export const MAX_TRANSACTION_BYTES = 4 * 1024 * 1024;

/** The progress a fenced unit advances, conditionally: only from `expected`, to `next`. */
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

/** One unit of work: the fence, its generation, the checkpoint advance and the effects, committed as ONE transaction. */
export interface FencedUnit {
  readonly fence: FenceRef;
  readonly generation: Generation;
  readonly checkpoint: Checkpoint;
  readonly effects: readonly Effect[];
  /** Identifies the unit for the idempotency token: (job, generation, unit[, variant]). */
  readonly token: { readonly job: string; readonly unit: number; readonly variant?: string };
}

/**
 * The ClientRequestToken (<= 36 chars) for a unit. Derived, not random: a retry of an
 * ambiguous commit is then the SAME request, and DynamoDB applies it at most once (10 min).
 */
export function unitToken(job: string, generation: Generation, unit: number, variant = ''): string {
  return createHash('sha256').update(`${job}\u0000${generation}\u0000${unit}\u0000${variant}`).digest('base64url').slice(0, 36);
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
  if (unit.effects.length > MAX_UNIT_EFFECTS) {
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
    // The tie: every effect carries the unit's generation and `now`, as the fence item does.
    const item = { ...effect.item, [TIE_ATTR.generation]: unit.generation, [TIE_ATTR.updatedAt]: now };
    const size = itemBytes(item, `${field}.item`);
    effectBytes += size;
    if (size > MAX_ITEM_BYTES) throw new InvalidInputError(`${field}.item`, `item of ~${size} bytes exceeds DynamoDB's 400 KB item limit`);
    items.push({
      Put:
        effect.kind === 'once'
          ? { TableName: effect.table, Item: item, ConditionExpression: ONCE_CONDITION }
          : { TableName: effect.table, Item: item },
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
  const names: Record<string, string> = { '#cursor': CHECKPOINT_ATTR.cursor, '#gen': CHECKPOINT_ATTR.generation };
  const values: Record<string, unknown> = { ':expected': cp.expected, ':next': cp.next, ':g': generation };
  const sets = ['#cursor = :next', '#gen = :g'];
  const managed = (attr: string) => attr === CHECKPOINT_ATTR.cursor || attr === CHECKPOINT_ATTR.generation || attr === CHECKPOINT_ATTR.key;
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
      Key: { [CHECKPOINT_ATTR.key]: cp.key },
      ConditionExpression: '#cursor = :expected',
      UpdateExpression: `SET ${sets.join(', ')}` + (removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}
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

/** Builds (buildFencedUnit) and marshals a unit once, for commitFencedUnit's `prepared` option. */
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
