// tier: full
/**
 * The in-memory stand-ins (test/sim/effects/) answer the project's real adapters exactly as the
 * local servers do: each case below runs twice, once against the node:http server and once
 * against the same core in memory (the real S3Client on an SDK handler, FetchHttpProvider on a
 * fetch of its own), and checks the adapter's verdict and the stand-in's own record the same way
 * test/s3-lost-answer.test.ts and test/provider-standins.test.ts check the servers. The in-memory
 * runs open no socket.
 */
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, ListObjectVersionsCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PaymentsCore } from '../cli/local/payments-core.js';
import { S3Core, type S3StandIn } from '../cli/local/s3-core.js';
import { startS3Endpoint } from '../cli/local/s3-endpoint.js';
import { SinkCore, type EmailSink, type ReceivedMessage } from '../cli/local/sink-core.js';
import { headerOf, startSmtpSink } from '../cli/local/smtp-sink.js';
import { ManualClock } from '../lib/protocol/index.js';
import { FetchHttpProvider, S3ObjectStore, s3Client, SesEmailProvider, SmtpEmailProvider } from '../lib/workflow/adapters/index.js';
import { messageIdentity, ObjectStateUnknownError, ObjectWriteConflictError, readOutboxItem, type EmailProvider, type OutboundCall, type OutboundEmail } from '../lib/workflow/index.js';
import { SimNetworkError, SimUnansweredError, Unanswered } from './sim/effects/errors.js';
import { simFetch, SIM_PAYMENTS_URL } from './sim/effects/fetch.js';
import { SimNoSocketError, simEffects } from './sim/effects/index.js';
import { simS3Client, simS3Handler } from './sim/effects/s3-handler.js';
import { simSesClient, simSesHandler } from './sim/effects/ses-handler.js';
import { makeTables, type TestTables } from './support/tables.js';

/** One S3 stand-in and a client factory on it, over either transport. */
interface S3Rig {
  readonly s3: S3StandIn;
  client(opts?: { maxAttempts?: number }): S3Client;
  close(): Promise<void>;
}

const S3_TRANSPORTS: readonly [string, () => Promise<S3Rig>][] = [
  [
    'the node:http endpoint',
    async () => {
      const s3 = await startS3Endpoint();
      // The local client's default attempts (3): its resend after a lost answer is the SDK's.
      return { s3, client: () => s3Client({ endpoint: s3.url }), close: () => s3.close() };
    },
  ],
  [
    'the in-memory handler',
    async () => {
      const s3 = new S3Core();
      const handler = simS3Handler(s3, new Unanswered());
      return { s3, client: (o) => simS3Client(handler, o), close: async () => undefined };
    },
  ],
];

