/**
 * Idempotency: a once-only effect carries its own operation key and is created only if that
 * key does not exist (`attribute_not_exists(pk)`).
 *
 * This is NOT the fence. The fence accepts equal generations (one holder commits many units),
 * so it cannot tell a first charge from a repeated one within a generation; the operation key
 * can. Conversely an operation key cannot stop an obsolete holder from overwriting an upsert:
 * that takes the fence. Three failures, three mechanisms (DESIGN.md).
 */
import { PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionFailureItem, isConditionalCheckFailed } from './dynamo.js';
import { EffectAlreadyExistsError, InvalidInputError } from './errors.js';
import { err, ok, type Result } from './result.js';

/** An effect's item: any attributes, keyed by `pk` (its operation key, for a once-only effect). */
export type EffectItem = Record<string, unknown> & { pk: string };

/** An effect of a fenced unit. `upsert` is guarded by the fence alone; `once` also by its key. */
export type Effect =
  | { readonly kind: 'upsert'; readonly table: string; readonly item: EffectItem }
  | { readonly kind: 'once'; readonly table: string; readonly item: EffectItem };

/** An effect the fence alone guards: the item is written (replaced) whenever the unit commits. */
export const upsert = (table: string, item: EffectItem): Effect => ({ kind: 'upsert', table, item });
/** An effect created only if its `pk` does not exist yet: a repeat within one generation is refused. */
export const onceOnly = (table: string, item: EffectItem): Effect => ({ kind: 'once', table, item });

/** The condition that makes a Put a once-only creation. */
export const ONCE_CONDITION = 'attribute_not_exists(pk)';

/** Throws InvalidInputError unless `item` is an object with a non-empty string `pk`. */
export function assertEffectItem(item: unknown, field = 'effect.item'): asserts item is EffectItem {
  if (typeof item !== 'object' || item === null) throw new InvalidInputError(field, 'must be an object');
  const pk = (item as Record<string, unknown>).pk;
  if (typeof pk !== 'string' || pk.length === 0) throw new InvalidInputError(`${field}.pk`, 'must be a non-empty string');
}

/**
 * A once-only creation outside a fenced unit (one PutItem). The existing record comes back
 * with the error, so the caller can compare it with what it meant to write.
 */
export async function putOnce(
  doc: DynamoDBDocumentClient,
  table: string,
  item: EffectItem,
): Promise<Result<void, EffectAlreadyExistsError & { existing?: Record<string, unknown> }>> {
  assertEffectItem(item);
  try {
    await doc.send(
      new PutCommand({
        TableName: table,
        Item: item,
        ConditionExpression: ONCE_CONDITION,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return ok(undefined);
  } catch (e) {
    if (!isConditionalCheckFailed(e)) throw e;
    const error = Object.assign(new EffectAlreadyExistsError(table, item.pk), {
      existing: conditionFailureItem(e),
    });
    return err(error);
  }
}
