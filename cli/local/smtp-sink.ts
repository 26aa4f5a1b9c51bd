/**
 * The local email provider: a real SMTP server (smtp-server) that accepts every message and
 * records it as received (the raw message, its envelope recipients and the time), and does no
 * deduplication, so a checker can count what arrived per X-Outbox-Id. Its record is the
 * provider's own record of the local runtime: `onReceived` is told of each message taken, and
 * `onEvent` gets the events SES event publishing would put on EventBridge for it (cli/local/effects-env.ts
 * turns them into the recorder's SES details).
 *
 * Fault injection: `down(ms)` answers every connection with 421 for a while (the provider is
 * unavailable: nothing is taken); `loseAcks(n)` takes the next n messages and then closes the
 * connection instead of answering 250 (accepted, the acknowledgement lost: an ambiguous send).
 *
 * The fault plan plays the rows of the SMTP model (lib/workflow/adapters/provider-behaviour.ts)
 * with the replies SES's SMTP interface gives ("SMTP response codes returned by Amazon SES"):
 *   throttle(n)   454 "Throttling failure: Maximum sending rate exceeded." (nothing taken)
 *   pause(ms)     554 "Message rejected: Sending paused for this account. ..." (nothing taken;
 *                 the text SES sends when an account's sending is paused)
 *   sandbox(v)    554 "Message rejected: Email address is not verified. The following identities
 *                 failed the check in region US-EAST-1: <addr>" for each recipient v refuses
 * each checked in that order, at the end of DATA by default (where SES refuses: its SMTP
 * interface sends the message on then) or at RCPT TO (`refuseAt: 'rcpt'`, per recipient).
 * After acceptance, as SES's event publishing does (best effort):
 *   a Send event at once (loseSendEvents(n): the next n are never emitted)
 *   bounce(pred) / complain(pred): for a message to a matching recipient, accepted (250, in
 *   `received`), a Bounce (Permanent, General) or a Complaint event `feedbackDelayMs` later.
 * `fired` counts what each fault did, `events` holds every event emitted.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { Countdown, counters, Window, type EmailFaultPlan } from './fault-switch.js';

export interface ReceivedMessage {
  readonly queueId: string;
  readonly raw: string;
  /** The envelope recipients (RCPT TO). */
  readonly to: readonly string[];
  readonly at: number;
}

/** An SES-shaped event about a message the sink accepted. */
export interface SinkEvent {
  readonly type: 'Send' | 'Bounce' | 'Complaint';
  readonly message: ReceivedMessage;
  /** The recipients it is about: all of them for a Send, the bounced or complaining ones otherwise. */
  readonly recipients: readonly string[];
  readonly bounceType?: string;
  readonly bounceSubType?: string;
}

export const SINK_FAULTS = ['throttled', 'paused', 'sandbox', 'bounced', 'complained', 'send-event-lost'] as const;
export type SinkFault = (typeof SINK_FAULTS)[number];

export interface SmtpSinkOptions {
  port?: number;
  host?: string;
  onReceived?: (m: ReceivedMessage) => void | Promise<void>;
  /** Told of each event emitted (a Send at acceptance, a Bounce or a Complaint later); a failure is dropped, as EventBridge drops one. */
  onEvent?: (e: SinkEvent) => void | Promise<void>;
  /** Where the fault plan's refusals are replied: at the end of DATA (SES's place, default) or at RCPT TO. */
  refuseAt?: 'data' | 'rcpt';
  /** The region named in a sandbox refusal (default us-east-1). */
  region?: string;
  /** How long after the Send a Bounce or a Complaint is emitted (default 20 ms). */
  feedbackDelayMs?: number;
}

export interface SmtpSink extends EmailFaultPlan {
  readonly host: string;
  readonly port: number;
  readonly received: ReceivedMessage[];
  down(ms: number): void;
  loseAcks(n: number): void;
  /** Messages taken whose acknowledgement was lost so far (loseAcks that fired): each is in `received`, its 250 never written. */
  readonly acksLost: number;
  /** Connections refused with 421 while down (nothing taken from them). */
  readonly refused: number;
  /** The next n Send events are lost (SES event publishing is best effort): never emitted. */
  loseSendEvents(n: number): void;
  readonly fired: Readonly<Record<SinkFault, number>>;
  /** Every event emitted, in order. */
  readonly events: readonly SinkEvent[];
  /** Resolves once every event scheduled so far has been emitted and its onEvent has settled. */
  settled(): Promise<void>;
  /** Closes the server; events not yet emitted are dropped. */
  close(): Promise<void>;
}

/** The header value of a raw message (unfolded), without parsing the body. */
export function headerOf(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/, 1)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const re = new RegExp(`^${name}:\\s*(.*)$`, 'im');
  return re.exec(unfolded)?.[1]?.trim();
}

/** SES's SMTP replies (the text after the code; smtp-server writes the code). */
export const SES_SMTP_REPLY = {
  throttled: { code: 454, text: '4.7.0 Throttling failure: Maximum sending rate exceeded.' },
  paused: { code: 554, text: 'Message rejected: Sending paused for this account. For more information, please check the inbox of the email address associated with your AWS account.' },
  notVerified: (region: string, identities: readonly string[]) => ({ code: 554, text: `Message rejected: Email address is not verified. The following identities failed the check in region ${region.toUpperCase()}: ${identities.join(', ')}` }),
} as const;