describe.each(S3_TRANSPORTS)('S3ObjectStore over %s', (_name, start) => {
  let rig: S3Rig;
  let s3: S3StandIn;
  beforeAll(async () => {
    rig = await start();
    s3 = rig.s3;
    await rig.client().send(new CreateBucketCommand({ Bucket: 'docs' }));
  });
  afterAll(async () => rig.close());
  const quick = { conflictAttempts: 4, backoff: { baseMs: 1, capMs: 4 } };
  const logOf = (from: number, key: string) => s3.requests.slice(from).filter((r) => r.key === key).map((r) => [r.method, r.status]);
  const stored = (key: string) => (s3.buckets.get('docs')!.get(key) ?? []).map((v) => (v.deleteMarker ? 'deleted' : v.body.toString()));

  it('puts a new object (If-None-Match with its checksum), reads it back If-Match, lists it, deletes it If-Match: versions kept', async () => {
    const c = rig.client();
    const store = new S3ObjectStore(c, 'docs', quick);
    const { etag } = await store.putNew('plain/1.json', Buffer.from('{"n":1}'), 'application/json');
    expect(etag).toBe(s3.buckets.get('docs')!.get('plain/1.json')![0]!.etag);
    expect(Buffer.from((await store.getIfMatch('plain/1.json', etag))!).toString()).toBe('{"n":1}');
    expect(await store.getIfMatch('plain/1.json', '"other"')).toBeUndefined();
    // The same bytes again: the 412 is resolved by the HEAD's checksum as ours.
    expect(await store.putNew('plain/1.json', Buffer.from('{"n":1}'), 'application/json')).toEqual({ etag });
    await expect(store.putNew('plain/1.json', Buffer.from('{"n":2}'), 'application/json')).rejects.toMatchObject({ name: 'ObjectExistsError' });
    expect((await store.page('plain/', '', 10)).objects.map((o) => [o.key, o.etag])).toEqual([['plain/1.json', etag]]);
    expect(await store.deleteIfMatch('plain/1.json', '"other"')).toBe(false);
    expect(await store.deleteIfMatch('plain/1.json', etag)).toBe(true);
    expect((await store.page('plain/', '', 10)).objects).toEqual([]);
    const versions = await c.send(new ListObjectVersionsCommand({ Bucket: 'docs', Prefix: 'plain/' }));
    expect([versions.DeleteMarkers?.length, versions.Versions?.map((v) => v.ETag)]).toEqual([1, [etag]]);
    expect(stored('plain/1.json')).toEqual(['{"n":1}', 'deleted']);
  });

  it('a lost put answer with the SDK\'s resend: applied, no answer, the resend meets 412, one version stored', async () => {
    const c = rig.client({ maxAttempts: 3 });
    const lost = s3.dropResponses(1, (r) => r.method === 'PUT' && r.key === 'lost/1.json');
    const e = await c.send(new PutObjectCommand({ Bucket: 'docs', Key: 'lost/1.json', Body: 'one', IfNoneMatch: '*' })).catch((err: unknown) => err);
    expect(lost.hits).toBe(1);
    expect(e).toMatchObject({ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412, attempts: 2 } });
    expect(stored('lost/1.json')).toEqual(['one']);
  });

  it('a lost put answer resolved by the adapter: the log shows the applied put unanswered, the refused resend and the HEAD', async () => {
    const store = new S3ObjectStore(rig.client({ maxAttempts: 3 }), 'docs');
    const from = s3.requests.length;
    s3.dropResponses(1, (r) => r.method === 'PUT' && r.key === 'lost/2.json');
    const { etag } = await store.putNew('lost/2.json', Buffer.from('{"generation":2}'), 'application/json');
    expect(s3.requests.slice(from).map((r) => [r.method, r.key, r.status, r.answered])).toEqual([
      ['PUT', 'lost/2.json', 200, false],
      ['PUT', 'lost/2.json', 412, true],
      ['HEAD', 'lost/2.json', 200, true],
    ]);
    expect(etag).toBe(s3.buckets.get('docs')!.get('lost/2.json')![0]!.etag);
  });

  it('a put whose first attempt gets 409 ConditionalRequestConflict is retried and lands once', async () => {
    const store = new S3ObjectStore(rig.client(), 'docs', quick);
    const from = s3.requests.length;
    const conflict = s3.answerError(1, 409, 'ConditionalRequestConflict', (r) => r.method === 'PUT' && r.key === 'race/1.json');
    await store.putNew('race/1.json', Buffer.from('one'), 'application/json');
    expect(conflict.hits).toBe(1);
    expect(logOf(from, 'race/1.json')).toEqual([
      ['PUT', 409],
      ['PUT', 200],
    ]);
    expect(stored('race/1.json')).toEqual(['one']);
  });

  it('a put that keeps getting 409 ends in ObjectWriteConflictError after the bound, one PUT per attempt, nothing written', async () => {
    const store = new S3ObjectStore(rig.client(), 'docs', quick);
    const from = s3.requests.length;
    s3.answerError(100, 409, 'ConditionalRequestConflict', (r) => r.method === 'PUT' && r.key === 'race/2.json');
    const e = await store.putNew('race/2.json', Buffer.from('two'), 'application/json').catch((err: unknown) => err);
    expect(e).toBeInstanceOf(ObjectWriteConflictError);
    expect(e).toMatchObject({ code: 'OBJECT_WRITE_CONFLICT', operation: 'put', key: 'race/2.json', attempts: 4 });
    expect(logOf(from, 'race/2.json')).toEqual(Array.from({ length: 4 }, () => ['PUT', 409]));
    expect(stored('race/2.json')).toEqual([]);
  });

  it('a 412 whose HEAD answers 403 for a missing key (denyMissingKeys) is ObjectStateUnknownError; with the grant (404) the put is retried and lands', async () => {
    const store = new S3ObjectStore(rig.client(), 'docs', quick);
    const from = s3.requests.length;
    s3.answerError(1, 412, 'PreconditionFailed', (r) => r.method === 'PUT' && r.key === 'denied/1.json');
    s3.denyMissingKeys(true);
    try {
      const e = await store.putNew('denied/1.json', Buffer.from('d'), 'application/json').catch((err: unknown) => err);
      expect(e).toBeInstanceOf(ObjectStateUnknownError);
      expect(e).toMatchObject({ code: 'OBJECT_STATE_UNKNOWN', key: 'denied/1.json', status: 403 });
    } finally {
      s3.denyMissingKeys(false);
    }
    s3.answerError(1, 412, 'PreconditionFailed', (r) => r.method === 'PUT' && r.key === 'denied/1.json');
    await store.putNew('denied/1.json', Buffer.from('d'), 'application/json');
    expect(logOf(from, 'denied/1.json')).toEqual([
      ['PUT', 412],
      ['HEAD', 403],
      ['PUT', 412],
      ['HEAD', 404],
      ['PUT', 200],
    ]);
    expect(stored('denied/1.json')).toEqual(['d']);
  });

  it('a conditional delete that gets 409 is retried; one that keeps getting it ends in ObjectWriteConflictError, the object kept', async () => {
    const store = new S3ObjectStore(rig.client(), 'docs', quick);
    const { etag } = await store.putNew('race/3.json', Buffer.from('three'), 'application/json');
    const from = s3.requests.length;
    s3.answerError(1, 409, 'ConditionalRequestConflict', (r) => r.method === 'DELETE' && r.key === 'race/3.json');
    expect(await store.deleteIfMatch('race/3.json', etag)).toBe(true);
    expect(logOf(from, 'race/3.json')).toEqual([
      ['DELETE', 409],
      ['DELETE', 204],
    ]);
    const four = await store.putNew('race/4.json', Buffer.from('four'), 'application/json');
    s3.answerError(100, 409, 'ConditionalRequestConflict', (r) => r.method === 'DELETE' && r.key === 'race/4.json');
    await expect(store.deleteIfMatch('race/4.json', four.etag)).rejects.toMatchObject({ operation: 'delete', key: 'race/4.json', attempts: 4 });
    expect(stored('race/4.json')).toEqual(['four']);
  });
});

