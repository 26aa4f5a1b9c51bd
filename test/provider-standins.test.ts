// tier: quick
/**
 * The local stand-ins misbehave on cue, and each misbehaviour reaches the sender as the row of
 * the providers' behaviour model it plays (lib/workflow/adapters/provider-behaviour.ts): real
 * servers, driven by the real clients through the project's adapters (FetchHttpProvider,
 * SmtpEmailProvider, SesEmailProvider on @aws-sdk/client-sesv2), no mocks. Each claim checks the
 * adapter's verdict and the stand-in's own record: whether anything was performed, and that the
 * fault was counted where it fired.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { SESv2Client } from '@aws-sdk/client-sesv2';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sinkEventDetail, startEffects } from '../cli/local/effects-env.js';
import type { PaymentsStandIn } from '../cli/local/payments-core.js';
import { PAYMENT_TRANSPORTS, type PaymentsRig } from './support/payment-transports.js';
import { startSmtpSink, type SmtpSink } from '../cli/local/smtp-sink.js';
import { FetchHttpProvider, SesEmailProvider, SmtpEmailProvider } from '../lib/workflow/adapters/index.js';
import { messageIdentity, readOutboxItem, type OutboundCall, type OutboundEmail } from '../lib/workflow/index.js';
import { startSesEndpoint, type SesEndpoint } from './support/ses-endpoint.js';
import { makeTables, type TestTables } from './support/tables.js';

const TABLE = 'standins-outbox';
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

const call = (pk = `pay#${randomUUID()}`): OutboundCall => ({ idempotencyKey: messageIdentity.idempotencyKey(TABLE, pk), headers: messageIdentity.headers(TABLE, pk), body: { amount: 1200, currency: 'eur', customer: pk } });

// Over both transports: the server npm start runs, and the simulator's in-memory fetch on the same core.
describe.each(PAYMENT_TRANSPORTS)('the payment provider stand-in plays each HTTP row through FetchHttpProvider, over %s', (_name, start) => {
  let rig: PaymentsRig;
  let payments: PaymentsStandIn;
  let http: FetchHttpProvider;
  beforeAll(async () => {
    rig = await start();
    payments = rig.payments;
    http = rig.http();
  });
  afterAll(async () => rig.close());

  it('throttle: 429 with Retry-After is throttled (the wait honoured), nothing performed or stored for the key; the resend is performed once', async () => {
    const c = call();
    payments.throttle(1, 7);
    expect(await http.post(c)).toMatchObject({ kind: 'throttled', retryAfterMs: 7_000 });
    expect(payments.records.has(c.idempotencyKey)).toBe(false);
    expect(payments.fired.throttled).toBe(1);
    expect(await http.post(c)).toMatchObject({ kind: 'accepted' });
    expect(payments.records.get(c.idempotencyKey)!.charges).toHaveLength(1);
  });

  it('redirect: 302 to another location is refused for good with the location, nothing performed or stored, for that key every time (a racing sender is turned away too); the provider keeps the outbox id it turned away', async () => {
    const c = call();
    payments.redirect(1);
    const r = await http.post(c);
    expect(r).toMatchObject({ kind: 'rejected', permanent: true });
    expect(r.kind === 'rejected' && r.reason).toMatch(/HTTP 302: a redirect to https:\/\/payments\.example\/charges/);
    expect(await http.post(c)).toMatchObject({ kind: 'rejected', permanent: true });
    expect(payments.records.has(c.idempotencyKey)).toBe(false);
    expect(payments.fired.redirect).toBe(2);
    expect([...payments.redirected]).toContain(c.headers['X-Outbox-Id']);
    // Another key is performed as usual.
    expect(await http.post(call())).toMatchObject({ kind: 'accepted' });
  });

  it('fail5xxAfter (saved, Stripe\'s behaviour): the charge is made and answered 500, ambiguous; every resend with the key gets the saved 500, replayed: ambiguous and final, no second charge', async () => {
    const c = call();
    payments.fail5xxAfter(1);
    const first = await http.post(c);
    expect(first.kind).toBe('ambiguous');
    expect(first).not.toHaveProperty('final');
    const r = payments.records.get(c.idempotencyKey)!;
    expect(r.charges).toHaveLength(1);
    expect(r.savedError).toBe(500);
    for (let i = 0; i < 2; i++) expect(await http.post(c)).toMatchObject({ kind: 'ambiguous', final: true });
    expect(r.charges).toHaveLength(1);
    expect(r.requests).toBe(3);
    expect(payments.fired).toMatchObject({ '5xx-after': 1, 'replayed-5xx': 2 });
  });

  it('cut2xx: a 200 whose body cannot be read (a JSON body cut in half, or half of it and a reset) is ambiguous, not "taken" with no id; the resend with the key replays the charge: accepted with its id, one charge', async () => {
    for (const how of ['truncated', 'reset'] as const) {
      const c = call();
      payments.cut2xx(1, how);
      expect({ how, kind: (await http.post(c)).kind }).toEqual({ how, kind: 'ambiguous' });
      const r = payments.records.get(c.idempotencyKey)!;
      expect(await http.post(c)).toEqual({ kind: 'accepted', providerMessageId: r.chargeId });
      expect(r.charges).toHaveLength(1);
    }
    expect(payments.fired['2xx-cut']).toBe(2);
  });

  it('fail5xxAfter (not saved): the charge is made and answered 500, ambiguous; the resend replays the charge\'s 200, accepted with its id', async () => {
    const c = call();
    const before = payments.fired['5xx-after'];
    payments.fail5xxAfter(1, { saved: false });
    expect((await http.post(c)).kind).toBe('ambiguous');
    const r = payments.records.get(c.idempotencyKey)!;
    expect(r.savedError).toBeUndefined();
    expect(await http.post(c)).toEqual({ kind: 'accepted', providerMessageId: r.chargeId });
    expect(r.charges).toHaveLength(1);
    expect(payments.fired['5xx-after']).toBe(before + 1);
  });

  it('fail5xxBefore: 503 is ambiguous as any 5xx (the model cannot tell), and nothing was performed: the resend is the first charge', async () => {
    const c = call();
    payments.fail5xxBefore(1);
    expect(await http.post(c)).toMatchObject({ kind: 'ambiguous' });
    expect(payments.records.has(c.idempotencyKey)).toBe(false);
    expect(payments.fired['5xx-before']).toBe(1);
    expect(await http.post(c)).toMatchObject({ kind: 'accepted' });
    expect(payments.records.get(c.idempotencyKey)!.requests).toBe(1);
  });

  it('pause / pausedWhile: 403 account_inactive is held, nothing performed; sending resumes when the account does', async () => {
    const c = call();
    payments.pause(60_000);
    const held = await http.post(c);
    expect(held).toMatchObject({ kind: 'held' });
    expect(held.kind === 'held' && held.reason).toMatch(/account_inactive/);
    payments.pause(0);
    let disabled = true;
    payments.pausedWhile(() => disabled);
    expect(await http.post(c)).toMatchObject({ kind: 'held' });
    expect(payments.records.has(c.idempotencyKey)).toBe(false);
    disabled = false;
    expect(await http.post(c)).toMatchObject({ kind: 'accepted' });
    expect(payments.fired.paused).toBe(2);
  });

  it('a first request is performed, a resend with its key replayed (one charge), the same key with another body refused for good; any POST path recorded', async () => {
    const c = call();
    const first = await http.post(c);
    expect(first).toMatchObject({ kind: 'accepted' });
    expect(await http.post(c)).toEqual(first);
    expect(await http.post({ ...c, body: { amount: 1 } })).toMatchObject({ kind: 'rejected', permanent: true });
    const r = payments.records.get(c.idempotencyKey)!;
    expect(r).toMatchObject({ charges: [r.chargeId], requests: 3, refused: 1, path: '/charges', outboxTable: TABLE });
    const hook = call();
    expect(await rig.http('/hooks/tenant-7').post(hook)).toMatchObject({ kind: 'accepted' });
    expect(payments.records.get(hook.idempotencyKey)!.path).toBe('/hooks/tenant-7');
  });

  it('loseResponses: performed, the answer lost (ambiguous), counted; the resend is replayed', async () => {
    const c = call();
    const told: string[] = [];
    payments.onResponseLost = (k) => told.push(k);
    payments.loseResponses(1);
    expect(await http.post(c)).toMatchObject({ kind: 'ambiguous' });
    expect([payments.responsesLost, payments.lostKeys.at(-1), told]).toEqual([1, c.idempotencyKey, [c.idempotencyKey]]);
    expect(await http.post(c)).toMatchObject({ kind: 'accepted', providerMessageId: payments.records.get(c.idempotencyKey)!.chargeId });
    expect(payments.records.get(c.idempotencyKey)!.charges).toHaveLength(1);
    payments.onResponseLost = undefined;
  });

  it('down / downWhile: 503, nothing performed, counted as refused', async () => {
    const c = call();
    payments.down(60_000);
    expect(await http.post(c)).toMatchObject({ kind: 'ambiguous' });
    payments.down(0);
    let out = true;
    payments.downWhile(() => out);
    expect(await http.post(c)).toMatchObject({ kind: 'ambiguous' });
    out = false;
    expect(payments.records.has(c.idempotencyKey)).toBe(false);
    expect(payments.refused).toBe(2);
    expect(await http.post(c)).toMatchObject({ kind: 'accepted' });
  });

  it('fail5xxBefore: 503 ambiguous, nothing performed; pause / pausedWhile: 403 account_inactive held, nothing performed', async () => {
    // A provider of its own: its counters below count this case's faults alone.
    const own = await start();
    const h = own.http();
    try {
      const c = call();
      own.payments.fail5xxBefore(1);
      expect(await h.post(c)).toMatchObject({ kind: 'ambiguous' });
      expect(own.payments.records.has(c.idempotencyKey)).toBe(false);
      own.payments.pause(60_000);
      const held = await h.post(c);
      expect(held.kind === 'held' && held.reason).toMatch(/account_inactive/);
      own.payments.pause(0);
      let disabled = true;
      own.payments.pausedWhile(() => disabled);
      expect(await h.post(c)).toMatchObject({ kind: 'held' });
      disabled = false;
      expect(own.payments.records.has(c.idempotencyKey)).toBe(false);
      expect(await h.post(c)).toMatchObject({ kind: 'accepted' });
      expect(own.payments.fired).toMatchObject({ '5xx-before': 1, paused: 2 });
    } finally {
      await own.close();
    }
  });

  it('key retention on the provider\'s own clock: past it the key is forgotten with its saved 500, and the request performed again (a second charge)', async () => {
    let now = 1_000_000;
    const forgetful = await start({ keyRetentionMs: 60_000, now: () => now });
    try {
      const h = forgetful.http();
      const c = call();
      forgetful.payments.fail5xxAfter(1);
      expect((await h.post(c)).kind).toBe('ambiguous');
      expect(await h.post(c)).toMatchObject({ kind: 'ambiguous', final: true });
      now += 60_000;
      expect(await h.post(c)).toMatchObject({ kind: 'accepted' });
      expect(forgetful.payments.records.get(c.idempotencyKey)).toMatchObject({ charges: [expect.any(String), expect.any(String)], at: [1_000_000, 1_000_000, 1_060_000] });
      expect(forgetful.payments.records.get(c.idempotencyKey)!.savedError).toBeUndefined();
    } finally {
      await forgetful.close();
    }
  });
});

describe('FetchHttpProvider never follows a redirect for an effect', () => {
  it('a 302 to the POST is refused for good with the location in the reason, and nothing is re-sent (a followed redirect is a GET without the body whose 200 read as taken)', async () => {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      req.resume();
      if (req.method === 'POST') return void res.writeHead(302, { location: '/elsewhere' }).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"ch_from_a_get"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const http = new FetchHttpProvider(`http://127.0.0.1:${(server.address() as AddressInfo).port}/charges`);
      const r = await http.post(call());
      expect(r).toMatchObject({ kind: 'rejected', permanent: true, reason: expect.stringContaining('/elsewhere') });
      expect(seen).toEqual(['POST /charges']);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe("every provider client ends one send within the timeout the claim arithmetic assumes (red before: SES and a slow SMTP server held the send without end)", () => {
  it('SES: a request the server takes and never answers is aborted at the timeout, maybe taken (ambiguous)', async () => {
    const server = createServer((req) => void req.resume()); // takes the request, never answers
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = new SESv2Client({ endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, region: 'us-east-1', credentials: { accessKeyId: 'AKIDLOCALSTANDIN', secretAccessKey: 'local' }, maxAttempts: 1 });
    try {
      const email = new SesEmailProvider(client, 'standins', async () => {}, 300);
      expect(await email.send(mail('silent@customers.example'))).toMatchObject({ kind: 'ambiguous' });
    } finally {
      client.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("SMTP: a server that answers the message data one byte at a time and never ends its reply (each phase's idle timeout never fires) is cut off at the timeout, maybe taken", async () => {
    const trickles: NodeJS.Timeout[] = [];
    const server = createNetServer((socket) => {
      socket.write('220 slow.example ESMTP\r\n');
      let data = false;
      socket.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString('latin1').split('\r\n').filter((l) => l !== '')) {
          if (data) {
            // The end of the message data: a reply that never ends, one byte every 20 ms.
            if (line === '.') trickles.push(setInterval(() => socket.write('2'), 20));
          } else if (/^(EHLO|HELO)/i.test(line)) socket.write('250 slow.example\r\n');
          else if (/^DATA/i.test(line)) (data = true), socket.write('354 go ahead\r\n');
          else socket.write('250 ok\r\n');
        }
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      // 2 s: ample for the greeting and the envelope on a loaded machine, so the cut-off meets the
      // trickling reply, never an earlier step.
      const smtp = new SmtpEmailProvider({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, timeoutMs: 2_000 });
      expect(await smtp.send(mail('slow@customers.example'))).toMatchObject({ kind: 'ambiguous', reason: expect.stringContaining('no answer within 2000 ms') });
      expect(trickles).toHaveLength(1);
    } finally {
      for (const t of trickles) clearInterval(t);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('the SMTP sink plays SES\'s SMTP replies through SmtpEmailProvider', () => {
  let sink: SmtpSink;
  let atRcpt: SmtpSink;
  let smtp: SmtpEmailProvider;
  beforeAll(async () => {
    [sink, atRcpt] = await Promise.all([startSmtpSink(), startSmtpSink({ refuseAt: 'rcpt' })]);
    smtp = new SmtpEmailProvider({ host: sink.host, port: sink.port, timeoutMs: 3_000 });
  });
  afterAll(async () => Promise.all([sink.close(), atRcpt.close()]));
  const taken = (s: SmtpSink, m: OutboundEmail) => s.received.filter((r) => r.raw.includes(m.messageId)).length;

  it('throttle: 454 "Throttling failure: Maximum sending rate exceeded." at the end of DATA is throttled, nothing taken; the resend is taken once', async () => {
    const m = mail('a@customers.example');
    sink.throttle(1);
    const r = await smtp.send(m);
    expect(r).toMatchObject({ kind: 'throttled' });
    expect(r.kind === 'throttled' && r.reason).toMatch(/454.*Maximum sending rate exceeded/);
    expect(taken(sink, m)).toBe(0);
    expect(sink.fired.throttled).toBe(1);
    expect(await smtp.send(m)).toMatchObject({ kind: 'accepted' });
    expect(taken(sink, m)).toBe(1);
  });

  it('throttle at RCPT TO (refuseAt rcpt): the same verdict, before the message data left', async () => {
    const m = mail('b@customers.example');
    atRcpt.throttle(1);
    expect(await new SmtpEmailProvider({ host: atRcpt.host, port: atRcpt.port, timeoutMs: 3_000 }).send(m)).toMatchObject({ kind: 'throttled' });
    expect(atRcpt.received).toHaveLength(0);
    expect(atRcpt.fired.throttled).toBe(1);
  });

  it('lateRecordOfLostAck: the message taken with its acknowledgement lost has its Send event withheld until the next send to its recipient (the resend), which is throttled, nothing taken', async () => {
    const m = mail('late@customers.example');
    sink.loseAcks(1);
    sink.lateRecordOfLostAck();
    expect(await smtp.send(m)).toMatchObject({ kind: 'ambiguous' });
    const sends = () => sink.events.filter((e) => e.type === 'Send' && e.message.raw.includes(m.messageId));
    await sink.settled();
    expect(sends()).toHaveLength(0);
    expect(await smtp.send(m)).toMatchObject({ kind: 'throttled' });
    expect(taken(sink, m)).toBe(1);
    expect(sink.fired['resend-throttled']).toBe(1);
    await sink.settled();
    expect(sends()).toHaveLength(1);
    expect(sink.fired['send-event-late']).toBe(1);
    // Once: the send after is taken.
    expect(await smtp.send(m)).toMatchObject({ kind: 'accepted' });
  });

  it('pause / pausedWhile: 554 "Sending paused for this account" is held, nothing taken', async () => {
    const m = mail('c@customers.example');
    sink.pause(60_000);
    const r = await smtp.send(m);
    expect(r).toMatchObject({ kind: 'held' });
    expect(r.kind === 'held' && r.reason).toMatch(/554.*Sending paused for this account/);
    sink.pause(0);
    let paused = true;
    sink.pausedWhile(() => paused);
    expect(await smtp.send(m)).toMatchObject({ kind: 'held' });
    paused = false;
    expect(taken(sink, m)).toBe(0);
    expect(sink.fired.paused).toBe(2);
    expect(await smtp.send(m)).toMatchObject({ kind: 'accepted' });
  });

  it('sandbox: an unverified recipient gets SES\'s 554 "Email address is not verified ... in region US-EAST-1: <addr>", held, nothing taken; a verified one is taken', async () => {
    const m = mail('unverified@customers.example');
    sink.sandbox((addr) => addr === 'verified@customers.example');
    try {
      const r = await smtp.send(m);
      expect(r).toMatchObject({ kind: 'held' });
      expect(r.kind === 'held' && r.reason).toMatch(/554 Message rejected: Email address is not verified\. The following identities failed the check in region US-EAST-1: unverified@customers\.example/);
      expect(taken(sink, m)).toBe(0);
      expect(sink.fired.sandbox).toBe(1);
      expect(await smtp.send(mail('verified@customers.example'))).toMatchObject({ kind: 'accepted' });
    } finally {
      sink.sandbox(undefined);
    }
  });

  it('bounce: the message is accepted (250, received) and a Bounce (Permanent, General) naming the recipient follows its Send event', async () => {
    const m = mail('gone@customers.example');
    sink.bounce((to) => to.startsWith('gone@'));
    try {
      expect(await smtp.send(m)).toMatchObject({ kind: 'accepted' });
      await sink.settled();
      const got = sink.events.filter((e) => e.message.raw.includes(m.messageId));
      expect(got.map((e) => e.type)).toEqual(['Send', 'Bounce']);
      expect(got[1]).toMatchObject({ bounceType: 'Permanent', bounceSubType: 'General', recipients: ['gone@customers.example'] });
      expect(taken(sink, m)).toBe(1);
      expect(sink.fired.bounced).toBe(1);
    } finally {
      sink.bounce(undefined);
    }
  });

  it('complain: the message is accepted and a Complaint naming the recipient follows its Send event', async () => {
    const m = mail('angry@customers.example');
    sink.complain((to) => to.startsWith('angry@'));
    try {
      expect(await smtp.send(m)).toMatchObject({ kind: 'accepted' });
      await sink.settled();
      expect(sink.events.filter((e) => e.message.raw.includes(m.messageId)).map((e) => [e.type, e.recipients])).toEqual([
        ['Send', ['angry@customers.example']],
        ['Complaint', ['angry@customers.example']],
      ]);
      expect(sink.fired.complained).toBe(1);
    } finally {
      sink.complain(undefined);
    }
  });

  it('loseSendEvents: the message is taken and acknowledged but its Send event is never emitted (best-effort publishing); a Bounce still comes', async () => {
    const m = mail('lost@customers.example');
    sink.loseSendEvents(1);
    sink.bounce((to) => to.startsWith('lost@'));
    try {
      expect(await smtp.send(m)).toMatchObject({ kind: 'accepted' });
      await sink.settled();
      expect(taken(sink, m)).toBe(1);
      expect(sink.events.filter((e) => e.message.raw.includes(m.messageId)).map((e) => e.type)).toEqual(['Bounce']);
      expect(sink.fired['send-event-lost']).toBe(1);
    } finally {
      sink.bounce(undefined);
    }
  });
});

describe('the SES v2 endpoint plays SES\'s errors through SesEmailProvider on the real SESv2Client', () => {
  let sink: SmtpSink;
  let ses: SesEndpoint;
  let client: SESv2Client;
  let email: SesEmailProvider;
  beforeAll(async () => {
    sink = await startSmtpSink();
    ses = await startSesEndpoint(sink);
    client = new SESv2Client({ endpoint: ses.url, region: 'us-east-1', credentials: { accessKeyId: 'AKIDLOCALSTANDIN', secretAccessKey: 'local' }, maxAttempts: 1 });
    // No wait between the adapter's own throttled retries.
    email = new SesEmailProvider(client, 'standins', async () => {});
  });
  afterAll(async () => {
    client.destroy();
    await ses.relayed();
    await Promise.all([ses.close(), sink.close()]);
  });
  const accepted = (m: OutboundEmail) => ses.sent.filter((s) => s.tags.outboxId === m.tags.outboxId);

  it('throttle: 429 TooManyRequestsException three times is throttled (the adapter retried twice), nothing taken; two are absorbed by its retries', async () => {
    const m = mail('t@customers.example');
    ses.throttle(3);
    expect(await email.send(m)).toMatchObject({ kind: 'throttled', reason: expect.stringContaining('TooManyRequestsException') });
    expect(accepted(m)).toHaveLength(0);
    expect(ses.fired.throttled).toBe(3);
    ses.throttle(2);
    expect(await email.send(m)).toMatchObject({ kind: 'accepted' });
    expect(accepted(m)).toHaveLength(1);
  });

  it('fail5xxAfter: 500 InternalFailure is ambiguous, and the message WAS taken: in SES\'s record, relayed, its Send event published', async () => {
    const m = mail('a5@customers.example');
    ses.fail5xxAfter(1);
    const r = await email.send(m);
    expect(r).toMatchObject({ kind: 'ambiguous', reason: expect.stringContaining('InternalFailure') });
    expect(r).not.toHaveProperty('final');
    expect(accepted(m)).toHaveLength(1);
    await ses.relayed();
    expect(sink.received.filter((x) => x.raw.includes(`${accepted(m)[0]!.messageId}@email.amazonses.com`))).toHaveLength(1);
    expect(ses.events.some((e) => e.detail.eventType === 'Send' && e.detail.mail.messageId === accepted(m)[0]!.messageId)).toBe(true);
    expect(ses.fired['5xx-after']).toBe(1);
  });

  it('cut2xx: a 200 whose body cannot be read (truncated, or the connection reset mid-body) is ambiguous, never "not taken": the message WAS taken', async () => {
    for (const how of ['truncated', 'reset'] as const) {
      const m = mail(`cut-${how}@customers.example`);
      ses.cut2xx(1, how);
      const r = await email.send(m);
      expect({ how, kind: r.kind }).toEqual({ how, kind: 'ambiguous' });
      expect(accepted(m)).toHaveLength(1);
    }
    expect(ses.fired['2xx-cut']).toBe(2);
  });

  it('fail5xxBefore: 503 ServiceUnavailable is ambiguous (a 5xx proves nothing), and nothing was taken', async () => {
    const m = mail('b5@customers.example');
    ses.fail5xxBefore(1);
    expect(await email.send(m)).toMatchObject({ kind: 'ambiguous', reason: expect.stringContaining('ServiceUnavailable') });
    expect(accepted(m)).toHaveLength(0);
    expect(ses.fired['5xx-before']).toBe(1);
  });

  it('pause / pausedWhile: 400 SendingPausedException is held, nothing taken', async () => {
    const m = mail('p@customers.example');
    ses.pause(60_000);
    expect(await email.send(m)).toMatchObject({ kind: 'held', reason: expect.stringContaining('SendingPausedException') });
    ses.pause(0);
    let paused = true;
    ses.pausedWhile(() => paused);
    expect(await email.send(m)).toMatchObject({ kind: 'held' });
    paused = false;
    expect(accepted(m)).toHaveLength(0);
    expect(ses.fired.paused).toBe(2);
  });

  it('sandbox: 400 MessageRejected "Email address is not verified ... US-EAST-1: <addr>" is held, nothing taken', async () => {
    const m = mail('nv@customers.example');
    ses.sandbox(() => false);
    try {
      expect(await email.send(m)).toMatchObject({ kind: 'held', reason: 'MessageRejected: Email address is not verified. The following identities failed the check in region US-EAST-1: nv@customers.example' });
      expect(accepted(m)).toHaveLength(0);
      expect(ses.fired.sandbox).toBe(1);
    } finally {
      ses.sandbox(undefined);
    }
  });

  it('bounce and complain: accepted, then SES\'s "Email Bounced" (Permanent, General) and "Email Complaint Received" events after the Send, with the outbox tags', async () => {
    const gone = mail('gone@customers.example');
    const angry = mail('angry@customers.example');
    ses.bounce((to) => to.startsWith('gone@'));
    ses.complain((to) => to.startsWith('angry@'));
    try {
      expect(await email.send(gone)).toMatchObject({ kind: 'accepted' });
      expect(await email.send(angry)).toMatchObject({ kind: 'accepted' });
      await ses.relayed();
      const of = (m: OutboundEmail) => ses.events.filter((e) => e.detail.mail.messageId === accepted(m)[0]!.messageId);
      expect(of(gone).map((e) => e['detail-type'])).toEqual(['Email Sent', 'Email Bounced']);
      expect(of(gone)[1]!.detail).toMatchObject({ eventType: 'Bounce', bounce: { bounceType: 'Permanent', bounceSubType: 'General', bouncedRecipients: [{ emailAddress: 'gone@customers.example' }] }, mail: { tags: { outboxId: [gone.tags.outboxId], outboxTable: [gone.tags.outboxTable] } } });
      expect(of(angry).map((e) => e['detail-type'])).toEqual(['Email Sent', 'Email Complaint Received']);
      expect(of(angry)[1]!.detail).toMatchObject({ eventType: 'Complaint', complaint: { complainedRecipients: [{ emailAddress: 'angry@customers.example' }] } });
      expect(ses.fired).toMatchObject({ bounced: 1, complained: 1 });
    } finally {
      ses.bounce(undefined);
      ses.complain(undefined);
    }
  });
});

describe('the local runtime feeds the sink\'s events to the recorder in SES\'s EventBridge shape', () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await makeTables(import.meta.filename);
  });
  const pending = async (pk: string) => t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: { pk, kind: 'email', jobId: 'j', generation: 1, unit: 0, updatedAt: Date.now(), status: 'PENDING', attempts: 0, unsent: 'open', to: 'c@customers.example', subject: 's', body: 'b' } }));
  const recorded = async (pk: string) => [...((await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))?.providerEvents ?? [])];

  it('a Send event is recorded on the item it names; a lost Send event leaves no record (the reconciler\'s case)', async () => {
    const [kept, lost] = [`email#${randomUUID()}`, `email#${randomUUID()}`];
    await Promise.all([pending(kept), pending(lost)]);
    const effects = await startEffects({ doc: t.dynamo.doc, eventDelayMs: 0 });
    try {
      expect(await effects.email.send(mail('c@customers.example', kept, t.names.outbox))).toMatchObject({ kind: 'accepted' });
      effects.sink!.loseSendEvents(1);
      expect(await effects.email.send(mail('c@customers.example', lost, t.names.outbox))).toMatchObject({ kind: 'accepted' });
    } finally {
      await effects.close();
    }
    const queueId = effects.sink!.received.find((m) => m.raw.includes(messageIdentity.messageId(t.names.outbox, kept)))!.queueId;
    expect(await recorded(kept)).toEqual([`SEND:${queueId}`]);
    expect(await recorded(lost)).toEqual([]);
  });

  it('a bounced message\'s events are SES details: Send, then Bounce with bounceType, bounceSubType and bouncedRecipients, tagged with the outbox identity', async () => {
    const sink = await startSmtpSink({ feedbackDelayMs: 0 });
    try {
      const pk = `email#${randomUUID()}`;
      sink.bounce(() => true);
      expect(await new SmtpEmailProvider({ host: sink.host, port: sink.port }).send(mail('gone@customers.example', pk))).toMatchObject({ kind: 'accepted' });
      await sink.settled();
      const details = sink.events.map(sinkEventDetail);
      const tags = { outboxId: [messageIdentity.tag(pk)], outboxTable: [messageIdentity.tag(TABLE)] };
      expect(details).toMatchObject([
        { table: TABLE, detail: { eventType: 'Send', mail: { messageId: sink.received[0]!.queueId, destination: ['gone@customers.example'], tags } } },
        { table: TABLE, detail: { eventType: 'Bounce', mail: { tags }, bounce: { bounceType: 'Permanent', bounceSubType: 'General', bouncedRecipients: [{ emailAddress: 'gone@customers.example' }] } } },
      ]);
    } finally {
      await sink.close();
    }
  });
});
