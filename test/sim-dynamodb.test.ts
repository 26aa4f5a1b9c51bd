// tier: quick
/**
 * The in-memory DynamoDB model (test/sim/dynamodb) under the project's own code: the real SDK
 * clients serialize every request as for AWS, the model answers as DynamoDB does. No DynamoDB
 * Local here: this is what the simulator runs on.
 */
import { describe, expect, it } from 'vitest';
import { DescribeTableCommand, GetItemCommand, ListTablesCommand, TransactWriteItemsCommand, UpdateItemCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ensureTables, tableNames, TABLES, OUTBOX_INDEX } from '../lib/workflow/index.js';
import {
  commitFencedUnit,
  LeaseManager,
  makeGeneration,
  ManualClock,
  onceOnly,
  prepareFencedUnit,
  raiseFence,
  StaleGenerationError,
  upsert,
  type FencedUnit,
  type Generation,
} from '../lib/protocol/index.js';
import { readStream, readStreamRecords } from '../cli/local/streams.js';
import { DynamoModel } from './sim/dynamodb/model.js';
import { simDynamo, simStreams } from './sim/dynamodb/clients.js';

const names = tableNames('sim-');

async function world(opts: ConstructorParameters<typeof DynamoModel>[0] = {}) {
  const model = new DynamoModel(opts);
  const dynamo = simDynamo(model);
  await ensureTables(dynamo.client, names);
  return { model, dynamo, streams: simStreams(model) };
}

const unitOf = (job: string, generation: Generation, cursor: number): FencedUnit => ({
  fence: { table: names.fences, resource: `invoices#${job}` },
  generation,
  checkpoint: { table: names.jobs, key: job, expected: cursor, next: cursor + 1, set: { heartbeatAt: 1_000 + cursor } },
  effects: [
    upsert(names.records, { pk: `invoice#${job}#${cursor}`, amountCents: 100, unit: cursor }),
    onceOnly(names.records, { pk: `charge#${job}#${cursor}`, amountCents: 100, unit: cursor }),
  ],
  token: { job, unit: cursor },
});