describe('the in-memory S3 handler beyond the server', () => {
  it('a lost put answer on the one-attempt client: applied, and the adapter sees the cut connection (SimNetworkError ECONNRESET); a second put finds its own object', async () => {
    const s3 = new S3Core();
    const c = simS3Client(simS3Handler(s3, new Unanswered()));
    await c.send(new CreateBucketCommand({ Bucket: 'docs' }));
    const store = new S3ObjectStore(c, 'docs');
    s3.dropResponses(1, (r) => r.method === 'PUT');
    const e = await store.putNew('k.json', Buffer.from('x'), 'application/json').catch((err: unknown) => err);
    expect(e).toBeInstanceOf(SimNetworkError);
    expect(e).toMatchObject({ code: 'ECONNRESET' });
    expect(s3.requests.map((r) => [r.method, r.status, r.answered])).toEqual([
      ['PUT', 200, true],
      ['PUT', 200, false],
    ]);
    expect((await store.putNew('k.json', Buffer.from('x'), 'application/json')).etag).toBe(s3.buckets.get('docs')!.get('k.json')![0]!.etag);
  });

  it('a request for another host is refused loudly (SimUnansweredError), and kept in the ledger', async () => {
    const unanswered = new Unanswered();
    // The in-memory handler under a client for another endpoint: what a misconfigured simulator would do.
    const misrouted = new S3Client({ endpoint: 'http://elsewhere.example', forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'AKIDSIM', secretAccessKey: 'sim' }, maxAttempts: 1, requestHandler: simS3Handler(new S3Core(), unanswered) });
    await expect(misrouted.send(new CreateBucketCommand({ Bucket: 'docs' }))).rejects.toBeInstanceOf(SimUnansweredError);
    expect(unanswered.errors).toHaveLength(1);
    expect(() => unanswered.check()).toThrow(SimUnansweredError);
  });
});

const TABLE = 'sim-outbox';
const call = (pk = `pay#${randomUUID()}`): OutboundCall => ({ idempotencyKey: messageIdentity.idempotencyKey(TABLE, pk), headers: messageIdentity.headers(TABLE, pk), body: { amount: 1200, currency: 'eur', customer: pk } });

