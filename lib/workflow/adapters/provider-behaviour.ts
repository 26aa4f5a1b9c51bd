/**
 * The providers' behaviour model: how each answer of each kind of provider is classified (taken,
 * not taken, throttled, held by the account's state, maybe taken), with the documentation each
 * classification rests on, and what each provider documents about keys and rates. The adapters
 * (ses-email.ts, smtp-email.ts, http-provider.ts) only carry the request; the verdict comes from
 * here, and the sender acts on the verdict alone (effects/sender.ts). docs/external-effects.md
 * renders these tables (a test holds the two equal).
 *
 * The rule every row follows: an answer proves "not taken" only when the provider said so
 * before taking anything (a 4xx, an SMTP reply code, a refused connection). A 5xx after the
 * request reached the provider, or no answer at all, proves nothing: maybe taken, counted.
 */
import type { DeclineRule, SendResult, SendVerdict } from '../effects/providers.js';

/** One row of a provider's table: the answer, the verdict, what the sender does, and the source. */
export interface BehaviourRow {
  readonly answer: string;
  readonly verdict: SendVerdict | 'rejected (permanent)';
  readonly source: string;
}

export interface ProviderModel {
  readonly name: string;
  /** How long the provider keeps an idempotency key; undefined: it has none (SES, SMTP) or keeps it for good. */
  readonly keyRetention: string;
  readonly rateLimit: string;
  readonly rows: readonly BehaviourRow[];
}

const SES_ERRORS = 'SES API v2 Reference, SendEmail, Errors; SES Developer Guide, "Amazon SES email sending errors"';
const SDK = 'AWS SDK for JavaScript v3: a service error carries its name and $fault; a network error carries none';

export const SES_MODEL: ProviderModel = {
  name: 'SES v2 (SendEmail)',
  keyRetention: 'none: SendEmail takes no idempotency key, so the SDK makes one attempt and a lost answer is counted ambiguous',
  rateLimit: "the account's MaxSendRate (GetAccount SendQuota; 1/s in the sandbox) and its daily quota",
  rows: [
    { answer: '200 with a MessageId', verdict: 'accepted', source: SES_ERRORS },
    { answer: '2xx whose body cannot be read (cut or truncated)', verdict: 'ambiguous', source: `${SDK}; a deserialization error keeps the answer's status: a success may have taken the message` },
    { answer: 'TooManyRequestsException, LimitExceededException, Throttling (maximum sending rate, daily quota)', verdict: 'throttled', source: SES_ERRORS },
    { answer: 'SendingPausedException, AccountSuspendedException', verdict: 'held', source: `${SES_ERRORS} ("Account is paused")` },
    { answer: 'MessageRejected "Email address is not verified" (an unverified sender, or any unverified recipient in the sandbox)', verdict: 'held', source: SES_ERRORS },
    { answer: 'MailFromDomainNotVerifiedException, NotFoundException (the configuration set), AccessDenied, an invalid or expired credential', verdict: 'held', source: SES_ERRORS },
    { answer: 'MessageRejected (other: the content), BadRequestException', verdict: 'rejected (permanent)', source: SES_ERRORS },
    { answer: 'another 4xx answer', verdict: 'rejected', source: SES_ERRORS },
    { answer: 'InternalFailure, ServiceUnavailable, any 5xx', verdict: 'ambiguous', source: 'SES API Reference, Common Errors: a 5xx is a server-side failure after the request arrived; it does not say whether the message was queued' },
    { answer: 'no answer (timeout, connection reset)', verdict: 'ambiguous', source: SDK },
    { answer: 'connection refused, name not found (nothing sent)', verdict: 'rejected', source: SDK },
  ],
};

const RFC5321 = 'RFC 5321 4.2: 2yz accepted, 4yz transient (not taken), 5yz permanent (not taken)';
const SES_SMTP = 'SES Developer Guide, "SMTP response codes returned by Amazon SES"';

