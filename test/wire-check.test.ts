// tier: quick
/**
 * The structural FENCE check (cli/check/wire-check.ts) on DynamoDB Local: the requests that reached the
 * engine through the proxy, and their answers. The stream tie (an effect and a fence write with
 * the same generation and updatedAt) cannot tell a fence raised in the unit's transaction from one
 * raised in a request of its own stamped alike; these tests hold that the wire can, and that the
 * real commit path passes it.
 */
import { BatchExecuteStatementCommand, ExecuteStatementCommand, ExecuteTransactionCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFencedUnit, commitFencedUnit, createDynamo, makeGeneration, raiseFence, upsert, onceOnly, type Dynamo, type FencedUnit, type Generation } from '../lib/protocol/index.js';
import { startFaultProxy, type FaultProxy, type WireExchange } from '../cli/local/fault-proxy.js';
import { checkInvariants } from '../cli/check/invariants.js';
import { streamsClient } from '../cli/local/streams.js';
import { WireCheck } from '../cli/check/wire-check.js';
import { followUpId, followUpsOf, markSentUnclaimed, outboxHttp, readOutboxItem, type FollowUpStep } from '../lib/workflow/index.js';
import { fenceOf, putJob } from './support/fixtures.js';
import { makeTables, type TestTables } from './support/tables.js';
import { FENCE_PREFIX, wireTables } from './support/workflow.js';

let t: TestTables;
let proxy: FaultProxy;
let via: Dynamo;
let exchanges: WireExchange[];
beforeAll(async () => {
  t = await makeTables(import.meta.filename);
  proxy = await startFaultProxy(t.endpoint, { onExchange: (ex) => exchanges.push(ex) });
  via = createDynamo({ endpoint: proxy.endpoint, maxAttempts: 3 });
});
afterAll(async () => {
  via?.client.destroy();
  await proxy?.close();
  t?.dynamo.client.destroy();
});

const g1 = makeGeneration(0, 1);
const g2 = makeGeneration(0, 2);

/** A unit of one invoice and one charge of `jobId`, carrying the job as every effect of the workflow does. */
function unitOf(jobId: string, generation: Generation, cursor: number, customer: string): FencedUnit {
  const item = { jobId, customerId: customer, amountCents: 100, currency: 'EUR', unit: cursor };
  return {
    fence: fenceOf(t, jobId),
    generation,
    checkpoint: { table: t.names.jobs, key: jobId, expected: cursor, next: cursor + 1 },
    effects: [upsert(t.names.records, { pk: `invoice#2026-09#${customer}#${jobId}`, ...item }), onceOnly(t.names.records, { pk: `charge#2026-09#${customer}#${jobId}`, ...item })],
    token: { job: jobId, unit: cursor },
  };
}

/** What the check says of the exchanges recorded while `body` ran. */
async function wireOf(body: () => Promise<void>) {
  exchanges = [];
  await body();
  // The units' fences are the invoice workload's (fixtures' fenceOf): the check reads that prefix.
  const check = new WireCheck(wireTables(t.names));
  for (const ex of exchanges) check.observe(ex);
  return check.report();
}

