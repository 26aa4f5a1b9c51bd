/**
 * The invoice workload's bundled external-effect functions run like Lambda runs them
 * (lambda-run.ts), with the environment the stack gives each: the sender fed the Outbox stream's own INSERT records read
 * from DynamoDB Local, the recorder fed SES's "Email Sent" events, the reconciler and the
 * collector their schedule's event. The providers are real local servers: SES through the local
 * SES v2 endpoint (test/support/ses-endpoint.ts) relaying to the SMTP sink, the payment provider
 * with its Idempotency-Key contract; the documents on the local S3 endpoint. No SDK is mocked.
 * Called from artifact.test.ts, which synthesizes the bundles once per workload; these flows are
 * the invoice workload's (its email, its payment provider at /charges, its documents' names).
 */
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { SESv2Client } from '@aws-sdk/client-sesv2';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPaymentsProvider, type PaymentsProvider } from '../../cli/local/payments-provider.js';
import { startS3Endpoint, type S3Endpoint } from '../../cli/local/s3-endpoint.js';
import { headerOf, startSmtpSink, type SmtpSink } from '../../cli/local/smtp-sink.js';
import { readStreamRecords, streamsClient } from '../../cli/local/streams.js';
import { systemClock, type Effect } from '../../lib/protocol/index.js';
import { ENV, fenceKeyOf, messageIdentity, outboxEmail, outboxHttp, readOutboxItem, sendItem, silentTelemetry, type OutboxItem, type Workload } from '../../lib/workflow/index.js';
import { S3ObjectStore, s3Client, SesEmailProvider } from '../../lib/workflow/adapters/index.js';
import { invoiceJobId, PAYMENTS_TARGET } from '../../lib/workloads/invoices/invoices.js';
import { sesEvent, startSesEndpoint, type SesEndpoint } from '../support/ses-endpoint.js';
import { makeTables, type TestTables } from '../support/tables.js';
import { lambdaEnvironment, metricSum, runBundle, type BundleOptions } from './lambda-run.js';
import { TEST_SENDER } from './support.js';
import type { WireRequest } from './wire-calls.js';

export type EffectFunction = 'sender' | 'reconciler' | 'recorder' | 'collector';

/** The synthesized template, each function's construct and its bundle's directory. */
export interface Bundles<F extends string = EffectFunction> {
  template: { Resources: Record<string, { Properties?: { Code?: { S3Key?: string }; Environment?: { Variables?: Record<string, unknown> } } }> };
  fns: Record<F, IConstruct>;
  assetDirs: Record<F, string>;
}

const BUCKET = 'effects-documents';
const CONFIGURATION_SET = 'fenced-workflow-local';
const PERIOD = '2026-03';
const origin = { jobId: invoiceJobId(PERIOD), unit: 0 };
const mail = (customer: string) => outboxEmail('', `email#${PERIOD}#${customer}`, origin, { to: `${customer}@customers.example`, subject: `Your invoice for ${PERIOD}`, body: `Invoice ${PERIOD} for ${customer}.\n` });

