// tier: quick
/**
 * The sender and the reconciler act on each verdict of the providers' behaviour model
 * (lib/workflow/adapters/provider-behaviour.ts) on DynamoDB Local: throttled and held items are
 * deferred (never FAILED) and sent once their time comes, a 5xx is maybe-taken, a saved 5xx is
 * UNKNOWN, UNKNOWN is decided by unrecorded possibly-taken sends after the record's lag (not by
 * claims), a claim too old to cover a send is given back, a takeover yields to a record that came
 * after the read, and the recorder keeps bounces and complaints. The providers here are scripted
 * ports (the answers are the test's to choose); the classification of the real clients' answers
 * against the real stand-ins is test/provider-standins.test.ts's.
 */
import { invoices } from '../lib/workloads/invoices/index.js';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { SESv2ServiceException } from '@aws-sdk/client-sesv2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../lib/protocol/index.js';
import {
  claim,
  deferClaimed,
  handleOutboxRecords,
  deliver,
  METRIC,
  Pacer,
  PAST_RETENTION,
  readOutboxItem,
  reconcile,
  recordProviderEvent,
  recordSesEvent,
  releaseClaim,
  takeOver,
  messageIdentity,
  type EmailProvider,
  type HttpProvider,
  type MetricName,
  type OutboxItem,
  type ReconcilerDeps,
  type SendResult,
  type Telemetry,
} from '../lib/workflow/index.js';
import { classifyHttpStatus, classifySes, classifySmtp } from '../lib/workflow/adapters/index.js';
import { checkDelivery } from '../cli/check/invariants-effects.js';
import { fenceKeyOfJob } from '../cli/check/wire-check.js';
import { makeTables, type TestTables } from './support/tables.js';

let t: TestTables;
const T0 = Date.UTC(2026, 6, 1);
beforeAll(async () => void (t = await makeTables(import.meta.filename)));
afterAll(() => t.dynamo.client.destroy());

/**
 * A provider port that answers the items of this test from a script (then accepts), and counts
 * what they asked; the table's other tests' leftovers (the reconciler reads them all) are accepted, uncounted.
 */
function scripted(answers: SendResult[], mine?: () => ReadonlySet<string>): EmailProvider & HttpProvider & { calls: number } {
  const p = {
    name: 'scripted',
    calls: 0,
    next(headers: Readonly<Record<string, string>>): SendResult {
      if (mine !== undefined && !mine().has(headers['X-Outbox-Id'] ?? '')) return { kind: 'accepted', providerMessageId: 'other' };
      p.calls++;
      return answers.shift() ?? { kind: 'accepted', providerMessageId: `m${p.calls}` };
    },
    send: async (m: { headers: Readonly<Record<string, string>> }) => p.next(m.headers),
    post: async (c: { headers: Readonly<Record<string, string>> }) => p.next(c.headers),
  };
  return p;
}
const only = (...pks: string[]) => () => new Set(pks);

const counting = (): Telemetry & { counts: Map<MetricName, number> } => {
  const counts = new Map<MetricName, number>();
  return { counts, count: (m, n = 1) => void counts.set(m, (counts.get(m) ?? 0) + n), gauge: () => undefined, event: () => undefined };
};

let n = 0;
async function item(kind: 'email' | 'http', over: Record<string, unknown> = {}): Promise<OutboxItem> {
  const pk = `${kind}#v${n++}`;
  const i = { pk, kind, jobId: 'j', generation: 1, unit: 0, updatedAt: T0 - 3_600_000, status: 'PENDING', attempts: 0, unsent: 'open#0', ...(kind === 'email' ? { to: 'c@customers.example', subject: 's', body: 'b' } : { target: 'pay', request: { amount: 1 } }), ...over };
  await t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: i }));
  return i as unknown as OutboxItem;
}
const read = async (pk: string) => (await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))!;

function deps(clock: ManualClock, provider: ReturnType<typeof scripted>, over: Partial<ReconcilerDeps> = {}): ReconcilerDeps & { telemetry: ReturnType<typeof counting> } {
  return {
    doc: t.dynamo.doc,
    table: t.names.outbox,
    clock,
    telemetry: counting(),
    email: provider,
    http: { pay: provider },
    from: 'billing@fenced-workflow.dev',
    random: () => 0.5,
    backoff: { throttleBaseMs: 1_000, heldRetryMs: 60_000 },
    pendingAfterMs: 1_000,
    claimTimeoutMs: 300_000,
    recordLagMs: 600_000,
    ...over,
  } as ReconcilerDeps & { telemetry: ReturnType<typeof counting> };
}

const ses = (name: string, status: number, message = name) => new SESv2ServiceException({ name, $fault: status >= 500 ? 'server' : 'client', $metadata: { httpStatusCode: status }, message });

