// tier: quick
/**
 * Steps that depend on an effect's outcome (lib/workflow/effects/follow-ups.ts), on DynamoDB Local
 * and the local payment provider: the follow-ups of an item are created by the very write that
 * settles it, once, whoever races for it; a decline is told apart from a refusal of the request;
 * nothing follows UNKNOWN but a person's decision; a chain goes on from a follow-up's own settle;
 * a hard bounce is followed by the recorder's write; a declined charge is tried again only as a
 * new attempt under a new key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPaymentsProvider, DECLINED_CARD, type PaymentsProvider } from '../cli/local/payments-provider.js';
import { startSmtpSink, type SmtpSink } from '../cli/local/smtp-sink.js';
import { readStream, readStreamRecords, streamsClient, type StreamChange } from '../cli/local/streams.js';
import { PutCommand, ScanCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { checkChains } from '../cli/check/invariants-chains.js';
import { withAttempts } from '../cli/check/invariants-attempts.js';
import type { EffectsSources } from '../cli/check/invariants-effects.js';
import { commitFencedUnit, InvalidInputError, makeGeneration, systemClock, TransactionFailedError, type Effect } from '../lib/protocol/index.js';
import {
  AttemptRefusedError,
  attemptId,
  assertSteps,
  decideUnknown,
  DecisionRefusedError,
  deliver,
  followUpId,
  markUnknownUnclaimed,
  messageIdentity,
  outboxHttp,
  readOutboxItem,
  recordSesEvent,
  retryAsNewAttempt,
  silentTelemetry,
  type SesEventDetail,
  type DecisionResult,
  type ExpectedEffect,
  type FollowUpStep,
  type OutboxItem,
  type SenderDeps,
  type Telemetry,
} from '../lib/workflow/index.js';
import { classifyHttp2xx, FetchHttpProvider, SmtpEmailProvider } from '../lib/workflow/adapters/index.js';
import { putJob } from './support/fixtures.js';
import { makeTables, type TestTables } from './support/tables.js';

let t: TestTables;
let sink: SmtpSink;
let payments: PaymentsProvider;
const g = makeGeneration(0, 1);
const job = 'renewal-run#2026-11';

/** charge → receipt (accepted) → a call to the merchant (the receipt accepted); charge → "card failed" (declined). */
const STEPS: FollowUpStep[] = [
  {
    name: 'receipt',
    after: 'payments',
    on: 'accepted',
    creates: 'email',
    description: 'the receipt, once the charge was taken',
    next: (p) => ({ to: String(p.context?.email), subject: `Receipt: ${String(p.request?.amountCents)} cents`, body: `Charge ${String(p.providerMessageId)}.\n`, context: { merchant: p.context?.merchant } }),
  },
  { name: 'card-failed', after: 'payments', on: 'refusedForGood', creates: 'email', description: 'please update your card', next: (p) => ({ to: String(p.context?.email), subject: 'Your card was declined', body: 'Please update your card.\n' }) },
  { name: 'merchant-notice', after: 'receipt', on: 'accepted', creates: 'payments', description: "the merchant's webhook", next: (p) => ({ target: 'payments', request: { notice: 'receipt-sent', receipt: p.pk }, path: `/merchants/${String(p.context?.merchant)}/notices` }) },
];

beforeAll(async () => {
  [t, sink, payments] = await Promise.all([makeTables(import.meta.filename), startSmtpSink(), startPaymentsProvider()]);
  await putJob(t, job);
});
afterAll(async () => {
  await Promise.all([sink.close(), payments.close()]);
  t.dynamo.client.destroy();
});

const counted: string[] = [];
const telemetry: Telemetry = { ...silentTelemetry, count: (m) => void counted.push(m) };
const deps = (over: Partial<SenderDeps> = {}): SenderDeps => ({
  doc: t.dynamo.doc,
  table: t.names.outbox,
  clock: systemClock,
  telemetry,
  email: new SmtpEmailProvider({ host: sink.host, port: sink.port }),
  http: { payments: new FetchHttpProvider(`${payments.url}/charges`, 3_000) },
  from: 'billing@fenced-workflow.example',
  steps: STEPS,
  ...over,
});

