// tier: quick
/**
 * Every external-effect fault the local run (and the chaos harness, which reads the same
 * report) counts as fired took effect, proven from the far side: the server's own record and
 * what the real client saw. A lost answer: the write applied AND the client got no answer (and,
 * where the report says so, resent). A refusal: nothing applied. A fault that was armed and never
 * met its occasion is listed as not injected, never as fired.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEffects, type Effects } from '../cli/local/effects-env.js';
import { RunEffects } from '../cli/demo/run-effects.js';
import { streamsClient } from '../cli/local/streams.js';
import { headerOf } from '../cli/local/smtp-sink.js';
import { OutboxStream } from '../cli/local/outbox-stream.js';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { systemClock } from '../lib/protocol/index.js';
import { readOutboxItem, silentTelemetry, type OutboundEmail } from '../lib/workflow/index.js';
import { PAYMENTS_TARGET } from '../lib/workloads/invoices/invoices.js';
import { makeTables, type TestTables } from './support/tables.js';

let t: TestTables;
let effects: Effects;
beforeAll(async () => {
  t = await makeTables(import.meta.filename);
  effects = await startEffects({ doc: t.dynamo.doc });
});
afterAll(async () => {
  await effects?.close();
  t?.dynamo.client.destroy();
});

const S3_LOST = 'an S3 put answer lost (the retry meets 412, resolved by HEAD)';
const SMTP_LOST = 'an SMTP acknowledgement lost (an ambiguous send)';
const PAY_LOST = "a payment provider's answer lost (the resend with its Idempotency-Key is replayed)";
const mail = (id: string): OutboundEmail => ({
  from: 'billing@fenced-workflow.example',
  to: 'c@customers.example',
  subject: 's',
  text: 'b',
  messageId: `<${id}@fenced-workflow.example>`,
  headers: { 'X-Outbox-Id': id, 'X-Outbox-Table': 'evidence' },
  tags: {},
});
const call = (key: string) => ({ idempotencyKey: key, headers: {}, body: { amountCents: 100, currency: 'EUR' } });
const receivedOf = (id: string) => effects.sink!.received.filter((m) => headerOf(m.raw, 'X-Outbox-Id') === id);

describe('the external-effect faults of a faulted run, each proven from the far side', () => {
  it('armed and not yet met: nothing is reported fired; each one is reported only once the server and the client show it took effect', async () => {
    const fx = new RunEffects({
      dynamo: t.dynamo,
      streams: streamsClient(t.endpoint),
      tables: t.names,
      set: `evidence-${randomBytes(3).toString('hex')}`,
      effects,
      clock: systemClock,
      telemetry: silentTelemetry,
      leaseMs: 1_000,
      faults: true,
    });
    fx.arm();
    fx.providersDown(60_000);
    expect(fx.fired).toEqual([]);
    expect(fx.notInjected).toEqual(expect.arrayContaining([expect.stringContaining(S3_LOST), expect.stringContaining(SMTP_LOST), expect.stringContaining(PAY_LOST), expect.stringMatching(/^email and payment providers down for 60000 ms: armed, never met its occasion$/)]));

    // The outage: both providers refuse while down, and take nothing.
    const refusedMail = await effects.email.send(mail('evidence-down'));
    const refusedCall = await effects.http[PAYMENTS_TARGET]!.post(call('evidence-down'));
    // A 421 takes nothing; a 503 proves nothing to the client (maybe taken), though this provider's record shows it performed nothing.
    expect([refusedMail.kind, refusedCall.kind]).toEqual(['rejected', 'ambiguous']);
    expect(receivedOf('evidence-down')).toEqual([]);
    expect(effects.payments.records.has('evidence-down')).toBe(false);
    expect(effects.sink!.refused).toBeGreaterThanOrEqual(1);
    expect(effects.payments.refused).toBe(1);
    expect(fx.fired).toEqual([expect.stringMatching(/^email and payment providers down for 60000 ms$/)]);
    effects.sink!.down(0);
    effects.payments.down(0);

    // The lost S3 put answer: the endpoint logs the put applied and unanswered, the client's resend refused, its HEAD.
    const from = effects.embeddedS3!.requests.length;
    await effects.store.putNew(`${fx.documents.set}/doc-1.json`, Buffer.from('{"n":1}'), 'application/json');
    expect(effects.embeddedS3!.requests.slice(from).map((r) => [r.method, r.status, r.answered])).toEqual([
      ['PUT', 200, false],
      ['PUT', 412, true],
      ['HEAD', 200, true],
    ]);
    expect(fx.fired).toContain(S3_LOST);

    // The lost SMTP acknowledgement: the sink took the message; the client saw no 250.
    const ambiguousMail = await effects.email.send(mail('evidence-ack'));
    expect(ambiguousMail.kind).toBe('ambiguous');
    expect(receivedOf('evidence-ack')).toHaveLength(1);
    expect(fx.fired).toContain(SMTP_LOST);

    // The lost payment answer: performed, the client saw no answer; reported only once the resend is replayed.
    expect((await effects.http[PAYMENTS_TARGET]!.post(call('evidence-pay'))).kind).toBe('ambiguous');
    expect(effects.payments.records.get('evidence-pay')).toMatchObject({ requests: 1 });
    expect(fx.fired).not.toContain(PAY_LOST);
    const replayed = await effects.http[PAYMENTS_TARGET]!.post(call('evidence-pay'));
    expect(replayed).toEqual({ kind: 'accepted', providerMessageId: effects.payments.records.get('evidence-pay')!.chargeId });
    expect(effects.payments.records.get('evidence-pay')).toMatchObject({ requests: 2 });
    expect(fx.fired).toContain(PAY_LOST);
    expect(fx.notInjected).toEqual([expect.stringContaining('a duplicate stream delivery'), expect.stringContaining('two senders racing for one batch')]);
  });
});

describe('the stream faults, proven from the sender handler\'s side', () => {
  it('a duplicate delivery and a race: the handler is invoked three times with the same record, two of them at once; the counters the report reads say exactly that', async () => {
    const streams = streamsClient(t.endpoint);
    const log: { seqs: string[]; concurrent: number }[] = [];
    let inFlight = 0;
    const sender = async (event: DynamoDBStreamEvent) => {
      inFlight++;
      const entry = { seqs: event.Records.map((r) => String(r.dynamodb?.SequenceNumber)), concurrent: inFlight };
      log.push(entry);
      // Yield once: a second invocation started at the same time is in flight now.
      await Promise.resolve();
      entry.concurrent = Math.max(entry.concurrent, inFlight);
      inFlight--;
      return { batchItemFailures: [] };
    };
    const stream = new OutboxStream({ client: t.dynamo.client, streams, table: t.names.outbox, clock: systemClock, sender });
    stream.duplicateNext(1);
    stream.raceNext(1);
    try {
      await t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: { pk: 'email#evidence-stream', status: 'PENDING' } }));
      await stream.drain(3);
      expect({ duplicated: stream.duplicated, raced: stream.raced }).toEqual({ duplicated: 1, raced: 1 });
      expect(log).toHaveLength(3);
      expect(new Set(log.map((l) => l.seqs.join(','))).size).toBe(1);
      // Racing: the first two overlapped; the duplicate came after them, alone.
      expect(log.map((l) => l.concurrent)).toEqual([2, 2, 1]);
    } finally {
      await stream.stop();
      streams.destroy();
    }
  });
});

describe('the sender killed after the provider accepted, proven from the provider\'s record and the item', () => {
  it('the sink has the email; the outbox item stays SENDING (never SENT by the killed sender); the report says killed only then', async () => {
    const fx = new RunEffects({ dynamo: t.dynamo, streams: streamsClient(t.endpoint), tables: t.names, set: 'evidence-kill', effects, clock: systemClock, telemetry: silentTelemetry, leaseMs: 500, faults: true });
    const pk = 'email#evidence-kill';
    const item = { pk, kind: 'email', jobId: 'j', generation: 1, unit: 0, updatedAt: Date.now(), status: 'PENDING', attempts: 0, unsent: 'open', to: 'c@customers.example', subject: 's', body: 'b' };
    expect(fx.senderKilled).toBe(false);
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: item }));
    try {
      // The killed invocation never returns: the stream abandons it after its invocation timeout.
      await fx.stream.drain(2);
      const mails = effects.sink!.received.filter((m) => headerOf(m.raw, 'X-Outbox-Id') === pk && headerOf(m.raw, 'X-Outbox-Table') === t.names.outbox);
      expect(mails).toHaveLength(1);
      expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'SENDING' });
      expect(fx.senderKilled).toBe(true);
    } finally {
      await fx.stop();
    }
  });
});
