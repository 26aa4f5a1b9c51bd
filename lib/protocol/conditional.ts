/**
 * The single-record guard: a record that is its own fence. The article: "Prefer conditional
 * updates for a single record." When the whole effect is ONE item, that item can remember the
 * greatest generation that wrote it and refuse a lower one, in the write itself:
 *
 *   PutItem  IF attribute_not_exists(generation) OR generation <= :g
 *
 * One request, 1 WCU for an item up to 1 KB, no fence item, no transaction. Equal generations
 * pass (one holder writes many times, and a retried put is harmless), so this is not duplicate
 * suppression (idempotency.ts is). What it does not protect: any OTHER record. An obsolete
 * writer is refused only on records a newer generation has already written; a second record the
 * successor has not touched yet accepts it. Effects spanning records need the fence in the same
 * transaction (fence.ts, commitFencedUnit). Every writer of the record must use this path: an
 * unconditional put from anywhere else overwrites whatever generation is there.
 */
import { PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionFailureItem, isConditionalCheckFailed } from './dynamo.js';
import { StaleRecordError } from './errors.js';
import { asGeneration, type Generation } from './generation.js';
import { assertEffectItem, type EffectItem } from './idempotency.js';
import { err, ok, type Result } from './result.js';

/** A guarded record: keyed by `pk`, carrying the writer's `generation`. */
export type GuardedItem = EffectItem & { generation: Generation };

/** The guard, as a condition on the record itself (the fence's condition, fence.ts). */
export const GUARD_CONDITION = 'attribute_not_exists(#g) OR #g <= :g';

/**
 * Writes `item` (a whole record) only if the stored record's generation is at most
 * `item.generation`. Ok: the generation the record had before (undefined if it is new). Err: a
 * StaleRecordError carrying the record as it is; nothing was written.
 */
export async function guardedPut(doc: DynamoDBDocumentClient, table: string, item: GuardedItem): Promise<Result<{ previous: Generation | undefined }, StaleRecordError>> {
  assertEffectItem(item);
  const generation = asGeneration(item.generation, 'item.generation');
  try {
    const out = await doc.send(
      new PutCommand({
        TableName: table,
        Item: item,
        ConditionExpression: GUARD_CONDITION,
        ExpressionAttributeNames: { '#g': 'generation' },
        ExpressionAttributeValues: { ':g': generation },
        ReturnValues: 'ALL_OLD',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    const before = out.Attributes?.generation;
    return ok({ previous: typeof before === 'number' ? asGeneration(before) : undefined });
  } catch (e) {
    if (!isConditionalCheckFailed(e)) throw e;
    const existing = conditionFailureItem(e);
    const current = existing?.generation;
    return err(new StaleRecordError(table, item.pk, generation, typeof current === 'number' ? asGeneration(current) : undefined, existing));
  }
}
