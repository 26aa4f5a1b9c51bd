// tier: full
/**
 * The simulator's command-level short-cut (test/sim/short-cut.ts, its DynamoDB and providers'
 * routes) answers as the SDK's full path does: whole schedules run with every request sent both
 * ways and compared (what was sent, what came back, how often the retry loop tried); a short-cut
 * that drops one Query item, changes an email's MessageId or an object's body is caught; a client
 * with middleware of its own (the IAM recorder) goes the SDK's way.
 */
import { CreateTableCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { HttpRequest } from '@smithy/types';
import { describe, expect, it } from 'vitest';
import { AwsCallRecorder, asFunction } from '../cli/local/aws-calls.js';
import { PaymentsCore } from '../cli/local/payments-core.js';
import { sendLowLevel } from '../lib/protocol/index.js';
import { S3Core } from '../cli/local/s3-core.js';
import { simDynamo } from './sim/dynamodb/clients.js';
import { DynamoModel } from './sim/dynamodb/model.js';
import { Unanswered } from './sim/effects/errors.js';
import { simFetch, SIM_PAYMENTS_URL } from './sim/effects/fetch.js';
import { simS3Client, simS3Handler } from './sim/effects/s3-handler.js';
import { newComparison, type ShortCutOptions } from './sim/short-cut.js';
import { simulateOne } from './sim/run.js';

/** Drops the first item of the first Query answer that has one: the defect a short-cut could have. */
function dropOneQueryItem(): NonNullable<ShortCutOptions['breakAnswer']> {
  let dropped = false;
  return (operation, body) => {
    if (dropped || operation !== 'Query') return body;
    const answer = JSON.parse(body) as { Items?: unknown[]; Count?: number };
    if ((answer.Items?.length ?? 0) === 0) return body;
    dropped = true;
    return JSON.stringify({ ...answer, Items: answer.Items!.slice(1), Count: (answer.Count ?? 1) - 1 });
  };
}

/** A client over a fresh model with one table, and every request's headers as the request handler saw them. */
async function clientSeeing(opts: { shortCut?: 'sdk' | ShortCutOptions } = {}) {
  const dynamo = simDynamo(new DynamoModel(), undefined, opts);
  const seen: Record<string, string>[] = [];
  const handler = dynamo.client.config.requestHandler as { handle(r: HttpRequest, o?: unknown): Promise<unknown> };
  const handle = handler.handle.bind(handler);
  handler.handle = (r, o) => (seen.push({ ...r.headers }), handle(r, o));
  await dynamo.client.send(new CreateTableCommand({ TableName: 'things', BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }] }));
  return { dynamo, seen };
}

