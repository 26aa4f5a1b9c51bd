/**
 * EmailProvider over SMTP (nodemailer's MailComposer and SMTPConnection). The message carries
 * its identity in its headers (X-Outbox-Id, X-Outbox-Table) and a Message-ID derived from them.
 *
 * How a failure is read, by the stage it happened in (nodemailer's error says `CONN` for a
 * socket that closed at any stage, so the adapter keeps the stage itself):
 *   the connection never opened, or the server refused the greeting   → nothing taken (retry)
 *   a reply code during the transaction: 5xx refused for good, 4xx not now
 *   the connection closed or timed out once the envelope was on its way, with no reply code
 *                                                                      → ambiguous: the server
 *     may have taken the message (a lost "250 queued"); the reconciler asks the provider's record
 */
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';
import type { EmailProvider, OutboundEmail, SendResult } from '../effects/providers.js';
import { classifySmtp } from './provider-behaviour.js';

/** What a failure at `stage` came to: the providers' behaviour model (provider-behaviour.ts, SMTP_MODEL). */
export const classifySmtpError = classifySmtp;

export class SmtpEmailProvider implements EmailProvider {
  readonly name: string;

  constructor(private readonly opts: { host: string; port: number; timeoutMs?: number; secure?: boolean }) {
    this.name = `smtp ${opts.host}:${opts.port}`;
  }

  async send(mail: OutboundEmail): Promise<SendResult> {
    const raw = await new MailComposer({ from: mail.from, to: mail.to, subject: mail.subject, text: mail.text, messageId: mail.messageId, headers: { ...mail.headers } }).compile().build();
    const timeout = this.opts.timeoutMs ?? 10_000;
    const conn = new SMTPConnection({ host: this.opts.host, port: this.opts.port, secure: this.opts.secure ?? false, connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: timeout });
    let stage: 'connect' | 'transaction' = 'connect';
    // nodemailer reports some failures (a refused greeting, a closed socket) as an 'error' or an
    // 'end' event instead of through the callback: each step also ends on those.
    let fail: (e: unknown) => void = () => undefined;
    conn.on('error', (e) => fail(e));
    conn.on('end', () => fail(Object.assign(new Error('connection closed'), { code: 'ECONNECTION' })));
    const step = <T>(run: (done: (err: unknown, v?: T) => void) => void) =>
      new Promise<T>((resolve, reject) => {
        fail = reject;
        run((err, v) => (err ? reject(err) : resolve(v as T)));
      });
    // The whole send ends within the timeout (the claim arithmetic's sendTimeoutMs), whatever each
    // phase's own timeout says: a server that keeps answering slowly is cut off like a silent one.
    const cutOff = setTimeout(() => {
      fail(Object.assign(new Error(`no answer within ${timeout} ms`), { code: 'ETIMEDOUT' }));
      conn.close();
    }, timeout);
    try {
      await step<void>((done) => conn.connect((err) => done(err)));
      stage = 'transaction';
      const info = await step<SMTPConnection.SentMessageInfo>((done) => conn.send({ from: mail.from, to: [mail.to] }, raw, (err, i) => done(err, i)));
      fail = () => undefined;
      // The server's queue id (in its 250 reply) is its id for the message.
      const queued = /queued as (\S+)/i.exec(String(info.response ?? ''))?.[1];
      return { kind: 'accepted', providerMessageId: queued ?? mail.messageId };
    } catch (e) {
      fail = () => undefined;
      return classifySmtp(e, stage);
    } finally {
      clearTimeout(cutOff);
      if (stage === 'transaction') conn.quit();
      else conn.close();
    }
  }
}