let cursor = 0;
/** A charge item committed in its own unit (fence, checkpoint, the item), as a processor writes it. */
async function charge(customer: string, card = 'tok_visa'): Promise<OutboxItem> {
  const unit = cursor++;
  const effect: Effect = outboxHttp(t.names.outbox, `charge#2026-11#${customer}`, { jobId: job, unit }, { target: 'payments', request: { customer, amountCents: 1999, card }, context: { email: `${customer}@customers.example`, merchant: 'm-7' } });
  await commitFencedUnit({ doc: t.dynamo.doc }, { fence: { table: t.names.fences, resource: `fence#${job}` }, generation: g, checkpoint: { table: t.names.jobs, key: job, expected: unit, next: unit + 1 }, effects: [effect], token: { job, unit } });
  return (await readOutboxItem(t.dynamo.doc, t.names.outbox, effect.item.pk))!;
}
const item = async (pk: string) => readOutboxItem(t.dynamo.doc, t.names.outbox, pk);

describe('the steps a workload declares are checked when it is registered', () => {
  const outbox = { email: true, http: [{ target: 'payments' }] };
  const refusal = (steps: FollowUpStep[]) => {
    try {
      assertSteps(steps, outbox, (field, why) => {
        throw new TypeError(`${field}: ${why}`);
      });
      return 'accepted';
    } catch (e) {
      return (e as Error).message;
    }
  };
  const step = (over: Partial<FollowUpStep>): FollowUpStep => ({ ...STEPS[0]!, ...over });

  it('accepts a chain of steps; refuses an unknown source or effect, a bounce after http, a cycle, a chain too long, a name twice or a target', () => {
    expect(refusal(STEPS)).toBe('accepted');
    expect(refusal([step({ after: 'webhooks' })])).toMatch(/^steps\.receipt\.after: must be email, an http target or a step/);
    expect(refusal([step({ creates: 'webhooks' })])).toMatch(/^steps\.receipt\.creates: must be one of email, payments/);
    expect(refusal([step({ on: 'bounced' })])).toMatch(/^steps\.receipt\.on: bounced follows email items only/);
    // A bounce follows email: the units' own, or a step's that creates email.
    expect(refusal([step({ on: 'bounced', after: 'email' })])).toBe('accepted');
    expect(refusal([...STEPS, step({ name: 'bounce-notice', on: 'bounced', after: 'receipt' })])).toBe('accepted');
    expect(refusal([...STEPS, step({ name: 'bounce-notice', on: 'bounced', after: 'merchant-notice' })])).toMatch(/^steps\.bounce-notice\.on: bounced follows email items only; merchant-notice creates payments/);
    expect(refusal([step({ name: 'a', after: 'b' }), step({ name: 'b', after: 'a' })])).toMatch(/the steps form a cycle/);
    const chain = Array.from({ length: 9 }, (_, i) => step({ name: `s${i}`, after: i === 0 ? 'payments' : `s${i - 1}` }));
    expect(refusal(chain)).toMatch(/chains are at most 8 steps long/);
    expect(refusal([step({}), step({})])).toMatch(/two steps are named receipt/);
    expect(refusal([step({ name: 'payments' })])).toMatch(/neither "email" nor an http target/);
  });
});

