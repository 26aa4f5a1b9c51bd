/**
 * The unprotected effects' providers, as ports: an email provider (SES v2, SMTP) and an HTTP
 * provider (a payment API that deduplicates on an Idempotency-Key). Neither can check a fence or
 * an outbox status: the outbox decides WHAT is sent and that it is created once; the provider
 * only carries it. What a send came to is one of three things, and the sender treats each
 * differently (sender.ts): accepted, certainly not accepted, or nobody knows.
 * Adapters: lib/workflow/adapters/ (ses-email.ts, smtp-email.ts, http-provider.ts).
 */

export type SendResult =
  /** The provider took it: its id for the message (SES MessageId, the SMTP queue id, the charge id). */
  | { readonly kind: 'accepted'; readonly providerMessageId: string }
  /**
   * The provider certainly did not take it (it answered before taking anything, or nothing left).
   * `permanent`: it never will (a bad address, a request it refuses): FAILED with the reason.
   * Otherwise it may later: the item is sent again after a backoff.
   */
  | { readonly kind: 'rejected'; readonly permanent: boolean; readonly reason: string }
  /**
   * The provider took the request and refused the effect itself, for good: a card declined
   * (Stripe's 402 `card_declined`), or a 2xx whose body says so by the target's declared rule
   * (DeclineRule). A business outcome, not our fault: FAILED as a refusal of the effect, counted,
   * not alarmed, and followed by the workload's `refusedForGood` steps. Replayed per key like
   * every answer, so a resend cannot turn it into a charge: a new attempt needs a new key.
   */
  | { readonly kind: 'declined'; readonly reason: string }
  /** Not taken, and the provider asks the caller to slow down (429, SES TooManyRequests, SMTP 454): sent again after a jittered backoff, at least `retryAfterMs`. */
  | { readonly kind: 'throttled'; readonly reason: string; readonly retryAfterMs?: number }
  /**
   * Not taken because of the sending account's state, which a person can lift (SES sending paused,
   * the sandbox refusing an unverified recipient, a missing configuration set, revoked credentials):
   * the item is held (never FAILED), an alarm fires, and it is sent again once the state lifts.
   */
  | { readonly kind: 'held'; readonly reason: string }
  /**
   * The request may have been taken and nobody saw the outcome: no answer (a lost acknowledgement)
   * or an answer that does not say (a 5xx after the request reached the provider). `final`: the
   * provider's own record for this key IS that answer (a saved-and-replayed 500): no resend can
   * tell more, so the item goes UNKNOWN with the reason.
   */
  | { readonly kind: 'ambiguous'; readonly reason: string; readonly final?: boolean };

/** A verdict's name in logs, metrics and docs (docs/external-effects.md, the classification table). */
export type SendVerdict = SendResult['kind'];

/** One email of one outbox item: its identity travels in its headers (DESIGN.md, Message identity). */
export interface OutboundEmail {
  readonly from: string;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  /** Derived from (table, outbox id): the same on every resend. */
  readonly messageId: string;
  /** X-Outbox-Id, X-Outbox-Table. */
  readonly headers: Readonly<Record<string, string>>;
  /** For providers that publish events with tags (SES): the outbox id and table, tag-safe. */
  readonly tags: Readonly<Record<string, string>>;
}

export interface EmailProvider {
  /** A name for logs and reports ("ses", "smtp 127.0.0.1:2525"). */
  readonly name: string;
  send(mail: OutboundEmail): Promise<SendResult>;
}

/** One provider call of one outbox item. */
export interface OutboundCall {
  readonly idempotencyKey: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Readonly<Record<string, unknown>>;
  /** The item's own destination below the provider's endpoint (OutboxItem.path). */
  readonly path?: string;
}

/**
 * How a provider that answers a refusal with a 2xx says it (`200 {"status": "failed"}`): the JSON
 * body's `field` holding one of `values` is a decline, not an acceptance.
 */
export interface DeclineRule {
  readonly field: string;
  readonly values: readonly string[];
}

export interface HttpProvider {
  readonly name: string;
  /**
   * How long the provider keeps an Idempotency-Key (Stripe: 24 h), from its documentation. Past
   * it a resend with the same key is a new request (a second charge): the sender never sends an
   * item past this less its margin (sender.ts). Undefined: keys are kept for good.
   */
  readonly keyRetentionMs?: number;
  /**
   * POSTs the call. The provider replays its first answer for a key, so a resend after an
   * ambiguous attempt cannot perform the effect twice (the reason this path exists).
   */
  post(call: OutboundCall): Promise<SendResult>;
}

/** The email provider's own record (SES events through the recorder; the local sink): what the reconciler asks. */
export type RecordAnswer =
  | { readonly sent: true; readonly providerMessageId: string }
  /** `rejected`: the provider accepted the request and then refused the message (an SES Reject event): no resend will pass. */
  | { readonly sent: false; readonly rejected?: string };

/**
 * The provider events the recorder keeps on an item (`<EVENT>:<messageId>`). Each but REJECT
 * proves the provider accepted the message: SES publishes a bounce, a complaint or a delay only
 * for a message it took, so any of them settles a claim whose sender died, whatever order they
 * came in and whether or not the SEND event came at all (event publishing is best effort).
 */
export const PROVIDER_EVENT = {
  Send: 'SEND',
  Delivery: 'DELIVERY',
  /** A hard bounce (bounceType Permanent). */
  Bounce: 'BOUNCE',
  /** A permanent bounce because the address is on a suppression list (SES never tried it). */
  Suppressed: 'SUPPRESSED',
  /** A transient or undetermined bounce (SES gave up after its own retries). */
  SoftBounce: 'SOFTBOUNCE',
  Complaint: 'COMPLAINT',
  DeliveryDelay: 'DELAY',
  /** SES took the request and then rejected the message (a virus): never delivered. */
  Reject: 'REJECT',
} as const;

const ACCEPTED: ReadonlySet<string> = new Set(Object.values(PROVIDER_EVENT).filter((e) => e !== PROVIDER_EVENT.Reject));

/** Reads an outbox item's recorded provider events (provider-records.ts recordProviderEvent). */
export function recordedDelivery(events: Iterable<string> | undefined): RecordAnswer {
  let rejected: string | undefined;
  for (const e of events ?? []) {
    const [kind, ...id] = e.split(':');
    if (kind !== undefined && ACCEPTED.has(kind)) return { sent: true, providerMessageId: id.join(':') };
    if (kind === PROVIDER_EVENT.Reject) rejected = `the provider rejected message ${id.join(':')} after accepting the request (a Reject event)`;
  }
  return rejected === undefined ? { sent: false } : { sent: false, rejected };
}
