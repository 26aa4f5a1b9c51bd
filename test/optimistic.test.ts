// tier: quick
/**
 * The optimistic version check (lib/protocol/optimistic.ts) on DynamoDB Local: interleaved
 * read-modify-writes are forced inside the change function (it runs between the read and the
 * write), lost responses with the fault proxy. Each claim beside the variant that loses it.
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { isConditionalCheckFailed, OptimisticWriteUncertainError, updateOptimistic, VersionConflictError, type VersionedRecord } from '../lib/protocol/index.js';
import { getItem } from './support/fixtures.js';
import { countRequests } from './support/request-counter.js';
import { proxiedTables } from './support/tables.js';

const env = proxiedTables(import.meta.filename);
const quick = { baseMs: 1, capMs: 1 };
const count = (r: Readonly<VersionedRecord> | undefined) => (typeof r?.count === 'number' ? r.count : 0);
const increment = (r: Readonly<VersionedRecord> | undefined): VersionedRecord => ({ ...r, count: count(r) + 1 });

describe('updateOptimistic', () => {
  it('two interleaved increments both land: the loser is refused, retries from the record its refusal returned (no extra read) and the count is 2; without the version condition one is lost', async () => {
    const { doc, client } = env.dynamo();
    const table = env.t.names.records;
    const counter = countRequests(client);
    const other = env.dynamo().doc;
    let interleaved = false;
    const out = await updateOptimistic({ doc, table, key: 'counter#both', backoff: quick }, async (current) => {
      // Between our read and our write, another writer completes a whole update.
      if (!interleaved) {
        interleaved = true;
        await updateOptimistic({ doc: other, table, key: 'counter#both' }, increment);
      }
      return increment(current);
    });
    expect(out).toMatchObject({ status: 'written', attempts: 2, record: { count: 2 } });
    expect(Object.fromEntries(counter.counts)).toEqual({ GetItem: 1, PutItem: 2 });
    expect(await getItem(env.t, table, 'counter#both')).toMatchObject({ count: 2, version: out.record?.version });

    // The same interleaving as read, compute, write without a condition.
    const naive = async (d: DynamoDBDocumentClient, between: () => Promise<void>) => {
      const read = await d.send(new GetCommand({ TableName: table, Key: { pk: 'counter#lost' }, ConsistentRead: true }));
      await between();
      await d.send(new PutCommand({ TableName: table, Item: { pk: 'counter#lost', count: count(read.Item) + 1 } }));
    };
    await naive(doc, () => naive(other, async () => undefined));
    expect(await getItem(env.t, table, 'counter#lost')).toMatchObject({ count: 1 });
  });

  it('under steady contention it gives up after maxAttempts with VersionConflictError carrying the current record; nothing of its last attempt is written', async () => {
    const { doc } = env.dynamo();
    const table = env.t.names.records;
    await updateOptimistic({ doc, table, key: 'counter#busy' }, () => ({ count: 0 }));
    let rivals = 0;
    const error = await updateOptimistic({ doc, table, key: 'counter#busy', maxAttempts: 3, backoff: quick }, async (current) => {
      // Every attempt meets a rival write between its read and its write.
      await doc.send(new PutCommand({ TableName: table, Item: { pk: 'counter#busy', count: 100 + ++rivals, version: `rival-${rivals}` } }));
      return { ...current, count: -1 };
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VersionConflictError);
    expect(error).toMatchObject({ table, key: 'counter#busy', attempts: 3, current: { count: 103, version: 'rival-3' } });
    expect(await getItem(env.t, table, 'counter#busy')).toEqual({ pk: 'counter#busy', count: 103, version: 'rival-3' });
  });

  it('a write whose response was lost and which the SDK resent counts as written: the change runs once and the counter moves by one, where re-reading and re-applying moves it by two', async () => {
    const { doc } = env.dynamo({ viaProxy: true, maxAttempts: 3 });
    const table = env.t.names.records;
    await updateOptimistic({ doc, table, key: 'counter#ambiguous' }, () => ({ count: 0 }));
    const drop = () => env.proxy.drop({ target: 'PutItem', when: (q) => q.json?.Item?.pk?.S === 'counter#ambiguous' });

    let runs = 0;
    const lost = drop();
    const out = await updateOptimistic({ doc, table, key: 'counter#ambiguous' }, (current) => (runs++, increment(current)));
    expect(lost.hits).toBe(1);
    expect(out).toMatchObject({ status: 'written', attempts: 1 });
    expect(runs).toBe(1);
    expect(await getItem(env.t, table, 'counter#ambiguous')).toMatchObject({ count: 1 });

    // The variant that treats every refusal as someone else's write: read again, apply again.
    const reapply = async () => {
      for (;;) {
        const read = await doc.send(new GetCommand({ TableName: table, Key: { pk: 'counter#ambiguous' }, ConsistentRead: true }));
        try {
          await doc.send(
            new PutCommand({
              TableName: table,
              Item: { pk: 'counter#ambiguous', count: count(read.Item) + 1, version: `v${Math.random()}` },
              ConditionExpression: 'version = :seen',
              ExpressionAttributeValues: { ':seen': read.Item?.version },
            }),
          );
          return;
        } catch (e) {
          if (!isConditionalCheckFailed(e)) throw e;
        }
      }
    };
    const lostAgain = drop();
    await reapply();
    expect(lostAgain.hits).toBe(1);
    expect(await getItem(env.t, table, 'counter#ambiguous')).toMatchObject({ count: 3 });
  });

  it('creates a missing record once: of two concurrent creators one writes and the other retries on top of it; a change returning undefined writes nothing', async () => {
    const { doc } = env.dynamo();
    const table = env.t.names.records;
    // Both read "absent" before either writes: each first change waits for the other's.
    let arrived = 0;
    let bothRead!: () => void;
    const barrier = new Promise<void>((r) => (bothRead = r));
    const creator = (who: number) => {
      let first = true;
      return updateOptimistic({ doc, table, key: 'counter#new', backoff: quick }, async (r) => {
        if (first) {
          first = false;
          if (++arrived === 2) bothRead();
          await barrier;
        }
        return { ...increment(r), [`by${who}`]: true };
      });
    };
    const outs = await Promise.all([creator(1), creator(2)]);
    expect(outs.map((o) => o.attempts).sort()).toEqual([1, 2]);
    expect(await getItem(env.t, table, 'counter#new')).toMatchObject({ count: 2, by1: true, by2: true });

    const before = await getItem(env.t, table, 'counter#new');
    const none = await updateOptimistic({ doc, table, key: 'counter#new' }, () => undefined);
    expect(none).toEqual({ status: 'unchanged', record: before, attempts: 1 });
    expect(await getItem(env.t, table, 'counter#new')).toEqual(before);
  });
});

describe('updateOptimistic when a resend meets another writer', () => {
  it('a put applied, its response lost, and another writer updating before the SDK resends: OptimisticWriteUncertainError, never the change applied twice', async () => {
    const table = env.t.names.records;
    const key = 'counter#resend-raced';
    const setup = env.dynamo().doc;
    await updateOptimistic({ doc: setup, table, key }, increment); // count 1
    const { doc, client } = env.dynamo({ viaProxy: true, maxAttempts: 3 });
    const other = env.dynamo().doc;
    const lost = env.proxy.drop({ target: 'PutItem', when: (q) => q.json?.Item?.pk?.S === key });
    // Per attempt (inside the SDK's retry loop): before the resend leaves, another writer increments.
    let puts = 0;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (/^Put(Item)?Command$/.test(String(context.commandName)) && ++puts === 2) await updateOptimistic({ doc: other, table, key }, increment);
        return next(args);
      },
      { step: 'finalizeRequest', priority: 'low', name: 'competeBeforeResend' },
    );
    const error = await updateOptimistic({ doc, table, key, backoff: quick }, increment).catch((e: unknown) => e);
    expect(lost.hits).toBe(1);
    expect(error).toBeInstanceOf(OptimisticWriteUncertainError);
    expect(count(await getItem(env.t, table, key))).toBe(3); // 1 + ours (applied) + the other writer's: not 4
  });
});

describe('updateOptimistic when the SDK does not resend a write that got no answer', () => {
  // One attempt and a short request timeout: the SDK gives up at once, with an error of its own.
  const once = () => env.dynamo({ viaProxy: true, maxAttempts: 1, requestTimeoutMs: 300 });

  it('a put applied and its connection cut (no resend): OptimisticWriteUncertainError, not the raw network error a caller would retry into a second apply', async () => {
    const table = env.t.names.records;
    const key = 'counter#cut-once';
    await updateOptimistic({ doc: env.dynamo().doc, table, key }, increment); // count 1
    const lost = env.proxy.drop({ target: 'PutItem', when: (q) => q.json?.Item?.pk?.S === key });
    let runs = 0;
    const error = await updateOptimistic({ doc: once().doc, table, key }, (c) => (runs++, increment(c))).catch((e: unknown) => e);
    expect(lost.hits).toBe(1);
    expect(runs).toBe(1);
    expect(error).toBeInstanceOf(OptimisticWriteUncertainError);
    expect((error as OptimisticWriteUncertainError).cause).toMatchObject({ $metadata: { attempts: 1 } });
    // It did apply: a caller that took the raw error as "not written" and ran it again would make this 3.
    expect(count(await getItem(env.t, table, key))).toBe(2);
  });

  it('a put applied and its answer held past the request timeout (no resend): OptimisticWriteUncertainError', async () => {
    const table = env.t.names.records;
    const key = 'counter#timeout-once';
    await updateOptimistic({ doc: env.dynamo().doc, table, key }, increment); // count 1
    const slow = env.proxy.delay({ target: 'PutItem', when: (q) => q.json?.Item?.pk?.S === key }, 3_000);
    const error = await updateOptimistic({ doc: once().doc, table, key }, increment).catch((e: unknown) => e);
    expect(slow.hits).toBe(1);
    expect(error).toBeInstanceOf(OptimisticWriteUncertainError);
    expect((error as OptimisticWriteUncertainError).cause).toMatchObject({ name: 'TimeoutError' });
    expect(count(await getItem(env.t, table, key))).toBe(2);
  });

  it('a definite refusal stays what it is: a throttled put (refused before it applied) and a validation error are thrown as the SDK reports them', async () => {
    const table = env.t.names.records;
    const key = 'counter#refused-once';
    await updateOptimistic({ doc: env.dynamo().doc, table, key }, increment); // count 1
    env.proxy.error({ target: 'PutItem', when: (q) => q.json?.Item?.pk?.S === key }, 'ThrottlingException');
    await expect(updateOptimistic({ doc: once().doc, table, key }, increment)).rejects.toMatchObject({ name: 'ThrottlingException' });
    await expect(updateOptimistic({ doc: once().doc, table, key }, (c) => ({ ...c, big: 'x'.repeat(410 * 1024) }))).rejects.toMatchObject({ name: 'ValidationException' });
    expect(count(await getItem(env.t, table, key))).toBe(1);
  });
});