describe('the in-memory fetch beyond the server', () => {
  it('a URL outside the provider\'s origin is refused loudly: the adapter sees a failure, the ledger keeps it', async () => {
    const unanswered = new Unanswered();
    const fetchFn = simFetch(new PaymentsCore(), unanswered);
    await expect(fetchFn('http://elsewhere.example/charges', { method: 'POST' })).rejects.toBeInstanceOf(SimUnansweredError);
    expect(await new FetchHttpProvider('http://elsewhere.example/charges', 1_000, {}, fetchFn).post(call())).toMatchObject({ kind: 'ambiguous' });
    expect(unanswered.errors).toHaveLength(2);
    expect(() => unanswered.check()).toThrow(/cannot answer POST http:\/\/elsewhere\.example\/charges/);
  });

  it('GET /_record answers the record, as the server does', async () => {
    const core = new PaymentsCore();
    const fetchFn = simFetch(core, new Unanswered());
    const c = call();
    await new FetchHttpProvider(`${SIM_PAYMENTS_URL}/charges`, 1_000, {}, fetchFn).post(c);
    const res = await fetchFn(`${SIM_PAYMENTS_URL}/_record`);
    expect(((await res.json()) as { key: string }[]).map((r) => r.key)).toEqual([c.idempotencyKey]);
  });
});

const FROM = 'billing@fenced-workflow.example';
const mail = (to: string, pk = `email#${randomUUID()}`, table = TABLE): OutboundEmail => ({
  from: FROM,
  to,
  subject: 'Your invoice',
  text: 'Attached.',
  messageId: messageIdentity.messageId(table, pk),
  headers: messageIdentity.headers(table, pk),
  tags: { outboxId: messageIdentity.tag(pk), outboxTable: messageIdentity.tag(table) },
});

/** One email stand-in and the adapter that sends to it, over either transport. */
interface EmailRig {
  readonly sink: EmailSink;
  readonly email: EmailProvider;
  /** Refused attempts one throttled send makes: the SES adapter retries a throttle twice itself. */
  readonly throttledAttempts: number;
  close(): Promise<void>;
}

const EMAIL_TRANSPORTS: readonly [string, () => Promise<EmailRig>][] = [
  [
    'the SMTP sink through SmtpEmailProvider',
    async () => {
      const sink = await startSmtpSink();
      return { sink, email: new SmtpEmailProvider({ host: sink.host, port: sink.port, timeoutMs: 3_000 }), throttledAttempts: 1, close: () => sink.close() };
    },
  ],
  [
    'the in-memory SES v2 handler through SesEmailProvider on SESv2Client',
    async () => {
      const sink = new SinkCore();
      const ses = simSesClient(simSesHandler(sink, new Unanswered()));
      // No wait between the adapter's own throttled retries.
      return { sink, email: new SesEmailProvider(ses, 'sim', async () => {}), throttledAttempts: 3, close: async () => (ses.destroy(), sink.close()) };
    },
  ],
];

const idOf = (m: OutboundEmail) => m.headers['X-Outbox-Id'];
const receivedOf = (sink: EmailSink, m: OutboundEmail): ReceivedMessage[] => sink.received.filter((r) => headerOf(r.raw, 'X-Outbox-Id') === idOf(m));

