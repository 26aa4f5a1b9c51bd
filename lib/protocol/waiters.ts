/**
 * The waiter table of the fair acquire (fair-acquire.ts): a queue of contenders per lease key.
 * Its items are HINTS, not tokens: they order contenders and tell each one when to look, but no
 * grant depends on them (the lease's conditional acquire stays the one serialization point), so
 * any of them may be removed at any time. That is why they live in a table of their own, created
 * by the caller, and never in the Leases table, whose items must never be deleted.
 *
 * Table: partition key `pk` (S, the lease key), sort key `sk` (N). Per lease key:
 *   sk = 0     the ticket counter: `last` (N), the last ticket handed out (atomic ADD), and
 *              `served` (N), the last ticket granted the lease: `last - served` tickets ahead,
 *              some perhaps given up (their waiters gone), so at most that many waiters
 *   sk = t > 0 the waiter holding ticket t: `owner`, `token` (random, one per registration:
 *              it tells a waiter's own item from a successor's), `expiresAt` (N, wall-clock
 *              ms): the waiter's promise to act again (look, or renew this promise) before then.
 * A waiter is removed by itself when it is granted the lease or gives up, or by the waiter
 * behind it once its promise has lapsed. Nothing here relies on TTL.
 */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { LeaseKey } from './brand.js';
import { conditionFailureItem, isConditionalCheckFailed } from './dynamo.js';

/** The waiter items' attribute names (a contract: operators read this table to see a queue). */
export const WAITER_ATTR = { key: 'pk', ticket: 'sk', last: 'last', served: 'served', owner: 'owner', token: 'token', expiresAt: 'expiresAt' } as const;

/** The sort key of the ticket counter: waiters hold tickets 1, 2, 3... */
export const COUNTER_SK = 0;

/**
 * The CreateTable input for a waiter table (on-demand, no stream, no TTL). In CDK: partitionKey
 * `{ name: 'pk', type: STRING }`, sortKey `{ name: 'sk', type: NUMBER }`.
 */
export function waitersTableInput(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: WAITER_ATTR.key, AttributeType: 'S' },
      { AttributeName: WAITER_ATTR.ticket, AttributeType: 'N' },
    ],
    KeySchema: [
      { AttributeName: WAITER_ATTR.key, KeyType: 'HASH' },
      { AttributeName: WAITER_ATTR.ticket, KeyType: 'RANGE' },
    ],
  };
}

/** One queued contender, as its item says. */
export interface Waiter {
  readonly ticket: number;
  readonly owner: string;
  readonly token: string;
  readonly expiresAt: number;
}

/** Where a lease key's queue lives. */
export interface Queue {
  readonly doc: DynamoDBDocumentClient;
  readonly table: string;
  readonly key: LeaseKey;
}

const A = WAITER_ATTR;

function waiterOf(item: Record<string, unknown> | undefined): Waiter | undefined {
  if (item === undefined) return undefined;
  const { [A.ticket]: ticket, [A.owner]: owner, [A.token]: token, [A.expiresAt]: expiresAt } = item;
  if (typeof ticket !== 'number' || typeof owner !== 'string' || typeof token !== 'string' || typeof expiresAt !== 'number') return undefined;
  return { ticket, owner, token, expiresAt };
}

/** The queue as one Query shows it: the ticket counter (if a queue ever formed) and the first waiter. */
export interface QueueState {
  readonly counter: { readonly last: number; readonly served: number } | undefined;
  readonly head: Waiter | undefined;
}

/** The counter and the first waiter (lowest ticket): one strongly consistent Query of at most two items. */
export async function queueState(q: Queue): Promise<QueueState> {
  const out = await q.doc.send(
    new QueryCommand({
      TableName: q.table,
      KeyConditionExpression: '#pk = :k AND #sk >= :counter',
      ExpressionAttributeNames: { '#pk': A.key, '#sk': A.ticket },
      ExpressionAttributeValues: { ':k': q.key, ':counter': COUNTER_SK },
      ConsistentRead: true,
      Limit: 2,
    }),
  );
  const items = out.Items ?? [];
  const counter = items.find((i) => i[A.ticket] === COUNTER_SK);
  const last = counter?.[A.last];
  const served = counter?.[A.served];
  return {
    counter: typeof last === 'number' ? { last, served: typeof served === 'number' ? served : 0 } : undefined,
    head: items.map((i) => waiterOf(i)).find((w) => w !== undefined),
  };
}

/**
 * The next ticket: one atomic ADD on the counter item, which also tells how many tickets ahead
 * have not been served yet. A retried lost response skips a number, which is harmless.
 */
export async function takeTicket(q: Queue): Promise<{ ticket: number; served: number }> {
  const out = await q.doc.send(
    new UpdateCommand({
      TableName: q.table,
      Key: { [A.key]: q.key, [A.ticket]: COUNTER_SK },
      UpdateExpression: 'ADD #last :one',
      ExpressionAttributeNames: { '#last': A.last },
      ExpressionAttributeValues: { ':one': 1 },
      ReturnValues: 'ALL_NEW',
    }),
  );
  const last = out.Attributes?.[A.last];
  const served = out.Attributes?.[A.served];
  if (typeof last !== 'number') throw new TypeError(`${q.table}: the ticket counter of ${q.key} returned no number`);
  return { ticket: last, served: typeof served === 'number' ? served : 0 };
}

