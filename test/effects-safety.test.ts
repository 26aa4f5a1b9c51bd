// tier: quick
/**
 * The external effects' safety cases a hand mutation check found unforced: each test below forces
 * its case (hooks that hold a sender or a provider call, injected clocks, a store wrapper that
 * acts between the collector's list and its delete) on the real engines: DynamoDB Local, the
 * local S3 endpoint driven by @aws-sdk/client-s3, a real SMTP sink. The checker's tests read
 * only what cli/check/invariants-effects.ts reads: the Outbox table, its stream, the sink's record.
 */
import { invoices } from '../lib/workloads/invoices/index.js';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDelivery, expectedOutboxIds } from '../cli/check/invariants-effects.js';
import { fenceKeyOfJob } from '../cli/check/wire-check.js';
import { startPaymentsProvider, type PaymentsProvider } from '../cli/local/payments-provider.js';
import { startS3Endpoint, type S3Endpoint } from '../cli/local/s3-endpoint.js';
import { headerOf, startSmtpSink, type SmtpSink } from '../cli/local/smtp-sink.js';
import { readStream, streamsClient } from '../cli/local/streams.js';
import { ManualClock, type Clock } from '../lib/protocol/index.js';
import {
  collect,
  deliver,
  markSent,
  messageIdentity,
  ObjectExistsError,
  PAST_RETENTION,
  readOutboxItem,
  reconcile,
  sendItem,
  silentTelemetry,
  takeOver,
  unsentKeyOf,
  type EmailProvider,
  type ObjectStore,
  type OutboxItem,
  type SenderDeps,
  type Telemetry,
} from '../lib/workflow/index.js';
import { FetchHttpProvider, S3ObjectStore, s3Client, SmtpEmailProvider } from '../lib/workflow/adapters/index.js';
import { invoiceProcessor } from '../lib/workloads/invoices/invoices.js';
import { invoiceShards, startInvoiceRun } from '../lib/workloads/invoices/shards.js';
import { makeTables, type TestTables } from './support/tables.js';
import { FENCE_PREFIX, invariants, invoiceInput, workflow } from './support/workflow.js';

let s3: S3Endpoint;
let sink: SmtpSink;
let payments: PaymentsProvider;
let t: TestTables;
const client = () => s3Client({ endpoint: s3.url });
const T0 = Date.UTC(2026, 5, 1);

beforeAll(async () => {
  [s3, sink, t, payments] = await Promise.all([startS3Endpoint(), startSmtpSink(), makeTables(import.meta.filename), startPaymentsProvider()]);
  await client().send(new CreateBucketCommand({ Bucket: 'docs' }));
});
afterAll(async () => {
  await Promise.all([s3.close(), sink.close(), payments.close()]);
  t.dynamo.client.destroy();
});

/** A point a test holds an actor at: `reached` when it arrived, `release()` lets it go on. */
function gate(): { reached: Promise<void>; arrive(): void; release(): void; released: Promise<void> } {
  let arrive!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => (arrive = r));
  const released = new Promise<void>((r) => (release = r));
  return { reached, arrive, release, released };
}

/** Telemetry that keeps the events (the sender reports whether its markSent held). */
const eventLog = (): Telemetry & { events: { name: string; fields: Record<string, unknown> }[] } => {
  const events: { name: string; fields: Record<string, unknown> }[] = [];
  return { events, count: () => undefined, gauge: () => undefined, event: (name, fields) => void events.push({ name, fields }) };
};