describe("the model's verdicts (red before: a 5xx was 'not taken', paused and sandbox were FAILED or looped)", () => {
  it('SES: a 5xx is maybe taken; throttles, paused, suspended, sandbox and a missing configuration set are not taken, throttled or held; content refusals are for good', () => {
    expect(classifySes(ses('InternalFailure', 500)).kind).toBe('ambiguous');
    expect(classifySes(ses('ServiceUnavailable', 503)).kind).toBe('ambiguous');
    expect(classifySes(ses('TooManyRequestsException', 429)).kind).toBe('throttled');
    expect(classifySes(ses('LimitExceededException', 400)).kind).toBe('throttled');
    expect(classifySes(ses('SendingPausedException', 400)).kind).toBe('held');
    expect(classifySes(ses('AccountSuspendedException', 400)).kind).toBe('held');
    expect(classifySes(ses('NotFoundException', 404, 'Configuration set <x> does not exist.')).kind).toBe('held');
    expect(classifySes(ses('MessageRejected', 400, 'Email address is not verified. The following identities failed the check in region US-EAST-1: c@customers.example')).kind).toBe('held');
    expect(classifySes(ses('MessageRejected', 400, 'Illegal content'))).toMatchObject({ kind: 'rejected', permanent: true });
    expect(classifySes(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toMatchObject({ kind: 'rejected', permanent: false });
    expect(classifySes(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })).kind).toBe('ambiguous');
  });

  it("SMTP: SES's 454 throttling and 554 quota are throttled, paused and unverified are held, another 5xx is for good", () => {
    expect(classifySmtp({ responseCode: 454, message: 'Throttling failure: Maximum sending rate exceeded.' }, 'transaction').kind).toBe('throttled');
    expect(classifySmtp({ responseCode: 554, message: 'Throttling failure: Daily message quota exceeded.' }, 'transaction')).toMatchObject({ kind: 'throttled', retryAfterMs: 3_600_000 });
    expect(classifySmtp({ responseCode: 554, message: 'Account is paused.' }, 'transaction').kind).toBe('held');
    expect(classifySmtp({ responseCode: 554, message: 'Message rejected: Email address is not verified.' }, 'transaction').kind).toBe('held');
    expect(classifySmtp({ responseCode: 550, message: 'No such user' }, 'transaction')).toMatchObject({ kind: 'rejected', permanent: true });
    expect(classifySmtp({ code: 'ECONNECTION' }, 'transaction').kind).toBe('ambiguous');
  });

  it('HTTP: 429 honours Retry-After, a 5xx is maybe taken, a replayed 5xx is final, 401/403 held', () => {
    expect(classifyHttpStatus(429, '', { replayed: false, retryAfter: '7', now: 0 })).toMatchObject({ kind: 'throttled', retryAfterMs: 7_000 });
    expect(classifyHttpStatus(500, '', { replayed: false, now: 0 })).toMatchObject({ kind: 'ambiguous' });
    expect(classifyHttpStatus(500, '', { replayed: true, now: 0 })).toMatchObject({ kind: 'ambiguous', final: true });
    expect(classifyHttpStatus(403, '', { replayed: false, now: 0 }).kind).toBe('held');
    expect(classifyHttpStatus(400, '{"error":{"type":"invalid_request_error","code":"account_inactive"}}', { replayed: false, now: 0 }).kind).toBe('held');
    expect(classifyHttpStatus(400, 'idempotency_error', { replayed: false, now: 0 })).toMatchObject({ kind: 'rejected', permanent: true });
  });
});

