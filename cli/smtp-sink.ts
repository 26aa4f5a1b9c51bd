/**
 * The local email provider: a real SMTP server (smtp-server) that accepts every message and
 * records it as received (the raw message and the time), and does no deduplication, so a
 * checker can count what arrived per X-Outbox-Id. Its record is the provider's own record of the
 * local runtime: `onReceived` feeds it to the recorder (as SES event publishing does in AWS).
 *
 * Fault injection: `down(ms)` answers every connection with 421 for a while (the provider is
 * unavailable: nothing is taken); `loseAcks(n)` takes the next n messages and then closes the
 * connection instead of answering 250 (accepted, the acknowledgement lost: an ambiguous send).
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMessage {
  readonly queueId: string;
  readonly raw: string;
  readonly at: number;
}

export interface SmtpSink {
  readonly host: string;
  readonly port: number;
  readonly received: ReceivedMessage[];
  down(ms: number): void;
  loseAcks(n: number): void;
  /** Messages taken whose acknowledgement was lost so far (loseAcks that fired): each is in `received`, its 250 never written. */
  readonly acksLost: number;
  /** Connections refused with 421 while down (nothing taken from them). */
  readonly refused: number;
  close(): Promise<void>;
}

/** The header value of a raw message (unfolded), without parsing the body. */
export function headerOf(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/, 1)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const re = new RegExp(`^${name}:\\s*(.*)$`, 'im');
  return re.exec(unfolded)?.[1]?.trim();
}

export async function startSmtpSink(opts: { port?: number; host?: string; onReceived?: (m: ReceivedMessage) => void | Promise<void> } = {}): Promise<SmtpSink> {
  const received: ReceivedMessage[] = [];
  let downUntil = 0;
  let acksToLose = 0;
  let acksLost = 0;
  let refused = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    banner: 'fenced-workflow local sink',
    onConnect(_session, callback) {
      if (Date.now() < downUntil) return refused++, callback(Object.assign(new Error('service not available, try again later'), { responseCode: 421 }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const m: ReceivedMessage = { queueId: randomUUID().replace(/-/g, '').slice(0, 16), raw: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
        received.push(m);
        void Promise.resolve(opts.onReceived?.(m)).catch(() => undefined);
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
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of connections) c._socket?.destroy();
        server.close(() => resolve());
      }),
  };
}
