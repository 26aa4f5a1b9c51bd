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
  /** The provider certainly did not take it. `permanent`: it never will (a bad address, a request it refuses). */
  | { readonly kind: 'rejected'; readonly permanent: boolean; readonly reason: string }
  /** The request left and no answer came back (a lost acknowledgement): it may have been delivered. */
  | { readonly kind: 'ambiguous'; readonly reason: string };

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
export type RecordAnswer = { readonly sent: true; readonly providerMessageId: string } | { readonly sent: false };

/** Reads an outbox item's recorded provider events (`SEND:<id>`, `DELIVERY:<id>`, outbox.ts recordProviderEvent). */
export function recordedDelivery(events: Iterable<string> | undefined): RecordAnswer {
  for (const e of events ?? []) {
    const [kind, ...id] = e.split(':');
    if (kind === 'SEND' || kind === 'DELIVERY') return { sent: true, providerMessageId: id.join(':') };
  }
  return { sent: false };
}
