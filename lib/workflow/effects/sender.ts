/**
 * The sender: delivers outbox items (outbox.ts) driven by the Outbox stream's INSERT records.
 * An email: claim it (PENDING → SENDING, conditional, with a fresh token), send it with the
 * outbox id as its identity, then mark it SENT conditional on the claim. A duplicate stream
 * delivery or a second sender racing for the item loses the claim and sends nothing.
 * An http call: no claim. The provider deduplicates on the Idempotency-Key, so a duplicate or a
 * racing sender POSTs the same key harmlessly; the answer is recorded conditional on PENDING.
 *
 * What a send came to (its verdict, from the providers' behaviour model: adapters/provider-behaviour.ts)
 * decides the next step:
 *   accepted                 → SENT (the provider's message id recorded), with the follow-ups of
 *                              the workload's `accepted` steps in the same write (follow-ups.ts)
 *   declined (the effect refused for good: a card declined) → FAILED as a refusal of the effect,
 *                              with the follow-ups of its `refusedForGood` steps in the same write
 *   certainly not accepted   → released to PENDING (sent again: stream retry, reconciler) or,
 *                              refused for good, FAILED with the reason (alarmed)
 *   throttled                → deferred: PENDING with a jittered, growing `notBefore` (pacing.ts),
 *                              and the batch's later items for the same provider deferred with
 *                              it, unsent (another provider's items are sent: one provider's
 *                              throttle or hold is not another's)
 *   held (the account's state: paused, sandbox, configuration) → deferred the same way with its
 *                              reason (`heldReason`, alarmed), never FAILED: sent once it lifts
 *   nobody knows (ambiguous) → counted on the item and left SENDING: the reconciler asks the
 *                              provider's own record (reconciler.ts). An http effect is first
 *                              resent at once: its Idempotency-Key makes a resend harmless. A
 *                              5xx the provider replays as its saved answer for the key is final:
 *                              UNKNOWN with the reason (no resend can tell more)
 * Without a claim (http) "not accepted" and "nobody knows" write nothing: the item stays PENDING
 * and is sent again with the same key, by the stream's retry or the reconciler. A claim is sent
 * under only while it outlives one more send (`claimCoversSend`): the reconciler takes over a
 * claim `claimTimeoutMs` old (the handler refuses a function timeout not below it). Key
 * retention (a provider that forgets keys, Stripe after 24 h): key-retention.ts.
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../../protocol/index.js';
import { METRIC, type Telemetry } from '../ports.js';
import { claim, deferClaimed, deferUnclaimed, markFailed, markFailedUnclaimed, markSent, markSentUnclaimed, markUnknown, markUnknownUnclaimed, messageIdentity, recordAmbiguous, release, type OutboxItem } from './outbox.js';
import { declinedBy, followUps, type FollowUpStep } from './follow-ups.js';
import { countKeyedRefusal, keyedDeadline, PAST_RETENTION } from './key-retention.js';
import { notBeforeOf, type BackoffSettings, type Pacer } from './pacing.js';
import { httpTargetEnv } from '../workload.js';
import type { EmailProvider, HttpProvider, SendResult } from './providers.js';

/** Where fault injection may stop a sender: after its claim, after the provider answered (before SENT), after its settle. */
export type SenderPoint = 'after-claim' | 'after-send' | 'after-settle';

export interface SenderHooks {
  /** Never resolve to model a sender that died there (its claim stays: the reconciler's case). */
  at(point: SenderPoint, info: { table: string; pk: string; kind: OutboxItem['kind']; result?: SendResult['kind'] | DeliveryOutcome }): Promise<void>;
}

export interface SenderDeps {
  readonly doc: DynamoDBDocumentClient;
  readonly table: string;
  readonly clock: Clock;
  readonly telemetry: Telemetry;
  readonly email?: EmailProvider;
  /** By the item's `target`. */
  readonly http?: Readonly<Record<string, HttpProvider>>;
  /** The From address of every email (with `email`). */
  readonly from?: string;
  readonly hooks?: SenderHooks;
  /** Immediate resends of an ambiguous http call (its key makes them harmless). Default 2. */
  readonly httpResends?: number;
  /** How long before a provider's key retention ends the sender stops sending (the module's comment). Default 1 h. */
  readonly keyRetentionMarginMs?: number;
  /** Spaces this invocation's emails by its share of the email account's send rate (pacing.ts; SES's MaxSendRate). None: unpaced. http calls are not paced: a provider's own limit answers 429. */
  readonly pacer?: Pacer;
  /** How throttled and held items wait (pacing.ts). */
  readonly backoff?: BackoffSettings;
  /** The jitter's source. @default Math.random */
  readonly random?: () => number;
  /**
   * The reconciler's claim timeout: a claim this old may be taken over. A claim too old to cover
   * one more send (`sendTimeoutMs`) is released, not sent under (the module's comment). None: not checked.
   */
  readonly claimTimeoutMs?: number;
  /** The longest one provider call takes (the adapters' timeout). @default 10 s */
  readonly sendTimeoutMs?: number;
  /** The workload's steps: what each settled outcome creates (follow-ups.ts). None: nothing follows. */
  readonly steps?: readonly FollowUpStep[];
}

