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
 *
 * The fault plan plays the rows of the SES model (lib/workflow/adapters/provider-behaviour.ts)
 * with SES's own error shapes (the status, `x-amzn-ErrorType`, a JSON `{message}`), checked in
 * this order before the message is taken:
 *   fail5xxBefore(n)  503 ServiceUnavailable, nothing taken
 *   throttle(n)       429 TooManyRequestsException "Maximum sending rate exceeded.", nothing taken
 *   pause(ms)         400 SendingPausedException, nothing taken
 *   sandbox(v)        400 MessageRejected "Email address is not verified. ..." for a recipient v refuses
 * and after it was taken:
 *   fail5xxAfter(n)   the message is accepted (in `sent`, relayed, its Send event published) and
 *                     the answer is 500 InternalFailure: what the caller cannot tell from a refusal
 *   cut2xx(n)         the message is accepted and the answer is 200 with its body cut short:
 *                     'truncated' (a JSON body that ends early, its length as sent) or 'reset'
 *                     (the full length announced, half of it sent, the connection closed)
 *   bounce(pred) / complain(pred): an accepted message to a matching recipient draws a Bounce
 *                     (Permanent, General) or a Complaint event `feedbackDelayMs` after its Send.
 * Every event is in `events` (EventBridge's shape, `sesEvent`) and goes to `onEvent`; `fired`
 * counts the answers and events each fault gave.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeCutAnswer } from '../../cli/local/cut-answer.js';
import { Countdown, counters, Window, type CutBody, type EmailFaultPlan } from '../../cli/local/fault-switch.js';
import { SmtpEmailProvider } from '../../lib/workflow/adapters/index.js';
import type { SendEmailRequest } from '../sim/effects/ses-handler.js';

/** One accepted SendEmail: SES's record of it. */
export interface SesSend {
  readonly messageId: string;
  readonly from: string;
  readonly to: string;
  readonly configurationSet: string | undefined;
  readonly tags: Readonly<Record<string, string>>;
}

export const SES_FAULTS = ['throttled', '5xx-after', '5xx-before', '2xx-cut', 'paused', 'sandbox', 'bounced', 'complained'] as const;
export type SesFault = (typeof SES_FAULTS)[number];

export type SesEventType = 'Send' | 'Delivery' | 'Bounce' | 'Complaint';
export type { CutBody } from '../../cli/local/fault-switch.js';
export type SesEventBridgeEvent = ReturnType<typeof sesEvent>;

export interface SesEndpointOptions {
  /** The region named in a sandbox refusal and on events (default us-east-1). */
  region?: string;
  /** Told of each event SES would publish (Send at acceptance, Bounce or Complaint later). */
  onEvent?: (e: SesEventBridgeEvent) => void | Promise<void>;
  /** How long after the Send a Bounce or a Complaint is published (default 20 ms). */
  feedbackDelayMs?: number;
}

export interface SesEndpoint extends EmailFaultPlan {
  readonly url: string;
  readonly sent: SesSend[];
  /** Resolves once every accepted message has been handed to the relay (or the relay failed), and every event scheduled was published. */
  relayed(): Promise<void>;
  /** The next n SendEmail calls are accepted and answered 500 InternalFailure. */
  fail5xxAfter(n: number): void;
  /** The next n SendEmail calls answer 503 ServiceUnavailable (nothing taken). */
  fail5xxBefore(n: number): void;
  /** The next n SendEmail calls are accepted and answered 200 with a body that cannot be read. */
  cut2xx(n: number, how?: CutBody): void;
  readonly fired: Readonly<Record<SesFault, number>>;
  /** Every event published, in order. */
  readonly events: readonly SesEventBridgeEvent[];
  close(): Promise<void>;
}

const TAG = /^[A-Za-z0-9_-]{1,256}$/;

const DETAIL_TYPE: Readonly<Record<SesEventType, string>> = { Send: 'Email Sent', Delivery: 'Email Delivered', Bounce: 'Email Bounced', Complaint: 'Email Complaint Received' };

/**
 * The EventBridge event SES event publishing sends for `s`, as the recorder receives it: "Email
 * Sent" by default; a Bounce (Permanent, General unless told) or a Complaint names `recipients`
 * (default the message's recipient) in SES's `bounce` / `complaint` objects.
 */
