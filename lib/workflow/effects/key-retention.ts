/**
 * An http item's key retention: the rounds of POSTs counted on the item, and the deadline they give.
 *
 * A provider that forgets a key after a while (Stripe: 24 h) takes a resend past
 * that as a new request, a second effect. For such a provider the item's first send time is
 * stamped before its first POST and each round of POSTs counted (`startKeyedSend`, one write a
 * round), and no POST goes out once `firstSentAt + keyRetentionMs - keyRetentionMarginMs` has
 * passed: the item goes UNKNOWN with the reason (a person checks the provider's dashboard) —
 * unless every earlier round was certainly refused (throttled, held, refused for now: one POST
 * answered, nothing taken, so the provider never stored the key). Such an item was never possibly
 * taken: its window starts again and it is sent. The margin covers what lies between the check
 * and the provider's receipt of the POST: one POST's time on the way (at most the adapter's
 * timeout), the offset between the sender's clock and the provider's, and the provider's own
 * vagueness about the exact moment a key is dropped.
 *
 *   firstSentAt (N)    the first round's start, stamped before its POST (`if_not_exists`)
 *   keyedSends (N)     rounds started, counted before each
 *   keyedRefusals (N)  rounds the provider certainly refused (one POST, answered throttled, held
 *                      or refused for now: nothing taken, no key stored)
 *
 * Every round before this one refused: the provider never stored the key, so the deadline is no
 * reason to give the item up; its window starts again.
 */
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../../protocol/index.js';
import { OUTBOX_ATTR as O } from '../schema.js';
import { change, unclaimed, type OutboxItem } from './outbox.js';
import type { Clock } from '../../protocol/index.js';
import type { Telemetry } from '../ports.js';

/** What the deadline needs of the sender's deps (sender.ts SenderDeps). */
export interface KeyedDeps {
  readonly doc: DynamoDBDocumentClient;
  readonly table: string;
  readonly clock: Clock;
  readonly telemetry: Telemetry;
  readonly keyRetentionMarginMs?: number;
}

/** An hour before Stripe's 24 h: far above a POST's timeout (10 s) and any NTP-kept clock's offset. */
export const DEFAULT_KEY_RETENTION_MARGIN_MS = 3_600_000;

/** The reason an http item past its provider's key retention is given up (the operator's alarm and the checker read it). */
export const PAST_RETENTION = "past the provider's key retention: a resend could be a second effect";

/** An http item's rounds of POSTs to a provider that forgets keys, as stored once this round was counted. */
export interface KeyedRounds {
  /** The first round's start (this one's, if it is the first). */
  readonly firstSentAt: number;
  /** Rounds started, this one included. */
  readonly sends: number;
  /** Rounds the provider certainly refused. */
  readonly refusals: number;
  /** Stamped before rounds were counted: its earlier rounds are unknown, never taken as refused. */
  readonly uncounted: boolean;
}

/**
 * Before a round of POSTs (a POST and its immediate resends) of an http item to a provider that
 * forgets keys: the first send time, set once (`if_not_exists`: a later or racing sender keeps
 * the first one), and the round counted, only while it is PENDING. Undefined when the item is
 * settled (nothing to send). Written before the POST, the stamp is never later than the
 * provider's first sight of the key, so an age measured from it never understates the key's age
 * at the provider (less clock skew).
 */
export async function startKeyedSend(doc: DynamoDBDocumentClient, table: string, pk: string, now: number): Promise<KeyedRounds | undefined> {
  try {
    const out = await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: { pk },
        UpdateExpression: 'SET #first = if_not_exists(#first, :now) ADD #sends :one, #refusals :zero',
        ConditionExpression: '#status = :pending',
        ExpressionAttributeNames: { '#first': O.firstSentAt, '#sends': O.keyedSends, '#refusals': O.keyedRefusals, '#status': O.status },
        ExpressionAttributeValues: { ':now': now, ':one': 1, ':zero': 0, ':pending': 'PENDING' },
        ReturnValues: 'UPDATED_OLD',
      }),
    );
    const old = out.Attributes ?? {};
    const first = old[O.firstSentAt] as number | undefined;
    const sends = old[O.keyedSends] as number | undefined;
    return { firstSentAt: first ?? now, sends: (sends ?? 0) + 1, refusals: (old[O.keyedRefusals] as number | undefined) ?? 0, uncounted: first !== undefined && sends === undefined };
  } catch (e) {
    if (isConditionalCheckFailed(e)) return undefined;
    throw e;
  }
}

/**
 * The key's window starts again at `now`: for an item whose every round before `seen`'s was
 * certainly refused (the provider never stored its key), conditional on no round started or
 * refused since. false: one was, or the item is settled.
 */
export function restartKeyWindow(doc: DynamoDBDocumentClient, table: string, pk: string, now: number, seen: KeyedRounds): Promise<boolean> {
  return change(doc, table, pk, {
    set: { [O.firstSentAt]: now },
    condition: '#status = :pending AND #keyedSends = :sends AND #keyedRefusals = :refusals',
    values: { ':pending': 'PENDING', ':sends': seen.sends, ':refusals': seen.refusals },
    names: [O.status, O.keyedSends, O.keyedRefusals],
  });
}

/** A round the provider certainly refused for now (nothing taken), on a PENDING http item whose rounds are counted. */
export function countKeyedRefusal(doc: DynamoDBDocumentClient, table: string, pk: string): Promise<boolean> {
  return change(doc, table, pk, { set: {}, add: { [O.keyedRefusals]: 1 }, ...unclaimed });
}

/**
 * The last moment this round of an http item's POSTs may go out: its provider's key retention
 * from the first send, less the margin (the round counted, the first send stamped if this is it),
 * or from now when every earlier round was certainly refused (the provider never stored the key);
 * unbounded, and uncounted, for a provider that keeps keys for good. 'settled': the item is no
 * longer PENDING (nothing to send).
 */
export async function keyedDeadline(deps: KeyedDeps, item: OutboxItem, retention: number | undefined): Promise<{ notAfter: number; counted: boolean } | 'settled'> {
  if (retention === undefined) return { notAfter: Number.POSITIVE_INFINITY, counted: false };
  const now = deps.clock.wallNow();
  const window = retention - (deps.keyRetentionMarginMs ?? DEFAULT_KEY_RETENTION_MARGIN_MS);
  const round = await startKeyedSend(deps.doc, deps.table, item.pk, now);
  if (round === undefined) return 'settled';
  if (now < round.firstSentAt + window) return { notAfter: round.firstSentAt + window, counted: true };
  const neverTaken = !round.uncounted && round.refusals === round.sends - 1;
  if (neverTaken && (await restartKeyWindow(deps.doc, deps.table, item.pk, now, round))) {
    deps.telemetry.event('outbox-key-window-restarted', { table: deps.table, pk: item.pk, kind: item.kind, refusedRounds: round.refusals, firstSentAt: round.firstSentAt });
    return { notAfter: now + window, counted: true };
  }
  return { notAfter: round.firstSentAt + window, counted: true };
}