export const SMTP_MODEL: ProviderModel = {
  name: 'SMTP relay (SES SMTP interface, any relay)',
  keyRetention: 'none: the Message-ID is the only identity, and a relay does not deduplicate on it',
  rateLimit: "the relay's: SES answers 454 past MaxSendRate",
  rows: [
    { answer: '250 to the message data', verdict: 'accepted', source: RFC5321 },
    { answer: '4xx saying throttling, rate or too many; 554 "Daily message quota exceeded"', verdict: 'throttled', source: SES_SMTP },
    { answer: '5xx saying "not verified", "Account is paused", suspended; 530/535 (authentication)', verdict: 'held', source: SES_SMTP },
    { answer: 'another 5xx during the transaction', verdict: 'rejected (permanent)', source: RFC5321 },
    { answer: 'another 4xx; a refused connection or greeting', verdict: 'rejected', source: RFC5321 },
    { answer: 'the connection closed or timed out after the message data left, no reply code', verdict: 'ambiguous', source: 'RFC 5321 6.1: the server may have taken responsibility before the reply was lost' },
  ],
};

const STRIPE_IDEM = 'Stripe API Reference, Idempotent requests: results are saved only once the endpoint started executing, a saved result (500s included) is replayed for 24 h';
const STRIPE_ERR = 'Stripe API Reference, Errors (HTTP status codes) and Rate limits';

export const HTTP_MODEL: ProviderModel = {
  name: 'HTTP API with an Idempotency-Key (Stripe-like)',
  keyRetention: "declared per target (HttpProvider.keyRetentionMs; Stripe's is 24 h): no send past it less the margin",
  rateLimit: "the provider's (Stripe: 100 operations/s in live mode, 25 in test mode); 429 with Retry-After past it",
  rows: [
    { answer: '2xx (a replay of the key\'s first 2xx included)', verdict: 'accepted', source: STRIPE_IDEM },
    { answer: "2xx whose JSON body says a refusal by the target's declared rule (`200 {\"status\": \"failed\"}`)", verdict: 'declined', source: "the target's own documentation, declared in its HttpTargetSpec.declines: such a provider answers every outcome with a 2xx" },
    { answer: '402 (a card declined: Stripe\'s card_error, `card_declined`)', verdict: 'declined', source: `${STRIPE_ERR}: 402 Request Failed, the parameters were valid but the request failed` },
    { answer: '2xx whose body cannot be read (cut, or a JSON body that does not parse)', verdict: 'ambiguous', source: `${STRIPE_IDEM}: the provider took it and its answer is lost; resent with the same key, its first answer is replayed whole` },
    { answer: '429 (Retry-After honoured)', verdict: 'throttled', source: STRIPE_ERR },
    { answer: '3xx (a redirect; never followed: fetch would re-send the POST as a GET without its body)', verdict: 'rejected (permanent)', source: 'RFC 9110 15.4: a 301/302 to a POST may be re-sent as a GET, a 303 must be; the redirect target never saw the effect\'s request' },
    { answer: '409 (a request with this key is in flight)', verdict: 'rejected', source: STRIPE_IDEM },
    { answer: '401, 403, or an error code account_inactive / account_invalid (the key or the account disabled)', verdict: 'held', source: STRIPE_ERR },
    { answer: 'another 4xx (400 a malformed request or idempotency_error, 404 an unknown route)', verdict: 'rejected (permanent)', source: STRIPE_ERR },
    { answer: '5xx', verdict: 'ambiguous', source: `${STRIPE_IDEM}: a 500 may follow a charge made; resent with the same key` },
    { answer: '5xx replayed for the key (Idempotent-Replayed: true)', verdict: 'ambiguous', source: `${STRIPE_IDEM}: the saved 500 is the key's record; no resend can tell more: UNKNOWN` },
    { answer: 'no answer (timeout, reset)', verdict: 'ambiguous', source: 'a resend with the same key is a replay' },
    { answer: 'connection refused, name not found (nothing sent)', verdict: 'rejected', source: 'Node fetch: the request never left' },
  ],
};

export const PROVIDER_MODELS: readonly ProviderModel[] = [SES_MODEL, SMTP_MODEL, HTTP_MODEL];

const text = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e)).slice(0, 300);