describe('throttled: deferred with a jittered backoff, the batch with it, sent when its time comes (red before: released, retried at once)', () => {
  it('a throttled email goes PENDING with notBefore; the rest of its batch is deferred unsent; no record fails; the claim refuses it before its time; the reconciler sends it after', async () => {
    const clock = new ManualClock({ wall: T0 });
    const p = scripted([{ kind: 'throttled', reason: '429', retryAfterMs: 2_000 }]);
    const d = deps(clock, p);
    const a = await item('email');
    const b = await item('email');
    const failed = await handleOutboxRecords(d, [a, b].map((x, i) => ({ sequence: String(i), eventName: 'INSERT' as const, item: x })));
    expect(failed).toEqual([]);
    expect(p.calls).toBe(1);
    const [ra, rb] = [await read(a.pk), await read(b.pk)];
    expect(ra).toMatchObject({ status: 'PENDING', deferrals: 1 });
    expect(ra).not.toHaveProperty('claimToken');
    // Full jitter at random 0.5 of a 1 s ceiling is 500 ms, below the provider's Retry-After: 2 s.
    expect(ra.notBefore).toBe(T0 + 2_000);
    expect(rb).toMatchObject({ status: 'PENDING', deferrals: 1 });
    expect(rb.notBefore).toBe(T0 + 500);
    expect(d.telemetry.counts.get(METRIC.outboxThrottled)).toBe(1);
    expect(await claim(t.dynamo.doc, t.names.outbox, a.pk, 'early', T0 + 1_999)).toBe(false);
    // Before its time the reconciler leaves it; after, it sends it.
    expect(await reconcile(deps(new ManualClock({ wall: T0 + 1_000 }), p))).toMatchObject({ delivered: 1 });
    expect((await read(a.pk)).status).toBe('PENDING');
    expect(await reconcile(deps(new ManualClock({ wall: T0 + 2_000 }), p))).toMatchObject({ delivered: 1 });
    expect(await read(a.pk)).toMatchObject({ status: 'SENT' });
    expect(await read(a.pk)).not.toHaveProperty('unsent');
  });

  it('the backoff doubles per deferral up to its cap', async () => {
    const { notBeforeOf } = await import('../lib/workflow/index.js');
    const r = { kind: 'throttled', reason: '' } as const;
    expect([0, 1, 2, 3, 40].map((k) => notBeforeOf(r, k, 0, () => 1, { throttleBaseMs: 1_000, maxMs: 5_000 }))).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
  });

  it('the pacer spaces sends by the rate on the clock', async () => {
    const clock = new ManualClock({ wall: T0 });
    const pacer = new Pacer(clock, 4);
    const at: number[] = [];
    const run = (async () => {
      for (let i = 0; i < 3; i++) await pacer.take().then(() => at.push(clock.monotonicNow()));
    })();
    for (let i = 0; i < 10 && at.length < 3; i++) {
      await new Promise((r) => setImmediate(r));
      clock.advance(250);
    }
    await run;
    expect(at).toEqual([0, 250, 500]);
  });

  it("the pacer is the email account's rate: a payment does not wait its turn behind the emails (red before: it waited on a clock that never moved)", async () => {
    const clock = new ManualClock({ wall: T0 });
    const d = { ...deps(clock, scripted([])), pacer: new Pacer(clock, 1) };
    expect(await deliver(d, await item('email'))).toBe('sent');
    // The pacer's next slot is a second away on a clock this test never moves.
    const pays = [await item('http'), await item('http')];
    expect(await Promise.all(pays.map((x) => deliver(d, x)))).toEqual(['sent', 'sent']);
  }, 10_000);
});

describe('held by the account (paused, sandbox): never FAILED, alarmed, resumed when it lifts (red before: FAILED, or resent every minute)', () => {
  it('a held email keeps its reason while held, counts OutboxHeld, and is sent (the reason gone) once the account is back', async () => {
    const clock = new ManualClock({ wall: T0 });
    const p = scripted([{ kind: 'held', reason: 'SendingPausedException: account paused' }]);
    const d = deps(clock, p);
    const a = await item('email');
    expect(await deliver(d, a)).toBe('held');
    const held = await read(a.pk);
    expect(held).toMatchObject({ status: 'PENDING', heldReason: 'SendingPausedException: account paused', notBefore: T0 + 60_000 });
    expect(d.telemetry.counts.get(METRIC.outboxHeld)).toBe(1);
    expect(await reconcile(deps(new ManualClock({ wall: T0 + 60_000 }), p))).toMatchObject({ delivered: 1 });
    const sent = await read(a.pk);
    expect(sent.status).toBe('SENT');
    expect(sent).not.toHaveProperty('heldReason');
  });

  it("an http item whose target has no endpoint configured is held with the reason naming its variable, never FAILED, and sent once one is (red before: FAILED)", async () => {
    const a = await item('http');
    expect(await deliver({ ...deps(new ManualClock({ wall: T0 }), scripted([], only(a.pk))), http: {} }, a)).toBe('held');
    const held = await read(a.pk);
    expect(held).toMatchObject({ status: 'PENDING', heldReason: 'no endpoint configured for http target pay (PAY_URL)' });
    const p = scripted([], only(a.pk));
    expect(await deliver(deps(new ManualClock({ wall: held.notBefore! }), p), held)).toBe('sent');
    expect(await read(a.pk)).toMatchObject({ status: 'SENT' });
    expect(p.calls).toBe(1);
  });

  it('a held http item is deferred the same way without a claim', async () => {
    const p = scripted([{ kind: 'held', reason: 'HTTP 403 account_inactive' }]);
    const a = await item('http');
    expect(await deliver(deps(new ManualClock({ wall: T0 }), p), a)).toBe('held');
    expect(await read(a.pk)).toMatchObject({ status: 'PENDING', heldReason: 'HTTP 403 account_inactive', deferrals: 1 });
  });

  it('a reconciler run that meets a held answer stops sending to that provider (its later items are the next run\'s)', async () => {
    // The oldest two items of the table: the run meets them first.
    const items = [await item('email', { updatedAt: T0 - 7_000_000 }), await item('email', { updatedAt: T0 - 7_000_000 })];
    const p = scripted([{ kind: 'held', reason: 'paused' }], only(...items.map((i) => i.pk)));
    const report = await reconcile(deps(new ManualClock({ wall: T0 }), p));
    expect(report.deferred).toBe(1);
    expect(p.calls).toBe(1);
    expect((await Promise.all(items.map((i) => read(i.pk)))).map((i) => i.status)).toEqual(['PENDING', 'PENDING']);
  });
});

