/**
 * The reconciler (scheduled): resolves outbox items the sender did not finish, from the
 * provider's own record, never from a guess about the sender.
 *
 *   PENDING, older than `pendingAfterMs`      the stream delivery never came or was given up:
 *                                             deliver it now (claim, send, mark)
 *   SENDING, claim older than `claimTimeoutMs` the sender died or its answer was lost:
 *     email, the record shows it accepted       → SENT (the provider's id from the record: a
 *                                                 SEND, or a bounce, complaint or delay, which
 *                                                 SES publishes only for a message it took)
 *     email, the record shows a Reject          → FAILED with the reason
 *     email, no record to ask                   → UNKNOWN (a metric, an alarm, a person)
 *     email, record silent, younger than `recordLagMs` → left: the record may be on its way
 *     email, record silent past `recordLagMs`   → taken over and sent again, counted as an
 *                                                 ambiguous send (a duplicate only if the record
 *                                                 was later than its lag), or UNKNOWN once
 *                                                 `maxAmbiguousSends` possibly-taken sends went
 *                                                 unrecorded (claims released after a certain
 *                                                 refusal or a throttle count for nothing)
 *     http                                      → taken over and sent again: the provider
 *                                                 replays its first answer for the key (UNKNOWN
 *                                                 instead past its key retention less the margin)
 *   PENDING email with the provider's record of an earlier send (it came after that send's claim
 *     was given back: a takeover's resend throttled) → SENT, or FAILED on a Reject; never resent
 *   PENDING http past its provider's key retention less the margin (sender.ts): UNKNOWN, unsent
 *   PENDING deferred (throttled, held: `notBefore`): left until its time
 *
 * A run that meets a provider asking to wait (throttled, held) stops sending to that provider
 * (email, or one http target): its later items are the next run's, not a string of refusals, and
 * the other providers' items are served as usual.
 *
 * Every change is conditional on the claim it saw: a sender that wakes up changes nothing, and
 * two reconcilers cannot both take one item over. A takeover is stamped with the time it is
 * written (not the run's start) and checked to outlive one more send before it sends, so a long
 * run never holds a claim an overlapping run may take as dead.
 *
 * One run is bounded by its time: the index is read key by key (its partition key is
 * write-sharded: unsent-index.ts), each in pages of `pageSize` entries, only the entries old
 * enough to be due (the Query's key condition), and no item is taken once less than `reserveMs`
 * of the invocation remains (the report says `outOfTime`). Where a run starts is derived, never
 * kept: the key it begins with, and in each key the creation time it reads from (then the key's
 * older entries), are drawn from the run's start time over the keys holding due entries and each
 * key's span of due entries. So a backlog larger than one run's time is worked through across runs,
 * in a new container as in a warm one, and due work behind more waiting items (deferred, or of a
 * provider that asked to wait) than one run can read is still reached, where runs that all began
 * with the oldest entries would spend their time on the same waiting items. The index holds keys
 * only: each due entry's item is read from the table (consistent) before anything is decided, so
 * an entry the index has not yet dropped (it lags the table) is passed over.
 */
import { randomUUID } from 'node:crypto';
import { METRIC } from '../ports.js';
import { unsentKeys } from '../schema.js';
import { markFailed, markSent, markUnknown, readOutboxItem, release, settleByRecord, takeOver, type OutboxItem } from './outbox.js';
import { recordedDelivery } from './providers.js';
import { claimCoversSend, deliver, providerKeyOf, sendItem, settle, WAIT, type DeliveryOutcome, type SenderDeps } from './sender.js';
import { DEFAULT_KEY_RETENTION_MARGIN_MS, PAST_RETENTION } from './key-retention.js';
import { entriesBefore, oldestPerKey, type KeyStart } from './unsent-index.js';
import { followUps } from './follow-ups.js';