describe('the outbox claim: a sender whose claim was taken over changes nothing', () => {
  const smtp = (): EmailProvider => new SmtpEmailProvider({ host: sink.host, port: sink.port });
  const deps = (clock: Clock, over: Partial<SenderDeps> = {}): SenderDeps => ({ doc: t.dynamo.doc, table: t.names.outbox, clock, telemetry: silentTelemetry, email: smtp(), from: 'billing@fenced-workflow.example', ...over });
  const item = async (pk: string): Promise<OutboxItem> => {
    const i = { pk, kind: 'email', jobId: 'j', generation: 1, unit: 0, updatedAt: T0 - 60_000, status: 'PENDING', attempts: 0, unsent: 'open', to: 'c@customers.example', subject: 's', body: 'b' };
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: i }));
    return i as unknown as OutboxItem;
  };
  const received = (pk: string) => sink.received.filter((m) => headerOf(m.raw, 'X-Outbox-Id') === pk && headerOf(m.raw, 'X-Outbox-Table') === t.names.outbox);
  /** A sender that sent (the sink has the message) and is held before its markSent. */
  const heldSender = (pk: string, i: OutboxItem, clock: Clock, telemetry: Telemetry = silentTelemetry) => {
    const g = gate();
    const done = deliver(deps(clock, { telemetry, hooks: { at: async (p, info) => (p === 'after-send' && info.pk === pk ? (g.arrive(), g.released) : undefined) } }), i);
    return { ...g, done };
  };
  /** DELIVERY over this one item: its stream, its row, the sink's messages for it. */
  const deliveryViolations = async (pk: string, claimTimeoutMs: number): Promise<string[]> => {
    const streams = streamsClient(t.endpoint);
    try {
      const stream = (await readStream(t.dynamo.client, streams, t.names.outbox)).filter((c) => c.key === pk);
      const row = await readOutboxItem(t.dynamo.doc, t.names.outbox, pk);
      const tie = `invoices#j\u00001\u0000${T0 - 60_000}`;
      const found: string[] = [];
      await checkDelivery(invoices, t.names.outbox, [row as unknown as Record<string, unknown>], stream, new Set([tie]), [], { mails: received(pk), claimTimeoutMs }, (_n, msg) => void found.push(msg));
      return found;
    } finally {
      streams.destroy();
    }
  };

  it("markSent under a claim the reconciler took over is false: the reconciler's claim is kept, and its own markSent settles the item", async () => {
    const pk = 'email#taken-over';
    const i = await item(pk);
    const log = eventLog();
    const sender = heldSender(pk, i, new ManualClock({ wall: T0 }), log);
    await sender.reached;
    const senderToken = (await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))!.claimToken!;
    // The reconciler, past the claim timeout by its clock, takes the claim over and is held in its resend.
    const resend = gate();
    const heldSmtp: EmailProvider = { name: 'held smtp', send: async (m) => (resend.arrive(), await resend.released, smtp().send(m)) };
    // A 5 s claim covers a send of at most 1 s: the takeover may send (claimCoversSend).
    const reconciling = reconcile({ ...deps(new ManualClock({ wall: T0 + 10_000 }), { email: heldSmtp, sendTimeoutMs: 1_000 }), pendingAfterMs: 60_000, claimTimeoutMs: 5_000, recordLagMs: 0 });
    await resend.reached;
    const takenOver = (await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))!;
    expect(takenOver).toMatchObject({ status: 'SENDING', attempts: 2, ambiguousSends: 1 });
    expect(takenOver.claimToken).not.toBe(senderToken);
    // The old sender wakes up and marks: refused, the item is still the reconciler's.
    sender.release();
    await sender.done;
    expect(log.events.find((e) => e.name === 'outbox-sent')?.fields.marked).toBe(false);
    expect(await markSent(t.dynamo.doc, t.names.outbox, pk, senderToken, 'late', T0 + 10_001)).toBe(false);
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'SENDING', claimToken: takenOver.claimToken });
    resend.release();
    expect((await reconciling).resent).toBe(1);
    const settled = (await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))!;
    expect(settled).toMatchObject({ status: 'SENT' });
    expect(settled.claimToken).toBeUndefined();
    expect(received(pk)).toHaveLength(2);
  });

  it('DELIVERY names a premature takeover (a live claim taken over): its ambiguous send does not explain the duplicate it caused', async () => {
    const pk = 'email#premature';
    const i = await item(pk);
    const sender = heldSender(pk, i, new ManualClock({ wall: T0 }));
    await sender.reached;
    const seen = (await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))!.claimToken!;
    // Forced: a takeover 100 ms into the claim (the reconciler's age check ignored), then the resend.
    expect(await takeOver(t.dynamo.doc, t.names.outbox, pk, (await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))!, 'premature-token', T0 + 100)).toBe(true);
    const resent = await sendItem(deps(new ManualClock({ wall: T0 + 100 })), i);
    expect(resent.kind).toBe('accepted');
    expect(await markSent(t.dynamo.doc, t.names.outbox, pk, 'premature-token', 'm2', T0 + 101)).toBe(true);
    sender.release();
    await sender.done;
    expect(received(pk)).toHaveLength(2);
    const found = await deliveryViolations(pk, 5_000);
    expect(found).toEqual([
      `${pk}: a claim taken over 100 ms after it was made, younger than the claim timeout 5000 ms: a live sender's claim was taken over`,
      `${pk}: the provider received 2 messages; 0 recorded ambiguous send(s) not caused by a premature takeover explain at most 1`,
    ]);
    // The same history judged with a timeout the takeover respected: nothing to say.
    expect(await deliveryViolations(pk, 100)).toEqual([]);
  });

  it("the reconciler leaves a claim younger than claimTimeoutMs alone (the sender is alive): one message, and DELIVERY finds no takeover", async () => {
    const pk = 'email#young-claim';
    const i = await item(pk);
    const sender = heldSender(pk, i, new ManualClock({ wall: T0 }));
    await sender.reached;
    // 1 s into a 5 s claim, the provider's record silent (lag 0): the claim is live, not stale.
    const r = await reconcile({ ...deps(new ManualClock({ wall: T0 + 1_000 })), pendingAfterMs: 60_000, claimTimeoutMs: 5_000, recordLagMs: 0 });
    sender.release();
    await sender.done;
    expect(await deliveryViolations(pk, 5_000)).toEqual([]);
    expect(r).toMatchObject({ examined: 1, resent: 0, waiting: 1 });
    expect(received(pk)).toHaveLength(1);
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'SENT', attempts: 1 });
  });
});