describe("one provider's hold or throttle does not stop another's items (red before: the email behind held payments was never sent)", () => {
  /** A payment provider whose account is disabled: every call held, none taken. */
  const heldPayments = () => {
    const p = { name: 'held payments', calls: 0, post: async (): Promise<SendResult> => (p.calls++, { kind: 'held', reason: 'HTTP 403: account_inactive' }) };
    return p;
  };

  it('the reconciler: six held payments before an email, each run starting afresh: the email is sent, one payment asked per run', async () => {
    const payments = [...Array(6)].map((_, k) => item('http', { updatedAt: T0 - 7_200_000 + k }));
    const pays = await Promise.all(payments);
    const mail = await item('email', { updatedAt: T0 - 7_100_000 });
    const email = scripted([], only(mail.pk));
    const held = heldPayments();
    for (let run = 0; run < 2; run++) await reconcile({ ...deps(new ManualClock({ wall: T0 + run * 600_000 }), email), http: { pay: held } });
    expect(await read(mail.pk)).toMatchObject({ status: 'SENT' });
    expect(email.calls).toBe(1);
    // The first run asked the first payment and deferred it; the next asked one more (the first's wait not over: skipped).
    expect(held.calls).toBeLessThanOrEqual(2);
    for (const x of pays) expect((await read(x.pk)).status).toBe('PENDING');
  });

  it('the sender: a batch whose payment is held sends its email, and defers only the later payments', async () => {
    const d = { ...deps(new ManualClock({ wall: T0 }), scripted([])), http: { pay: heldPayments() } };
    const [p1, m, p2] = [await item('http'), await item('email'), await item('http')];
    const failed = await handleOutboxRecords(d, [p1, m, p2].map((x, i) => ({ sequence: String(i), eventName: 'INSERT' as const, item: x })));
    expect(failed).toEqual([]);
    expect(await read(m.pk)).toMatchObject({ status: 'SENT' });
    expect(await read(p1.pk)).toMatchObject({ status: 'PENDING', heldReason: expect.stringContaining('account_inactive') });
    expect(await read(p2.pk)).toMatchObject({ status: 'PENDING', heldReason: expect.stringContaining('held with the batch') });
    expect(d.http.pay.calls).toBe(1);
  });
});

describe('maybe taken: a 5xx is counted; a saved 5xx is UNKNOWN (red before: a 5xx released the email for a silent resend)', () => {
  it('an email answered 5xx is counted ambiguous under its claim and left SENDING for the record', async () => {
    const p = scripted([{ kind: 'ambiguous', reason: 'InternalFailure' }]);
    const a = await item('email');
    expect(await deliver(deps(new ManualClock({ wall: T0 }), p), a)).toBe('ambiguous');
    const r = await read(a.pk);
    expect(r).toMatchObject({ status: 'SENDING', ambiguousSends: 1 });
    expect(r.ambiguousClaim).toBe(r.claimToken);
  });

  it("an http item whose key the provider answers with its saved 500 is UNKNOWN with that reason, never resent", async () => {
    const p = scripted([{ kind: 'ambiguous', reason: 'HTTP 500 (saved)', final: true }]);
    const a = await item('http');
    expect(await deliver(deps(new ManualClock({ wall: T0 }), p), a)).toBe('unknown');
    expect(p.calls).toBe(1);
    expect(await read(a.pk)).toMatchObject({ status: 'UNKNOWN', failureReason: 'HTTP 500 (saved)' });
  });
});

