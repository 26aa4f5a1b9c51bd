/**
 * The real SESv2Client (SendEmail: REST JSON, `POST /v2/email/outbound-emails`) against the email
 * stand-in's core (cli/local/sink-core.ts) in memory: the decisions the SMTP sink makes (down,
 * throttled, paused, the sandbox, taken, an acknowledgement lost) and its record and events, in
 * SES v2's answers (status, `x-amzn-ErrorType`, a JSON `{message}`, as SES and the test SES
 * endpoint give them). A taken message is recorded as the mailbox receives it, composed by
 * nodemailer as the SMTP path composes it, with the request's headers (the outbox identity), so
 * the run and the checker read the in-memory record as they read the sink's. Its queue id is the
 * MessageId SendEmail answered, as the Send event names it (and as the recorder stores it).
 *
 * One deliberate difference from SES: SES gives the delivered message a Message-ID of its own; the
 * record keeps the one the outbox identity derives (messageIdentity.messageId of the X-Outbox-Table
 * and X-Outbox-Id headers), which is what the SMTP path delivers and what the checker
 * (cli/check/invariants-effects.ts) holds every received message to. With SES's, every email of a
 * simulated run would read as a DELIVERY violation. A message without the identity headers (not an
 * outbox item's) keeps SES's `<MessageId@email.amazonses.com>`.
 *
 * The sink's faults that have no SES answer play the transport's: down is a refused connection
 * (SimNetworkError ECONNREFUSED: nothing taken, as the sink's 421), a lost acknowledgement a cut
 * one after the message was taken (ECONNRESET: maybe taken, as the sink's closed connection).
 */
import { SESv2Client } from '@aws-sdk/client-sesv2';
import type { HttpHandlerOptions, HttpRequest } from '@smithy/types';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type { SinkCore, SinkRefusal } from '../../../cli/local/sink-core.js';
import { messageIdentity } from '../../../lib/workflow/index.js';
import { SimNetworkError, type Unanswered } from './errors.js';
import type { ShortCutOptions } from '../short-cut.js';
import { installProviderShortCut } from './short-cut.js';
import { noConfig, requestBytes, sdkResponse, throwIfAborted, type SimHttpHandler } from './smithy.js';

export const SIM_SES_HOST = 'email.sim';
export const SIM_SES_URL = `http://${SIM_SES_HOST}`;
const SEND_EMAIL = '/v2/email/outbound-emails';

/** The SendEmail body's fields the stand-ins read (the test SES endpoint reads the same). */
export interface SendEmailRequest {
  FromEmailAddress?: string;
  Destination?: { ToAddresses?: string[] };
  ConfigurationSetName?: string;
  EmailTags?: { Name: string; Value: string }[];
  Content?: { Simple?: { Subject?: { Data?: string }; Body?: { Text?: { Data?: string } }; Headers?: { Name: string; Value: string }[] } };
}

/** SES's error answers: status, error type (x-amzn-ErrorType) and message. */
interface SesError {
  readonly status: number;
  readonly type: string;
  readonly message: string;
}

/** The fault plan's refusal in SES v2's words (SendEmail, Errors). */
function sesError(r: SinkRefusal): SesError {
  switch (r.kind) {
    case 'throttled':
      return { status: 429, type: 'TooManyRequestsException', message: 'Maximum sending rate exceeded.' };
    case 'paused':
      return { status: 400, type: 'SendingPausedException', message: 'Sending paused for this account.' };
    case 'sandbox':
      return { status: 400, type: 'MessageRejected', message: `Email address is not verified. The following identities failed the check in region ${r.region.toUpperCase()}: ${r.identities.join(', ')}` };
  }
}

/** SES refuses a tag name or value outside these characters. */
const TAG = /^[A-Za-z0-9_-]{1,256}$/;

const answer = (status: number, body: unknown, requestId: string, errorType?: string) =>
  sdkResponse('POST', status, { 'content-type': 'application/json', 'x-amzn-requestid': requestId, ...(errorType === undefined ? {} : { 'x-amzn-errortype': errorType }) }, JSON.stringify(body));