export function sesEvent(s: SesSend, type: SesEventType = 'Send', opts: { recipients?: readonly string[]; bounceType?: string; bounceSubType?: string; region?: string } = {}) {
  const tags = Object.fromEntries(Object.entries(s.tags).map(([k, v]) => [k, [v]]));
  const time = new Date().toISOString();
  const recipients = opts.recipients ?? [s.to];
  const feedbackId = `${s.messageId}-${randomUUID()}`;
  const mail = { timestamp: time, messageId: s.messageId, source: s.from, destination: [s.to], tags: { ...tags, 'ses:configuration-set': [s.configurationSet ?? ''] } };
  const feedback =
    type === 'Bounce'
      ? {
          bounce: {
            feedbackId,
            bounceType: opts.bounceType ?? 'Permanent',
            bounceSubType: opts.bounceSubType ?? 'General',
            bouncedRecipients: recipients.map((emailAddress) => ({ emailAddress, action: 'failed', status: '5.1.1', diagnosticCode: 'smtp; 550 5.1.1 user unknown' })),
            timestamp: time,
            reportingMTA: 'dsn; a8-70.smtp-out.amazonses.com',
          },
        }
      : type === 'Complaint'
        ? { complaint: { feedbackId, complainedRecipients: recipients.map((emailAddress) => ({ emailAddress })), complaintFeedbackType: 'abuse', timestamp: time, arrivalDate: time } }
        : {};
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': DETAIL_TYPE[type],
    source: 'aws.ses',
    account: '000000000000',
    time,
    region: opts.region ?? 'us-east-1',
    resources: [] as string[],
    detail: { eventType: type, mail, ...feedback } as { eventType: SesEventType; mail: typeof mail; bounce?: unknown; complaint?: unknown },
  };
}

/** SES's error answers: status, error type (x-amzn-ErrorType) and message. */
const SES_ERROR = {
  throttled: { status: 429, type: 'TooManyRequestsException', message: 'Maximum sending rate exceeded.' },
  internal: { status: 500, type: 'InternalFailure', message: 'The request processing has failed because of an unknown error, exception or failure.' },
  unavailable: { status: 503, type: 'ServiceUnavailable', message: 'The request has failed due to a temporary failure of the server.' },
  paused: { status: 400, type: 'SendingPausedException', message: 'Sending paused for this account.' },
  notVerified: (region: string, identities: readonly string[]) => ({ status: 400, type: 'MessageRejected', message: `Email address is not verified. The following identities failed the check in region ${region.toUpperCase()}: ${identities.join(', ')}` }),
} as const;