describe('the DynamoDB model under the SDK', () => {
  it("creates every table of the project's schema, and ensureTables again leaves them as they are", async () => {
    const { model, dynamo } = await world();
    await ensureTables(dynamo.client, names);
    const listed = await dynamo.client.send(new ListTablesCommand({}));
    expect(listed.TableNames).toEqual(Object.values(names).sort());
    const outbox = (await dynamo.client.send(new DescribeTableCommand({ TableName: names.outbox }))).Table!;
    expect(outbox.TableStatus).toBe('ACTIVE');
    expect(outbox.TableArn).toBe(`arn:aws:dynamodb:us-east-1:000000000000:table/${names.outbox}`);
    expect(outbox.GlobalSecondaryIndexes?.map((g) => [g.IndexName, g.IndexStatus, g.Projection?.ProjectionType])).toEqual([[OUTBOX_INDEX, 'ACTIVE', TABLES.outbox.globalSecondaryIndexes[0]!.projection]]);
    expect(outbox.LatestStreamArn).toMatch(/\/stream\//);
    expect(model.unsupported).toEqual([]);
  });

  it('grants, renews and releases a lease, and refuses a second owner while it is held', async () => {
    const { model, dynamo } = await world();
    const clock = new ManualClock({ wall: 1_000_000, monotonic: 0 });
    const mk = (owner: string) => new LeaseManager({ doc: dynamo.doc, table: names.leases, owner, epoch: 0, durationMs: 10_000, mode: { kind: 'wall-clock', maxClockSkewMs: 0 }, clock });
    const a = mk('A');
    const b = mk('B');
    const got = await a.tryAcquire('job-1');
    expect(got.ok).toBe(true);
    if (!got.ok) return;
    expect((await b.tryAcquire('job-1')).ok).toBe(false);
    await clock.advance(5_000);
    const renewed = await a.renew(got.value);
    expect(renewed.generation).toBe(got.value.generation);
    expect(await a.release(renewed)).toEqual({ released: true });
    const next = await b.tryAcquire('job-1');
    expect(next.ok && next.value.generation > got.value.generation).toBe(true);
    expect(model.unsupported).toEqual([]);
  });

  it('commits a fenced unit, and refuses a stale generation with the fence first in CancellationReasons', async () => {
    const { model, dynamo } = await world();
    const g7 = makeGeneration(0, 7);
    const g8 = makeGeneration(0, 8);
    await dynamo.doc.send(new PutCommand({ TableName: names.jobs, Item: { pk: 'j', status: 'RUNNING', cursor: 0, totalUnits: 3, heartbeatAt: 0 } }));
    const ctx = { doc: dynamo.doc };
    expect(await commitFencedUnit(ctx, unitOf('j', g7, 0))).toMatchObject({ status: 'committed' });
    await raiseFence(ctx, { table: names.fences, resource: 'invoices#j' }, g8);
    await expect(commitFencedUnit(ctx, unitOf('j', g7, 1))).rejects.toBeInstanceOf(StaleGenerationError);
    const stale = prepareFencedUnit(unitOf('j', g7, 1), 5);
    const e = (await dynamo.client.send(new TransactWriteItemsCommand({ TransactItems: stale.items })).then(
      () => new Error('committed'),
      (x: unknown) => x,
    )) as Error & { CancellationReasons?: unknown[] };
    expect(e.name).toBe('TransactionCanceledException');
    expect(e.CancellationReasons).toEqual([
      { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed', Item: expect.objectContaining({ generation: { N: String(g8) } }) },
      { Code: 'None' },
      { Code: 'None' },
      { Code: 'None' },
    ]);
    const job = (await dynamo.doc.send(new GetCommand({ TableName: names.jobs, Key: { pk: 'j' }, ConsistentRead: true }))).Item;
    expect(job).toMatchObject({ cursor: 1, generation: g7, heartbeatAt: 1_000 });
    expect(model.unsupported).toEqual([]);
  });

  it('replays a ClientRequestToken without applying it twice, and refuses the token with other parameters', async () => {
    const { dynamo } = await world();
    const put = (n: number): TransactWriteItem[] => [{ Update: { TableName: names.records, Key: { pk: { S: 'counter' } }, UpdateExpression: 'ADD #n :one', ExpressionAttributeNames: { '#n': 'n' }, ExpressionAttributeValues: { ':one': { N: String(n) } } } }];
    const send = (n: number) => dynamo.client.send(new TransactWriteItemsCommand({ TransactItems: put(n), ClientRequestToken: 'tok-1' }));
    await send(1);
    await send(1);
    await expect(send(2)).rejects.toMatchObject({ name: 'IdempotentParameterMismatchException' });
    const got = await dynamo.client.send(new GetItemCommand({ TableName: names.records, Key: { pk: { S: 'counter' } }, ConsistentRead: true }));
    expect(got.Item?.n).toEqual({ N: '1' });
  });

  it("reads a table's stream with readStreamRecords: INSERT, MODIFY, REMOVE, and no record for a write that changes nothing", async () => {
    let now = 1_700_000_000_000;
    const { model, dynamo, streams } = await world({ now: () => now });
    await dynamo.doc.send(new PutCommand({ TableName: names.records, Item: { pk: 'a', v: 1 } }));
    now += 1_000;
    await dynamo.doc.send(new PutCommand({ TableName: names.records, Item: { pk: 'a', v: 1 } }));
    await dynamo.doc.send(new UpdateCommand({ TableName: names.records, Key: { pk: 'a' }, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': 2 } }));
    await dynamo.doc.send(new UpdateCommand({ TableName: names.records, Key: { pk: 'a' }, UpdateExpression: 'REMOVE nothing' }));
    await dynamo.doc.send(new PutCommand({ TableName: names.records, Item: { pk: 'b' } }));
    await dynamo.doc.send(new DeleteCommand({ TableName: names.records, Key: { pk: 'a' } }));
    const raw = await readStreamRecords(dynamo.client, streams, names.records);
    expect(raw.map((r) => r.record.eventName)).toEqual(['INSERT', 'MODIFY', 'INSERT', 'REMOVE']);
    expect(raw[1]!.record.dynamodb?.ApproximateCreationDateTime?.getTime()).toBe(1_700_000_001_000);
    const changes = await readStream(dynamo.client, streams, names.records);
    expect(changes[1]).toMatchObject({ event: 'MODIFY', key: 'a', oldImage: { pk: 'a', v: 1 }, newImage: { pk: 'a', v: 2 } });
    expect(changes.map((c) => c.sequence)).toEqual([...changes.map((c) => c.sequence)].sort((x, y) => (x < y ? -1 : 1)));
    expect(model.unsupported).toEqual([]);
  });

  it('serves an index behind its table with index lag, and caught up after propagateIndexes', async () => {
    const { model, dynamo } = await world({ indexLag: true });
    const q = () => dynamo.doc.send(new QueryCommand({ TableName: names.outbox, IndexName: OUTBOX_INDEX, KeyConditionExpression: '#u = :k AND #t <= :before', ExpressionAttributeNames: { '#u': 'unsent', '#t': 'updatedAt' }, ExpressionAttributeValues: { ':k': 'open#1', ':before': 100 } }));
    await dynamo.doc.send(new PutCommand({ TableName: names.outbox, Item: { pk: 'o1', unsent: 'open#1', updatedAt: 5, status: 'PENDING' } }));
    expect((await q()).Items).toEqual([]);
    expect(model.pendingIndexUpdates()).toBe(1);
    model.propagateIndexes();
    expect((await q()).Items).toEqual([{ pk: 'o1', unsent: 'open#1', updatedAt: 5 }]);
    await expect(dynamo.doc.send(new QueryCommand({ TableName: names.outbox, IndexName: OUTBOX_INDEX, KeyConditionExpression: '#u = :k', ExpressionAttributeNames: { '#u': 'unsent' }, ExpressionAttributeValues: { ':k': 'open#1' }, ConsistentRead: true }))).rejects.toMatchObject({
      name: 'ValidationException',
      message: 'Consistent reads are not supported on global secondary indexes',
    });
  });

  it('fails loudly on what it does not implement, and records it', async () => {
    const { model, dynamo } = await world();
    const { TransactGetItemsCommand } = await import('@aws-sdk/client-dynamodb');
    await expect(dynamo.client.send(new TransactGetItemsCommand({ TransactItems: [{ Get: { TableName: names.jobs, Key: { pk: { S: 'x' } } } }] }))).rejects.toMatchObject({ name: 'SimUnsupported' });
    await expect(dynamo.client.send(new GetItemCommand({ TableName: names.jobs, Key: { pk: { S: 'x' } }, AttributesToGet: ['pk'] }))).rejects.toMatchObject({ name: 'SimUnsupported' });
    expect(model.unsupported).toEqual(['dynamodb.TransactGetItems', 'GetItem.AttributesToGet']);
  });

  it('answers validation errors as DynamoDB does, and computes numbers exactly', async () => {
    const { dynamo } = await world();
    const update = (input: Partial<ConstructorParameters<typeof UpdateItemCommand>[0]>) => dynamo.client.send(new UpdateItemCommand({ TableName: names.records, Key: { pk: { S: 'n' } }, ...input }));
    await expect(update({ UpdateExpression: 'SET a = :a', ExpressionAttributeValues: { ':a': { N: '1' }, ':x': { N: '2' } } })).rejects.toMatchObject({ name: 'ValidationException', message: 'Value provided in ExpressionAttributeValues unused in expressions: keys: {:x}' });
    await expect(update({ UpdateExpression: 'SET pk = :a', ExpressionAttributeValues: { ':a': { S: '1' } } })).rejects.toMatchObject({ message: 'One or more parameter values were invalid: Cannot update attribute pk. This attribute is part of the key' });
    await expect(update({ UpdateExpression: 'SET a = :a REMOVE a', ExpressionAttributeValues: { ':a': { N: '1' } } })).rejects.toMatchObject({ message: expect.stringContaining('Two document paths overlap') });
    await expect(update({ UpdateExpression: 'SET status = :a', ExpressionAttributeValues: { ':a': { S: '1' } } })).rejects.toMatchObject({ message: 'Invalid UpdateExpression: Attribute name is a reserved keyword; reserved keyword: status' });
    await update({ UpdateExpression: 'ADD c :v', ExpressionAttributeValues: { ':v': { N: '12345678901234567890123456789012345677' } } });
    const out = await update({ UpdateExpression: 'ADD c :v', ExpressionAttributeValues: { ':v': { N: '1' } }, ReturnValues: 'UPDATED_NEW' });
    expect(out.Attributes).toEqual({ c: { N: '12345678901234567890123456789012345678' } });
    await expect(update({ UpdateExpression: 'SET a = :a', ConditionExpression: 'c < :a', ExpressionAttributeValues: { ':a': { N: '5' } }, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' })).rejects.toMatchObject({
      name: 'ConditionalCheckFailedException',
      Item: { pk: { S: 'n' }, c: { N: '12345678901234567890123456789012345678' } },
    });
  });
});

describe('the model is cheap beside the SDK', () => {
  it('serves a mix of GetItem, UpdateItem and TransactWriteItems', async () => {
    const { dynamo } = await world();
    const ctx = { doc: dynamo.doc };
    await dynamo.doc.send(new PutCommand({ TableName: names.jobs, Item: { pk: 'perf', status: 'RUNNING', cursor: 0, totalUnits: 1e6, heartbeatAt: 0 } }));
    const n = 900;
    let started = performance.now();
    // The first 100 rounds warm the SDK's and the model's caches; the rest are timed.
    for (let i = 0; i < n / 3 + 100; i++) {
      if (i === 100) started = performance.now();
      await commitFencedUnit(ctx, unitOf('perf', makeGeneration(0, 1), i));
      await dynamo.doc.send(new UpdateCommand({ TableName: names.leases, Key: { pk: 'perf' }, UpdateExpression: 'SET #h = :h', ConditionExpression: 'attribute_not_exists(#h) OR #h < :h', ExpressionAttributeNames: { '#h': 'heartbeatAt' }, ExpressionAttributeValues: { ':h': i } }));
      await dynamo.doc.send(new GetCommand({ TableName: names.jobs, Key: { pk: 'perf' }, ConsistentRead: true }));
    }
    const perSecond = Math.round(n / ((performance.now() - started) / 1000));
    console.log(`sim-dynamodb: ${perSecond} requests/s through simDynamo (GetItem/UpdateItem/TransactWriteItems mix)`);
    expect(perSecond).toBeGreaterThan(100);
  });
});
