// tier: quick
/**
 * The sandbox's email (lib/workflow/effects/sandbox.ts): what a stack that is not live sends goes
 * to SES's mailbox simulator, whatever recipient the item names, through a real SMTP conversation
 * with the local sink; the simulator outcome is the item's, the same on every resend; the live
 * targets a function is told are checked against its workload's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { headerOf, startSmtpSink, type SmtpSink } from '../cli/local/smtp-sink.js';
import { ConfigError } from '../lib/protocol/index.js';
import { SmtpEmailProvider } from '../lib/workflow/adapters/index.js';
import { liveTargetsOf, MAILBOX_SIMULATOR, messageIdentity, SandboxEmail, sandboxOutcome, sandboxRecipient, type OutboundEmail } from '../lib/workflow/index.js';

const SIMULATOR_ADDRESS = /^(success|bounce|complaint)(\+[A-Za-z0-9._-]+)?@simulator\.amazonses\.com$/;

const mail = (table: string, pk: string, to: string): OutboundEmail => ({
  from: 'billing@fenced-workflow.dev',
  to,
  subject: 'Your invoice',
  text: 'Invoice.\n',
  messageId: messageIdentity.messageId(table, pk),
  headers: { 'X-Outbox-Id': pk, 'X-Outbox-Table': table },
  tags: {},
});

describe('the mailbox simulator address', () => {
  it('keeps the recipient in its label, is a valid address of at most 64 characters before the @, and is the same for every resend of an item', () => {
    const id = messageIdentity.messageId('Outbox', 'email#2026-03#cust-0000001');
    const to = sandboxRecipient(id, 'cust-0000001@customers.example');
    expect(to).toMatch(SIMULATOR_ADDRESS);
    expect(to).toContain('+cust-0000001.customers.example@');
    expect(sandboxRecipient(id, 'cust-0000001@customers.example')).toBe(to);
    const long = sandboxRecipient(id, `${'a'.repeat(64)}@${'b'.repeat(60)}.example`);
    expect(long).toMatch(SIMULATOR_ADDRESS);
    expect(long.split('@')[0]!.length).toBeLessThanOrEqual(64);
    expect(sandboxRecipient(id, '"quoted name"@customers.example')).toMatch(SIMULATOR_ADDRESS);
    expect(sandboxRecipient(id, '@@@')).toMatch(SIMULATOR_ADDRESS);
  });

  it('about one email in twenty bounces and one in fifty draws a complaint (10,000 items)', () => {
    const counts = { success: 0, bounce: 0, complaint: 0 };
    for (let i = 0; i < 10_000; i++) counts[sandboxOutcome(messageIdentity.messageId('Outbox', `email#2026-03#cust-${i}`))]++;
    expect(counts.bounce / 10_000).toBeGreaterThan(0.04);
    expect(counts.bounce / 10_000).toBeLessThan(0.06);
    expect(counts.complaint / 10_000).toBeGreaterThan(0.013);
    expect(counts.complaint / 10_000).toBeLessThan(0.027);
  });
});

describe('SandboxEmail, over a real SMTP conversation', () => {
  let sink: SmtpSink;
  beforeAll(async () => {
    sink = await startSmtpSink();
  });
  afterAll(() => sink.close());

  it("sends each email to the simulator, never to the item's recipient, with the rest of the message as it was", async () => {
    const email = new SandboxEmail(new SmtpEmailProvider({ host: sink.host, port: sink.port }));
    expect(email.name).toContain(MAILBOX_SIMULATOR);
    const people = ['alice@customers.example', 'bob@real-company.dev', 'carol@gmail.com'];
    for (const [i, to] of people.entries()) expect(await email.send(mail('Outbox', `email#${i}`, to))).toMatchObject({ kind: 'accepted' });
    const recipients = sink.received.flatMap((m) => m.to);
    expect(recipients).toHaveLength(3);
    for (const r of recipients) expect(r).toMatch(SIMULATOR_ADDRESS);
    for (const p of people) expect(recipients).not.toContain(p);
    expect(sink.received.map((m) => headerOf(m.raw, 'X-Outbox-Id'))).toEqual(['email#0', 'email#1', 'email#2']);
  });
});

describe('the live targets a function is told', () => {
  const known = ['email', 'payments'];
  it('unset, empty or none: nothing is live', () => {
    for (const raw of [undefined, '', 'none']) expect([...liveTargetsOf(raw, 'LIVE_TARGETS', known)]).toEqual([]);
  });
  it('a list of its targets', () => {
    expect([...liveTargetsOf('email,payments', 'LIVE_TARGETS', known)]).toEqual(['email', 'payments']);
  });
  it('a name the workload does not have is refused in one line naming the variable', () => {
    let error: unknown;
    try {
      liveTargetsOf('email,webhooks', 'LIVE_TARGETS', known);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe('LIVE_TARGETS: names "webhooks", not a target of this workload (email, payments)');
  });
});
