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
 *   a Send event at once (loseSendEvents(n): the next n are never emitted; lateRecordOfLostAck():
 *   the next lost acknowledgement's Send withheld until the resend of that message, which is
 *   refused 454 as throttled, and emitted then: a record later than the reconciler's lag)
 *   bounce(pred) / complain(pred): for a message to a matching recipient, accepted (250, in
 *   `received`), a Bounce (Permanent, General) or a Complaint event `feedbackDelayMs` later.
 * `fired` counts what each fault did, `events` holds every event emitted.
 *
 * The behaviour (the record, the events, the fault plan's decisions) is sink-core.ts, with no
 * transport; this module is its SMTP adapter (the replies in SES's SMTP words), as the
 * simulator's SES v2 handler is another (the same decisions in SES API errors).
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { SinkCore, type EmailSink, type SinkCoreOptions, type SinkRefusal } from './sink-core.js';

export { headerOf, SINK_FAULTS, type EmailSink, type ReceivedMessage, type SinkEvent, type SinkFault } from './sink-core.js';

export interface SmtpSinkOptions extends SinkCoreOptions {
  port?: number;
  host?: string;
  /** Where the fault plan's refusals are replied: at the end of DATA (SES's place, default) or at RCPT TO. */
  refuseAt?: 'data' | 'rcpt';
}

export interface SmtpSink extends EmailSink {
  readonly host: string;
  readonly port: number;
}


/** SES's SMTP replies (the text after the code; smtp-server writes the code). */
export const SES_SMTP_REPLY = {
  throttled: { code: 454, text: '4.7.0 Throttling failure: Maximum sending rate exceeded.' },
  paused: { code: 554, text: 'Message rejected: Sending paused for this account. For more information, please check the inbox of the email address associated with your AWS account.' },
  notVerified: (region: string, identities: readonly string[]) => ({ code: 554, text: `Message rejected: Email address is not verified. The following identities failed the check in region ${region.toUpperCase()}: ${identities.join(', ')}` }),
} as const;

const reply = (r: { code: number; text: string }) => Object.assign(new Error(r.text), { responseCode: r.code });

/** The fault plan's refusal in SES's SMTP words. */
const smtpReply = (r: SinkRefusal) => reply(r.kind === 'throttled' ? SES_SMTP_REPLY.throttled : r.kind === 'paused' ? SES_SMTP_REPLY.paused : SES_SMTP_REPLY.notVerified(r.region, r.identities));

export async function startSmtpSink(opts: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const core = new SinkCore(opts);
  const refuseAt = opts.refuseAt ?? 'data';
  const refusal = (to: readonly string[], raw?: string) => {
    const r = core.refusal(to, raw);
    return r === undefined ? undefined : smtpReply(r);
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    banner: 'fenced-workflow local sink',
    onConnect(_session, callback) {
      if (core.refusesConnection()) return callback(Object.assign(new Error('service not available, try again later'), { responseCode: 421 }));
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
        const raw = Buffer.concat(chunks).toString('utf8');
        const refusedNow = refuseAt === 'data' ? refusal(to, raw) : undefined;
        if (refusedNow !== undefined) return callback(refusedNow);
        const { message, ackLost } = core.take(core.newId().slice(0, 16), raw, to);
        // Taken and recorded; the 250 never goes out.
        if (ackLost) return void socketOf(session)?.destroy();
        callback(null, `queued as ${message.queueId}`);
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
  const dropEvents = core.close;
  return Object.assign(core, {
    host: '127.0.0.1',
    port,
    close: () =>
      new Promise<void>((resolve) => {
        void dropEvents();
        for (const c of connections) c._socket?.destroy();
        server.close(() => resolve());
      }),
  });
}