describe('follow-ups are created by the write that settles their parent, once', () => {
  it('an accepted charge: SENT and its receipt in one write (the parent lists it; the receipt is PENDING with parent and step, no generation); the receipt sent goes on to its own step', async () => {
    const parent = await charge('cust-1');
    expect(await deliver(deps(), parent)).toBe('sent');
    const settled = (await item(parent.pk))!;
    const receiptId = followUpId(parent.pk, 'receipt');
    expect(settled).toMatchObject({ status: 'SENT', followUps: [receiptId] });
    expect(settled.refusal).toBeUndefined();
    const receipt = (await item(receiptId))!;
    expect(receipt).toMatchObject({ kind: 'email', status: 'PENDING', parent: parent.pk, step: 'receipt', jobId: job, to: 'cust-1@customers.example', subject: 'Receipt: 1999 cents', body: `Charge ${settled.providerMessageId}.\n` });
    expect(receipt.generation).toBeUndefined();
    expect(receipt.updatedAt).toBeGreaterThan(0);
    // The chain's next step, from the receipt's own settle: the merchant's notice at its own path.
    expect(await deliver(deps(), receipt)).toBe('sent');
    const notice = (await item(followUpId(receiptId, 'merchant-notice')))!;
    expect(notice).toMatchObject({ kind: 'http', status: 'PENDING', parent: receiptId, step: 'merchant-notice', path: '/merchants/m-7/notices', request: { notice: 'receipt-sent', receipt: receiptId } });
    expect(await deliver(deps(), notice)).toBe('sent');
    expect((await item(notice.pk))!.followUps).toBeUndefined();
  });

  it('four senders racing on one charge, then a duplicate delivery: one settle wins, the receipt is created once (one INSERT on the stream)', async () => {
    const parent = await charge('cust-2');
    const outcomes = await Promise.allSettled(Array.from({ length: 4 }, () => deliver(deps(), parent)));
    // A sender that lost the race either saw the item settled or was cancelled by the winner's transaction in flight (its record is retried).
    for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(TransactionFailedError);
    expect(outcomes.filter((o) => o.status === 'fulfilled' && o.value === 'sent')).toHaveLength(1);
    expect(await deliver(deps(), parent)).toBe('skipped');
    const receiptId = followUpId(parent.pk, 'receipt');
    const records = (await readStreamRecords(t.dynamo.client, streamsClient(t.endpoint), t.names.outbox)).map((r) => r.record);
    expect(records.filter((r) => r.dynamodb?.Keys?.pk?.S === receiptId).map((r) => r.eventName)).toEqual(['INSERT']);
    expect((await item(parent.pk))!.followUps).toEqual([receiptId]);
  });

  it('a declined card (402 card_declined): FAILED as a refusal of the effect, counted, not alarmed, with its "card failed" email; a refused request (404): FAILED as ours, alarmed, followed by nothing', async () => {
    counted.length = 0;
    const declined = await charge('cust-3', DECLINED_CARD);
    expect(await deliver(deps(), declined)).toBe('declined');
    expect(await item(declined.pk)).toMatchObject({ status: 'FAILED', refusal: 'effect', followUps: [followUpId(declined.pk, 'card-failed')] });
    expect(await item(followUpId(declined.pk, 'card-failed'))).toMatchObject({ kind: 'email', to: 'cust-3@customers.example', subject: 'Your card was declined', status: 'PENDING' });
    expect(await item(followUpId(declined.pk, 'receipt'))).toBeUndefined();
    expect(counted).toEqual(['OutboxDeclined']);

    const misrouted = await charge('cust-4');
    expect(await deliver(deps({ http: { payments: new FetchHttpProvider(`${payments.url}/_nowhere`, 3_000) } }), misrouted)).toBe('failed');
    const failed = (await item(misrouted.pk))!;
    expect(failed).toMatchObject({ status: 'FAILED', refusal: 'request' });
    expect(failed.followUps).toBeUndefined();
    expect(counted).toEqual(['OutboxDeclined', 'OutboxFailed']);
  });

  it('nothing follows an answer nobody saw or an UNKNOWN: a saved 500 replayed for the key ends UNKNOWN with no follow-up', async () => {
    payments.fail5xxAfter(1, { saved: true });
    const parent = await charge('cust-5');
    expect(await deliver(deps(), parent)).toBe('unknown');
    const settled = (await item(parent.pk))!;
    expect(settled.status).toBe('UNKNOWN');
    expect(settled.followUps).toBeUndefined();
    for (const s of ['receipt', 'card-failed']) expect(await item(followUpId(parent.pk, s))).toBeUndefined();
  });

  it("a step whose next() throws: the parent settles (the provider took it) with followUpError, no follow-up, OutboxFollowUpFailed counted", async () => {
    counted.length = 0;
    const broken: FollowUpStep[] = [{ ...STEPS[0]!, next: () => ({ target: 'payments', request: {} }) }];
    const parent = await charge('cust-6');
    expect(await deliver(deps({ steps: broken }), parent)).toBe('sent');
    const settled = (await item(parent.pk))!;
    expect(settled).toMatchObject({ status: 'SENT', followUpError: 'step receipt: steps.receipt: creates email, and its next() gave no email' });
    expect(settled.followUps).toBeUndefined();
    expect(counted).toEqual(['OutboxFollowUpFailed', 'OutboxSent']);
  });

  it('a follow-up already there while its parent is unsettled (created outside the settle): the settle is refused whole, the parent stays PENDING', async () => {
    const parent = await charge('cust-7');
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: { pk: followUpId(parent.pk, 'receipt'), kind: 'email', status: 'PENDING' } }));
    await expect(deliver(deps(), parent)).rejects.toBeInstanceOf(TransactionFailedError);
    expect((await item(parent.pk))!.status).toBe('PENDING');
  });
});

