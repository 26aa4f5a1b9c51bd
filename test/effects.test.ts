// tier: quick
/**
 * The external effects on real protocols: the local S3 endpoint driven by @aws-sdk/client-s3,
 * a real SMTP sink receiving from nodemailer, the outbox on DynamoDB Local. Each claim names the
 * mechanism it depends on.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Endpoint, type S3Endpoint } from '../cli/local/s3-endpoint.js';
import { headerOf, startSmtpSink, type SmtpSink } from '../cli/local/smtp-sink.js';
import { createDynamo, systemClock } from '../lib/protocol/index.js';
import { ObjectExistsError, collect, deliver, readOutboxItem, reconcile, recordProviderEvent, silentTelemetry, type OutboxItem, type SenderDeps } from '../lib/workflow/index.js';
import { S3ObjectStore, s3Client, SmtpEmailProvider } from '../lib/workflow/adapters/index.js';
import { invoiceProcessor } from '../lib/workloads/invoices/invoices.js';
import { makeTables, type TestTables } from './support/tables.js';
import { FENCE_PREFIX } from './support/workflow.js';

let s3: S3Endpoint;
let sink: SmtpSink;
let t: TestTables;
const client = () => s3Client({ endpoint: s3.url });

beforeAll(async () => {
  [s3, sink, t] = await Promise.all([startS3Endpoint(), startSmtpSink(), makeTables(import.meta.filename)]);
  await client().send(new CreateBucketCommand({ Bucket: 'docs' }));
});
afterAll(async () => Promise.all([s3.close(), sink.close()]));

describe('the local S3 endpoint honours conditional writes as S3 does', () => {
  it('a second If-None-Match put is 412 PreconditionFailed, If-Match on a missing key 404 NoSuchKey, a wrong ETag 412; nothing is overwritten', async () => {
    const c = client();
    await c.send(new PutObjectCommand({ Bucket: 'docs', Key: 'a/1.json', Body: 'one', IfNoneMatch: '*' }));
    await expect(c.send(new PutObjectCommand({ Bucket: 'docs', Key: 'a/1.json', Body: 'two', IfNoneMatch: '*' }))).rejects.toMatchObject({ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } });
    await expect(c.send(new PutObjectCommand({ Bucket: 'docs', Key: 'a/none.json', Body: 'x', IfMatch: '"abc"' }))).rejects.toMatchObject({ name: 'NoSuchKey', $metadata: { httpStatusCode: 404 } });
    await expect(c.send(new PutObjectCommand({ Bucket: 'docs', Key: 'a/1.json', Body: 'x', IfMatch: '"abc"' }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 412 } });
    expect(s3.buckets.get('docs')!.get('a/1.json')!.map((v) => v.body.toString())).toEqual(['one']);
  });

  it('a put whose answer was lost is resolved by a HEAD whose checksum matches (our own put); another body at the key is ObjectExistsError', async () => {
    const store = new S3ObjectStore(client(), 'docs');
    const lost = s3.dropResponses(1, (r) => r.method === 'PUT' && r.key === 'b/7.json');
    const { etag } = await store.putNew('b/7.json', Buffer.from('{"generation":7}'), 'application/json');
    expect(lost.hits).toBe(1);
    expect(s3.buckets.get('docs')!.get('b/7.json')).toHaveLength(1);
    expect(etag).toBe(s3.buckets.get('docs')!.get('b/7.json')![0]!.etag);
    await expect(store.putNew('b/7.json', Buffer.from('{"generation":8}'), 'application/json')).rejects.toBeInstanceOf(ObjectExistsError);
  });
});

describe('the outbox: claim, send, mark', () => {
  const senderDeps = (): SenderDeps => ({ doc: t.dynamo.doc, table: t.names.outbox, clock: systemClock, telemetry: silentTelemetry, email: new SmtpEmailProvider({ host: sink.host, port: sink.port }), from: 'billing@fenced-workflow.example' });
  const item = async (pk: string): Promise<OutboxItem> => {
    const i = { pk, kind: 'email', jobId: 'j', generation: 1, unit: 0, updatedAt: Date.now() - 60_000, status: 'PENDING', attempts: 0, unsent: 'open', to: 'c@customers.example', subject: 's', body: 'b' };
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: i }));
    return i as unknown as OutboxItem;
  };
  const received = (pk: string) => sink.received.filter((m) => headerOf(m.raw, 'X-Outbox-Id') === pk && headerOf(m.raw, 'X-Outbox-Table') === t.names.outbox).length;

  it('a duplicate stream delivery and two senders racing for one item send it once: the conditional claim admits one', async () => {
    const i = await item('email#race');
    const outcomes = await Promise.all([deliver(senderDeps(), i), deliver(senderDeps(), i), deliver(senderDeps(), i)]);
    expect(outcomes.sort()).toEqual(['sent', 'skipped', 'skipped']);
    expect(received('email#race')).toBe(1);
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, 'email#race')).toMatchObject({ status: 'SENT', attempts: 1 });
  });

  it('a sender killed after the provider accepted (before SENT): the reconciler marks it SENT from the provider record, and sends nothing again', async () => {
    const i = await item('email#killed');
    const dead = deliver({ ...senderDeps(), hooks: { at: async (p) => (p === 'after-send' ? new Promise<void>(() => undefined) : undefined) } }, i);
    await new Promise((r) => setTimeout(r, 500));
    expect(received('email#killed')).toBe(1);
    // What the recorder stores from the provider's own record (SES events in AWS, the sink locally).
    await recordProviderEvent(t.dynamo.doc, t.names.outbox, 'email#killed', 'SEND', 'queue-1');
    const r = await reconcile({ ...senderDeps(), pendingAfterMs: 10_000, claimTimeoutMs: 0, recordLagMs: 1_000 });
    expect(r.fromRecord).toBeGreaterThanOrEqual(1);
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, 'email#killed')).toMatchObject({ status: 'SENT', providerMessageId: 'queue-1' });
    expect(received('email#killed')).toBe(1);
    void dead;
  });

  it('without the provider record to ask, a stuck claim becomes UNKNOWN (a person decides) rather than a guessed resend', async () => {
    const i = await item('email#unknowable');
    void deliver({ ...senderDeps(), hooks: { at: async (p) => (p === 'after-send' ? new Promise<void>(() => undefined) : undefined) } }, i);
    await new Promise((r) => setTimeout(r, 500));
    await reconcile({ ...senderDeps(), pendingAfterMs: 10_000, claimTimeoutMs: 0, recordLagMs: undefined });
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, 'email#unknowable')).toMatchObject({ status: 'UNKNOWN' });
    expect(received('email#unknowable')).toBe(1);
  });
});

describe('the collector', () => {
  it('never deletes a referenced document, keeps an orphan its generation may still publish, and deletes one the fence made obsolete', async () => {
    const store = new S3ObjectStore(client(), 'docs');
    const name = (g: number) => `invoices/2026-04/cust-0000001/${g}.json`;
    const [g7, g8, g9] = await Promise.all([7, 8, 9].map((g) => store.putNew(name(g), Buffer.from(`{"generation":${g}}`), 'application/json')));
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.records, Item: { pk: 'invoice#2026-04#cust-0000001', generation: 8, documentKey: name(8), documentEtag: g8!.etag } }));
    // The fence is at 8: generation 7 can never commit again; 9 (a holder not fenced yet) might.
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.fences, Item: { pk: 'invoices#invoice-run#2026-04', generation: 8 } }));
    const r = await collect({ doc: t.dynamo.doc, tables: t.names, store, pages: new S3ObjectStore(client(), 'docs'), prefix: 'invoices/2026-04/', refOf: (k) => invoiceProcessor.documents!.refOf(k, t.names), fenceKeyPrefix: FENCE_PREFIX, clock: systemClock, telemetry: silentTelemetry, minAgeMs: 0 });
    expect(r).toMatchObject({ scanned: 3, referenced: 1, kept: 1, deleted: 1 });
    expect(await store.getIfMatch(name(7), g7!.etag)).toBeUndefined();
    expect(await store.getIfMatch(name(8), g8!.etag)).toBeDefined();
    expect(await store.getIfMatch(name(9), g9!.etag)).toBeDefined();
  });

  it("never deletes a document its writer publishes between the collector's pointer read and its obsolescence check (the writer's last unit: pointer set, job DONE)", async () => {
    const store = new S3ObjectStore(client(), 'docs');
    const key = 'invoices/2026-05/cust-0000002/5.json';
    const put = await store.putNew(key, Buffer.from('{"generation":5}'), 'application/json');
    const pointer = 'invoice#2026-05#cust-0000002';
    const jobId = 'invoice-run#2026-05';
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.fences, Item: { pk: `invoices#${jobId}`, generation: 5 } }));
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.jobs, Item: { pk: jobId, status: 'RUNNING', cursor: 0, totalUnits: 1 } }));
    // The collector's own client, with a hook that lets the writer commit right after the
    // collector's first read of the pointer (which found none): the interleaving, forced.
    const { doc } = createDynamo({ endpoint: t.endpoint });
    let committed = false;
    doc.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        // The collector reads a page's pointers in batches: the first read of this one is a BatchGet.
        const input = args.input as { TableName?: string; Key?: { pk?: string }; RequestItems?: Record<string, { Keys?: { pk?: string }[] }> };
        const read = input.Key?.pk === pointer ? input.TableName : Object.keys(input.RequestItems ?? {}).find((tb) => input.RequestItems![tb]!.Keys?.some((k) => k.pk === pointer));
        if (!committed && read === t.names.records) {
          committed = true;
          await t.dynamo.doc.send(new PutCommand({ TableName: t.names.records, Item: { pk: pointer, generation: 5, documentKey: key, documentEtag: put!.etag } }));
          await t.dynamo.doc.send(new PutCommand({ TableName: t.names.jobs, Item: { pk: jobId, status: 'DONE', cursor: 1, totalUnits: 1 } }));
        }
        return out;
      },
      { step: 'initialize', name: 'writerCommitsAfterPointerRead' },
    );
    const r = await collect({ doc, tables: t.names, store, pages: new S3ObjectStore(client(), 'docs'), prefix: 'invoices/2026-05/', refOf: (k) => invoiceProcessor.documents!.refOf(k, t.names), fenceKeyPrefix: FENCE_PREFIX, clock: systemClock, telemetry: silentTelemetry, minAgeMs: 0 });
    expect(committed).toBe(true);
    expect(r).toMatchObject({ scanned: 1, deleted: 0 });
    expect(await store.getIfMatch(key, put!.etag)).toBeDefined();
  });
});