describe.each(EMAIL_TRANSPORTS)('the email stand-in over %s', (_name, start) => {
  let rig: EmailRig;
  let sink: EmailSink;
  let email: EmailProvider;
  beforeAll(async () => {
    rig = await start();
    ({ sink, email } = rig);
  });
  afterAll(async () => rig.close());

  it('accepted: the provider\'s id is the record\'s queue id, the record reads as the checker reads it (identity headers, the derived Message-ID), a Send event follows', async () => {
    const m = mail('a@customers.example');
    const r = await email.send(m);
    expect(r).toMatchObject({ kind: 'accepted' });
    const [got] = receivedOf(sink, m);
    expect(r.kind === 'accepted' && r.providerMessageId).toBe(got!.queueId);
    expect(got!.to).toEqual(['a@customers.example']);
    const parsed = await simpleParser(got!.raw);
    expect([parsed.headers.get('x-outbox-table'), parsed.headers.get('x-outbox-id'), parsed.messageId, parsed.subject, parsed.text?.trim()]).toEqual([TABLE, idOf(m), m.messageId, 'Your invoice', 'Attached.']);
    await sink.settled();
    expect(sink.events.filter((e) => e.message === got).map((e) => [e.type, e.recipients])).toEqual([['Send', ['a@customers.example']]]);
  });

  it('throttle: refused as throttled, nothing taken; the resend is taken once', async () => {
    const m = mail('t@customers.example');
    sink.throttle(rig.throttledAttempts);
    expect(await email.send(m)).toMatchObject({ kind: 'throttled' });
    expect(receivedOf(sink, m)).toHaveLength(0);
    expect(sink.fired.throttled).toBe(rig.throttledAttempts);
    expect(await email.send(m)).toMatchObject({ kind: 'accepted' });
    expect(receivedOf(sink, m)).toHaveLength(1);
  });

  it('pause / pausedWhile: held ("Sending paused"), nothing taken', async () => {
    const m = mail('p@customers.example');
    sink.pause(60_000);
    const r = await email.send(m);
    expect(r.kind === 'held' && r.reason).toMatch(/Sending paused for this account/);
    sink.pause(0);
    let paused = true;
    sink.pausedWhile(() => paused);
    expect(await email.send(m)).toMatchObject({ kind: 'held' });
    paused = false;
    expect(receivedOf(sink, m)).toHaveLength(0);
    expect(sink.fired.paused).toBe(2);
    expect(await email.send(m)).toMatchObject({ kind: 'accepted' });
  });

  it('sandbox: an unverified recipient is held with SES\'s "Email address is not verified ... in region US-EAST-1: <addr>", nothing taken; a verified one is taken', async () => {
    const m = mail('unverified@customers.example');
    sink.sandbox((addr) => addr === 'verified@customers.example');
    try {
      const r = await email.send(m);
      expect(r.kind === 'held' && r.reason).toMatch(/Email address is not verified\. The following identities failed the check in region US-EAST-1: unverified@customers\.example/);
      expect(receivedOf(sink, m)).toHaveLength(0);
      expect(sink.fired.sandbox).toBe(1);
      expect(await email.send(mail('verified@customers.example'))).toMatchObject({ kind: 'accepted' });
    } finally {
      sink.sandbox(undefined);
    }
  });

  it('bounce and complain: accepted, then a Bounce (Permanent, General) or a Complaint naming the recipient after its Send', async () => {
    const gone = mail('gone@customers.example');
    const angry = mail('angry@customers.example');
    sink.bounce((to) => to.startsWith('gone@'));
    sink.complain((to) => to.startsWith('angry@'));
    try {
      expect(await email.send(gone)).toMatchObject({ kind: 'accepted' });
      expect(await email.send(angry)).toMatchObject({ kind: 'accepted' });
      await sink.settled();
      const of = (m: OutboundEmail) => sink.events.filter((e) => headerOf(e.message.raw, 'X-Outbox-Id') === idOf(m));
      expect(of(gone).map((e) => e.type)).toEqual(['Send', 'Bounce']);
      expect(of(gone)[1]).toMatchObject({ bounceType: 'Permanent', bounceSubType: 'General', recipients: ['gone@customers.example'] });
      expect(of(angry).map((e) => [e.type, e.recipients])).toEqual([
        ['Send', ['angry@customers.example']],
        ['Complaint', ['angry@customers.example']],
      ]);
      expect(sink.fired).toMatchObject({ bounced: 1, complained: 1 });
    } finally {
      sink.bounce(undefined);
      sink.complain(undefined);
    }
  });

  it('loseSendEvents: taken and acknowledged, its Send event never emitted; a Bounce still comes', async () => {
    const m = mail('lost@customers.example');
    sink.loseSendEvents(1);
    sink.bounce((to) => to.startsWith('lost@'));
    try {
      expect(await email.send(m)).toMatchObject({ kind: 'accepted' });
      await sink.settled();
      expect(receivedOf(sink, m)).toHaveLength(1);
      expect(sink.events.filter((e) => headerOf(e.message.raw, 'X-Outbox-Id') === idOf(m)).map((e) => e.type)).toEqual(['Bounce']);
      expect(sink.fired['send-event-lost']).toBe(1);
    } finally {
      sink.bounce(undefined);
    }
  });

  it('loseAcks: taken (in the record) and the acknowledgement lost: ambiguous', async () => {
    const m = mail('ack@customers.example');
    sink.loseAcks(1);
    expect(await email.send(m)).toMatchObject({ kind: 'ambiguous' });
    expect(receivedOf(sink, m)).toHaveLength(1);
    expect(sink.acksLost).toBe(1);
  });

  it('down: refused before anything is taken (rejected, not for good), counted; up again, taken', async () => {
    const m = mail('down@customers.example');
    sink.down(60_000);
    expect(await email.send(m)).toMatchObject({ kind: 'rejected', permanent: false });
    sink.down(0);
    expect(receivedOf(sink, m)).toHaveLength(0);
    expect(sink.refused).toBe(1);
    expect(await email.send(m)).toMatchObject({ kind: 'accepted' });
  });
});