/** `onWire`: each run's HTTP requests, by function, for the IAM evaluation of the bundles' calls. */
export function describeEffectBundles(get: () => Bundles, onWire: ((fn: EffectFunction, wire: readonly WireRequest[], s3Url: string) => void) | undefined, workload: Pick<Workload, 'fenceKeyPrefix'>): void {
  describe('the bundled sender, recorder, reconciler and collector run like Lambda runs them', () => {
    let t: TestTables;
    let s3: S3Endpoint;
    let sink: SmtpSink;
    let ses: SesEndpoint;
    let payments: PaymentsProvider;
    let streams: DynamoDBStreamsClient;
    beforeAll(async () => {
      [t, s3, sink, payments] = await Promise.all([makeTables(import.meta.filename), startS3Endpoint(), startSmtpSink(), startPaymentsProvider()]);
      ses = await startSesEndpoint(sink);
      streams = streamsClient(t.endpoint);
      const client = s3Client({ endpoint: s3.url });
      await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
      client.destroy();
    });
    afterAll(async () => {
      streams.destroy();
      await Promise.all([s3.close(), sink.close(), ses.close(), payments.close()]);
    });

    /** The stack's environment of `f`, every resource it names replaced by the local one, plus the local endpoints. */
    const invoke = async (f: EffectFunction, functionName: string, events: BundleOptions['events']) => {
      const { template, fns, assetDirs } = get();
      const n = t.names;
      const local = { [ENV.leasesTable]: n.leases, [ENV.fencesTable]: n.fences, [ENV.jobsTable]: n.jobs, [ENV.recordsTable]: n.records, [ENV.outboxTable]: n.outbox, [ENV.documentsBucket]: BUCKET, [ENV.sesConfigurationSet]: CONFIGURATION_SET, [ENV.queueUrl]: 'http://127.0.0.1:9/000000000000/unused' };
      // AWS_ENDPOINT_URL_SESV2 is the SDK's own setting: the bundle's SES client is not told anything else.
      const endpoints = { [ENV.dynamoEndpoint]: t.endpoint, [ENV.s3Endpoint]: s3.url, [ENV.paymentsUrl]: `${payments.url}/charges`, AWS_ENDPOINT_URL_SESV2: ses.url };
      const run = await runBundle(assetDirs[f], { functionName, events, env: lambdaEnvironment(template, fns[f], local, endpoints) });
      onWire?.(f, run.wire, s3.url);
      return run;
    };
    /** An outbox item as the fenced unit writes it (generation and updatedAt stamped), with `extra` delivery state. */
    const put = async (e: Effect, extra: Record<string, unknown> = {}) => {
      const Item = { ...e.item, generation: 1, updatedAt: Date.now(), ...extra };
      await t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item, ConditionExpression: 'attribute_not_exists(pk)' }));
      return Item.pk;
    };
    /** The Outbox stream's INSERT records of `pks`, as Lambda's event source hands them to the sender. */
    const streamEvent = async (pks: readonly string[]): Promise<DynamoDBStreamEvent> => {
      const raw = (await readStreamRecords(t.dynamo.client, streams, t.names.outbox)).filter((r) => r.record.eventName === 'INSERT' && pks.includes(String(r.record.dynamodb?.Keys?.pk?.S)));
      const seconds = (d: unknown) => (d instanceof Date ? Math.floor(d.getTime() / 1000) : d);
      const Records = raw.map(({ streamArn, record }) => ({ ...record, eventSourceARN: streamArn, dynamodb: { ...record.dynamodb, ApproximateCreationDateTime: seconds(record.dynamodb?.ApproximateCreationDateTime) } }));
      return { Records: Records as unknown as DynamoDBRecord[] };
    };
    const item = async (pk: string) => (await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))!;
    const mine = (raw: string) => headerOf(raw, 'X-Outbox-Table') === t.names.outbox;
    const received = (pk: string) => sink.received.filter((m) => mine(m.raw) && headerOf(m.raw, 'X-Outbox-Id') === pk);
    const sesSends = (pk: string) => ses.sent.filter((s) => s.tags.outboxId === messageIdentity.tag(pk) && s.tags.outboxTable === messageIdentity.tag(t.names.outbox));

    it('sender: the stream records of a new email and payment are claimed, sent once with their identity (SES to the SMTP sink; the payment provider) and marked SENT; the same batch again, to two containers at once, sends no second email (the claim) and performs no second charge (the item is SENT: not even a second request)', async () => {
      const email = await put(mail('cust-0000001'));
      const payment = await put(outboxHttp('', `payment#${PERIOD}#cust-0000001`, origin, { target: PAYMENTS_TARGET, request: { customerId: 'cust-0000001', amountCents: 1234, currency: 'EUR', reference: `invoice#${PERIOD}#cust-0000001` } }));
      const event = await streamEvent([email, payment]);
      expect(event.Records.map((r) => r.eventName)).toEqual(['INSERT', 'INSERT']);

      const first = await invoke('sender', 'Sender', [event]);
      await ses.relayed();
      expect(first.results).toEqual([{ batchItemFailures: [] }]);
      expect(metricSum(first.emf, 'OutboxSent')).toBe(2);
      const [sent] = sesSends(email);
      expect(sesSends(email)).toHaveLength(1);
      // The template deploys in the sandbox: SES is asked to send to its mailbox simulator, the recipient in the label.
      expect(sent).toMatchObject({ from: TEST_SENDER, configurationSet: CONFIGURATION_SET });
      expect(sent!.to).toMatch(/^(success|bounce|complaint)\+cust-0000001\.customers\.example@simulator\.amazonses\.com$/);
      expect(await item(email)).toMatchObject({ status: 'SENT', attempts: 1, providerMessageId: sent!.messageId });
      expect(received(email)).toHaveLength(1);
      expect(headerOf(received(email)[0]!.raw, 'Message-ID')).toBe(`<${sent!.messageId}@email.amazonses.com>`);
      const charge = payments.records.get(messageIdentity.idempotencyKey(t.names.outbox, payment));
      expect(charge).toMatchObject({ outboxId: payment, outboxTable: t.names.outbox, requests: 1, refused: 0 });
      expect(await item(payment)).toMatchObject({ status: 'SENT', attempts: 1, providerMessageId: charge!.chargeId });

      // At-least-once: the batch comes again, to two containers at once. The email's claim is lost;
      // the payment (no claim) is not POSTed again: the retention stamp before a POST is
      // conditional on PENDING and finds it SENT (before the stamp it was POSTed and replayed).
      const before = [await item(email), await item(payment)];
      const again = await Promise.all([invoke('sender', 'Sender', [event]), invoke('sender', 'Sender', [event])]);
      await ses.relayed();
      for (const r of again) {
        expect(r.results).toEqual([{ batchItemFailures: [] }]);
        expect(r.logs.filter((l) => l.message === 'outbox-claim-lost')).toHaveLength(1);
        expect(r.logs.filter((l) => l.message === 'outbox-already-settled')).toHaveLength(1);
      }
      expect(sesSends(email)).toHaveLength(1);
      expect(received(email)).toHaveLength(1);
      expect(charge!).toMatchObject({ requests: 1, refused: 0 });
      expect([...payments.records.values()].filter((r) => r.outboxId === payment)).toHaveLength(1);
      expect([await item(email), await item(payment)]).toEqual(before);
    });

    it("sender, SES misbehaving through the bundle's real SESv2 client: throttled three times (the adapter's own two retries spent) the batch is deferred, not failed; paused, the email is held with its reason, never FAILED; a 500 after SES took it is counted ambiguous and left SENDING", async () => {
      const throttled = await put(mail('cust-0000011'));
      const rest = await put(mail('cust-0000012'));
      ses.throttle(3);
      const t1 = await invoke('sender', 'Sender', [await streamEvent([throttled, rest])]);
      expect(t1.results).toEqual([{ batchItemFailures: [] }]);
      expect(metricSum(t1.emf, 'OutboxThrottled')).toBe(1);
      for (const pk of [throttled, rest]) expect(await item(pk)).toMatchObject({ status: 'PENDING', deferrals: 1 });
      expect((await item(throttled)).notBefore).toBeGreaterThan(Date.now() - 60_000);
      expect(sesSends(throttled)).toHaveLength(0);

      const paused = await put(mail('cust-0000013'));
      ses.pause(60_000);
      const t2 = await invoke('sender', 'Sender', [await streamEvent([paused])]);
      ses.pause(0);
      expect(t2.results).toEqual([{ batchItemFailures: [] }]);
      expect(metricSum(t2.emf, 'OutboxHeld')).toBe(1);
      expect(await item(paused)).toMatchObject({ status: 'PENDING', heldReason: expect.stringContaining('SendingPausedException') });

      const taken = await put(mail('cust-0000014'));
      ses.fail5xxAfter(1);
      const t3 = await invoke('sender', 'Sender', [await streamEvent([taken])]);
      await ses.relayed();
      expect(t3.results).toEqual([{ batchItemFailures: [] }]);
      expect(sesSends(taken)).toHaveLength(1);
      expect(await item(taken)).toMatchObject({ status: 'SENDING', ambiguousSends: 1 });
    });

    it('recorder and reconciler: a sender that died after SES accepted is marked SENT from the recorded SES event, no second email; an item whose stream delivery never came is sent', async () => {
      // Older than the reconciler's thresholds as the stack sets them (10 min PENDING, 5 min claim).
      const old = Date.now() - 20 * 60_000;
      const died = await put(mail('cust-0000002'), { status: 'SENDING', claimToken: 'dead-sender', claimedAt: old, attempts: 1, updatedAt: old });
      const missed = await put(mail('cust-0000003'), { updatedAt: old });
      // What the dead sender did before it died: SES accepted its message.
      const client = new SESv2Client({ endpoint: ses.url, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 1 });
      const deps = { doc: t.dynamo.doc, table: t.names.outbox, clock: systemClock, telemetry: silentTelemetry, email: new SesEmailProvider(client, CONFIGURATION_SET), from: TEST_SENDER };
      expect(await sendItem(deps, (await item(died)) as OutboxItem)).toMatchObject({ kind: 'accepted' });
      client.destroy();
      await ses.relayed();
      const [accepted] = sesSends(died);

      // SES event publishing -> EventBridge -> the recorder: SES's record onto the item it names.
      // Only Send is recorded (the proof of acceptance the reconciler reads); a Delivery event is not written.
      const recorded = await invoke('recorder', 'Recorder', [sesEvent(accepted!), sesEvent(accepted!, 'Delivery')]);
      expect(recorded.results).toEqual([{ recorded: true }, { recorded: false }]);
      expect((await item(died)).providerEvents).toEqual(new Set([`SEND:${accepted!.messageId}`]));

      const reconciled = await invoke('reconciler', 'Reconciler', [{}]);
      await ses.relayed();
      expect(reconciled.results).toEqual([expect.objectContaining({ examined: 2, fromRecord: 1, delivered: 1, resent: 0, unknown: 0 })]);
      expect(await item(died)).toMatchObject({ status: 'SENT', providerMessageId: accepted!.messageId, attempts: 1 });
      expect(await item(missed)).toMatchObject({ status: 'SENT', attempts: 1 });
      expect([received(died).length, sesSends(died).length, received(missed).length]).toEqual([1, 1, 1]);
    });

    it('collector: on the local S3 endpoint, deletes the orphan of a generation the fence made obsolete and keeps the published document', async () => {
      const store = new S3ObjectStore(s3Client({ endpoint: s3.url }), BUCKET);
      const key = (g: number) => `invoices/${PERIOD}/cust-0000001/${g}.json`;
      const [, g2] = await Promise.all([1, 2].map((g) => store.putNew(key(g), Buffer.from(JSON.stringify({ generation: g })), 'application/json')));
      await t.dynamo.doc.send(new PutCommand({ TableName: t.names.records, Item: { pk: `invoice#${PERIOD}#cust-0000001`, generation: 2, documentKey: key(2), documentEtag: g2!.etag } }));
      // The fence under the workload's own key prefix, where the collector (its WORKLOAD's) reads it.
      await t.dynamo.doc.send(new PutCommand({ TableName: t.names.fences, Item: { pk: fenceKeyOf(origin.jobId, workload.fenceKeyPrefix), generation: 2 } }));
      // Written two hours ago: past the collector's age bound as the stack sets it (an hour).
      const objects = s3.buckets.get(BUCKET)!;
      for (const g of [1, 2]) objects.set(key(g), objects.get(key(g))!.map((v) => ({ ...v, lastModified: new Date(Date.now() - 2 * 3_600_000) })));

      const r = await invoke('collector', 'Collector', [{}]);
      expect(r.results).toMatchObject([{ scanned: 2, referenced: 1, kept: 0, deleted: 1, wrapped: true, outOfTime: false }]);
      expect(objects.get(key(1))!.map((v) => v.deleteMarker)).toEqual([false, true]);
      expect(objects.get(key(2))!.map((v) => v.deleteMarker)).toEqual([false]);
    });
  });
}