describe('the http path has no claim: the Idempotency-Key is what keeps the effect once', () => {
  const deps = (clock: Clock, over: Partial<SenderDeps> = {}): SenderDeps => ({ doc: t.dynamo.doc, table: t.names.outbox, clock, telemetry: silentTelemetry, http: { payments: new FetchHttpProvider(`${payments.url}/charges`, 3_000) }, from: 'billing@fenced-workflow.example', ...over });
  const item = async (pk: string): Promise<OutboxItem> => {
    const i = { pk, kind: 'http', jobId: 'j', generation: 1, unit: 0, updatedAt: T0 - 60_000, status: 'PENDING', attempts: 0, unsent: unsentKeyOf(pk), target: 'payments', request: { customerId: pk, amountCents: 1234, currency: 'EUR' } };
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: i }));
    return i as unknown as OutboxItem;
  };
  const ledger = (pk: string) => payments.records.get(messageIdentity.idempotencyKey(t.names.outbox, pk));
  /** The Outbox stream's changes of one item (every write the engine applied to it). */
  const changes = async (pk: string) => {
    const streams = streamsClient(t.endpoint);
    try {
      return (await readStream(t.dynamo.client, streams, t.names.outbox)).filter((c) => c.key === pk);
    } finally {
      streams.destroy();
    }
  };
  const reconciler = (wall: number) => ({ ...deps(new ManualClock({ wall })), pendingAfterMs: 30_000, claimTimeoutMs: 30_000, recordLagMs: 0 });

  it('two senders racing on one item both POST its key: the provider performs it once, and the item is written SENT once (the first answer recorded, conditional on PENDING)', async () => {
    const pk = 'payment#race';
    const i = await item(pk);
    // Both senders hold after their POST until both have posted: neither has recorded anything yet.
    const both = gate();
    let posted = 0;
    const hooks = {
      at: async () => {
        if (++posted === 2) both.release();
        await both.released;
      },
    };
    const outcomes = await Promise.all([deliver(deps(new ManualClock({ wall: T0 }), { hooks }), i), deliver(deps(new ManualClock({ wall: T0 }), { hooks }), i)]);
    expect(outcomes.sort()).toEqual(['sent', 'skipped']);
    expect(ledger(pk)).toMatchObject({ requests: 2, refused: 0 });
    expect([...payments.records.values()].filter((r) => r.outboxId === pk)).toHaveLength(1);
    const writes = (await changes(pk)).filter((c) => c.event === 'MODIFY');
    expect(writes.map((c) => [c.oldImage?.status, c.newImage?.status])).toEqual([['PENDING', 'SENT']]);
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'SENT', attempts: 1, providerMessageId: ledger(pk)!.chargeId });
  });

  // The answer lost whole, or a 200 whose body is cut (a JSON body cut in half; half of it and a reset).
  const spoiled = [
    ['lost', () => payments.loseResponses(1)],
    ['a 200 cut in half', () => payments.cut2xx(1, 'truncated')],
    ['a 200 reset mid-body', () => payments.cut2xx(1, 'reset')],
  ] as const;
  it.each(spoiled)('an answer %s (ambiguous) leaves the item PENDING with nothing written; the reconciler resends with the same key: one effect, SENT with its charge id', async (how, spoil) => {
    const pk = `payment#spoiled-${how.replace(/ /g, '-')}`;
    const i = await item(pk);
    spoil();
    expect(await deliver(deps(new ManualClock({ wall: T0 }), { httpResends: 0 }), i)).toBe('ambiguous');
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'PENDING', attempts: 0 });
    expect((await changes(pk)).filter((c) => c.event === 'MODIFY')).toEqual([]);
    // Not before its threshold (the sender may still be at it), then with the same key.
    expect(await reconcile(reconciler(T0 - 60_000 + 10_000))).toMatchObject({ examined: 0 });
    expect(await reconcile(reconciler(T0))).toMatchObject({ delivered: 1 });
    expect(ledger(pk)).toMatchObject({ requests: 2, refused: 0 });
    expect([...payments.records.values()].filter((r) => r.outboxId === pk)).toHaveLength(1);
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'SENT', providerMessageId: ledger(pk)!.chargeId });
  });

  it("the sender's copy (a stream image) and the reconciler's (a GetItem) send the same bytes: the provider replays the key instead of refusing it as reused", async () => {
    // The quiet local run found it: the reconciler resent an item the sender was still at, its
    // request map read back in another key order, and the provider refused the key as reused
    // with other parameters (400 idempotency_error): the sender then wrote the item FAILED.
    const pk = 'payment#key-order';
    // Not written to the table: only the two copies' requests are sent (the reconciler's tests below see no extra item).
    const i = { pk, request: { customerId: pk, amountCents: 1234, currency: 'EUR' } } as unknown as OutboxItem;
    const reordered = { ...i, request: Object.fromEntries(Object.entries(i.request ?? {}).reverse()) } as OutboxItem;
    expect(Object.keys(reordered.request!)).not.toEqual(Object.keys(i.request!));
    const p = new FetchHttpProvider(`${payments.url}/charges`, 3_000);
    const call = (x: OutboxItem) => ({ idempotencyKey: messageIdentity.idempotencyKey(t.names.outbox, pk), headers: {}, body: x.request ?? {} });
    const first = await p.post(call(i));
    expect(await p.post(call(reordered))).toEqual(first);
    expect(ledger(pk)).toMatchObject({ requests: 2, refused: 0 });
  });

  it('a 503 proves nothing (maybe taken): nothing is written and the item is sent later with its key; a refusal for good (the key already used with other parameters) ends FAILED with the reason', async () => {
    const pk = 'payment#down';
    const i = await item(pk);
    payments.down(60_000);
    expect(await deliver(deps(new ManualClock({ wall: T0 })), i)).toBe('ambiguous');
    payments.down(0);
    expect((await changes(pk)).filter((c) => c.event === 'MODIFY')).toEqual([]);
    expect(await reconcile(reconciler(T0))).toMatchObject({ delivered: 1 });
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'SENT' });

    const bad = 'payment#key-reused';
    const b = await item(bad);
    await new FetchHttpProvider(`${payments.url}/charges`).post({ idempotencyKey: messageIdentity.idempotencyKey(t.names.outbox, bad), headers: {}, body: { other: 'parameters' } });
    expect(await deliver(deps(new ManualClock({ wall: T0 })), b)).toBe('failed');
    const failed = (await readOutboxItem(t.dynamo.doc, t.names.outbox, bad))!;
    expect(failed).toMatchObject({ status: 'FAILED' });
    expect(failed).not.toHaveProperty('unsent');
    expect((failed as unknown as { failureReason: string }).failureReason).toContain('idempotency_error');
  });
});