describe('the in-memory SES v2 handler beyond the sink', () => {
  it('answers in SES\'s words: TooManyRequestsException, SendingPausedException, BadRequestException for a tag SES refuses; another operation is refused loudly', async () => {
    const sink = new SinkCore();
    const unanswered = new Unanswered();
    const ses = simSesClient(simSesHandler(sink, unanswered));
    const email = new SesEmailProvider(ses, 'sim', async () => {});
    sink.throttle(3);
    expect(await email.send(mail('t@customers.example'))).toMatchObject({ kind: 'throttled', reason: expect.stringContaining('TooManyRequestsException') });
    sink.pause(60_000);
    expect(await email.send(mail('p@customers.example'))).toMatchObject({ kind: 'held', reason: expect.stringContaining('SendingPausedException') });
    sink.pause(0);
    const badTag = { ...mail('b@customers.example'), tags: { outboxId: 'email#not-tag-safe' } };
    expect(await email.send(badTag)).toMatchObject({ kind: 'rejected', permanent: true, reason: expect.stringContaining('BadRequestException') });
    expect(sink.received).toHaveLength(0);
    const { GetAccountCommand } = await import('@aws-sdk/client-sesv2');
    await expect(ses.send(new GetAccountCommand({}))).rejects.toBeInstanceOf(SimUnansweredError);
    expect(() => unanswered.check()).toThrow(/cannot answer GET email\.sim\/v1\/account|cannot answer GET email\.sim/);
    ses.destroy();
  });
});

