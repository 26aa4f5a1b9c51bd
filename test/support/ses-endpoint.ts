/**
 * A local SES v2 endpoint for the deployed functions' bundles. In AWS the sender and the
 * reconciler email through SES (lib/workflow/adapters/ses-email.ts), not SMTP: to run their
 * bundles unchanged, the real @aws-sdk/client-sesv2 inside them is pointed here with the SDK's
 * own `AWS_ENDPOINT_URL_SESV2` variable and sends `SendEmail` (REST-JSON, `POST
 * /v2/email/outbound-emails`) as it would to SES.
 *
 * Each accepted request gets an SES-style MessageId and is kept as SES's own record of the send
 * (what configuration-set event publishing puts on EventBridge: the message id and the tags,
 * `sesEvent` builds that event for the recorder), then relayed over SMTP (the project's adapter)
 * to a mailbox such as the SMTP sink, with the request's headers and SES's own Message-ID, as SES
 * delivers it. A tag value outside `[A-Za-z0-9_-]` is refused as SES refuses it. Signatures are
 * not checked.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SmtpEmailProvider } from '../../lib/workflow/adapters/index.js';

interface SendEmailRequest {
  FromEmailAddress?: string;
  Destination?: { ToAddresses?: string[] };
  ConfigurationSetName?: string;
  EmailTags?: { Name: string; Value: string }[];
  Content?: { Simple?: { Subject?: { Data?: string }; Body?: { Text?: { Data?: string } }; Headers?: { Name: string; Value: string }[] } };
}

/** One accepted SendEmail: SES's record of it. */
export interface SesSend {
  readonly messageId: string;
  readonly from: string;
  readonly to: string;
  readonly configurationSet: string | undefined;
  readonly tags: Readonly<Record<string, string>>;
}

export interface SesEndpoint {
  readonly url: string;
  readonly sent: SesSend[];
  /** Resolves once every accepted message has been handed to the relay (or the relay failed). */
  relayed(): Promise<void>;
  close(): Promise<void>;
}

const TAG = /^[A-Za-z0-9_-]{1,256}$/;

/** The EventBridge event SES event publishing sends for `s` ("Email Sent"), as the recorder receives it. */
export function sesEvent(s: SesSend, type: 'Send' | 'Delivery' = 'Send') {
  const tags = Object.fromEntries(Object.entries(s.tags).map(([k, v]) => [k, [v]]));
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': type === 'Send' ? 'Email Sent' : 'Email Delivered',
    source: 'aws.ses',
    account: '000000000000',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [],
    detail: { eventType: type, mail: { messageId: s.messageId, source: s.from, destination: [s.to], tags: { ...tags, 'ses:configuration-set': [s.configurationSet ?? ''] } } },
  };
}

/** Starts the endpoint; accepted messages are relayed to the SMTP server at `relay`. */
export async function startSesEndpoint(relay: { host: string; port: number }): Promise<SesEndpoint> {
  const sent: SesSend[] = [];
  const relays: Promise<unknown>[] = [];
  const smtp = new SmtpEmailProvider({ ...relay, timeoutMs: 3_000 });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = (status: number, body: unknown, errorType?: string) => {
        res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID(), ...(errorType ? { 'x-amzn-errortype': errorType } : {}) });
        res.end(JSON.stringify(body));
      };
      if (req.method !== 'POST' || req.url !== '/v2/email/outbound-emails') return answer(404, { message: `no route ${req.method} ${req.url}` }, 'NotFoundException');
      const r = JSON.parse(Buffer.concat(chunks).toString('utf8')) as SendEmailRequest;
      const simple = r.Content?.Simple;
      const to = r.Destination?.ToAddresses?.[0];
      if (r.FromEmailAddress === undefined || to === undefined || simple === undefined) return answer(400, { message: 'FromEmailAddress, Destination and Content.Simple are required' }, 'BadRequestException');
      const bad = (r.EmailTags ?? []).find((t) => !TAG.test(t.Name) || !TAG.test(t.Value));
      if (bad !== undefined) return answer(400, { message: `Invalid tag ${bad.Name}: only [A-Za-z0-9_-] allowed` }, 'BadRequestException');
      const s: SesSend = { messageId: `0100${randomUUID().replace(/-/g, '')}-000000`, from: r.FromEmailAddress, to, configurationSet: r.ConfigurationSetName, tags: Object.fromEntries((r.EmailTags ?? []).map((t) => [t.Name, t.Value])) };
      sent.push(s);
      // Accepted: SES answers now and delivers afterwards (the relay's outcome never reaches the caller).
      answer(200, { MessageId: s.messageId });
      relays.push(smtp.send({
        from: s.from,
        to,
        subject: simple.Subject?.Data ?? '',
        text: simple.Body?.Text?.Data ?? '',
        messageId: `<${s.messageId}@email.amazonses.com>`,
        headers: Object.fromEntries((simple.Headers ?? []).map((h) => [h.Name, h.Value])),
        tags: {},
      }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    sent,
    relayed: async () => void (await Promise.all(relays)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