describe("the provider's key retention: an http item is never sent past it less the margin (UNKNOWN, never resent)", () => {
  // A provider that forgets keys 60 s after it stored them, on a clock the test drives; the sender gives up 10 s before.
  const RETENTION = 60_000;
  const MARGIN = 10_000;
  let forgetful: PaymentsProvider;
  let providerNow = T0;
  beforeAll(async () => {
    forgetful = await startPaymentsProvider({ keyRetentionMs: RETENTION, now: () => providerNow });
  });
  afterAll(() => forgetful.close());
  const provider = () => new FetchHttpProvider(`${forgetful.url}/charges`, 3_000, { keyRetentionMs: RETENTION });
  const deps = (wall: number, over: Partial<SenderDeps> = {}): SenderDeps => ({ doc: t.dynamo.doc, table: t.names.outbox, clock: new ManualClock({ wall }), telemetry: silentTelemetry, http: { payments: provider() }, from: 'billing@fenced-workflow.example', keyRetentionMarginMs: MARGIN, ...over });
  const reconciler = (wall: number) => ({ ...deps(wall), pendingAfterMs: 30_000, claimTimeoutMs: 30_000, recordLagMs: 0 });
  /** The item as its INSERT stream image has it: never a firstSentAt. */
  const item = async (pk: string): Promise<OutboxItem> => {
    const i = { pk, kind: 'http', jobId: 'j', generation: 1, unit: 0, updatedAt: T0 - 60_000, status: 'PENDING', attempts: 0, unsent: unsentKeyOf(pk), target: 'payments', request: { customerId: pk, amountCents: 1234, currency: 'EUR' } };
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: i }));
    return i as unknown as OutboxItem;
  };
  const ledger = (pk: string) => forgetful.records.get(messageIdentity.idempotencyKey(t.names.outbox, pk));
  /** The first send at T0, its answer lost: the provider performed it and stored the key; the item stays PENDING, stamped. */
  const sentOnceAnswerLost = async (pk: string): Promise<OutboxItem> => {
    const i = await item(pk);
    providerNow = T0;
    forgetful.loseResponses(1);
    expect(await deliver(deps(T0, { httpResends: 0 }), i)).toBe('ambiguous');
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'PENDING' });
    expect(ledger(pk)).toMatchObject({ requests: 1, charges: [expect.any(String)] });
    return i;
  };

  it('a resend before the retention less the margin goes out with the same key: the provider replays it, one charge, SENT', async () => {
    const pk = 'payment#retention-before';
    await sentOnceAnswerLost(pk);
    providerNow = T0 + RETENTION - MARGIN - 1_000;
    expect(await reconcile(reconciler(providerNow))).toMatchObject({ delivered: 1, unknown: 0 });
    expect(ledger(pk)).toMatchObject({ requests: 2, charges: [ledger(pk)!.chargeId] });
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'SENT', providerMessageId: ledger(pk)!.chargeId, firstSentAt: T0 });
  });

  it("the stream's retry past the retention less the margin (the provider still remembers the key): no POST, UNKNOWN with the reason, out of the unsent index; the first send time is the first sender's", async () => {
    const pk = 'payment#retention-sender';
    const image = await sentOnceAnswerLost(pk);
    providerNow = T0 + RETENTION - MARGIN;
    // The stream's image has no firstSentAt: the stamp (if_not_exists) answers with the stored one, T0.
    expect(await deliver(deps(providerNow), image)).toBe('unknown');
    expect(ledger(pk)).toMatchObject({ requests: 1 });
    const after = (await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))!;
    expect(after).toMatchObject({ status: 'UNKNOWN', failureReason: PAST_RETENTION, firstSentAt: T0 });
    expect(after).not.toHaveProperty('unsent');
    // A later duplicate delivery finds it settled and sends nothing either.
    expect(await deliver(deps(providerNow + 1), image)).toBe('skipped');
    expect(ledger(pk)).toMatchObject({ requests: 1 });
  });

  it('the reconciler past the retention (the provider has forgotten the key: a resend would be a second charge) leaves the item UNKNOWN, unsent', async () => {
    const pk = 'payment#retention-reconciler';
    await sentOnceAnswerLost(pk);
    providerNow = T0 + RETENTION + 1_000;
    expect(await reconcile(reconciler(providerNow))).toMatchObject({ delivered: 0, unknown: 1 });
    expect(ledger(pk)).toMatchObject({ requests: 1, charges: [expect.any(String)] });
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'UNKNOWN', failureReason: PAST_RETENTION });
    // Nothing left for the next run.
    expect(await reconcile(reconciler(providerNow + 60_000))).toMatchObject({ examined: 0 });
  });

  it('an item the provider only ever refused (held: nothing taken, no key stored) is sent past the retention, its window started again, never UNKNOWN', async () => {
    const pk = 'payment#retention-held';
    const image = await item(pk);
    let held = true;
    forgetful.pausedWhile(() => held);
    providerNow = T0;
    expect(await deliver(deps(T0), image)).toBe('held');
    // The hold's retry (5 min, jittered) comes past the retention: every round so far refused, so the window starts again, and the hold refuses once more.
    providerNow = T0 + 400_000;
    expect(await reconcile(reconciler(providerNow))).toMatchObject({ unknown: 0, deferred: 1 });
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'PENDING', firstSentAt: T0 + 400_000, keyedSends: 2, keyedRefusals: 2 });
    held = false;
    providerNow = T0 + 800_000;
    expect(await reconcile(reconciler(providerNow))).toMatchObject({ delivered: 1, unknown: 0 });
    expect(ledger(pk)).toMatchObject({ requests: 1, charges: [expect.any(String)] });
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'SENT', providerMessageId: ledger(pk)!.chargeId, firstSentAt: T0 + 800_000, keyedSends: 3, keyedRefusals: 2 });
  });

  it('a round that may have been taken (its answer lost) before the refusals keeps the deadline: past it, UNKNOWN, no POST', async () => {
    const pk = 'payment#retention-lost-then-held';
    await sentOnceAnswerLost(pk);
    let held = true;
    forgetful.pausedWhile(() => held);
    providerNow = T0 + 20_000;
    expect(await reconcile(reconciler(providerNow))).toMatchObject({ deferred: 1 });
    held = false;
    providerNow = T0 + 400_000;
    expect(await reconcile(reconciler(providerNow))).toMatchObject({ delivered: 0, unknown: 1 });
    expect(ledger(pk)).toMatchObject({ requests: 1 });
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'UNKNOWN', failureReason: PAST_RETENTION, firstSentAt: T0 });
  });

  it('an ambiguous answer is resent at once only until the deadline: a POST never starts past it', async () => {
    const pk = 'payment#retention-resends';
    const i = await item(pk);
    providerNow = T0;
    forgetful.loseResponses(3);
    // Each POST takes 20 s on the sender's clock; the deadline is T0 + 60 s - 10 s.
    const clock = new ManualClock({ wall: T0 });
    const slow = provider();
    const post = slow.post.bind(slow);
    const timed = Object.assign(Object.create(slow) as FetchHttpProvider, { post: async (c: Parameters<typeof post>[0]) => post(c).finally(() => clock.advance(20_000)) });
    expect(await deliver(deps(T0, { clock, httpResends: 5, http: { payments: timed } }), i)).toBe('ambiguous');
    // T0, T0 + 20 s, T0 + 40 s: the fourth would start at T0 + 60 s, past T0 + 50 s.
    expect(ledger(pk)).toMatchObject({ requests: 3 });
    forgetful.loseResponses(0);
  });
});