/** The longest one provider call takes when the deps say nothing (the adapters' timeout in the deployed functions). */
export const DEFAULT_SEND_TIMEOUT_MS = 10_000;
/** What settling an item after its send may take (one conditional write, its retries): left in an invocation's time besides the send. */
export const SETTLE_RESERVE_MS = 2_000;

export type DeliveryOutcome = 'sent' | 'skipped' | 'released' | 'failed' | 'declined' | 'ambiguous' | 'unknown' | 'deferred' | 'held';

/** Counts and logs a decline (a business outcome: no alarm). */
function declined(deps: SenderDeps, item: OutboxItem, reason: string, marked: boolean): DeliveryOutcome {
  if (marked) deps.telemetry.count(METRIC.outboxDeclined);
  deps.telemetry.event('outbox-declined', { table: deps.table, pk: item.pk, kind: item.kind, reason, marked });
  return marked ? 'declined' : 'skipped';
}

/** The outcomes after which the provider asked to wait: the rest of a batch, or of a reconciler's run, is not sent now. */
export const WAIT: ReadonlySet<DeliveryOutcome> = new Set(['deferred', 'held']);

const providerOf = (deps: SenderDeps, item: OutboxItem): HttpProvider | undefined => (item.target === undefined ? undefined : deps.http?.[item.target]);

/** Sends the item once through its provider (no claim, no state change): the sender's and the reconciler's one call. `notAfter` (wall ms): no http POST at or after it. */
export async function sendItem(deps: SenderDeps, item: OutboxItem, notAfter = Number.POSITIVE_INFINITY): Promise<SendResult> {
  if (item.kind === 'email') {
    if (deps.email === undefined || deps.from === undefined) return { kind: 'rejected', permanent: true, reason: 'no email provider configured' };
    if (typeof item.to !== 'string' || typeof item.subject !== 'string' || typeof item.body !== 'string') return { kind: 'rejected', permanent: true, reason: 'email item without to, subject and body' };
    await deps.pacer?.take();
    return deps.email.send({
      from: deps.from,
      to: item.to,
      subject: item.subject,
      text: item.body,
      messageId: messageIdentity.messageId(deps.table, item.pk),
      headers: messageIdentity.headers(deps.table, item.pk),
      tags: { outboxId: messageIdentity.tag(item.pk), outboxTable: messageIdentity.tag(deps.table) },
    });
  }
  return (await postRound(deps, item, notAfter)).result;
}

/**
 * One round of an http item's POSTs: the POST, and its immediate resends while the answer is
 * ambiguous, none at or after `notAfter`. `posts`: how many went out (a single one answered with a
 * refusal is a round certainly refused: the resends follow only answers that may have been taken).
 */
async function postRound(deps: SenderDeps, item: OutboxItem, notAfter: number): Promise<{ result: SendResult; posts: number }> {
  const provider = providerOf(deps, item);
  // No endpoint configured for its target (yet): nothing was sent. It waits, held (alarmed), and is
  // sent once one is: a missing setting is the operator's to fix, never a refusal for good.
  if (provider === undefined) return { result: { kind: 'held', reason: `no endpoint configured for http target ${String(item.target)} (${httpTargetEnv(String(item.target)).url})` }, posts: 0 };
  const headers = messageIdentity.headers(deps.table, item.pk);
  const call = { idempotencyKey: messageIdentity.idempotencyKey(deps.table, item.pk), headers, body: item.request ?? {}, ...(item.path === undefined ? {} : { path: item.path }) };
  let result: SendResult = { kind: 'ambiguous', reason: PAST_RETENTION };
  let posts = 0;
  // Checked before every POST, so the margin need cover one POST only, not the resends' sum.
  // A final ambiguous answer (the provider's saved 5xx) is what every resend would get back.
  // Not paced: the pacer is the email account's rate (SES's MaxSendRate); an http provider's own
  // limit answers 429, which defers the item.
  for (let i = 0; i === 0 || (result.kind === 'ambiguous' && result.final !== true && i <= (deps.httpResends ?? 2)); i++) {
    if (deps.clock.wallNow() >= notAfter) break;
    result = await provider.post(call);
    posts++;
  }
  return { result, posts };
}