describe('simEffects: the Effects of startEffects, in memory', () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await makeTables(import.meta.filename);
  });
  const pending = async (pk: string) => t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: { pk, kind: 'email', jobId: 'j', generation: 1, unit: 0, updatedAt: Date.now(), status: 'PENDING', attempts: 0, unsent: 'open', to: 'c@customers.example', subject: 's', body: 'b' } }));
  const recorded = async (pk: string) => [...((await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))?.providerEvents ?? [])];

  it('the sink\'s events reach the recorder EVENT_DELAY_MS later on the injected clock: a Send recorded on the item it names, a lost one leaves no record, a bounce is kept', async () => {
    const clock = new ManualClock({ wall: Date.now() });
    const [kept, lost, gone] = [`email#${randomUUID()}`, `email#${randomUUID()}`, `email#${randomUUID()}`];
    await Promise.all([pending(kept), pending(lost), pending(gone)]);
    const e = simEffects({ doc: t.dynamo.doc, clock, feedbackDelayMs: 50 });
    const sent = await e.email.send(mail('c@customers.example', kept, t.names.outbox));
    expect(sent).toMatchObject({ kind: 'accepted' });
    e.sink.loseSendEvents(1);
    expect(await e.email.send(mail('c@customers.example', lost, t.names.outbox))).toMatchObject({ kind: 'accepted' });
    e.sink.bounce((to) => to.startsWith('gone@'));
    expect(await e.email.send(mail('gone@customers.example', gone, t.names.outbox))).toMatchObject({ kind: 'accepted' });
    // Nothing before the delay: the record follows the answer.
    await new Promise((r) => setTimeout(r, 50));
    expect(await recorded(kept)).toEqual([]);
    await clock.advance(100);
    await clock.advance(100);
    await e.close();
    expect(await recorded(kept)).toEqual([`SEND:${sent.kind === 'accepted' && sent.providerMessageId}`]);
    expect(await recorded(lost)).toEqual([]);
    expect((await recorded(gone)).map((x) => x.split(':')[0])).toEqual(expect.arrayContaining(['SEND', 'BOUNCE']));
  });

  it('documents, payments and the faults on the Effects: the bucket ready, the payments target at /charges, key retention and the pause window on the injected clock', async () => {
    const clock = new ManualClock({ wall: 1_000_000 });
    const e = simEffects({ doc: t.dynamo.doc, clock, paymentsKeyRetentionMs: 60_000 });
    const { etag } = await e.store.putNew('invoices/1.json', Buffer.from('{}'), 'application/json');
    expect(e.embeddedS3.buckets.get(e.bucket)!.get('invoices/1.json')![0]).toMatchObject({ etag, lastModified: new Date(1_000_000) });
    const c = call();
    const http = e.http.payments!;
    expect(http.keyRetentionMs).toBe(60_000);
    expect(await http.post(c)).toMatchObject({ kind: 'accepted' });
    e.payments.pause(1_000);
    expect(await http.post(call())).toMatchObject({ kind: 'held' });
    await clock.advance(60_000);
    expect(await http.post(c)).toMatchObject({ kind: 'accepted' });
    expect(e.payments.records.get(c.idempotencyKey)).toMatchObject({ path: '/charges', charges: [expect.any(String), expect.any(String)], at: [1_000_000, 1_060_000] });
    e.sink.pause(1_000);
    expect(await e.email.send(mail('x@customers.example'))).toMatchObject({ kind: 'held' });
    await clock.advance(1_000);
    expect(await e.email.send(mail('x@customers.example'))).toMatchObject({ kind: 'accepted' });
    // close() waits for the records in flight, which wait on the injected clock.
    await clock.advance(1_000);
    await e.close();
  });

  it('ids count instead of drawing: two runs of the same sends give the same ids', async () => {
    const run = async () => {
      const clock = new ManualClock({ wall: 1_000_000 });
      const e = simEffects({ doc: t.dynamo.doc, clock });
      const put = await e.store.putNew('k.json', Buffer.from('k'), 'application/json');
      const sent = await e.email.send(mail('i@customers.example', 'email#fixed'));
      const paid = await e.http.payments!.post(call('pay#fixed'));
      const versionId = e.embeddedS3.buckets.get(e.bucket)!.get('k.json')![0]!.versionId;
      await clock.advance(1_000);
      await e.close();
      return [put.etag, versionId, sent, paid, e.sink.received[0]!.raw];
    };
    expect(await run()).toEqual(await run());
  });

  it('the sink has no SMTP address (SimNoSocketError); a request no stand-in answers makes close() fail', async () => {
    const e = simEffects({ doc: t.dynamo.doc });
    expect(() => e.sink.host).toThrow(SimNoSocketError);
    expect(() => e.sink.port).toThrow(SimNoSocketError);
    expect(await new FetchHttpProvider('http://elsewhere.example/charges', 1_000, {}, simFetch(e.payments, e.unanswered)).post(call())).toMatchObject({ kind: 'ambiguous' });
    await expect(e.close()).rejects.toBeInstanceOf(SimUnansweredError);
  });
});

describe('no socket in memory', () => {
  it('S3, SES and the payment provider in memory never connect a socket', async () => {
    const connect = vi.spyOn(net.Socket.prototype, 'connect');
    try {
      // A document client that answers nothing: the recorder's writes are DynamoDB's business, not this test's (a failed record is dropped).
      const doc = { send: async () => ({}) } as unknown as Parameters<typeof simEffects>[0]['doc'];
      const e = simEffects({ doc, eventDelayMs: 0 });
      const { etag: docEtag } = await e.store.putNew('invoices/a.json', Buffer.from('a'), 'application/json');
      await e.store.getIfMatch('invoices/a.json', docEtag);
      expect(await e.email.send(mail('s@customers.example'))).toMatchObject({ kind: 'accepted' });
      expect(await e.http.payments!.post(call())).toMatchObject({ kind: 'accepted' });
      await e.close();
      const unanswered = new Unanswered();
      const s3 = simS3Client(simS3Handler(new S3Core(), unanswered));
      await s3.send(new CreateBucketCommand({ Bucket: 'docs' }));
      const store = new S3ObjectStore(s3, 'docs');
      const { etag } = await store.putNew('a.json', Buffer.from('a'), 'application/json');
      await store.getIfMatch('a.json', etag);
      await store.page('', '', 10);
      await store.deleteIfMatch('a.json', etag);
      expect(await new FetchHttpProvider(`${SIM_PAYMENTS_URL}/charges`, 1_000, {}, simFetch(new PaymentsCore(), unanswered)).post(call())).toMatchObject({ kind: 'accepted' });
      unanswered.check();
      expect(connect).not.toHaveBeenCalled();
    } finally {
      connect.mockRestore();
    }
  });
});