export interface ReconcilerDeps extends SenderDeps {
  /** A PENDING item this old has missed its stream delivery. */
  readonly pendingAfterMs: number;
  /** A SENDING claim this old belongs to a sender that is gone. */
  readonly claimTimeoutMs: number;
  /** How long the provider's record may lag a send; `undefined`: the email provider has no record to ask. */
  readonly recordLagMs: number | undefined;
  /**
   * Sends of one item that may have been taken with no record of them (ambiguous, or a sender
   * that died with its claim) before the reconciler gives up and marks it UNKNOWN. Default 3.
   */
  readonly maxAmbiguousSends?: number;
}

/** How much one run may do (Lambda's context gives the time). */
export interface ReconcileWindow {
  /** Time left in this invocation (Lambda's getRemainingTimeInMillis). @default unbounded */
  readonly remainingTimeMs?: () => number;
  /** No item is taken with less than this left: one item's send and marks, the metrics flush. @default 10 s */
  readonly reserveMs?: number;
  /** Items per index page. @default 100 */
  readonly pageSize?: number;
}

export interface ReconcileReport {
  readonly examined: number;
  readonly delivered: number;
  readonly fromRecord: number;
  readonly resent: number;
  readonly unknown: number;
  readonly waiting: number;
  /** Items the provider asked to wait for (throttled, held): the run stopped sending to that provider at the first. */
  readonly deferred: number;
  /** Age of the oldest unsent item (ms), 0 when none: the alarm's metric. */
  readonly oldestUnsentAgeMs: number;
  /** Pages of due entries read (besides the one Limit-1 Query per key value that finds each key's oldest). */
  readonly pages: number;
  /** The run's time was spent before it read every due entry: the next runs, starting elsewhere, go on. */
  readonly outOfTime: boolean;
}

/** `wait`: the provider asked to wait (throttled, held): the run sends nothing more. */
type Verdict = 'delivered' | 'fromRecord' | 'resent' | 'unknown' | 'waiting' | 'wait';

/** One stale SENDING item: the record's answer, a resend under a new claim, or UNKNOWN. */
async function resolveStale(deps: ReconcilerDeps, item: OutboxItem, now: number): Promise<Verdict> {
  const settled = item.kind === 'email' ? await fromRecord(deps, item, now) : await pastRetention(deps, item, now);
  if (settled !== undefined) return settled;
  const token = randomUUID();
  // Stamped with the time of the write, not the run's start: a run that has lasted longer than the
  // claim timeout would otherwise hand an overlapping run a claim that looks dead while it sends.
  const claimedAt = deps.clock.wallNow();
  if (!(await takeOver(deps.doc, deps.table, item.pk, item, token, claimedAt))) return 'waiting';
  if (!claimCoversSend(deps, claimedAt)) {
    await release(deps.doc, deps.table, item.pk, token);
    deps.telemetry.event('outbox-claim-stale', { table: deps.table, pk: item.pk, ageMs: deps.clock.wallNow() - claimedAt });
    return 'waiting';
  }
  deps.telemetry.event('outbox-resend', { table: deps.table, pk: item.pk, kind: item.kind, attempts: item.attempts + 1 });
  const outcome: DeliveryOutcome = await settle(deps, item, token, await sendItem(deps, item));
  return outcome === 'sent' ? 'resent' : WAIT.has(outcome) ? 'wait' : outcome === 'unknown' ? 'unknown' : 'waiting';
}

/** UNKNOWN under the stale claim, with the reason, counted. */
async function giveUp(deps: ReconcilerDeps, item: OutboxItem, why: string): Promise<Verdict> {
  if (await markUnknown(deps.doc, deps.table, item.pk, item.claimToken!, why)) deps.telemetry.count(METRIC.outboxUnknown);
  deps.telemetry.event('outbox-unknown', { table: deps.table, pk: item.pk, reason: why });
  return 'unknown';
}

/** How a record's verdict is written: under the stale claim seen, or on an unclaimed PENDING item. */
interface RecordMarks {
  sent(providerMessageId: string): Promise<boolean>;
  failed(reason: string): Promise<boolean>;
}

