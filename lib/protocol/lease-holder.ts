/**
 * What a holder sends: renew and release. Both are conditional on owner AND generation, never
 * on the version the holder rotated: a renewal whose response was lost can be retried (by the
 * SDK or by us) and still match, and a late release from an obsolete holder matches nothing.
 */
import { randomUUID } from 'node:crypto';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { leaseDeadline } from './clock.js';
import { conditionFailureItem, isConditionalCheckFailed, sendLowLevel } from './dynamo.js';
import { LeaseLostError } from './errors.js';
import { LEASE_ATTR as A } from './items.js';
import { holderOf, keyOf, valuesOf, type Item, type Lease, type LeaseContext } from './lease-model.js';

/** An update that only this holder's grant can make. */
function asHolder(ctx: LeaseContext, lease: Lease, update: string, names: Record<string, string>, values: Item): UpdateItemCommand {
  return new UpdateItemCommand({
    TableName: ctx.table,
    Key: keyOf(ctx, lease.key),
    ConditionExpression: '#owner = :me AND #generation = :g',
    UpdateExpression: update,
    ExpressionAttributeNames: { '#owner': A.owner, '#generation': A.generation, ...names },
    ExpressionAttributeValues: valuesOf(ctx, { ':me': lease.owner, ':g': lease.generation, ...values }),
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  });
}

/** Extends the lease; the new deadline counts from this call's send time. Throws LeaseLostError. */
export async function renewLease(ctx: LeaseContext, lease: Lease, opts: { abortSignal?: AbortSignal } = {}): Promise<Lease> {
  const version = randomUUID();
  const sendTime = ctx.clock.monotonicNow();
  const expiresAt = ctx.clock.wallNow() + ctx.rule.durationMs;
  const command = asHolder(
    ctx,
    lease,
    'SET #expiresAt = :exp, #version = :v, #durationMs = :d',
    { '#expiresAt': A.expiresAt, '#version': A.version, '#durationMs': A.durationMs },
    { ':exp': expiresAt, ':v': version, ':d': ctx.rule.durationMs },
  );
  try {
    await sendLowLevel(ctx.doc, command, opts.abortSignal ? { abortSignal: opts.abortSignal } : {});
  } catch (e) {
    if (isConditionalCheckFailed(e)) throw new LeaseLostError(lease.key, lease.generation, holderOf(conditionFailureItem(e)));
    throw e;
  }
  return { ...lease, version, expiresAt, deadline: leaseDeadline(sendTime, ctx.rule) };
}

/** Gives the lease up: removes owner and expiresAt, KEEPS generation (the counter never restarts). */
export async function releaseLease(ctx: LeaseContext, lease: Lease): Promise<{ released: boolean }> {
  const version = randomUUID();
  try {
    await sendLowLevel(ctx.doc, asHolder(ctx, lease, 'SET #version = :v REMOVE #owner, #expiresAt', { '#expiresAt': A.expiresAt, '#version': A.version }, { ':v': version }));
    return { released: true };
  } catch (e) {
    if (!isConditionalCheckFailed(e)) throw e;
    // A retried release whose first attempt applied sees its own version.
    return { released: holderOf(conditionFailureItem(e)).version === version };
  }
}