describe('UNKNOWN by possibly-taken sends past the record lag, not by claims (red before: three claims made it UNKNOWN at the claim timeout)', () => {
  it('two claims released after a certain refusal and a sender that died before sending: waits for the lag, then resends; UNKNOWN only once three unrecorded sends may have been taken', async () => {
    const a = await item('email');
    for (const token of ['r1', 'r2']) {
      expect(await claim(t.dynamo.doc, t.names.outbox, a.pk, token, T0)).toBe(true);
      expect(await releaseClaim(t.dynamo.doc, t.names.outbox, a.pk, token)).toBe(true);
    }
    expect(await claim(t.dynamo.doc, t.names.outbox, a.pk, 'dead', T0)).toBe(true);
    const p = scripted([{ kind: 'ambiguous', reason: 'lost' }, { kind: 'ambiguous', reason: 'lost' }], only(a.pk));
    // Past the claim timeout, inside the record's lag: nothing decided.
    expect(await reconcile(deps(new ManualClock({ wall: T0 + 300_000 }), p))).toMatchObject({ unknown: 0, resent: 0 });
    expect((await read(a.pk)).status).toBe('SENDING');
    // Past the lag: resent (the dead sender's send counted), the answer lost again (counted by its sender).
    let now = T0 + 600_000;
    expect(await reconcile(deps(new ManualClock({ wall: now }), p))).toMatchObject({ unknown: 0 });
    expect(await read(a.pk)).toMatchObject({ status: 'SENDING', ambiguousSends: 2, attempts: 4 });
    now += 600_000;
    expect(await reconcile(deps(new ManualClock({ wall: now }), p))).toMatchObject({ unknown: 0 });
    expect(await read(a.pk)).toMatchObject({ status: 'SENDING', ambiguousSends: 3 });
    now += 600_000;
    expect(await reconcile(deps(new ManualClock({ wall: now }), p))).toMatchObject({ unknown: 1 });
    expect(await read(a.pk)).toMatchObject({ status: 'UNKNOWN', failureReason: '3 sends that may have been taken, none recorded within 600000 ms' });
  });
});

describe('the record: bounces and complaints kept, any acceptance event settles a dead claim, a Reject fails it (red before: only SEND was read)', () => {
  const tags = (pk: string) => ({ outboxId: [messageIdentity.tag(pk)], outboxTable: [messageIdentity.tag(t.names.outbox)] });

  it('a hard bounce and a complaint on a SENT item are recorded and counted; a suppression-list bounce is named so', async () => {
    const a = await item('email', { status: 'SENT' });
    const tel = counting();
    expect(await recordSesEvent({ doc: t.dynamo.doc, table: t.names.outbox, telemetry: tel }, { eventType: 'Send', mail: { messageId: 'm', tags: tags(a.pk) } })).toBe(false);
    expect(await recordSesEvent({ doc: t.dynamo.doc, table: t.names.outbox, telemetry: tel }, { eventType: 'Bounce', mail: { messageId: 'm', tags: tags(a.pk) }, bounce: { bounceType: 'Permanent', bounceSubType: 'General' } })).toBe(true);
    expect(await recordSesEvent({ doc: t.dynamo.doc, table: t.names.outbox, telemetry: tel }, { eventType: 'Complaint', mail: { messageId: 'm', tags: tags(a.pk) } })).toBe(true);
    const b = await item('email', { status: 'SENT' });
    expect(await recordSesEvent({ doc: t.dynamo.doc, table: t.names.outbox, telemetry: tel }, { eventType: 'Bounce', mail: { messageId: 'n', tags: tags(b.pk) }, bounce: { bounceType: 'Permanent', bounceSubType: 'OnAccountSuppressionList' } })).toBe(true);
    expect([...((await read(a.pk)).providerEvents ?? [])].sort()).toEqual(['BOUNCE:m', 'COMPLAINT:m']);
    expect([...((await read(b.pk)).providerEvents ?? [])]).toEqual(['SUPPRESSED:n']);
    expect(tel.counts.get(METRIC.outboxBounced)).toBe(2);
    expect(tel.counts.get(METRIC.outboxComplained)).toBe(1);
  });

  it('a dead claim whose SEND event was lost but whose bounce came is SENT from the record (no resend); one with a Reject is FAILED', async () => {
    const a = await item('email');
    const b = await item('email');
    for (const x of [a, b]) expect(await claim(t.dynamo.doc, t.names.outbox, x.pk, 'dead', T0)).toBe(true);
    await recordProviderEvent(t.dynamo.doc, t.names.outbox, a.pk, 'BOUNCE', 'm-a');
    await recordProviderEvent(t.dynamo.doc, t.names.outbox, b.pk, 'REJECT', 'm-b');
    const p = scripted([], only(a.pk, b.pk));
    await reconcile(deps(new ManualClock({ wall: T0 + 300_000 }), p));
    expect(p.calls).toBe(0);
    expect(await read(a.pk)).toMatchObject({ status: 'SENT', providerMessageId: 'm-a' });
    expect(await read(b.pk)).toMatchObject({ status: 'FAILED' });
  });

  it('a PENDING email whose record came after its claim was given back (a throttled takeover) is settled by the record: no claim is granted on it, nothing sent again (red before: claimed and sent again)', async () => {
    const a = await item('email');
    const b = await item('email');
    for (const [x, event] of [[a, 'SEND'], [b, 'REJECT']] as const) {
      // Sent (the provider took it), the answer lost; the takeover's resend throttled: PENDING, deferred. Then the late record.
      expect(await claim(t.dynamo.doc, t.names.outbox, x.pk, 'resend', T0)).toBe(true);
      expect(await deferClaimed(t.dynamo.doc, t.names.outbox, x.pk, 'resend', { notBefore: T0 })).toBe(true);
      await recordProviderEvent(t.dynamo.doc, t.names.outbox, x.pk, event, `m-${event}`);
      expect(await claim(t.dynamo.doc, t.names.outbox, x.pk, 'again', T0)).toBe(false);
    }
    const p = scripted([], only(a.pk, b.pk));
    await reconcile(deps(new ManualClock({ wall: T0 }), p));
    expect(p.calls).toBe(0);
    expect(await read(a.pk)).toMatchObject({ status: 'SENT', providerMessageId: 'm-SEND' });
    expect(await read(b.pk)).toMatchObject({ status: 'FAILED', failureReason: expect.stringContaining('m-REJECT') });
    for (const x of [a, b]) expect(await read(x.pk)).not.toHaveProperty('unsent');
  });
});