/** An email the provider's record settles: SENT (it took the message) or FAILED (a Reject); undefined: no such record. */
async function byRecord(deps: ReconcilerDeps, item: OutboxItem, mark: RecordMarks): Promise<Verdict | undefined> {
  const record = recordedDelivery(item.providerEvents);
  if (record.sent) {
    await mark.sent(record.providerMessageId);
    deps.telemetry.event('outbox-reconciled', { table: deps.table, pk: item.pk, from: 'provider record', providerMessageId: record.providerMessageId });
    return 'fromRecord';
  }
  if (record.rejected === undefined) return undefined;
  if (await mark.failed(record.rejected)) deps.telemetry.count(METRIC.outboxFailed);
  deps.telemetry.event('outbox-failed', { table: deps.table, pk: item.pk, reason: record.rejected });
  return 'fromRecord';
}

/** An email's stale claim, settled from the provider's record, left for the record, or given up; undefined: resend it. */
async function fromRecord(deps: ReconcilerDeps, item: OutboxItem, now: number): Promise<Verdict | undefined> {
  const seen = item.claimToken!;
  const { doc, table } = deps;
  const recorded = await byRecord(deps, item, { sent: (id) => markSent(doc, table, item.pk, seen, id, now, followUps(deps, item, 'accepted', { status: 'SENT', providerMessageId: id })), failed: (why) => markFailed(doc, table, item.pk, seen, why) });
  if (recorded !== undefined) return recorded;
  if (deps.recordLagMs === undefined) return giveUp(deps, item, 'the email provider keeps no record this reconciler can ask');
  // The record may still be on its way: nothing is decided before its lag has passed.
  if (now - (item.claimedAt ?? 0) < deps.recordLagMs) return 'waiting';
  // The stale claim's send counts unless its sender counted it already (takeOver does the same).
  const possible = (item.ambiguousSends ?? 0) + (item.ambiguousClaim === seen ? 0 : 1);
  if (possible >= (deps.maxAmbiguousSends ?? 3)) return giveUp(deps, item, `${possible} sends that may have been taken, none recorded within ${deps.recordLagMs} ms`);
  return undefined;
}

/** A stale http claim (an item claimed before http items went claimless) past its provider's key retention: UNKNOWN, never resent. */
async function pastRetention(deps: ReconcilerDeps, item: OutboxItem, now: number): Promise<Verdict | undefined> {
  const retention = item.target === undefined ? undefined : deps.http?.[item.target]?.keyRetentionMs;
  if (retention === undefined) return undefined;
  // Its first send was never stamped: its creation is no later, so the age is never understated.
  const first = item.firstSentAt ?? item.updatedAt;
  if (now < first + retention - (deps.keyRetentionMarginMs ?? DEFAULT_KEY_RETENTION_MARGIN_MS)) return undefined;
  return giveUp(deps, item, PAST_RETENTION);
}

/** One due item, as the table has it now: delivered, resolved, or left. */
async function judge(deps: ReconcilerDeps, item: OutboxItem, now: number): Promise<Verdict> {
  // The provider's record of an earlier send came after its claim was given back: it settles the item, whatever its deferral.
  if (item.status === 'PENDING' && item.providerEvents !== undefined) {
    const { doc, table } = deps;
    const recorded = await byRecord(deps, item, { sent: (id) => settleByRecord(doc, table, item.pk, { providerMessageId: id, now }, followUps(deps, item, 'accepted', { status: 'SENT', providerMessageId: id })), failed: (why) => settleByRecord(doc, table, item.pk, { rejected: why }) });
    if (recorded !== undefined) return recorded;
  }
  if (item.status === 'PENDING' && now - item.updatedAt >= deps.pendingAfterMs) {
    if (item.notBefore !== undefined && now < item.notBefore) return 'waiting';
    // deliver() refuses an http item past its provider's key retention (UNKNOWN, never resent).
    const outcome = await deliver(deps, item);
    return outcome === 'sent' ? 'delivered' : outcome === 'unknown' ? 'unknown' : WAIT.has(outcome) ? 'wait' : 'waiting';
  }
  if (item.status === 'SENDING' && item.claimToken !== undefined && now - (item.claimedAt ?? 0) >= deps.claimTimeoutMs) return resolveStale(deps, item, now);
  return 'waiting';
}