/** What SES refuses before looking at the account: a request missing its parts, a tag it cannot carry. */
function badRequest(r: SendEmailRequest): string | undefined {
  if (r.FromEmailAddress === undefined || r.Destination?.ToAddresses?.[0] === undefined || r.Content?.Simple === undefined) return 'FromEmailAddress, Destination and Content.Simple are required';
  const bad = (r.EmailTags ?? []).find((t) => !TAG.test(t.Name) || !TAG.test(t.Value));
  return bad === undefined ? undefined : `Invalid tag ${bad.Name}: only [A-Za-z0-9_-] allowed`;
}

/** The message as the mailbox receives it: the request's headers, the identity's Message-ID (see the module comment), the date of the send. */
async function delivered(r: SendEmailRequest, sesMessageId: string, at: number): Promise<string> {
  const simple = r.Content!.Simple!;
  const headers = Object.fromEntries((simple.Headers ?? []).map((h) => [h.Name, h.Value]));
  const named = (n: string) => simple.Headers?.find((h) => h.Name.toLowerCase() === n)?.Value;
  const [id, table] = [named('x-outbox-id'), named('x-outbox-table')];
  const messageId = id === undefined || table === undefined ? `<${sesMessageId}@email.amazonses.com>` : messageIdentity.messageId(table, id);
  // A fixed boundary base: nodemailer would draw random bytes for it (a plain text message has no boundary anyway).
  const composer = new MailComposer({ from: r.FromEmailAddress, to: r.Destination!.ToAddresses, subject: simple.Subject?.Data ?? '', text: simple.Body?.Text?.Data ?? '', messageId, headers, date: new Date(at), baseBoundary: 'sim' });
  return (await composer.compile().build()).toString('utf8');
}

export function simSesHandler(core: SinkCore, unanswered: Unanswered, opts: { now?: () => number } = {}): SimHttpHandler {
  const now = opts.now ?? Date.now;
  return {
    ...noConfig,
    async handle(request: HttpRequest, options?: HttpHandlerOptions) {
      throwIfAborted(options);
      const what = `${request.method} ${request.hostname}${request.path}`;
      if (request.hostname !== SIM_SES_HOST || request.method !== 'POST' || request.path !== SEND_EMAIL) return unanswered.refuse('sesv2', what, `only SendEmail (POST ${SIM_SES_HOST}${SEND_EMAIL}) is served`);
      // Down: the connection is refused before the request is sent, as the sink's 421 at connect.
      if (core.refusesConnection()) throw new SimNetworkError('ECONNREFUSED', 'sesv2', what);
      const text = (await requestBytes(request, 'sesv2', unanswered)).toString('utf8');
      let r: SendEmailRequest;
      try {
        r = JSON.parse(text) as SendEmailRequest;
      } catch {
        return unanswered.refuse('sesv2', what, 'a body that is not JSON');
      }
      const requestId = core.newId();
      const bad = badRequest(r);
      if (bad !== undefined) return answer(400, { message: bad }, requestId, 'BadRequestException');
      const to = r.Destination!.ToAddresses!;
      const messageId = `0100${core.newId()}-000000`;
      // Composed before the decisions, so that no await comes between the fault plan's and the take.
      const raw = await delivered(r, messageId, now());
      const refused = core.refusal(to, raw);
      if (refused !== undefined) {
        const e = sesError(refused);
        return answer(e.status, { message: e.message }, requestId, e.type);
      }
      if (core.take(messageId, raw, to).ackLost) throw new SimNetworkError('ECONNRESET', 'sesv2', what);
      return answer(200, { MessageId: messageId }, requestId);
    },
  };
}

/**
 * An SESv2Client on the in-memory handler, as the sender's (SesEmailProvider.client: one attempt),
 * with dummy static credentials; its sends go the short-cut (test/sim/effects/short-cut.ts) unless
 * `shortCut` is 'sdk'.
 */
export function simSesClient(handler: SimHttpHandler, opts: { shortCut?: 'sdk' | ShortCutOptions } = {}): SESv2Client {
  const client = new SESv2Client({ endpoint: SIM_SES_URL, region: 'us-east-1', credentials: { accessKeyId: 'AKIDSIMULATOR', secretAccessKey: 'simulator' }, maxAttempts: 1, requestHandler: handler });
  if (opts.shortCut !== 'sdk') installProviderShortCut(client as never, () => SIM_SES_URL, opts.shortCut);
  return client;
}