/** The network error code of a failure that never got an answer (Node's, or its cause's). */
export function networkCode(e: unknown): string | undefined {
  const err = e as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = err?.code ?? err?.cause?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Codes that mean the request never left: nothing can have been taken. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** A failure with no answer: taken for certain not, when the request never left; otherwise maybe. */
export function classifyNoAnswer(e: unknown, where: string): SendResult {
  const code = networkCode(e);
  if (code !== undefined && NEVER_SENT.has(code)) return { kind: 'rejected', permanent: false, reason: `${code} ${where}` };
  return { kind: 'ambiguous', reason: text(e) };
}

const SES_THROTTLED = new Set(['TooManyRequestsException', 'LimitExceededException', 'Throttling', 'ThrottlingException']);
const SES_HELD = new Set(['SendingPausedException', 'AccountSuspendedException', 'MailFromDomainNotVerifiedException', 'NotFoundException', 'AccessDeniedException', 'AccessDenied', 'UnrecognizedClientException', 'InvalidClientTokenId', 'ExpiredTokenException', 'InvalidSignatureException', 'SignatureDoesNotMatch']);
const NOT_VERIFIED = /not verified/i;
/** SES's daily quota: nothing before the quota's rolling window frees up (an hour is a fair first wait). */
const QUOTA = /daily message quota/i;
const QUOTA_WAIT_MS = 3_600_000;

/** An SES v2 SendEmail failure. `answered`: an error SES sent (it has a name and a status), not a network failure. */
export function classifySes(e: unknown): SendResult {
  const err = e as { name?: string; $fault?: string; $metadata?: { httpStatusCode?: number }; message?: string };
  const status = err?.$metadata?.httpStatusCode;
  if (status === undefined) return classifyNoAnswer(e, 'ses');
  const reason = text(e);
  // A 2xx that could not be read (a body cut or truncated: the SDK's deserialization error keeps
  // the status): SES answered success, so it may well have taken the message. Never "not taken".
  if (status >= 200 && status < 300) return { kind: 'ambiguous', reason: `a ${status} answer that could not be read: ${reason}` };
  const name = err.name ?? '';
  if (SES_THROTTLED.has(name)) return { kind: 'throttled', reason, ...(QUOTA.test(reason) ? { retryAfterMs: QUOTA_WAIT_MS } : {}) };
  if (SES_HELD.has(name) || (name === 'MessageRejected' && NOT_VERIFIED.test(reason))) return { kind: 'held', reason };
  if (status >= 500 || err.$fault === 'server') return { kind: 'ambiguous', reason };
  if (name === 'MessageRejected' || name === 'BadRequestException') return { kind: 'rejected', permanent: true, reason };
  if (status === 429) return { kind: 'throttled', reason };
  return { kind: 'rejected', permanent: false, reason };
}

interface SmtpError {
  code?: string;
  responseCode?: number;
  message?: string;
  response?: string;
}

const SMTP_THROTTLED = /throttl|rate limit|too many|maximum sending rate/i;
const SMTP_HELD = /not verified|account is paused|paused|suspended/i;

/** An SMTP failure at `stage`: before the transaction (connect, greeting) or during it. */
export function classifySmtp(e: unknown, stage: 'connect' | 'transaction'): SendResult {
  const err = (e ?? {}) as SmtpError;
  const said = `${String(err.message ?? '')} ${String(err.response ?? '')}`;
  const reason = `${err.code ?? 'error'}${err.responseCode ? ` ${err.responseCode}` : ''}: ${String(err.message ?? e).slice(0, 300)}`;
  const code = err.responseCode;
  if (typeof code === 'number' && code >= 400) {
    if ((code < 500 && SMTP_THROTTLED.test(said)) || QUOTA.test(said)) return { kind: 'throttled', reason, ...(QUOTA.test(said) ? { retryAfterMs: QUOTA_WAIT_MS } : {}) };
    if (code === 530 || code === 535 || (code >= 500 && SMTP_HELD.test(said))) return { kind: 'held', reason };
    return { kind: 'rejected', permanent: code >= 500 && stage === 'transaction', reason };
  }
  if (stage === 'connect') return { kind: 'rejected', permanent: false, reason };
  return { kind: 'ambiguous', reason };
}

const ACCOUNT_STATE = /"code"\s*:\s*"(account_inactive|account_invalid|platform_account_required)"/;

/** Retry-After as ms: delta-seconds or an HTTP date (RFC 9110 10.2.3); undefined when absent or unreadable. */
export function retryAfterMs(header: string | null | undefined, now: number): number | undefined {
  if (header === null || header === undefined || header.trim() === '') return undefined;
  const s = Number(header);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * An HTTP provider's 2xx: taken, with the provider's id (the JSON body's `id`, else the
 * `Request-Id` header). `body` undefined: the body could not be read (cut); a JSON body that does
 * not parse was cut too. Either is maybe taken, never "taken" with no id: the resend with the key
 * gets the first answer replayed whole.
 */
export function classifyHttp2xx(status: number, body: string | undefined, opts: { json: boolean; requestId: string | null; declines?: DeclineRule | undefined }): SendResult {
  if (body === undefined) return { kind: 'ambiguous', reason: `HTTP ${status}: the answer's body could not be read` };
  let id = opts.requestId ?? '';
  if (!opts.json) return { kind: 'accepted', providerMessageId: id };
  let parsed: Record<string, unknown> | null;
  try {
    parsed = JSON.parse(body) as Record<string, unknown> | null;
  } catch {
    return { kind: 'ambiguous', reason: `HTTP ${status}: a JSON answer that does not parse: ${body.slice(0, 300)}` };
  }
  // A provider that answers every outcome with a 2xx says a refusal in its body (the target's declared rule).
  const said = opts.declines === undefined ? undefined : parsed?.[opts.declines.field];
  if (typeof said === 'string' && opts.declines!.values.includes(said)) return { kind: 'declined', reason: `HTTP ${status}: ${opts.declines!.field} "${said}": ${body.slice(0, 300)}` };
  id = String(parsed?.id ?? id);
  return { kind: 'accepted', providerMessageId: id };
}

/** An HTTP provider's answer other than 2xx. `replayed`: the provider says this is its saved answer for the key. */
export function classifyHttpStatus(status: number, body: string, opts: { replayed: boolean; retryAfter?: string | null; location?: string | null; now: number }): SendResult {
  const reason = `HTTP ${status}: ${body.slice(0, 300)}`;
  // A redirect is never followed for an effect: the request went nowhere it was meant to.
  if (status >= 300 && status < 400) return { kind: 'rejected', permanent: true, reason: `HTTP ${status}: a redirect to ${opts.location ?? '(no location)'}, not followed for an effect` };
  if (status === 429) {
    const after = retryAfterMs(opts.retryAfter, opts.now);
    return { kind: 'throttled', reason, ...(after === undefined ? {} : { retryAfterMs: after }) };
  }
  if (status >= 500) return opts.replayed ? { kind: 'ambiguous', reason: `${reason} (the provider's saved answer for this key)`, final: true } : { kind: 'ambiguous', reason };
  if (status === 409) return { kind: 'rejected', permanent: false, reason };
  // The account's state, whatever the status says it with (Stripe's account_inactive comes as a 400 or a 403).
  if (status === 401 || status === 403 || ACCOUNT_STATE.test(body)) return { kind: 'held', reason };
  // The effect refused, not the request: the provider read a valid request and declined it.
  if (status === 402) return { kind: 'declined', reason };
  return { kind: 'rejected', permanent: true, reason };
}

/** The refusals' rule for an http provider that forgets keys (effects/sender.ts, key retention). */
const REFUSED_ROUND = '; to an http provider that forgets keys, the round is counted refused (`keyedRefusals`): an item only ever refused took nothing, so past the key retention its window starts again, never UNKNOWN';

/** What the sender and the reconciler do on each verdict (effects/sender.ts, reconciler.ts). */
export const VERDICT_ACTIONS: Readonly<Record<BehaviourRow['verdict'], string>> = {
  accepted: 'SENT with the provider\'s id, and in the same write the follow-ups of its `accepted` steps',
  rejected: `not taken: released (an email) or left (http) PENDING, sent again by the stream's retry or the reconciler${REFUSED_ROUND}`,
  'rejected (permanent)': 'FAILED with the reason, a refusal of the request (`refusal` request: our bug or our configuration; alarm OutboxFailed); no step follows it',
  declined: 'FAILED with the reason, a refusal of the effect (`refusal` effect: a business outcome; metric OutboxDeclined, no alarm), and in the same write the follow-ups of its `refusedForGood` steps',
  throttled: `deferred: PENDING with \`notBefore\` (full-jitter backoff doubling from THROTTLE_BACKOFF_MS, at least Retry-After), the batch's later items for the same provider deferred unsent, the reconciler's run stops sending to that provider (another provider's items are sent) (metric OutboxThrottled)${REFUSED_ROUND}`,
  held: `deferred HELD_RETRY_MS (±25 %) with \`heldReason\`, never FAILED, the batch and the run stop sending to that provider (not to the others); sent by itself once the state lifts (alarm OutboxHeld)${REFUSED_ROUND}`,
  ambiguous: 'maybe taken: an email is counted (`ambiguousSends`) and left SENDING for the provider\'s record, resent after `recordLagMs` without one, UNKNOWN after 3 unrecorded; an http call is resent with its key (a replay); a final one (a saved 5xx) is UNKNOWN with the reason',
};