describe('DELIVERY reads the payment ledger for resends past the key retention', () => {
  it('a key performed twice (forgotten, then asked again) and a request past the retention are violations, from the ledger alone', async () => {
    const table = 'retention-ledger';
    const id = 'payment#2026-01#cust-0000001';
    const key = messageIdentity.idempotencyKey(table, id);
    const insert = { event: 'INSERT', key: id, newImage: { pk: id, kind: 'http', jobId: 'job', generation: 1, updatedAt: 5 } } as unknown as Parameters<typeof checkDelivery>[3][number];
    const item = { pk: id, kind: 'http', status: 'SENT' };
    const fence = new Set([`${fenceKeyOfJob('job', FENCE_PREFIX)}\u00001\u00005`]);
    const run = async (at: number[], charges: string[]) => {
      const found: string[] = [];
      const stats = await checkDelivery(invoices, table, [item], [insert], fence, [], { payments: [{ key, outboxId: id, outboxTable: table, requests: at.length, charges, at }], paymentsKeyRetentionMs: 1_000 }, (_, m) => found.push(m));
      return { found, stats: stats.payments };
    };
    expect(await run([0, 999], ['ch_1'])).toMatchObject({ found: [], stats: { resentPastRetention: 0 } });
    const late = await run([0, 1_000], ['ch_1', 'ch_2']);
    expect(late.stats.resentPastRetention).toBe(1);
    expect(late.found.join('\n')).toMatch(/performed it 2 times under one Idempotency-Key/);
    expect(late.found.join('\n')).toMatch(/past the provider's key retention of 1000 ms/);
  });
});

describe('the document put: a 412 is resolved by the existing object, not assumed', () => {
  it("a 412 whose existing object has another body (another checksum) is ObjectExistsError, not a success; the object is left as it was", async () => {
    const key = 'put-412/other/3.json';
    await client().send(new PutObjectCommand({ Bucket: 'docs', Key: key, Body: '{"generation":3,"by":"someone else"}', IfNoneMatch: '*' }));
    const store = new S3ObjectStore(client(), 'docs');
    await expect(store.putNew(key, Buffer.from('{"generation":3}'), 'application/json')).rejects.toBeInstanceOf(ObjectExistsError);
    expect(s3.buckets.get('docs')!.get(key)!.map((v) => v.body.toString())).toEqual(['{"generation":3,"by":"someone else"}']);
  });

  it('a 412 whose existing object is our very body (a retry of our own put) is a success with the stored ETag', async () => {
    const key = 'put-412/same/3.json';
    const body = Buffer.from('{"generation":3}');
    const store = new S3ObjectStore(client(), 'docs');
    const first = await store.putNew(key, body, 'application/json');
    // The retry (a unit drafted again after a lost answer) gets 412 from the endpoint and resolves it.
    const again = await store.putNew(key, body, 'application/json');
    expect(again.etag).toBe(first.etag);
    expect(again.etag).toBe(s3.buckets.get('docs')!.get(key)![0]!.etag);
    expect(s3.buckets.get('docs')!.get(key)).toHaveLength(1);
  });

  it("a put whose answer is lost after the endpoint applied it is retried by the SDK, refused 412, and resolved by the HEAD as our own put", async () => {
    const key = 'put-412/lost/3.json';
    const c = client();
    // The connection resets after the answer left the endpoint (the request was applied), once:
    // the SDK's retry strategy resends the put, and the resend meets our own object.
    let lost = 0;
    c.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        const req = args.request as { method?: string; path?: string };
        if (lost === 0 && req.method === 'PUT' && req.path?.endsWith(key)) {
          lost++;
          throw Object.assign(new TypeError('socket hang up (the answer was lost)'), { code: 'ECONNRESET' });
        }
        return out;
      },
      { step: 'finalizeRequest', priority: 'low', name: 'loseFirstPutAnswer' },
    );
    const { etag } = await new S3ObjectStore(c, 'docs').putNew(key, Buffer.from('{"generation":3}'), 'application/json');
    expect(lost).toBe(1);
    expect(s3.buckets.get('docs')!.get(key)).toHaveLength(1);
    expect(etag).toBe(s3.buckets.get('docs')!.get(key)![0]!.etag);
    c.destroy();
  });
});