describe("claims: fresh before each send, and a takeover yields to a record that came after the read (red before: neither checked)", () => {
  it('a sender held after its claim until the claim no longer covers a send gives it back unsent', async () => {
    const clock = new ManualClock({ wall: T0 });
    const p = scripted([]);
    const a = await item('email');
    const d = { ...deps(clock, p), claimTimeoutMs: 60_000, sendTimeoutMs: 10_000, hooks: { at: async (point: string) => void (point === 'after-claim' && clock.advance(50_000)) } };
    expect(await deliver(d, a)).toBe('released');
    expect(p.calls).toBe(0);
    expect(await read(a.pk)).toMatchObject({ status: 'PENDING' });
  });

  it("a takeover is stamped when it is written, not when its run began: a run that outlived the claim timeout leaves an overlapping run no live claim to take (red before: one email sent twice)", async () => {
    const clock = new ManualClock({ wall: T0 + 400_000 });
    const a = await item('email');
    const b = await item('email');
    for (const x of [a, b]) expect(await claim(t.dynamo.doc, t.names.outbox, x.pk, 'dead', T0)).toBe(true);
    const p = scripted([], only(a.pk, b.pk));
    const answer = p.send;
    const sent: string[] = [];
    let overlapping: Promise<unknown> | undefined;
    const d = (): ReconcilerDeps => deps(clock, p, { recordLagMs: 60_000 });
    p.send = async (m) => {
      const pk = m.headers['X-Outbox-Id'] ?? '';
      if (pk !== a.pk && pk !== b.pk) return answer(m);
      sent.push(pk);
      // The first send is slow: the run outlives the claim timeout. The next run starts while the second is being sent.
      if (sent.length === 1) clock.advance(400_000);
      else if (overlapping === undefined) await (overlapping = reconcile(d()));
      return answer(m);
    };
    await reconcile(d());
    expect(overlapping).toBeDefined();
    expect([...sent].sort()).toEqual([a.pk, b.pk].sort());
    for (const x of [a, b]) expect(await read(x.pk)).toMatchObject({ status: 'SENT', attempts: 2 });
  });

  it("the reconciler's takeover fails when the item's record arrived after its read", async () => {
    const a = await item('email');
    expect(await claim(t.dynamo.doc, t.names.outbox, a.pk, 'dead', T0)).toBe(true);
    const seen = await read(a.pk);
    await recordProviderEvent(t.dynamo.doc, t.names.outbox, a.pk, 'SEND', 'm');
    expect(await takeOver(t.dynamo.doc, t.names.outbox, a.pk, seen, 'mine', T0 + 400_000)).toBe(false);
  });

  it('a stale http claim (before http went claimless) past its key retention is UNKNOWN, not resent', async () => {
    const a = await item('http', { status: 'SENDING', claimToken: 'old', claimedAt: T0 - 100_000_000, updatedAt: T0 - 100_000_000 });
    const p = Object.assign(scripted([], only(a.pk)), { keyRetentionMs: 86_400_000 });
    await reconcile(deps(new ManualClock({ wall: T0 }), p));
    expect(p.calls).toBe(0);
    expect(await read(a.pk)).toMatchObject({ status: 'UNKNOWN', failureReason: PAST_RETENTION });
  });
});

