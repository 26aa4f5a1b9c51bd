// tier: quick
/**
 * The single-record guard (lib/protocol/conditional.ts) on DynamoDB Local: a record that is its
 * own fence. What it protects (the record it is on), what it does not (any other record), and the
 * check-then-act variant the article warns about, each as a forced interleaving.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { commitFencedUnit, guardedPut, makeGeneration, raiseFence, StaleGenerationError, StaleRecordError, upsert } from '../lib/protocol/index.js';
import { fenceOf, getItem, putJob, unit } from './support/fixtures.js';
import { countRequests } from './support/request-counter.js';
import { proxiedTables } from './support/tables.js';

const env = proxiedTables(import.meta.filename);
const g7 = makeGeneration(0, 7);
const g8 = makeGeneration(0, 8);
const record = (key: string) => getItem(env.t, env.t.names.records, key);

describe('guardedPut: the record remembers the greatest generation that wrote it', () => {
  it("an obsolete writer (7) is refused on a record generation 8 wrote, which keeps 8's write; an unconditional put in its place overwrites it", async () => {
    const { doc, client } = env.dynamo();
    const table = env.t.names.records;
    const counter = countRequests(client);
    expect(await guardedPut(doc, table, { pk: 'balance#guard', amountCents: 800, generation: g8 })).toEqual({ ok: true, value: { previous: undefined } });
    expect(Object.fromEntries(counter.counts)).toEqual({ PutItem: 1 }); // one request, no fence item

    const late = await guardedPut(doc, table, { pk: 'balance#guard', amountCents: 700, generation: g7 });
    expect(late.ok).toBe(false);
    if (late.ok) return;
    expect(late.error).toBeInstanceOf(StaleRecordError);
    expect(late.error).toMatchObject({ table, key: 'balance#guard', attempted: g7, current: g8, existing: { amountCents: 800, generation: g8 } });
    expect(await record('balance#guard')).toEqual({ pk: 'balance#guard', amountCents: 800, generation: g8 });

    // The race the condition removes: the same late write without it.
    await doc.send(new PutCommand({ TableName: table, Item: { pk: 'balance#guard', amountCents: 700, generation: g7 } }));
    expect(await record('balance#guard')).toMatchObject({ amountCents: 700, generation: g7 });
  });

  it('equal generations pass (one holder writes many times), and a put resent by the SDK after its response was lost is harmless', async () => {
    const { doc } = env.dynamo({ viaProxy: true, maxAttempts: 3 });
    const table = env.t.names.records;
    await guardedPut(doc, table, { pk: 'balance#equal', amountCents: 100, generation: g8 });
    const lost = env.proxy.drop({ target: 'PutItem', when: (q) => q.json?.Item?.pk?.S === 'balance#equal' });

    const again = await guardedPut(doc, table, { pk: 'balance#equal', amountCents: 200, generation: g8 });

    expect(lost.hits).toBe(1);
    // The first send applied and its answer was lost; the resend met generation 8 and passed again.
    expect(again).toEqual({ ok: true, value: { previous: g8 } });
    expect(await record('balance#equal')).toEqual({ pk: 'balance#equal', amountCents: 200, generation: g8 });
  });

  it('the race it loses: it does not protect a second record; the obsolete writer lands on a record 8 has not written yet, where the fence in the same transaction refuses it', async () => {
    const { doc } = env.dynamo();
    const table = env.t.names.records;
    // Holder 8 took over from paused holder 7 and has written the first of the two records.
    await guardedPut(doc, table, { pk: 'ledger#a', amountCents: 800, generation: g8 });

    // 7 wakes and writes the second record: nothing on that record knows about 8.
    const second = await guardedPut(doc, table, { pk: 'ledger#b', amountCents: 700, generation: g7 });
    expect(second.ok).toBe(true);
    expect(await record('ledger#b')).toMatchObject({ amountCents: 700, generation: g7 });

    // Effects on several records need one fence for all of them, checked in the same transaction.
    const job = 'job-two-records';
    await putJob(env.t, job);
    await raiseFence({ doc }, fenceOf(env.t, job), g8);
    const stale = unit(env.t, job, g7, 0, [upsert(table, { pk: 'ledger#c', amountCents: 700, generation: g7 })]);
    await expect(commitFencedUnit({ doc }, stale)).rejects.toBeInstanceOf(StaleGenerationError);
    expect(await record('ledger#c')).toBeUndefined();
  });

  it('check-then-act loses where the guard does not: read the generation, compare in code, write without a condition, and 8 writing in between is overwritten', async () => {
    const { doc } = env.dynamo();
    const table = env.t.names.records;
    await guardedPut(doc, table, { pk: 'balance#cta', amountCents: 600, generation: makeGeneration(0, 6) });

    // Holder 7 reads the record and finds it may write (6 <= 7)...
    const read = await doc.send(new GetCommand({ TableName: table, Key: { pk: 'balance#cta' }, ConsistentRead: true }));
    expect((read.Item?.generation as number) <= g7).toBe(true);
    // ...pauses; holder 8 writes...
    await guardedPut(doc, table, { pk: 'balance#cta', amountCents: 800, generation: g8 });
    // ...7 resumes and writes on the strength of its earlier check: 8's write is gone.
    await doc.send(new PutCommand({ TableName: table, Item: { pk: 'balance#cta', amountCents: 700, generation: g7 } }));
    expect(await record('balance#cta')).toMatchObject({ amountCents: 700, generation: g7 });

    // The same interleaving with the check inside the write.
    await guardedPut(doc, table, { pk: 'balance#cta', amountCents: 800, generation: g8 });
    expect((await guardedPut(doc, table, { pk: 'balance#cta', amountCents: 700, generation: g7 })).ok).toBe(false);
    expect(await record('balance#cta')).toMatchObject({ amountCents: 800, generation: g8 });
  });
});