describe('the collector', () => {
  const store = () => new S3ObjectStore(client(), 'docs');
  const refOf = (k: string) => invoiceProcessor.documents!.refOf(k, t.names);
  const collector = (prefix: string, over: { store?: ObjectStore } = {}) =>
    collect({ doc: t.dynamo.doc, tables: t.names, store: over.store ?? store(), pages: new S3ObjectStore(client(), 'docs'), prefix, refOf, fenceKeyPrefix: FENCE_PREFIX, clock: new ManualClock({ wall: Date.now() + 60_000 }), telemetry: silentTelemetry, minAgeMs: 0 });
  const put = (pk: string, item: Record<string, unknown>, table = t.names.records) => t.dynamo.doc.send(new PutCommand({ TableName: table, Item: { pk, ...item } }));
  const doc = (period: string, c: number, g: number) => `invoices/${period}/cust-${String(c).padStart(7, '0')}/${g}.json`;
  const write = async (key: string) => (await store().putNew(key, Buffer.from(`{"key":"${key}"}`), 'application/json')).etag;
  const live = (key: string) => s3.buckets.get('docs')!.get(key)?.at(-1)?.deleteMarker === false;

  it("keeps an unreferenced document of the fence's own generation while the job runs: the live holder may still publish it", async () => {
    const key = doc('2026-01', 1, 8);
    await write(key);
    await put('invoices#invoice-run#2026-01', { generation: 8 }, t.names.fences);
    await put('invoice-run#2026-01', { status: 'RUNNING', cursor: 0, totalUnits: 2 }, t.names.jobs);
    const r = await collector('invoices/2026-01/');
    expect(r).toMatchObject({ scanned: 1, referenced: 0, kept: 1, deleted: 0 });
    expect(live(key)).toBe(true);
  });

  it('deletes only with If-Match: an object replaced between the list and the delete is left alone', async () => {
    const key = doc('2026-02', 1, 3);
    await write(key);
    await put('invoices#invoice-run#2026-02', { generation: 5 }, t.names.fences);
    // A store whose delete first lets the object be replaced (another version at the key, another ETag).
    const s = store();
    const replacing: ObjectStore = {
      putNew: (k, b, c) => s.putNew(k, b, c),
      getIfMatch: (k, e) => s.getIfMatch(k, e),
      page: (p, a, m) => s.page(p, a, m),
      deleteIfMatch: async (k, e) => {
        await client().send(new PutObjectCommand({ Bucket: 'docs', Key: k, Body: '{"replaced":true}' }));
        return s.deleteIfMatch(k, e);
      },
    };
    const r = await collector('invoices/2026-02/', { store: replacing });
    expect(r).toMatchObject({ scanned: 1, deleted: 0 });
    expect(s3.buckets.get('docs')!.get(key)!.map((v) => (v.deleteMarker ? 'deleted' : v.body.toString()))).toEqual([`{"key":"${key}"}`, '{"replaced":true}']);
  });

  it("collects a sharded run's obsolete orphans by their shard's fence and keeps every one a live shard holder may still publish", async () => {
    const period = '2026-03';
    const input = invoiceInput(period, 4, 2);
    await startInvoiceRun(t.dynamo.doc, t.names.jobs, input, 2, new ManualClock({ wall: T0 }));
    const [s0, s1] = invoiceShards(input, 2).map((s) => s.id) as [string, string];
    expect([s0, s1]).toEqual([`invoice-run#${period}#shard-0-of-2`, `invoice-run#${period}#shard-1-of-2`]);
    // Shard 0 (customers 0, 1) is fenced at 8, shard 1 (customers 2, 3) at 5; both still run.
    await put(`invoices#${s0}`, { generation: 8 }, t.names.fences);
    await put(`invoices#${s1}`, { generation: 5 }, t.names.fences);
    const keys = { c0g3: doc(period, 0, 3), c0g7: doc(period, 0, 7), c0g8: doc(period, 0, 8), c1g4: doc(period, 1, 4), c2g5: doc(period, 2, 5), c3g5: doc(period, 3, 5), c3g6: doc(period, 3, 6) };
    const etags = Object.fromEntries(await Promise.all(Object.entries(keys).map(async ([n, k]) => [n, await write(k)] as const)));
    // Pointers: customer 0 published by shard 0 at 8, customer 3 by shard 1 at 5; customers 1 and 2 by nobody yet.
    await put(`invoice#${period}#cust-0000000`, { jobId: s0, generation: 8, documentKey: keys.c0g8, documentEtag: etags.c0g8 });
    await put(`invoice#${period}#cust-0000003`, { jobId: s1, generation: 5, documentKey: keys.c3g5, documentEtag: etags.c3g5 });
    const r = await collector(`invoices/${period}/`);
    expect(r).toMatchObject({ scanned: 7, referenced: 2, kept: 2, deleted: 3 });
    // Obsolete: shard 0's 3 and 7 (its pointer names shard 0, fenced at 8); customer 1's 4 (no pointer: below every shard's fence).
    expect([keys.c0g3, keys.c0g7, keys.c1g4].map(live)).toEqual([false, false, false]);
    // Current: customer 2's 5 (shard 1's own generation) and customer 3's 6 (a shard 1 holder not fenced yet).
    expect([keys.c0g8, keys.c2g5, keys.c3g5, keys.c3g6].map(live)).toEqual([true, true, true, true]);
  });
});