/**
 * How many waiter items hold a ticket below `ticket`: one strongly consistent Query that counts
 * (Select COUNT: no item comes back). A short count (an item not yet written, a second page past
 * 1 MB) only makes a promise short, which its waiter renews before it sleeps.
 */
export async function waitersBefore(q: Queue, ticket: number): Promise<number> {
  if (ticket <= COUNTER_SK + 1) return 0;
  const out = await q.doc.send(
    new QueryCommand({
      TableName: q.table,
      KeyConditionExpression: '#pk = :k AND #sk BETWEEN :first AND :before',
      ExpressionAttributeNames: { '#pk': A.key, '#sk': A.ticket },
      ExpressionAttributeValues: { ':k': q.key, ':first': COUNTER_SK + 1, ':before': ticket - 1 },
      ConsistentRead: true,
      Select: 'COUNT',
    }),
  );
  return out.Count ?? 0;
}

/** Records that `ticket` was granted the lease (never moving the mark back). False when a later ticket was recorded first. */
export async function markServed(q: Queue, ticket: number): Promise<boolean> {
  try {
    await q.doc.send(
      new UpdateCommand({
        TableName: q.table,
        Key: { [A.key]: q.key, [A.ticket]: COUNTER_SK },
        UpdateExpression: 'SET #served = :t',
        ConditionExpression: 'attribute_not_exists(#served) OR #served < :t',
        ExpressionAttributeNames: { '#served': A.served },
        ExpressionAttributeValues: { ':t': ticket },
      }),
    );
    return true;
  } catch (e) {
    if (isConditionalCheckFailed(e)) return false;
    throw e;
  }
}

/** Writes the waiter's item. A retry after a lost response finds its own token and is a success. */
export async function register(q: Queue, w: Waiter): Promise<void> {
  try {
    await q.doc.send(
      new PutCommand({
        TableName: q.table,
        Item: { [A.key]: q.key, [A.ticket]: w.ticket, [A.owner]: w.owner, [A.token]: w.token, [A.expiresAt]: w.expiresAt },
        // Tickets are unique; the condition only keeps a bug from overwriting another waiter.
        ConditionExpression: 'attribute_not_exists(#sk)',
        ExpressionAttributeNames: { '#sk': A.ticket },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  } catch (e) {
    if (isConditionalCheckFailed(e) && waiterOf(conditionFailureItem(e))?.token === w.token) return;
    throw e;
  }
}

/** What a waiter sees in one strongly consistent Query: its own item (if still there) and its nearest predecessor. */
export interface View {
  readonly me: Waiter | undefined;
  readonly predecessor: Waiter | undefined;
}

export async function view(q: Queue, ticket: number, token: string): Promise<View> {
  const out = await q.doc.send(
    new QueryCommand({
      TableName: q.table,
      // Tickets 1..mine, highest first: mine, then the one right before it. The counter (sk 0) is outside.
      KeyConditionExpression: '#pk = :k AND #sk BETWEEN :first AND :mine',
      ExpressionAttributeNames: { '#pk': A.key, '#sk': A.ticket },
      ExpressionAttributeValues: { ':k': q.key, ':first': COUNTER_SK + 1, ':mine': ticket },
      ScanIndexForward: false,
      ConsistentRead: true,
      Limit: 2,
    }),
  );
  const items = (out.Items ?? []).map((i) => waiterOf(i)).filter((w): w is Waiter => w !== undefined);
  const mine = items[0]?.ticket === ticket && items[0].token === token ? items[0] : undefined;
  return { me: mine, predecessor: items.find((w) => w.ticket < ticket) };
}

/** Moves the waiter's promise. False when its item is gone or is not its own: it was skipped. */
export async function renewPromise(q: Queue, w: Pick<Waiter, 'ticket' | 'token'>, expiresAt: number): Promise<boolean> {
  try {
    await q.doc.send(
      new UpdateCommand({
        TableName: q.table,
        Key: { [A.key]: q.key, [A.ticket]: w.ticket },
        UpdateExpression: 'SET #exp = :exp',
        ConditionExpression: '#token = :token',
        ExpressionAttributeNames: { '#exp': A.expiresAt, '#token': A.token },
        ExpressionAttributeValues: { ':exp': expiresAt, ':token': w.token },
      }),
    );
    return true;
  } catch (e) {
    if (isConditionalCheckFailed(e)) return false;
    throw e;
  }
}

/**
 * Removes a waiter's item, only as it was seen: its token and, when given, the promise seen (a
 * watcher removing a lapsed predecessor must not remove one that renewed meanwhile). False when
 * the item is not (or no longer) that: someone else removed it, or it renewed.
 */
export async function removeWaiter(q: Queue, w: Pick<Waiter, 'ticket' | 'token'> & { expiresAt?: number }): Promise<boolean> {
  const names: Record<string, string> = { '#token': A.token };
  const values: Record<string, unknown> = { ':token': w.token };
  let condition = '#token = :token';
  if (w.expiresAt !== undefined) {
    names['#exp'] = A.expiresAt;
    values[':exp'] = w.expiresAt;
    condition += ' AND #exp = :exp';
  }
  try {
    await q.doc.send(
      new DeleteCommand({
        TableName: q.table,
        Key: { [A.key]: q.key, [A.ticket]: w.ticket },
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (e) {
    if (isConditionalCheckFailed(e)) return false;
    throw e;
  }
}