/**
 * After a send under claim `token`: SENT, released, FAILED, or left SENDING (ambiguous). Shared
 * by the sender and the reconciler, which resends under its own claim.
 */
export async function settle(deps: SenderDeps, item: OutboxItem, token: string, result: SendResult): Promise<DeliveryOutcome> {
  const { doc, table, telemetry: t } = deps;
  const info = { table, pk: item.pk, kind: item.kind };
  switch (result.kind) {
    case 'accepted': {
      const marked = await markSent(doc, table, item.pk, token, result.providerMessageId, deps.clock.wallNow(), followUps(deps, item, 'accepted', { status: 'SENT', providerMessageId: result.providerMessageId }));
      t.count(METRIC.outboxSent);
      t.event('outbox-sent', { ...info, providerMessageId: result.providerMessageId, marked });
      return 'sent';
    }
    case 'declined':
      return declined(deps, item, result.reason, await markFailed(doc, table, item.pk, token, result.reason, declinedBy(deps, item, result.reason)));
    case 'rejected':
      if (result.permanent) {
        await markFailed(doc, table, item.pk, token, result.reason);
        t.count(METRIC.outboxFailed);
        t.event('outbox-failed', { ...info, reason: result.reason });
        return 'failed';
      }
      await release(doc, table, item.pk, token);
      t.event('outbox-released', { ...info, reason: result.reason });
      return 'released';
    case 'throttled':
    case 'held':
      return deferred(deps, item, result, (d) => deferClaimed(doc, table, item.pk, token, d));
    case 'ambiguous':
      if (result.final) {
        // The provider's record is this very answer: only a person can tell (UNKNOWN, alarmed).
        if (await markUnknown(doc, table, item.pk, token, result.reason)) t.count(METRIC.outboxUnknown);
        t.event('outbox-unknown', { ...info, reason: result.reason });
        return 'unknown';
      }
      await recordAmbiguous(doc, table, item.pk, token);
      t.count(METRIC.outboxAmbiguous);
      t.event('outbox-ambiguous', { ...info, reason: result.reason });
      return 'ambiguous';
  }
}

/** Defers an item the provider did not take and asked to wait for (throttled, held): its not-before time, counted. */
export async function deferred(deps: SenderDeps, item: OutboxItem, result: Extract<SendResult, { kind: 'throttled' | 'held' }>, write: (d: { notBefore: number; held?: string }) => Promise<boolean>, answered = true): Promise<DeliveryOutcome> {
  const notBefore = notBeforeOf(result, item.deferrals ?? 0, deps.clock.wallNow(), deps.random ?? Math.random, deps.backoff);
  await write({ notBefore, ...(result.kind === 'held' ? { held: result.reason } : {}) });
  // The metrics count the provider's answers; the items deferred with a batch were never sent.
  if (answered) deps.telemetry.count(result.kind === 'held' ? METRIC.outboxHeld : METRIC.outboxThrottled);
  deps.telemetry.event(result.kind === 'held' ? 'outbox-held' : 'outbox-throttled', { table: deps.table, pk: item.pk, kind: item.kind, reason: result.reason, notBefore });
  return result.kind === 'held' ? 'held' : 'deferred';
}

/**
 * An http item, sent without a claim (its Idempotency-Key is the provider's deduplication), then
 * the answer recorded if the item is still PENDING. `skipped`: another sender recorded it first.
 */