const reply = (r: { code: number; text: string }) => Object.assign(new Error(r.text), { responseCode: r.code });

export async function startSmtpSink(opts: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const received: ReceivedMessage[] = [];
  let downUntil = 0;
  let acksToLose = 0;
  let acksLost = 0;
  let refused = 0;
  const fired = counters(SINK_FAULTS);
  const events: SinkEvent[] = [];
  const throttled = new Countdown();
  const paused = new Window();
  const sendsToLose = new Countdown();
  let verified: ((addr: string) => boolean) | undefined;
  let bounces: ((to: string) => boolean) | undefined;
  let complaints: ((to: string) => boolean) | undefined;
  const refuseAt = opts.refuseAt ?? 'data';
  const feedbackDelay = opts.feedbackDelayMs ?? 20;

  /** The fault plan's refusal of a message to `to`, if any (counted). */
  const refusal = (to: readonly string[]): Error | undefined => {
    if (throttled.take()) return fired.throttled++, reply(SES_SMTP_REPLY.throttled);
    if (paused.on) return fired.paused++, reply(SES_SMTP_REPLY.paused);
    const failed = verified === undefined ? [] : to.filter((a) => !verified!(a));
    if (failed.length > 0) return fired.sandbox++, reply(SES_SMTP_REPLY.notVerified(opts.region ?? 'us-east-1', failed));
    return undefined;
  };

  // Events in flight: each settles once emitted and its onEvent settled, or once dropped by close().
  const pending = new Set<Promise<void>>();
  const drops = new Set<() => void>();
  const emit = (e: SinkEvent, counted?: SinkFault) => {
    events.push(e);
    if (counted !== undefined) fired[counted]++;
    return Promise.resolve()
      .then(() => opts.onEvent?.(e))
      .catch(() => undefined);
  };
  const schedule = (ms: number, e: SinkEvent, counted?: SinkFault) => {
    const p = new Promise<void>((resolve) => {
      const drop = () => (clearTimeout(timer), resolve());
      const timer = setTimeout(() => {
        drops.delete(drop);
        void emit(e, counted).finally(resolve);
      }, ms);
      drops.add(drop);
    });
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };
  const published = (m: ReceivedMessage) => {
    if (sendsToLose.take()) fired['send-event-lost']++;
    else {
      const p = emit({ type: 'Send', message: m, recipients: m.to });
      pending.add(p);
      void p.finally(() => pending.delete(p));
    }
    // A bounced message draws no complaint: it never reached a mailbox.
    const bounced = bounces === undefined ? [] : m.to.filter(bounces);
    const complained = bounced.length > 0 || complaints === undefined ? [] : m.to.filter(complaints);
    if (bounced.length > 0) schedule(feedbackDelay, { type: 'Bounce', message: m, recipients: bounced, bounceType: 'Permanent', bounceSubType: 'General' }, 'bounced');
    if (complained.length > 0) schedule(feedbackDelay, { type: 'Complaint', message: m, recipients: complained }, 'complained');
  };

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    banner: 'fenced-workflow local sink',
    onConnect(_session, callback) {
      if (Date.now() < downUntil) return refused++, callback(Object.assign(new Error('service not available, try again later'), { responseCode: 421 }));
      callback();
    },
    onRcptTo(address, _session, callback) {
      callback(refuseAt === 'rcpt' ? refusal([address.address]) : undefined);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const to = session.envelope.rcptTo.map((a) => a.address);
        const refusedNow = refuseAt === 'data' ? refusal(to) : undefined;
        if (refusedNow !== undefined) return callback(refusedNow);
        const m: ReceivedMessage = { queueId: randomUUID().replace(/-/g, '').slice(0, 16), raw: Buffer.concat(chunks).toString('utf8'), to, at: Date.now() };
        received.push(m);
        void Promise.resolve(opts.onReceived?.(m)).catch(() => undefined);
        published(m);
        if (acksToLose > 0) {
          acksToLose--;
          acksLost++;
          // Taken and recorded; the 250 never goes out.
          socketOf(session)?.destroy();
          return;
        }
        callback(null, `queued as ${m.queueId}`);
      });
    },
  });
  server.on('error', () => undefined);
  // smtp-server hands the callbacks a session, not the connection: find the connection (its
  // private socket) that carries the session, to cut it after the message was taken.
  const connections = (server as unknown as { connections: Set<{ session: unknown; _socket?: { destroy(): void } }> }).connections;
  const socketOf = (session: unknown) => [...connections].find((c) => c.session === session)?._socket;
  const inner = (server as unknown as { server: import('node:net').Server }).server;
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve));
  const { port } = inner.address() as AddressInfo;
  return {
    host: '127.0.0.1',
    port,
    received,
    down: (ms) => void (downUntil = Date.now() + ms),
    loseAcks: (n) => void (acksToLose += n),
    get acksLost() {
      return acksLost;
    },
    get refused() {
      return refused;
    },
    throttle: (n) => throttled.arm(n),
    pause: (ms) => paused.for(ms),
    pausedWhile: (p) => paused.while(p),
    sandbox: (v) => void (verified = v),
    bounce: (p) => void (bounces = p),
    complain: (p) => void (complaints = p),
    loseSendEvents: (n) => sendsToLose.arm(n),
    fired,
    events,
    settled: async () => {
      while (pending.size > 0) await Promise.all([...pending]);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const drop of drops) drop();
        for (const c of connections) c._socket?.destroy();
        server.close(() => resolve());
      }),
  };
}