describe("a 2xx that says a refusal, by the target's declared rule", () => {
  const declines = { field: 'status', values: ['failed', 'declined'] };
  it('is a decline, never an acceptance; without the rule, or with another value, it is accepted', () => {
    expect(classifyHttp2xx(200, '{"id":"p_1","status":"failed"}', { json: true, requestId: null, declines })).toMatchObject({ kind: 'declined' });
    expect(classifyHttp2xx(200, '{"id":"p_1","status":"succeeded"}', { json: true, requestId: null, declines })).toEqual({ kind: 'accepted', providerMessageId: 'p_1' });
    expect(classifyHttp2xx(200, '{"id":"p_1","status":"failed"}', { json: true, requestId: null })).toEqual({ kind: 'accepted', providerMessageId: 'p_1' });
  });
});

describe("an UNKNOWN item settles only by a person's decision, with its outcome's steps in the same write", () => {
  const decider = () => ({ doc: t.dynamo.doc, table: t.names.outbox, clock: systemClock, telemetry, steps: STEPS });
  const demands = (parents: string[]): Map<string, ExpectedEffect> =>
    new Map(
      parents.flatMap((p) =>
        (['receipt', 'card-failed'] as const).map((step): [string, ExpectedEffect] => {
          const id = followUpId(p, step);
          return [id, { id, kind: 'email', to: 'x', says: [], after: { parent: p, step, on: step === 'receipt' ? 'accepted' : 'refusedForGood' } }];
        }),
      ),
    );
  /** CHAIN over these parents and their follow-ups, from the outbox, its stream and the provider's own record (cli/check). */
  async function chainViolations(parents: string[]): Promise<string[]> {
    const mine = (pk: string) => parents.some((p) => pk.startsWith(p));
    const outbox = (await Promise.all([...demands(parents).keys(), ...parents].map(item))).filter((i): i is OutboxItem => i !== undefined);
    const stream = (await readStream(t.dynamo.client, streamsClient(t.endpoint), t.names.outbox)).filter((c) => mine(c.key));
    const found: string[] = [];
    checkChains(t.names.outbox, outbox as unknown as Record<string, unknown>[], stream, demands(parents), { payments: [...payments.records.values()] }, (_, m) => void found.push(m));
    return found;
  }
  /** A charge POSTed by a sender that died before it recorded the answer, then given up UNKNOWN (as the reconciler does past the provider's key retention). */
  async function unknownCharge(customer: string, card = 'tok_visa'): Promise<OutboxItem> {
    const parent = await charge(customer, card);
    const { idempotencyKey, headers } = { idempotencyKey: messageIdentity.idempotencyKey(t.names.outbox, parent.pk), headers: messageIdentity.headers(t.names.outbox, parent.pk) };
    await new FetchHttpProvider(`${payments.url}/charges`, 3_000).post({ idempotencyKey, headers, body: parent.request ?? {} });
    expect(await markUnknownUnclaimed(t.dynamo.doc, t.names.outbox, parent.pk, 'past the provider key retention')).toBe(true);
    return (await item(parent.pk))!;
  }

  it('accepted, with the provider\'s charge id: SENT with the decision on it and its receipt created once; the checker finds the chain whole', async () => {
    const parent = await unknownCharge('cust-20');
    const charged = [...payments.records.values()].find((r) => r.outboxId === parent.pk)!;
    const r = await decideUnknown(decider(), parent.pk, { outcome: 'accepted', providerMessageId: charged.chargeId, note: 'charged, per the dashboard' });
    const receiptId = followUpId(parent.pk, 'receipt');
    expect(r).toEqual({ id: parent.pk, status: 'SENT', followUps: [receiptId] });
    expect(await item(parent.pk)).toMatchObject({ status: 'SENT', providerMessageId: charged.chargeId, decidedBy: 'operator', decisionNote: 'charged, per the dashboard', followUps: [receiptId] });
    expect(await item(receiptId)).toMatchObject({ kind: 'email', status: 'PENDING', parent: parent.pk, step: 'receipt', body: `Charge ${charged.chargeId}.\n` });
    expect(await chainViolations([parent.pk])).toEqual([]);
  });

  it('declined: FAILED as a refusal of the effect, its "card failed" email created, no receipt; the checker finds the chain whole', async () => {
    const parent = await unknownCharge('cust-21', DECLINED_CARD);
    const r = await decideUnknown(decider(), parent.pk, { outcome: 'declined', note: 'card_declined on the dashboard' });
    expect(r).toEqual({ id: parent.pk, status: 'FAILED', followUps: [followUpId(parent.pk, 'card-failed')] });
    expect(await item(parent.pk)).toMatchObject({ status: 'FAILED', refusal: 'effect', decidedBy: 'operator', failureReason: "declined, an operator's decision: card_declined on the dashboard" });
    expect(await item(followUpId(parent.pk, 'receipt'))).toBeUndefined();
    expect(await chainViolations([parent.pk])).toEqual([]);
  });

  it('a decision the provider\'s own record contradicts (taken, where it declined) is caught by the checker: the receipt it created is a CHAIN violation', async () => {
    const parent = await unknownCharge('cust-22', DECLINED_CARD);
    await decideUnknown(decider(), parent.pk, { outcome: 'accepted', providerMessageId: 'ch_made_up', note: 'misread the dashboard' });
    const found = await chainViolations([parent.pk]);
    expect(found).toEqual([expect.stringContaining(`${followUpId(parent.pk, 'receipt')}: step receipt follows accepted`)]);
  });

  it('two people deciding at once: one decision stands, the other is refused and writes nothing; an item not UNKNOWN or missing is refused, untouched', async () => {
    const parent = await unknownCharge('cust-23');
    const both = await Promise.allSettled([
      decideUnknown(decider(), parent.pk, { outcome: 'accepted', providerMessageId: 'ch_1', note: 'taken' }),
      decideUnknown(decider(), parent.pk, { outcome: 'declined', note: 'declined' }),
    ]);
    expect(both.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const refused = both.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    // Refused by the item's state, or cancelled by the other decision's transaction in flight: either way it wrote nothing.
    expect(refused.reason instanceof DecisionRefusedError || refused.reason instanceof TransactionFailedError).toBe(true);
    const settled = (await item(parent.pk))!;
    const stood = (both.find((o) => o.status === 'fulfilled') as PromiseFulfilledResult<DecisionResult>).value;
    expect(settled.status).toBe(stood.status);
    expect(settled.followUps).toEqual(stood.followUps);
    const other = followUpId(parent.pk, stood.status === 'SENT' ? 'card-failed' : 'receipt');
    expect(await item(other)).toBeUndefined();

    const before = await item(parent.pk);
    await expect(decideUnknown(decider(), parent.pk, { outcome: 'declined', note: 'again' })).rejects.toThrow(DecisionRefusedError);
    expect(await item(parent.pk)).toEqual(before);
    await expect(decideUnknown(decider(), 'charge#2026-11#nobody', { outcome: 'declined', note: 'x' })).rejects.toThrow(/does not exist: only an UNKNOWN item/);
    await expect(decideUnknown(decider(), parent.pk, { outcome: 'declined', note: ' ' })).rejects.toThrow(InvalidInputError);
  });
});

describe('a hard bounce is followed by the write that records it, once: the recorder creates the `bounced` steps\' follow-ups', () => {
  /** The receipt's bounce: the merchant's webhook told, at the merchant's own path. */
  const BOUNCED: FollowUpStep[] = [
    ...STEPS,
    { name: 'bounce-notice', after: 'receipt', on: 'bounced', creates: 'payments', description: 'the merchant told', next: (p) => ({ target: 'payments', request: { notice: 'receipt-bounced', receipt: p.pk }, path: `/merchants/${String(p.context?.merchant)}/notices` }) },
  ];
  const tags = (pk: string) => ({ outboxId: [messageIdentity.tag(pk)], outboxTable: [messageIdentity.tag(t.names.outbox)] });
  const event = (pk: string, eventType: string, bounce?: { bounceType: string; bounceSubType: string }): SesEventDetail => ({ eventType, mail: { messageId: `m-${pk}`, tags: tags(pk) }, ...(bounce === undefined ? {} : { bounce }) });
  const hard = { bounceType: 'Permanent', bounceSubType: 'General' };
  const recorder = { doc: () => t.dynamo.doc, steps: BOUNCED };
  const record = (detail: SesEventDetail, steps: readonly FollowUpStep[] | undefined = recorder.steps) => recordSesEvent({ doc: recorder.doc(), table: t.names.outbox, steps, telemetry }, detail);
  /** A charge taken and its receipt sent: the receipt is the SENT email a bounce comes back for. */
  async function sentReceipt(customer: string): Promise<OutboxItem> {
    const parent = await charge(customer);
    expect(await deliver(deps({ steps: BOUNCED }), parent)).toBe('sent');
    const receipt = (await item(followUpId(parent.pk, 'receipt')))!;
    expect(await deliver(deps({ steps: BOUNCED }), receipt)).toBe('sent');
    return (await item(receipt.pk))!;
  }

  it('a Permanent bounce: BOUNCE recorded, the follow-up created with it and listed in bounceFollowUps; the event again (EventBridge repeats), and twice at once: created once, one INSERT', async () => {
    const receipt = await sentReceipt('cust-30');
    const notice = followUpId(receipt.pk, 'bounce-notice');
    const both = await Promise.allSettled([record(event(receipt.pk, 'Bounce', hard)), record(event(receipt.pk, 'Bounce', hard))]);
    // A recorder cancelled by the other's transaction in flight fails its invocation, and EventBridge retries it.
    for (const o of both) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(TransactionFailedError);
    expect(await record(event(receipt.pk, 'Bounce', hard))).toBe(true);
    const after = (await item(receipt.pk))!;
    expect(after).toMatchObject({ status: 'SENT', bounceFollowUps: [notice], followUps: [followUpId(receipt.pk, 'merchant-notice')] });
    expect([...(after.providerEvents ?? [])]).toContain(`BOUNCE:m-${receipt.pk}`);
    expect(await item(notice)).toMatchObject({ kind: 'http', status: 'PENDING', parent: receipt.pk, step: 'bounce-notice', path: '/merchants/m-7/notices', request: { notice: 'receipt-bounced', receipt: receipt.pk } });
    const records = (await readStreamRecords(t.dynamo.client, streamsClient(t.endpoint), t.names.outbox)).map((r) => r.record);
    expect(records.filter((r) => r.dynamodb?.Keys?.pk?.S === notice).map((r) => r.eventName)).toEqual(['INSERT']);
    expect(await chainOf([receipt], [notice], [{ outboxId: receipt.pk, outboxTable: t.names.outbox, event: 'BOUNCE' }])).toEqual([]);
  });

  it('a soft bounce, a complaint, or a workload without a bounced step: recorded, followed by nothing', async () => {
    const receipt = await sentReceipt('cust-31');
    expect(await record(event(receipt.pk, 'Bounce', { bounceType: 'Transient', bounceSubType: 'MailboxFull' }))).toBe(true);
    expect(await record(event(receipt.pk, 'Complaint'))).toBe(true);
    expect(await record(event(receipt.pk, 'Bounce', hard), STEPS)).toBe(true);
    const after = (await item(receipt.pk))!;
    expect(after.bounceFollowUps).toBeUndefined();
    expect(await item(followUpId(receipt.pk, 'bounce-notice'))).toBeUndefined();
    // The provider's record shows a hard bounce: the checker demands the notice, and finds it missing.
    expect(await chainOf([receipt], [followUpId(receipt.pk, 'bounce-notice')], [{ outboxId: receipt.pk, outboxTable: t.names.outbox, event: 'BOUNCE' }])).toEqual([expect.stringContaining('came to bounced, and step bounce-notice')]);
  });

  it("a follow-up created for a complaint (no hard bounce in the provider's record) is a CHAIN violation", async () => {
    const receipt = await sentReceipt('cust-32');
    expect(await record(event(receipt.pk, 'Bounce', hard))).toBe(true);
    const notice = followUpId(receipt.pk, 'bounce-notice');
    expect(await chainOf([receipt], [notice], [{ outboxId: receipt.pk, outboxTable: t.names.outbox, event: 'COMPLAINT' }])).toEqual([expect.stringContaining(`${notice}: step bounce-notice follows bounced`)]);
  });

  /**
   * CHAIN over these receipts' bounce follow-ups alone, with the email provider's trouble events as
   * given: each receipt as a root (its own creation and settle are the other tests'), the notices
   * and the writes that recorded the receipts' bounces.
   */
  async function chainOf(receipts: OutboxItem[], notices: string[], troubleEvents: EffectsSources['troubleEvents']): Promise<string[]> {
    const demanded = new Map<string, ExpectedEffect>(notices.map((id, k) => [id, { id, kind: 'http', target: 'payments', request: {}, after: { parent: receipts[k]!.pk, step: 'bounce-notice', on: 'bounced' } }]));
    const roots = new Set(receipts.map((r) => r.pk));
    const outbox = (await Promise.all([...roots, ...notices].map(item))).filter((i): i is OutboxItem => i !== undefined).map(({ parent: _p, followUps: _f, ...i }) => i);
    const bounceWrite = (c: StreamChange) => roots.has(c.key) && c.event === 'MODIFY' && c.oldImage?.bounceFollowUps === undefined && c.newImage?.bounceFollowUps !== undefined;
    const stream = (await readStream(t.dynamo.client, streamsClient(t.endpoint), t.names.outbox)).filter((c) => notices.includes(c.key) || bounceWrite(c));
    const found: string[] = [];
    checkChains(t.names.outbox, outbox as unknown as Record<string, unknown>[], stream, demanded, { troubleEvents }, (_, m) => void found.push(m));
    return found;
  }
});

const retrier = () => ({ doc: t.dynamo.doc, table: t.names.outbox, clock: systemClock });
const keyOf = (pk: string) => messageIdentity.idempotencyKey(t.names.outbox, pk);

/** A charge the provider declined (every new key declined while the card is bad). */
async function declined(customer: string, steps: FollowUpStep[] = STEPS): Promise<OutboxItem> {
  const c = await charge(customer);
  payments.declineShare(1);
  try {
    expect(await deliver(deps({ steps }), c)).toBe('declined');
  } finally {
    payments.declineShare(0);
  }
  return (await item(c.pk))!;
}
/** What the job's input demands of one charge: the charge, its receipt after an acceptance, its "card failed" after a decline. */
const demandsOf = (c: OutboxItem): Map<string, ExpectedEffect> =>
  new Map<string, ExpectedEffect>([
    [c.pk, { id: c.pk, kind: 'http', target: 'payments', request: c.request ?? {} }],
    [followUpId(c.pk, 'receipt'), { id: followUpId(c.pk, 'receipt'), kind: 'email', to: String(c.context?.email), says: ['Receipt'], after: { parent: c.pk, step: 'receipt', on: 'accepted' } }],
    [followUpId(c.pk, 'card-failed'), { id: followUpId(c.pk, 'card-failed'), kind: 'email', to: String(c.context?.email), says: ['declined'], after: { parent: c.pk, step: 'card-failed', on: 'refusedForGood' } }],
  ]);
/** CHAIN over one charge's items (its attempts and their follow-ups), with the provider's records. */
async function chainOf(c: OutboxItem): Promise<string[]> {
  const outbox = ((await t.dynamo.doc.send(new ScanCommand({ TableName: t.names.outbox, ConsistentRead: true }))).Items ?? []).filter((i) => String(i.pk).startsWith(c.pk));
  const stream = (await readStream(t.dynamo.client, streamsClient(t.endpoint), t.names.outbox)).filter((s) => s.key.startsWith(c.pk));
  const found: string[] = [];
  checkChains(t.names.outbox, outbox, stream, withAttempts(demandsOf(c), outbox), { payments: [...payments.records.values()] }, (_, m) => void found.push(m));
  return found;
}

describe('a new attempt of a declined charge, under a new key', () => {
  it("a person's retry once the card is fixed: a new item, a new Idempotency-Key; taken, it has its own receipt; the declined key is never sent again; the checker finds it whole", async () => {
    const first = await declined('retry-a');
    expect(first).toMatchObject({ status: 'FAILED', refusal: 'effect', followUps: [followUpId(first.pk, 'card-failed')] });
    const next = await retryAsNewAttempt(retrier(), first.pk, 'card updated, ticket 4411');
    expect(next).toBe(attemptId(first.pk, 2));
    expect(await item(first.pk)).toMatchObject({ status: 'FAILED', retriedBy: [next], retryNote: 'card updated, ticket 4411' });
    const attempt = (await item(next))!;
    expect(attempt).toMatchObject({ status: 'PENDING', kind: 'http', target: 'payments', request: first.request, context: first.context, attemptOf: first.pk, attempt: 2 });
    expect(attempt.generation).toBeUndefined();
    expect(keyOf(next)).not.toBe(keyOf(first.pk));

    expect(await deliver(deps(), attempt)).toBe('sent');
    const taken = (await item(next))!;
    expect(taken).toMatchObject({ status: 'SENT', followUps: [followUpId(next, 'receipt')] });
    expect(await item(followUpId(next, 'receipt'))).toMatchObject({ to: 'retry-a@customers.example', body: `Charge ${String(taken.providerMessageId)}.\n` });
    // The provider's own record: the declined key once (declined), the new key charged once.
    expect(payments.records.get(keyOf(first.pk))).toMatchObject({ requests: 1, declined: 'card_declined', charges: [] });
    expect(payments.records.get(keyOf(next))).toMatchObject({ requests: 1, charges: [taken.providerMessageId] });
    expect(await chainOf(first)).toEqual([]);
  });

  it('refused, writing nothing: a retry of an item retried already, of one the provider took, of one missing; of two people at once, one attempt stands', async () => {
    const first = await declined('retry-b');
    const both = await Promise.allSettled([retryAsNewAttempt(retrier(), first.pk, 'a'), retryAsNewAttempt(retrier(), first.pk, 'b')]);
    expect(both.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    for (const o of both) if (o.status === 'rejected') expect(o.reason instanceof AttemptRefusedError || o.reason instanceof TransactionFailedError).toBe(true);
    await expect(retryAsNewAttempt(retrier(), first.pk, 'again')).rejects.toThrow(`was retried already, by ${attemptId(first.pk, 2)}`);
    expect(await item(attemptId(first.pk, 3))).toBeUndefined();

    const taken = await charge('retry-c');
    expect(await deliver(deps(), taken)).toBe('sent');
    await expect(retryAsNewAttempt(retrier(), taken.pk, 'x')).rejects.toThrow(AttemptRefusedError);
    expect((await item(taken.pk))!.retriedBy).toBeUndefined();
    await expect(retryAsNewAttempt(retrier(), 'charge#2026-11#nobody', 'x')).rejects.toThrow(/does not exist/);
  });

  it('an attempt of a charge its provider took (made outside the retry) is a CHAIN violation: the effect a second time', async () => {
    const taken = await charge('retry-d');
    expect(await deliver(deps(), taken)).toBe('sent');
    const next = attemptId(taken.pk, 2);
        const copy = { ...(await item(taken.pk))!, pk: next, status: 'PENDING', attemptOf: taken.pk, attempt: 2 } as Record<string, unknown>;
    for (const k of ['followUps', 'providerMessageId', 'sentAt', 'generation']) delete copy[k];
    await t.dynamo.doc.send(new TransactWriteCommand({ TransactItems: [{ Update: new UpdateCommand({ TableName: t.names.outbox, Key: { pk: taken.pk }, UpdateExpression: 'SET retriedBy = :n', ExpressionAttributeValues: { ':n': [next] } }).input as never }, { Put: new PutCommand({ TableName: t.names.outbox, Item: copy }).input as never }] }));
    expect(await chainOf(taken)).toEqual([expect.stringContaining(`${next}: a new attempt of ${taken.pk}, which its provider took`)]);
  });

  it('a step a workload declares after a decline that creates the same target: its follow-up is a new attempt under its own key, never the declined one', async () => {
    const retryStep: FollowUpStep = { name: 'retry', after: 'payments', on: 'refusedForGood', creates: 'payments', description: 'charge again, on the card on file', next: (p) => ({ target: 'payments', request: p.request ?? {} }) };
    const first = await declined('retry-e', [...STEPS, retryStep]);
    const again = followUpId(first.pk, 'retry');
    expect(await item(again)).toMatchObject({ status: 'PENDING', request: first.request, parent: first.pk, step: 'retry' });
    expect(keyOf(again)).not.toBe(keyOf(first.pk));
    expect(await deliver(deps({ steps: [...STEPS, retryStep] }), (await item(again))!)).toBe('sent');
    expect(payments.records.get(keyOf(first.pk))?.requests).toBe(1);
    expect(payments.records.get(keyOf(again))?.charges).toHaveLength(1);
  });
});