describe('the command-level short-cut', () => {
  it('answers every request of whole schedules as the SDK path does (protocol, control, sharded, chaos shapes)', async () => {
    const compare = newComparison();
    // Seed 11: throttling and transaction conflicts (the retry loop retries); a control; a sharded and a chaos schedule.
    const runs = [
      await simulateOne(11, 'fenced', { shape: 'small', shortCut: { compare } }),
      await simulateOne(12, 'leaseOnly', { shape: 'small', shortCut: { compare } }),
      await simulateOne(14, 'fenced', { shape: 'sharded', shortCut: { compare } }),
      await simulateOne(19, 'fenced', { shape: 'chaos', shortCut: { compare } }),
    ];
    expect(compare.differences).toEqual([]);
    expect(runs.map((r) => [r.seed, r.ok, r.unsupported])).toEqual(runs.map((r) => [r.seed, true, []]));
    expect(compare.compared).toBeGreaterThan(4_000);
    // Every kind of request the code makes went both ways, and some were retried by the SDK's loop.
    const providers = ['PutObject', 'GetObject', 'HeadObject', 'DeleteObject', 'ListObjectsV2', 'SendEmail', 'fetch'];
    for (const op of ['GetItem', 'PutItem', 'UpdateItem', 'Query', 'TransactWriteItems', 'GetRecords', 'DescribeTable', 'CreateTable', ...providers]) expect(compare.operations[op], op).toBeGreaterThan(0);
    expect(compare.retried).toBeGreaterThan(0);
  }, 120_000);

  it('catches a short-cut that drops one Query item', async () => {
    const compare = newComparison();
    await simulateOne(11, 'fenced', { shape: 'small', shortCut: { compare, breakAnswer: dropOneQueryItem() } });
    expect(compare.differences.length).toBeGreaterThan(0);
    expect(compare.differences[0]).toMatch(/^QueryCommand: the outcomes differ/);
  }, 60_000);

  it("catches a providers' short-cut that changes an email's MessageId", async () => {
    const compare = newComparison();
    let changed = 0;
    // The first accepted send's answer (a throttled one has no MessageId).
    const breakAnswer = (op: string, body: string) => (op === 'POST /v2/email/outbound-emails' && body.includes('"MessageId":"0') && changed++ === 0 ? body.replace('"MessageId":"0', '"MessageId":"9') : body);
    await simulateOne(11, 'fenced', { shape: 'small', shortCut: { compare, breakAnswer } });
    expect(changed).toBeGreaterThan(0);
    expect(compare.differences.length).toBeGreaterThan(0);
    expect(compare.differences[0]).toMatch(/^SendEmailCommand: the outcomes differ/);
  }, 60_000);

  it("catches a providers' short-cut that changes an object's body, and sends S3 no signature", async () => {
    const compare = newComparison();
    const seen: Record<string, string>[] = [];
    const handler = simS3Handler(new S3Core(), new Unanswered());
    const handle = handler.handle.bind(handler);
    handler.handle = (r, o) => (seen.push({ ...r.headers }), handle(r, o));
    const s3 = simS3Client(handler, { shortCut: { compare, breakAnswer: (op, body) => (op.startsWith('GET ') ? body.replace('one', 'two') : body) } });
    await s3.send(new CreateBucketCommand({ Bucket: 'docs' }));
    await s3.send(new PutObjectCommand({ Bucket: 'docs', Key: 'k.txt', Body: 'one' }));
    const got = await s3.send(new GetObjectCommand({ Bucket: 'docs', Key: 'k.txt' }));
    expect(await got.Body!.transformToString()).toBe('two');
    expect(compare.differences).toHaveLength(1);
    expect(compare.differences[0]).toContain('GetObjectCommand: the outcomes differ');
    expect(seen.map((h) => h.authorization)).toEqual([undefined, undefined, undefined]);
  });

  it("catches a payment fetch's short reading that changes the amount, and reads any other form a Request's way", async () => {
    const compare = newComparison();
    const core = new PaymentsCore();
    const fetchFn = simFetch(core, new Unanswered(), SIM_PAYMENTS_URL, { compare, breakBody: (b) => b.replace('"amount":100', '"amount":1000') });
    const post = (headers: Record<string, string> | Headers) => fetchFn(`${SIM_PAYMENTS_URL}/charges`, { method: 'POST', headers, body: JSON.stringify({ amount: 100, currency: 'eur' }) });
    expect((await post({ 'content-type': 'application/json', 'idempotency-key': 'k1' })).status).toBe(200);
    expect(compare.differences).toHaveLength(1);
    expect(compare.differences[0]).toMatch(/^fetch: the calls differ/);
    // Headers as a Headers object: not the short form, so read through a Request (nothing to compare).
    await post(new Headers({ 'content-type': 'application/json', 'idempotency-key': 'k2' }));
    expect(compare.compared).toBe(1);
    // What the provider acted on is what each reading gave it: the broken one's amount under k1.
    expect([...core.records.values()].map((r) => [r.key, JSON.parse(r.body!).amount])).toEqual([
      ['k1', 1000],
      ['k2', 100],
    ]);
  });

  it('leaves a providers\' client with the IAM recorder on the SDK path, signed, recorded', async () => {
    const seen: Record<string, string>[] = [];
    const handler = simS3Handler(new S3Core(), new Unanswered());
    const handle = handler.handle.bind(handler);
    handler.handle = (r, o) => (seen.push({ ...r.headers }), handle(r, o));
    const s3 = simS3Client(handler);
    const calls = new AwsCallRecorder().attach(s3);
    await asFunction('worker', () => s3.send(new CreateBucketCommand({ Bucket: 'docs' })));
    expect(seen.at(-1)?.authorization).toMatch(/^AWS4-HMAC-SHA256 /);
    expect(calls.records.map((r) => [r.fn, r.action])).toEqual([['worker', 'CreateBucket']]);
  });

  it('catches a document client whose answer the short-cut would deserialize otherwise', async () => {
    const compare = newComparison();
    const { dynamo } = await clientSeeing({ shortCut: { compare, breakAnswer: (op, body) => (op === 'GetItem' ? body.replace('"S":"one"', '"S":"two"') : body) } });
    await dynamo.doc.send(new PutCommand({ TableName: 'things', Item: { pk: 'a', v: 'one' } }));
    const got = await dynamo.doc.send(new GetCommand({ TableName: 'things', Key: { pk: 'a' } }));
    expect(got.Item).toEqual({ pk: 'a', v: 'two' });
    expect(compare.differences).toHaveLength(1);
    expect(compare.differences[0]).toContain('GetCommand: the outcomes differ');
  });

  it('sends no signature, user agent or endpoint rules: a stock client goes the short way', async () => {
    const { dynamo, seen } = await clientSeeing();
    await dynamo.doc.send(new PutCommand({ TableName: 'things', Item: { pk: 'a' } }));
    await dynamo.client.send(new GetItemCommand({ TableName: 'things', Key: { pk: { S: 'a' } } }));
    // Options given as undefined are none (lib/protocol's sendLowLevel sends a low-level command through the document client so).
    await sendLowLevel(dynamo.doc, new GetItemCommand({ TableName: 'things', Key: { pk: { S: 'a' } } }));
    expect(seen.map((h) => h.authorization)).toEqual([undefined, undefined, undefined, undefined]);
    expect(seen.map((h) => h['x-amz-target'])).toEqual(['DynamoDB_20120810.CreateTable', 'DynamoDB_20120810.PutItem', 'DynamoDB_20120810.GetItem', 'DynamoDB_20120810.GetItem']);
  });

  it('leaves a client with middleware of its own (the IAM recorder) on the SDK path, signed, recorded', async () => {
    const { dynamo, seen } = await clientSeeing();
    const calls = new AwsCallRecorder().attach(dynamo.client);
    await asFunction('worker', () => dynamo.doc.send(new QueryCommand({ TableName: 'things', KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'a' } })));
    expect(seen.at(-1)?.authorization).toMatch(/^AWS4-HMAC-SHA256 /);
    expect(calls.records.map((r) => [r.fn, r.action])).toEqual([['worker', 'Query']]);
  });

  it('leaves a send with options on the SDK path', async () => {
    const { dynamo, seen } = await clientSeeing();
    await dynamo.doc.send(new GetCommand({ TableName: 'things', Key: { pk: 'a' } }), { abortSignal: new AbortController().signal });
    expect(seen.at(-1)?.authorization).toMatch(/^AWS4-HMAC-SHA256 /);
  });
});