describe('the structural FENCE check, from the wire', () => {
  it('the real commit path: every effect inside a transaction with its fence action conditioned on its generation; nothing flagged', async () => {
    await putJob(t, 'wire-ok');
    const r = await wireOf(async () => {
      await raiseFence({ doc: via.doc }, fenceOf(t, 'wire-ok'), g1);
      for (const c of [0, 1, 2]) await commitFencedUnit({ doc: via.doc }, unitOf('wire-ok', g1, c, `c${c}`));
    });
    expect(r).toEqual({ transactions: 3, effectWritesChecked: 6, fenceWrites: 4, replays: 0, violations: [] });
  });

  it("the issue's probe: A raises the fence alone (stamped with the unit's now) and pauses; B raises to 2 and crashes; A's effects land. The stream tie passes it; the wire names both rules", async () => {
    await putJob(t, 'wire-split');
    const unit = unitOf('wire-split', g1, 0, 'c0');
    const now = Date.now();
    const { items } = buildFencedUnit(unit, now);
    const [fence, checkpoint, ...effects] = items;
    const r = await wireOf(async () => {
      await via.doc.send(new UpdateCommand(fence!.Update!)); // A: the fence in a request of its own
      await raiseFence({ doc: via.doc }, fenceOf(t, 'wire-split'), g2); // B, then B crashes
      const { ConditionExpression: _c, ...advance } = checkpoint!.Update!;
      await via.doc.send(new TransactWriteCommand({ TransactItems: [{ Update: { ...advance, ExpressionAttributeValues: { ':next': 1, ':g': g1 } } }, ...effects] }));
    });
    expect(r.violations).toEqual([
      "invoice#2026-09#c0#wire-split: generation 1 applied in a transaction without invoices#wire-split's action conditioned on generation <= 1",
      "charge#2026-09#c0#wire-split: generation 1 applied in a transaction without invoices#wire-split's action conditioned on generation <= 1",
      expect.stringMatching(/^(invoice|charge)#2026-09#c0#wire-split: generation 1 applied, sent \d+ ms after invoices#wire-split was raised to 2$/),
    ]);
    // The stream tie alone finds nothing: A's fence write carries the generation and updatedAt its effects carry.
    const streams = streamsClient(t.endpoint);
    try {
      const tieOnly = await checkInvariants({ client: t.dynamo.client, doc: t.dynamo.doc, streams }, t.names);
      expect(tieOnly.invariants.FENCE.violations.filter((v) => v.includes('wire-split'))).toEqual([]);
      expect(tieOnly.invariants.FENCE.unchecked).toEqual([expect.stringContaining('no proxy recorded the requests')]);
      const withWire = await checkInvariants({ client: t.dynamo.client, doc: t.dynamo.doc, streams }, t.names, {}, r);
      expect(withWire.invariants.FENCE.ok).toBe(false);
      expect(withWire.invariants.FENCE.violations[0]).toMatch(/^wire: invoice#2026-09#c0#wire-split/);
      expect(withWire.stats.wire).toMatchObject({ transactions: 1, violations: 3 });
    } finally {
      streams.destroy();
    }
  });

  it('a fence action without its condition, or conditioned on another generation, is no fence', async () => {
    await putJob(t, 'wire-cond');
    const r = await wireOf(async () => {
      const a = buildFencedUnit(unitOf('wire-cond', g1, 0, 'c0'), Date.now()).items;
      const { ConditionExpression: _c, ReturnValuesOnConditionCheckFailure: _r, ...unconditioned } = a[0]!.Update!;
      await via.doc.send(new TransactWriteCommand({ TransactItems: [{ Update: unconditioned }, ...a.slice(1)] }));
      const b = buildFencedUnit(unitOf('wire-cond', g2, 1, 'c1'), Date.now()).items;
      const looser = { ...b[0]!.Update!, ExpressionAttributeValues: { ...b[0]!.Update!.ExpressionAttributeValues, ':loose': g2 + 10 }, ConditionExpression: 'attribute_not_exists(#g) OR #g <= :loose' };
      await via.doc.send(new TransactWriteCommand({ TransactItems: [{ Update: looser }, ...b.slice(1)] }));
    });
    expect(r.transactions).toBe(2);
    expect(r.violations).toHaveLength(4);
    for (const v of r.violations) expect(v).toMatch(/applied in a transaction without invoices#wire-cond's action conditioned on generation <= \d+$/);
  });

  it('an outbox item created outside the unit (a put of its own after the commit), or its tie changed later, is flagged; a sender\'s delivery update is not', async () => {
    const r = await wireOf(async () => {
      const item = { pk: 'email#2026-09#c9', kind: 'email', jobId: 'wire-outbox', generation: g1, unit: 0, updatedAt: 1, status: 'PENDING', attempts: 0 };
      await via.doc.send(new PutCommand({ TableName: t.names.outbox, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
      await via.doc.send(new UpdateCommand({ TableName: t.names.outbox, Key: { pk: item.pk }, UpdateExpression: 'SET #s = :s, attempts = attempts + :one', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':s': 'SENDING', ':one': 1 } }));
      await via.doc.send(new UpdateCommand({ TableName: t.names.outbox, Key: { pk: item.pk }, UpdateExpression: 'SET #g = :g', ExpressionAttributeNames: { '#g': 'generation' }, ExpressionAttributeValues: { ':g': g2 } }));
    });
    expect(r.violations).toEqual([
      "email#2026-09#c9: generation 1 applied by a PutItem, not in a transaction with invoices#wire-outbox's action conditioned on generation <= 1",
      "email#2026-09#c9: an outbox item's generation changed by a UpdateItem after its creation",
    ]);
  });

  it("what the unit wrote on an outbox item stays as written: its request or path changed (a nested SET included), or its tie changed under placeholders named #add and #set, is flagged (red before: none of the four)", async () => {
    const pk = 'payment#2026-09#c8';
    // Created unobserved (the direct client): only the changes after it are on this wire.
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: { pk, kind: 'http', jobId: 'wire-meaning', generation: g1, unit: 0, updatedAt: 1, status: 'PENDING', attempts: 0, target: 'payments', request: { amountCents: 100 } } }));
    const update = (expr: string, names: Record<string, string>, values: Record<string, unknown>) => via.doc.send(new UpdateCommand({ TableName: t.names.outbox, Key: { pk }, UpdateExpression: expr, ExpressionAttributeNames: names, ExpressionAttributeValues: values }));
    const r = await wireOf(async () => {
      await update('SET #r.#a = :x', { '#r': 'request', '#a': 'amountCents' }, { ':x': 200 });
      await update('SET #p = :p', { '#p': 'path' }, { ':p': '/tenants/other' });
      await update('SET #add = :g', { '#add': 'generation' }, { ':g': g2 });
      await update('SET #set = :u ADD #n :one', { '#set': 'updatedAt', '#n': 'attempts' }, { ':u': 2, ':one': 1 });
    });
    expect(r.violations).toEqual(['request', 'path', 'generation', 'updatedAt'].map((a) => `${pk}: an outbox item's ${a} changed by a UpdateItem after its creation`));
  });

  it('a write by PartiQL (ExecuteStatement, BatchExecuteStatement, ExecuteTransaction) to a fence or effects table is named, whatever it writes; a PartiQL read is not (red before: effectWritesChecked 0, no violation)', async () => {
    await putJob(t, 'wire-partiql');
    const { records, outbox, fences } = t.names;
    const r = await wireOf(async () => {
      await raiseFence({ doc: via.doc }, fenceOf(t, 'wire-partiql'), g2);
      // The split-fence incident's stale effect, written by PartiQL after the raise to 2.
      await via.client.send(new ExecuteStatementCommand({ Statement: `INSERT INTO "${records}" VALUE {'pk': 'invoice#2026-09#c0#wire-partiql', 'jobId': 'wire-partiql', 'generation': 1}` }));
      await via.client.send(new BatchExecuteStatementCommand({ Statements: [{ Statement: `UPDATE "${records}" SET amountCents = 1 WHERE pk = 'invoice#2026-09#c0#wire-partiql'` }] }));
      await via.client.send(new ExecuteTransactionCommand({ TransactStatements: [{ Statement: `DELETE FROM "${outbox}" WHERE pk = 'nothing#there'` }] }));
      await via.client.send(new ExecuteStatementCommand({ Statement: `UPDATE "${fences}" SET generation = 0 WHERE pk = '${fenceOf(t, 'wire-partiql').resource}'` }));
      await via.client.send(new ExecuteStatementCommand({ Statement: `SELECT * FROM "${records}" WHERE pk = 'invoice#2026-09#c0#wire-partiql'` }));
    });
    expect(r.violations).toEqual([
      `${records}: written by a ExecuteStatement, which no effect or fence is written with and this check cannot read`,
      `${records}: written by a BatchExecuteStatement, which no effect or fence is written with and this check cannot read`,
      `${outbox}: written by a ExecuteTransaction, which no effect or fence is written with and this check cannot read`,
      `${fences}: written by a ExecuteStatement, which no effect or fence is written with and this check cannot read`,
    ]);
  });

  it('rule 4: a follow-up created by its parent\'s settle transaction passes; one put on its own, or in a transaction whose settle does not list it, is named (and one carrying a generation)', async () => {
    const jobId = 'job-follow';
    await putJob(t, jobId);
    const parentId = 'charge#2026-11#cust-1';
    const steps: FollowUpStep[] = [{ name: 'receipt', after: 'payments', on: 'accepted', creates: 'email', description: '', next: () => ({ to: 'c1@customers.example', subject: 'Receipt', body: 'Taken.' }) }];
    const settled = await wireOf(async () => {
      await commitFencedUnit({ doc: via.doc }, { fence: fenceOf(t, jobId), generation: g1, checkpoint: { table: t.names.jobs, key: jobId, expected: 0, next: 1 }, effects: [outboxHttp(t.names.outbox, parentId, { jobId, unit: 0 }, { target: 'payments', request: { amountCents: 1 } })], token: { job: jobId, unit: 0 } });
      const parent = (await readOutboxItem(via.doc, t.names.outbox, parentId))!;
      expect(await markSentUnclaimed(via.doc, t.names.outbox, parentId, 'ch_1', 1, followUpsOf(steps, t.names.outbox, parent, 'accepted', 2))).toBe(true);
    });
    expect(settled.violations).toEqual([]);
    const receipt = (await readOutboxItem(t.dynamo.doc, t.names.outbox, followUpId(parentId, 'receipt')))!;
    const alone = await wireOf(async () => {
      await via.doc.send(new PutCommand({ TableName: t.names.outbox, Item: { ...receipt, pk: `${parentId}>again` } }));
      await via.doc.send(new TransactWriteCommand({ TransactItems: [{ Update: { TableName: t.names.outbox, Key: { pk: parentId }, UpdateExpression: 'SET #s = :s', ConditionExpression: '#s = :s', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':s': 'SENT' } } }, { Put: { TableName: t.names.outbox, Item: { ...receipt, pk: `${parentId}>unlisted`, generation: 1 } } }] }));
    });
    expect(alone.violations).toEqual([
      `${parentId}>again: a follow-up created by a PutItem, not in a transaction with its parent ${parentId}'s settle (a conditional status change listing it in followUps)`,
      `${parentId}>unlisted: a follow-up written with a generation (no unit wrote it)`,
      `${parentId}>unlisted: a follow-up created in a transaction without its parent ${parentId}'s settle (a conditional status change listing it in followUps)`,
    ]);
  });

  it('a commit whose answer was lost and that the SDK resent under the same token is one transaction and a replay, not a late write', async () => {
    await putJob(t, 'wire-replay');
    const lost = proxy.drop({ target: 'TransactWriteItems' });
    const r = await wireOf(async () => {
      await raiseFence({ doc: via.doc }, fenceOf(t, 'wire-replay'), g1);
      await commitFencedUnit({ doc: via.doc }, unitOf('wire-replay', g1, 0, 'c0'));
    });
    expect(lost.hits).toBe(1);
    expect(r).toMatchObject({ transactions: 1, effectWritesChecked: 2, replays: 1, violations: [] });
  });
});

describe('the late-write rule, on a recorded wire (what no correct engine lets through)', () => {
  const tables = { fences: 'F', records: 'I', outbox: 'O', fencePrefix: FENCE_PREFIX };
  const put = (pk: string, jobId: string, g: number) => ({ Put: { TableName: 'I', Item: { pk: { S: pk }, jobId: { S: jobId }, generation: { N: String(g) } } } });
  const fence = (jobId: string, g: number) => ({
    Update: { TableName: 'F', Key: { pk: { S: `invoices#${jobId}` } }, ConditionExpression: 'attribute_not_exists(#g) OR #g <= :g', UpdateExpression: 'SET #g = :g, #u = :now', ExpressionAttributeNames: { '#g': 'generation', '#u': 'updatedAt' }, ExpressionAttributeValues: { ':g': { N: String(g) }, ':now': { N: '1' } } },
  });
  const tx = (sentAt: number, answeredAt: number, items: unknown[]): WireExchange => ({ operation: 'TransactWriteItems', body: JSON.stringify({ TransactItems: items }), sentAt, answeredAt, status: 200, answer: '{}' });

  it('an effect of generation 1 applied after the raise to 2 was answered is named; one sent before that answer is not', () => {
    const check = new WireCheck(tables);
    check.observe(tx(0, 5, [fence('j', 1), put('a', 'j', 1)]));
    check.observe(tx(10, 12, [fence('j', 2), put('b', 'j', 2)]));
    check.observe(tx(11, 13, [fence('j', 1), put('c', 'j', 1)])); // sent before the raise was answered: the engine ordered it
    expect(check.report().violations).toEqual([]);
    check.observe(tx(20, 21, [fence('j', 1), put('d', 'j', 1)]));
    expect(check.report().violations).toEqual(['d: generation 1 applied, sent 8 ms after invoices#j was raised to 2']);
  });

  it('a refused request (not 200) applied nothing and is not read', () => {
    const check = new WireCheck(tables);
    check.observe({ ...tx(0, 1, [put('x', 'j', 1)]), status: 400 });
    expect(check.report()).toEqual({ transactions: 0, effectWritesChecked: 0, fenceWrites: 0, replays: 0, violations: [] });
  });
});