describe("DELIVERY's expected outbox ids: a finished shard demands its own customers", () => {
  it("a run with one shard DONE and the other not started: no outbox item is missing", async () => {
    const own = await makeTables(import.meta.filename);
    try {
      const w = workflow(own);
      const input = invoiceInput('2026-04', 6, 2);
      const [s0, s1] = invoiceShards(input, 2).map((s) => s.id) as [string, string];
      await startInvoiceRun(own.dynamo.doc, own.names.jobs, input, 2, w.clock);
      await w.queue.send({ jobId: s0, reason: 'start' });
      for (let i = 0; w.queue.depth > 0 && i < 10; i++) await w.deliver(`A${i}`, 1).done;
      const report = await invariants(own);
      expect(report.invariants.DELIVERY).toEqual({ ok: true, violations: [] });
      expect(report.invariants.PROGRESS.violations.join('\n')).toContain(s1);
      const shards = invoiceShards(input, 2).map((s, i) => ({ pk: s.id, status: i === 0 ? 'DONE' : 'PENDING', input: s.input }));
      expect([...expectedOutboxIds(invoices, shards)].sort()).toEqual(['email', 'payment'].flatMap((k) => [0, 1, 2].map((c) => `${k}#2026-04#cust-000000${c}`)).sort());
    } finally {
      own.dynamo.client.destroy();
    }
  });
});