/** Starts the endpoint; accepted messages are relayed to the SMTP server at `relay`. */
export async function startSesEndpoint(relay: { host: string; port: number }, opts: SesEndpointOptions = {}): Promise<SesEndpoint> {
  const sent: SesSend[] = [];
  const relays: Promise<unknown>[] = [];
  const smtp = new SmtpEmailProvider({ ...relay, timeoutMs: 3_000 });
  const region = opts.region ?? 'us-east-1';
  const fired = counters(SES_FAULTS);
  const events: SesEventBridgeEvent[] = [];
  const throttled = new Countdown();
  const after = new Countdown();
  const before = new Countdown();
  const cut = new Countdown();
  let cutHow: CutBody = 'truncated';
  const paused = new Window();
  let verified: ((addr: string) => boolean) | undefined;
  let bounces: ((to: string) => boolean) | undefined;
  let complaints: ((to: string) => boolean) | undefined;
  // Events waiting to be published, each with what settles its promise when close() drops it.
  const timers = new Map<NodeJS.Timeout, () => void>();
  const publish = (e: SesEventBridgeEvent) => {
    events.push(e);
    return Promise.resolve()
      .then(() => opts.onEvent?.(e))
      .catch(() => undefined);
  };
  /** What SES's event publishing sends for an accepted message: its Send now, a Bounce or a Complaint later. */
  const published = (s: SesSend, to: readonly string[]) => {
    relays.push(publish(sesEvent(s, 'Send', { region })));
    // A bounced message draws no complaint: it never reached a mailbox.
    const bounced = bounces === undefined ? [] : to.filter(bounces);
    const complained = bounced.length > 0 || complaints === undefined ? [] : to.filter(complaints);
    const later = (type: 'Bounce' | 'Complaint', recipients: string[], counted: SesFault) =>
      relays.push(
        new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            timers.delete(timer);
            fired[counted]++;
            void publish(sesEvent(s, type, { recipients, region })).finally(resolve);
          }, opts.feedbackDelayMs ?? 20);
          timers.set(timer, resolve);
        }),
      );
    if (bounced.length > 0) later('Bounce', bounced, 'bounced');
    if (complained.length > 0) later('Complaint', complained, 'complained');
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = (status: number, body: unknown, errorType?: string) => {
        res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID(), ...(errorType ? { 'x-amzn-errortype': errorType } : {}) });
        res.end(JSON.stringify(body));
      };
      const error = (e: { status: number; type: string; message: string }) => answer(e.status, { message: e.message }, e.type);
      if (req.method !== 'POST' || req.url !== '/v2/email/outbound-emails') return answer(404, { message: `no route ${req.method} ${req.url}` }, 'NotFoundException');
      const r = JSON.parse(Buffer.concat(chunks).toString('utf8')) as SendEmailRequest;
      const simple = r.Content?.Simple;
      const to = r.Destination?.ToAddresses?.[0];
      if (r.FromEmailAddress === undefined || to === undefined || simple === undefined) return answer(400, { message: 'FromEmailAddress, Destination and Content.Simple are required' }, 'BadRequestException');
      const bad = (r.EmailTags ?? []).find((t) => !TAG.test(t.Name) || !TAG.test(t.Value));
      if (bad !== undefined) return answer(400, { message: `Invalid tag ${bad.Name}: only [A-Za-z0-9_-] allowed` }, 'BadRequestException');
      // The fault plan's refusals: nothing taken.
      const recipients = r.Destination?.ToAddresses ?? [];
      if (before.take()) return fired['5xx-before']++, error(SES_ERROR.unavailable);
      if (throttled.take()) return fired.throttled++, error(SES_ERROR.throttled);
      if (paused.on) return fired.paused++, error(SES_ERROR.paused);
      const unverified = verified === undefined ? [] : recipients.filter((a) => !verified!(a));
      if (unverified.length > 0) return fired.sandbox++, error(SES_ERROR.notVerified(region, unverified));
      const s: SesSend = { messageId: `0100${randomUUID().replace(/-/g, '')}-000000`, from: r.FromEmailAddress, to, configurationSet: r.ConfigurationSetName, tags: Object.fromEntries((r.EmailTags ?? []).map((t) => [t.Name, t.Value])) };
      sent.push(s);
      // Accepted: SES answers now and delivers afterwards (the relay's outcome never reaches the caller).
      // A 500 after acceptance still delivers it and publishes its events.
      if (after.take()) fired['5xx-after']++, error(SES_ERROR.internal);
      else if (cut.take()) fired['2xx-cut']++, writeCutAnswer(req, res, 200, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() }, JSON.stringify({ MessageId: s.messageId }), cutHow);
      else answer(200, { MessageId: s.messageId });
      published(s, recipients);
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
    relayed: async () => {
      // Relays and events scheduled while waiting (a Bounce after its Send) are waited for too.
      for (let seen = 0; seen < relays.length; ) {
        const now = relays.length;
        await Promise.allSettled(relays.slice(seen, now));
        seen = now;
      }
    },
    throttle: (n) => throttled.arm(n),
    fail5xxAfter: (n) => after.arm(n),
    fail5xxBefore: (n) => before.arm(n),
    cut2xx: (n, how = 'truncated') => {
      cutHow = how;
      cut.arm(n);
    },
    pause: (ms) => paused.for(ms),
    pausedWhile: (p) => paused.while(p),
    sandbox: (v) => void (verified = v),
    bounce: (p) => void (bounces = p),
    complain: (p) => void (complaints = p),
    fired,
    events,
    close: () =>
      new Promise<void>((resolve) => {
        // Events not yet published are dropped, as SES's best-effort publishing may drop them.
        for (const [t, drop] of timers) clearTimeout(t), drop();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