async function deliverKeyed(deps: SenderDeps, item: OutboxItem): Promise<DeliveryOutcome> {
  const { doc, table, telemetry: t } = deps;
  const info = { table, pk: item.pk, kind: item.kind };
  // Deferred (a reconciler's read shows it; a stream image never has it): not before its time,
  // and not stamped as sent either (an item deferred with its batch was never POSTed).
  if (item.notBefore !== undefined && deps.clock.wallNow() < item.notBefore) return 'skipped';
  const round = await keyedDeadline(deps, item, providerOf(deps, item)?.keyRetentionMs);
  if (round === 'settled') {
    t.event('outbox-already-settled', info);
    return 'skipped';
  }
  if (deps.clock.wallNow() >= round.notAfter) return givenUpPastRetention(deps, item);
  const { result, posts } = await postRound(deps, item, round.notAfter);
  await deps.hooks?.at('after-send', { table, pk: item.pk, kind: item.kind, result: result.kind });
  // A counted round of one POST answered with a refusal took nothing: counted so, it lets the key's window start again.
  const refusedRound = round.counted && posts === 1;
  switch (result.kind) {
    case 'accepted': {
      if (!(await markSentUnclaimed(doc, table, item.pk, result.providerMessageId, deps.clock.wallNow(), followUps(deps, item, 'accepted', { status: 'SENT', providerMessageId: result.providerMessageId })))) {
        t.event('outbox-already-settled', info);
        return 'skipped';
      }
      t.count(METRIC.outboxSent);
      t.event('outbox-sent', { ...info, providerMessageId: result.providerMessageId, marked: true });
      return 'sent';
    }
    case 'declined':
      return declined(deps, item, result.reason, await markFailedUnclaimed(doc, table, item.pk, result.reason, declinedBy(deps, item, result.reason)));
    case 'rejected':
      if (!result.permanent) {
        if (refusedRound) await countKeyedRefusal(doc, table, item.pk);
        t.event('outbox-released', { ...info, reason: result.reason });
        return 'released';
      }
      if (await markFailedUnclaimed(doc, table, item.pk, result.reason)) t.count(METRIC.outboxFailed);
      t.event('outbox-failed', { ...info, reason: result.reason });
      return 'failed';
    case 'throttled':
    case 'held':
      return deferred(deps, item, result, (d) => deferUnclaimed(doc, table, item.pk, { ...d, refusedRound }));
    case 'ambiguous':
      if (result.final) {
        // A saved 5xx replayed for the key: the provider itself cannot say more; a person checks its dashboard.
        const marked = await markUnknownUnclaimed(doc, table, item.pk, result.reason);
        if (marked) t.count(METRIC.outboxUnknown);
        t.event('outbox-unknown', { ...info, reason: result.reason, marked });
        return marked ? 'unknown' : 'skipped';
      }
      // Nothing to count on the item: the key makes the next send (the reconciler's) a replay, never a second effect.
      t.count(METRIC.outboxAmbiguous);
      t.event('outbox-ambiguous', { ...info, reason: result.reason });
      return 'ambiguous';
  }
}

/** PENDING → UNKNOWN without a POST: the provider may have forgotten the key, and only a person can tell whether the effect was taken. */
async function givenUpPastRetention(deps: SenderDeps, item: OutboxItem): Promise<DeliveryOutcome> {
  const marked = await markUnknownUnclaimed(deps.doc, deps.table, item.pk, PAST_RETENTION);
  if (marked) deps.telemetry.count(METRIC.outboxUnknown);
  deps.telemetry.event('outbox-unknown', { table: deps.table, pk: item.pk, kind: item.kind, reason: PAST_RETENTION, marked });
  return marked ? 'unknown' : 'skipped';
}

/**
 * Whether a claim made at `claimedAt` still outlives one more send: the reconciler takes over a
 * claim once it is `claimTimeoutMs` old, and a send must end before that, or two would be out.
 */
export function claimCoversSend(deps: SenderDeps, claimedAt: number): boolean {
  if (deps.claimTimeoutMs === undefined) return true;
  return deps.clock.wallNow() - claimedAt + (deps.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS) < deps.claimTimeoutMs;
}

/** Send and settle one item (an email under a claim). `skipped`: someone else claimed it (a duplicate record, a racing sender) or it is done. */
export async function deliver(deps: SenderDeps, item: OutboxItem): Promise<DeliveryOutcome> {
  const outcome = item.kind === 'http' ? await deliverKeyed(deps, item) : await deliverClaimed(deps, item);
  await deps.hooks?.at('after-settle', { table: deps.table, pk: item.pk, kind: item.kind, result: outcome });
  return outcome;
}
async function deliverClaimed(deps: SenderDeps, item: OutboxItem): Promise<DeliveryOutcome> {
  const token = randomUUID();
  const claimedAt = deps.clock.wallNow();
  if (!(await claim(deps.doc, deps.table, item.pk, token, claimedAt))) {
    deps.telemetry.event('outbox-claim-lost', { table: deps.table, pk: item.pk });
    return 'skipped';
  }
  await deps.hooks?.at('after-claim', { table: deps.table, pk: item.pk, kind: item.kind });
  if (!claimCoversSend(deps, claimedAt)) {
    // The reconciler may take this claim over before the send ends: give it back unsent.
    await release(deps.doc, deps.table, item.pk, token);
    deps.telemetry.event('outbox-claim-stale', { table: deps.table, pk: item.pk, ageMs: deps.clock.wallNow() - claimedAt });
    return 'released';
  }
  const result = await sendItem(deps, item);
  await deps.hooks?.at('after-send', { table: deps.table, pk: item.pk, kind: item.kind, result: result.kind });
  return settle(deps, item, token, result);
}

/** Which provider an item goes to: deferral and pacing are per provider (email, or each http target). */
export const providerKeyOf = (item: Pick<OutboxItem, 'kind' | 'target'>): string => (item.kind === 'email' ? 'email' : `http:${String(item.target)}`);