describe("DELIVERY's provider rules have teeth (from the items and the stand-ins' records alone)", () => {
  const run = async (outbox: Record<string, unknown>[], sources: Parameters<typeof checkDelivery>[6]) => {
    const found: string[] = [];
    await checkDelivery(invoices, 'tbl', outbox, [], new Set(), [], sources, (_, m) => void found.push(m));
    return found.filter((m) => !m.includes('no committed unit'));
  };
  it('a bounce the provider emitted and the item lacks is a violation; recorded, none', async () => {
    const events = [{ outboxId: 'email#1', outboxTable: 'tbl', event: 'BOUNCE' as const }];
    expect(await run([{ pk: 'email#1', kind: 'email', status: 'SENT' }], { troubleEvents: events })).toEqual(['email#1: the provider emitted a BOUNCE event for it, not recorded on the item']);
    expect(await run([{ pk: 'email#1', kind: 'email', status: 'SENT', providerEvents: new Set(['SEND:m', 'BOUNCE:m']) }], { troubleEvents: events })).toEqual([]);
  });
  it('a FAILED http item the payment provider performed is a violation (red before: unread); one it never performed, none', async () => {
    const failed = [{ pk: 'payment#1', kind: 'http', status: 'FAILED', failureReason: 'HTTP 302: a redirect to https://payments.example/charges, not followed for an effect' }];
    const ledger = [{ key: messageIdentity.idempotencyKey('tbl', 'payment#1'), outboxId: 'payment#1', outboxTable: 'tbl', requests: 1, charges: ['ch_1'] }];
    const refusedForGood = new Set(['payment#1']);
    expect(await run(failed, { refusedForGood, payments: ledger })).toContain('payment#1: FAILED (HTTP 302: a redirect to https://payments.example/charges, not followed for an effect), but the payment provider performed it');
    expect((await run(failed, { refusedForGood, payments: [] })).filter((m) => m.includes('performed it'))).toEqual([]);
  });
  it('a FAILED item its provider never refused for good is a violation; one it refused, none', async () => {
    const failed = [{ pk: 'payment#1', kind: 'http', status: 'FAILED', failureReason: 'HTTP 403' }];
    expect(await run(failed, { refusedForGood: new Set() })).toEqual(['payment#1: FAILED (HTTP 403), but its provider never refused it for good: given up for a state that lifts']);
    expect(await run(failed, { refusedForGood: new Set(['payment#1']) })).toEqual([]);
  });
  it("a delivery write that changes what the unit wrote for the provider (an http item's request or path) is a violation; a status change is not (red before: request and path unread)", async () => {
    const created = { pk: 'payment#1', kind: 'http', jobId: 'j', generation: 1, unit: 0, updatedAt: 1, status: 'PENDING', target: 'payments', request: { customerId: 'c1', amountCents: 100 } };
    const change = (newImage: Record<string, unknown>) => ({ event: 'MODIFY' as const, key: 'payment#1', sequence: 2n, shard: 's', oldImage: created, newImage });
    const found = async (newImage: Record<string, unknown>) => {
      const out: string[] = [];
      await checkDelivery(invoices, 'tbl', [{ ...newImage, status: 'SENT' }], [change(newImage)], new Set(), [], {}, (_, m) => void out.push(m));
      return out.filter((m) => m.includes('what the unit wrote'));
    };
    expect(await found({ ...created, request: { customerId: 'c1', amountCents: 200 } })).toEqual(['payment#1: delivery changed what the unit wrote (request)']);
    expect(await found({ ...created, path: '/tenants/t-2/reports' })).toEqual(['payment#1: delivery changed what the unit wrote (path)']);
    expect(await found({ ...created, status: 'SENT', providerMessageId: 'ch_1' })).toEqual([]);
  });
  it("a claim granted on an email that already carries its provider's record is a violation, read in the item's stream order (red before: unread); a claim before the record, none", async () => {
    const base = { pk: 'email#1', kind: 'email', jobId: 'j', generation: 1, unit: 0, updatedAt: 1, to: 'c@customers.example', subject: 's', body: 'b' };
    const modify = (sequence: bigint, oldImage: Record<string, unknown>, newImage: Record<string, unknown>) => ({ event: 'MODIFY' as const, key: 'email#1', sequence, shard: 's', oldImage, newImage });
    const found = async (changes: ReturnType<typeof modify>[]) => {
      const out: string[] = [];
      await checkDelivery(invoices, 'tbl', [{ ...base, status: 'SENT', providerEvents: new Set(['SEND:m1']) }], changes, new Set(), [], {}, (_, m) => void out.push(m));
      return out.filter((m) => m.includes('claimed'));
    };
    // The takeover's resend throttled (back to PENDING), the late SEND recorded, then claimed again: the record was ignored.
    const pending = { ...base, status: 'PENDING', notBefore: 5 };
    const recordedPending = { ...pending, providerEvents: new Set(['SEND:m1']) };
    expect(await found([modify(2n, pending, recordedPending), modify(3n, recordedPending, { ...recordedPending, status: 'SENDING', claimToken: 't2', claimedAt: 9 })])).toEqual([
      "email#1: claimed to be sent again after its provider's record (SEND:m1) was on it",
    ]);
    // Claimed first, recorded while its claim is out, settled by the record: no claim after it.
    const claimed = { ...base, status: 'SENDING', claimToken: 't1', claimedAt: 2 };
    expect(await found([modify(2n, { ...base, status: 'PENDING' }, claimed), modify(3n, claimed, { ...claimed, providerEvents: new Set(['SEND:m1']) })])).toEqual([]);
  });
});