/** A fraction in [0, 1) drawn from a number (a 32-bit mix of it, `salt` choosing which): the same number, the same fraction. */
function fractionOf(n: number, salt: number): number {
  let h = (Math.floor(n) % 0x1_0000_0000) ^ Math.imul(salt, 0x9e3779b9);
  h = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
  h = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
  return ((h ^ (h >>> 16)) >>> 0) / 0x1_0000_0000;
}

/**
 * Where this run reads, drawn from its start time: the keys holding due entries, from one of them
 * round to the one before it, each from a creation time between its oldest and newest due entry
 * (one more Limit-1 Query per such key).
 */
async function startsOf(deps: ReconcilerDeps, oldest: ReadonlyMap<string, number>, dueBefore: number, now: number): Promise<KeyStart[]> {
  const keys = unsentKeys().filter((k) => (oldest.get(k) ?? Number.POSITIVE_INFINITY) <= dueBefore);
  const newest = await oldestPerKey(deps.doc, deps.table, dueBefore, keys, true);
  const first = Math.floor(fractionOf(now, 1) * keys.length);
  const within = fractionOf(now, 2);
  return [...keys.slice(first), ...keys.slice(0, first)].map((key) => {
    const from = oldest.get(key)!;
    return { key, oldest: from, from: from + Math.floor(within * ((newest.get(key) ?? from) - from + 1)) };
  });
}

export async function reconcile(deps: ReconcilerDeps, window: ReconcileWindow = {}): Promise<ReconcileReport> {
  const now = deps.clock.wallNow();
  const counts: Record<Verdict, number> = { delivered: 0, fromRecord: 0, resent: 0, unknown: 0, waiting: 0, wait: 0 };
  let examined = 0;
  const reserveMs = window.reserveMs ?? 10_000;
  const pages = { n: 0 };
  // Every key's oldest entry: the alarm's metric (whatever part of the index this run reaches), and which keys hold due work.
  const oldestByKey = await oldestPerKey(deps.doc, deps.table, now);
  const oldest = Math.min(Number.POSITIVE_INFINITY, ...oldestByKey.values());
  // Items sort by creation time: everything the sender may still be handling is left to it, unread.
  const dueBefore = now - Math.min(deps.pendingAfterMs, deps.claimTimeoutMs);
  const starts = await startsOf(deps, oldestByKey, dueBefore, now);
  let outOfTime = false;
  let worked = false;
  const waiting = new Set<string>();
  for await (const entry of entriesBefore(deps.doc, deps.table, dueBefore, { starts, limit: window.pageSize ?? 100, pages })) {
    // Out of time. At least one item per run, so a run whose time was spent before it began still moves on.
    if (worked && window.remainingTimeMs !== undefined && window.remainingTimeMs() < reserveMs) {
      outOfTime = true;
      break;
    }
    const item = await readOutboxItem(deps.doc, deps.table, entry.pk);
    // The index lags the table: an item settled since (or never readable) is not unsent any more.
    if (item === undefined || (item.status !== 'PENDING' && item.status !== 'SENDING')) continue;
    examined++;
    worked = true;
    // Its provider asked this run to wait: left for the next run, when the wait may be over.
    if (waiting.has(providerKeyOf(item))) {
      counts.waiting++;
      continue;
    }
    const verdict = await judge(deps, item, now);
    counts[verdict]++;
    if (verdict === 'wait') waiting.add(providerKeyOf(item));
  }
  const oldestUnsentAgeMs = Number.isFinite(oldest) ? Math.max(0, now - oldest) : 0;
  deps.telemetry.gauge(METRIC.outboxOldestUnsentAgeMs, oldestUnsentAgeMs);
  const { wait, ...verdicts } = counts;
  const report: ReconcileReport = { examined, ...verdicts, waiting: verdicts.waiting + wait, deferred: wait, oldestUnsentAgeMs, pages: pages.n, outOfTime };
  deps.telemetry.event('reconcile-done', { table: deps.table, ...report });
  return report;
}
