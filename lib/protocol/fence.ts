/**
 * The fence: the resource remembers the greatest generation it accepted and never accepts a
 * lower one, in the SAME transaction as the effect. This, not the lease, stops an obsolete
 * holder: a lease only lets a successor start.
 *
 * This module: the fence item (items.ts FENCE_ATTR) and its raise, which a successor sends right
 * after acquiring and before reading. The fenced unit (fence + checkpoint + effects in one
 * transaction) is built in fenced-unit.ts and committed in commit.ts.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { BackoffPolicy, Random } from './backoff.js';
import { systemClock, type Clock } from './clock.js';
import { conditionFailureItem, fromAttributes, isConditionalCheckFailed, marshallOptionsOf, sendLowLevel, toAttributes } from './dynamo.js';
import { InvalidInputError, StaleGenerationError } from './errors.js';
import { asGeneration, type Generation } from './generation.js';
import { FENCE_ATTR } from './items.js';

/** Where a fence lives: its table and the protected resource's key. */
export interface FenceRef {
  readonly table: string;
  /** The protected resource's key, e.g. `fence#<jobId>`. */
  readonly resource: string;
}

/** What fence operations need: the document client, and the clock, jitter and retry policy for commits. */
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

/** Throws InvalidInputError unless the reference names a table and a non-empty resource. */
export function assertFenceRef(fence: FenceRef): void {
  if (typeof fence?.table !== 'string' || fence.table.length < 3) throw new InvalidInputError('fence.table', 'must be a table name');
  if (typeof fence.resource !== 'string' || fence.resource.length === 0) {
    throw new InvalidInputError('fence.resource', 'must be a non-empty string');
  }
}