describe('DELIVERY checks what each effect says against its job\'s input, on the item and in the provider\'s own record (red before: all four mutants passed)', () => {
  const table = 'tbl';
  const job = { pk: 'invoice-run#2026-09', status: 'DONE', input: { period: '2026-09', customers: 2, seed: 5, unitSize: 10, currency: 'EUR' } };
  // The unit's own items (a follow-up is CHAIN's: test/chains.test.ts).
  const expected = [...invoices.checks.outbox(invoices.processor.parseInput(job.input))].filter((e) => e.after === undefined);
  const itemOf = (e: (typeof expected)[number]): Record<string, unknown> =>
    e.kind === 'email'
      ? { pk: e.id, kind: 'email', jobId: job.pk, generation: 1, updatedAt: 7, status: 'SENT', to: e.to, subject: `Your invoice: ${e.says.join(' ')}`, body: e.says.join(' ') }
      : { pk: e.id, kind: 'http', jobId: job.pk, generation: 1, updatedAt: 7, status: 'SENT', target: e.target, request: e.request, ...(e.path === undefined ? {} : { path: e.path }) };
  const mailOf = (i: Record<string, unknown>) => ({ raw: [`Message-ID: ${messageIdentity.messageId(table, String(i.pk))}`, `X-Outbox-Id: ${String(i.pk)}`, `X-Outbox-Table: ${table}`, `To: ${String(i.to)}`, `Subject: ${String(i.subject)}`, '', String(i.body), ''].join('\r\n') });
  const ledgerOf = (i: Record<string, unknown>) => ({ key: messageIdentity.idempotencyKey(table, String(i.pk)), outboxId: String(i.pk), outboxTable: table, path: '/charges', body: JSON.stringify(i.request), requests: 1, charges: ['ch'] });
  /** DELIVERY over items the committed unit created (each tied to its fence write), with the provider's record of what it received. */
  const delivery = async (mutate: (items: Record<string, unknown>[]) => Record<string, unknown>[]) => {
    const items = mutate(expected.map(itemOf));
    const stream = items.map((i, n) => ({ event: 'INSERT' as const, key: String(i.pk), sequence: BigInt(n), shard: 's', newImage: i }));
    const ties = new Set([`${fenceKeyOfJob(job.pk, invoices.fenceKeyPrefix)}\u00001\u00007`]);
    const found: string[] = [];
    const sources = { mails: items.filter((i) => i.kind === 'email').map(mailOf), payments: items.filter((i) => i.kind === 'http').map(ledgerOf) };
    await checkDelivery(invoices, table, items, stream, ties, [job], sources, (name, m) => void (name === 'DELIVERY' && found.push(m)));
    return found;
  };
  const payment = (items: Record<string, unknown>[]) => items.find((i) => i.kind === 'http')!;
  const email = (items: Record<string, unknown>[]) => items.find((i) => i.kind === 'email')!;

  it('the effects as the input says: nothing', async () => expect(await delivery((items) => items)).toEqual([]));

  it('a payment of twice the amount: on the item, and in what the provider received', async () => {
    const found = await delivery((items) => (Object.assign(payment(items), { request: { ...(payment(items).request as object), amountCents: 2 * Number((payment(items).request as { amountCents: number }).amountCents) } }), items));
    expect(found).toEqual([expect.stringMatching(/^payment#2026-09#cust-\d+: request.amountCents is \d+, its input says \d+$/), expect.stringMatching(/^payment#2026-09#cust-\d+: the provider received it request.amountCents is \d+, its input says \d+$/)]);
  });

  it("an email to another customer: on the item, and in what the provider received", async () => {
    const found = await delivery((items) => (Object.assign(email(items), { to: 'cust-0000001@customers.example' }), items));
    expect(found.filter((m) => m.includes('addressed to'))).toHaveLength(2);
  });

  it('a call to another destination than the input says', async () => {
    expect(await delivery((items) => (Object.assign(payment(items), { path: '/tenants/someone-else' }), items))).toContainEqual(expect.stringMatching(/to destination "\/tenants\/someone-else", its input says \(none\)$/));
  });

  it('an extra call no input demands', async () => {
    expect(await delivery((items) => [...items, { ...payment(items), pk: `${String(payment(items).pk)}#again` }])).toEqual([expect.stringMatching(/#again: an effect its job's input does not demand \(an extra call\)$/)]);
  });
});
