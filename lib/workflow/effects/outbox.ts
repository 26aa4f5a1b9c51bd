/**
 * The transactional outbox (DESIGN.md, External effects): the unprotected effects (an email, a
 * call to a provider that cannot check a fence) are written as outbox items INSIDE the unit's
 * fenced transaction, once (`attribute_not_exists(pk)`), so only the current holder can create
 * one and only once. Delivery happens after the commit, item by item, through conditional
 * state changes that never touch what the unit wrote (`generation`, `updatedAt`, the payload).
 *
 * An email (the provider cannot deduplicate) is claimed before its send:
 *
 *   PENDING ──claim(token)──> SENDING ──markSent(token)──> SENT
 *      ^                         │  └──markFailed(token)──> FAILED (the provider refused for good)
 *      └──────release(token)─────┘  └──markUnknown(token)─> UNKNOWN (only a person can tell)
 *
 * Every step after the claim is conditional on the claim's token: a sender that lost its claim
 * to the reconciler (it was presumed dead) changes nothing.
 *
 * An http call carries an Idempotency-Key the provider deduplicates on, so it needs no claim:
 * racing senders all POST the same key and the provider performs it once. Its one write after
 * the creation records the answer, conditional on PENDING (the first answer recorded wins):
 *
 *   PENDING ──markSentUnclaimed──> SENT      PENDING ──markFailedUnclaimed──> FAILED
 *
 * A refusal for now or an unanswered call writes nothing: the item stays PENDING and is sent
 * again with the same key (the stream's retry, the reconciler). For a provider that forgets keys
 * after a retention, the first send is stamped first (`firstSentAt`, once) and every round of
 * POSTs counted (`keyedSends`, and `keyedRefusals` for the rounds certainly refused); an item too
 * old for its key to be remembered is given up unsent, unless every round was refused (then no
 * key was ever stored, and its window starts again):
 *
 *   PENDING ──startKeyedSend──> PENDING (firstSentAt, keyedSends)   PENDING ──markUnknownUnclaimed──> UNKNOWN
 *   PENDING ──restartKeyWindow──> PENDING (firstSentAt = now)          (key-retention.ts)
 *
 * A provider that took nothing and asked to wait (throttled, or held by the sending account's
 * state: paused, sandboxed) defers the item: it goes (or stays) PENDING with `notBefore`, which
 * the claim's condition and the reconciler honour, and `heldReason` while it is held:
 *
 *   SENDING ──deferClaimed(token)──> PENDING (notBefore)   PENDING ──deferUnclaimed──> PENDING (notBefore)
 *
 * The provider's record of a send (an SES event on the item) may come after the claim that sent
 * it was given back (a takeover's resend throttled). No claim is granted on an item that carries
 * one: the record settles it.
 *
 *   PENDING (a record on it) ──settleByRecord──> SENT, or FAILED (a Reject)
 */
import { createHash } from 'node:crypto';
import { GetCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describeValue, InvalidInputError, isConditionalCheckFailed, onceOnly, TransactionFailedError, type Effect } from '../../protocol/index.js';
import { OUTBOX_ATTR as O, unsentKeyOf } from '../schema.js';

export type OutboxStatus = 'PENDING' | 'SENDING' | 'SENT' | 'FAILED' | 'UNKNOWN';
export type OutboxKind = 'email' | 'http';

/** An outbox item as read back (the payload is the kind's). */
export interface OutboxItem {
  readonly pk: string;
  readonly kind: OutboxKind;
  readonly jobId: string;
  readonly generation: number;
  readonly unit: number;
  readonly updatedAt: number;
  readonly status: OutboxStatus;
  readonly attempts: number;
  readonly claimToken?: string;
  readonly claimedAt?: number;
  readonly ambiguousSends?: number;
  readonly providerMessageId?: string;
  readonly firstSentAt?: number;
  readonly keyedSends?: number;
  readonly keyedRefusals?: number;
  readonly notBefore?: number;
  readonly deferrals?: number;
  readonly heldReason?: string;
  /** The claim whose send was counted ambiguous by its own sender (a takeover of it counts nothing more). */
  readonly ambiguousClaim?: string;
  readonly providerEvents?: readonly string[];
  readonly to?: string;
  readonly subject?: string;
  readonly body?: string;
  readonly target?: string;
  readonly request?: Readonly<Record<string, unknown>>;
  /** A per-recipient destination: the path below the target's endpoint (HttpPayload.path). */
  readonly path?: string;
  /** What the unit put on it for the steps that follow it; never sent. */
  readonly context?: Readonly<Record<string, unknown>>;
  readonly failureReason?: string;
  /** FAILED: whether the provider declined the effect (`effect`) or refused our request (`request`). */
  readonly refusal?: 'effect' | 'request';
  /** A follow-up: its parent's id and its step (follow-ups.ts). */
  readonly parent?: string;
  readonly step?: string;
  /** The follow-ups its settle created. */
  readonly followUps?: readonly string[];
  readonly followUpError?: string;
  /** The follow-ups a hard bounce created (its `bounced` steps), listed by the recorder's write. */
  readonly bounceFollowUps?: readonly string[];
  /** A new attempt (attempts.ts): the first attempt's id and this one's number; on the one it replaced, its successor. */
  readonly attemptOf?: string;
  readonly attempt?: number;
  readonly retriedBy?: readonly string[];
}

export interface EmailPayload {
  readonly to: string;
  readonly subject: string;
  readonly body: string;
  /** What the steps that follow this item need (follow-ups.ts): stored on the item, never sent. */
  readonly context?: Readonly<Record<string, unknown>>;
}

export interface HttpPayload {
  /** Which configured provider receives it (the sender maps it to an endpoint). */
  readonly target: string;
  readonly request: Readonly<Record<string, unknown>>;
  /**
   * The recipient's own destination below the target's endpoint (a tenant's webhook:
   * `/tenants/t-1/reports`). A path, never a URL: the item's data cannot send a request to a host
   * the stack did not configure (destinationUrl).
   */
  readonly path?: string;
  /** What the steps that follow this item need (follow-ups.ts): stored on the item, never sent. */
  readonly context?: Readonly<Record<string, unknown>>;
}

/** A destination path: absolute, plain segments, no `..`, no query: what destinationUrl joins below an endpoint. */
export const DESTINATION_PATH = /^(\/[A-Za-z0-9_.~-]+){1,16}$/;

/** A new item's delivery state: PENDING, in the unsent index under its own shard's key. */
const fresh = (pk: string) => ({ [O.status]: 'PENDING', [O.attempts]: 0, [O.unsent]: unsentKeyOf(pk) }) as const;

/** An email to send once: a once-only effect of the unit (the fenced unit stamps the tie). */
export function outboxEmail(table: string, pk: string, origin: { jobId: string; unit: number }, mail: EmailPayload): Effect {
  return onceOnly(table, { pk, [O.kind]: 'email', [O.jobId]: origin.jobId, [O.unit]: origin.unit, ...fresh(pk), [O.to]: mail.to, [O.subject]: mail.subject, [O.body]: mail.body, ...contextOf(mail) });
}

/** A provider call to make once, deduplicated by the provider on its Idempotency-Key. */
export function outboxHttp(table: string, pk: string, origin: { jobId: string; unit: number }, call: HttpPayload): Effect {
  return onceOnly(table, { pk, [O.kind]: 'http', [O.jobId]: origin.jobId, [O.unit]: origin.unit, ...fresh(pk), [O.target]: call.target, [O.request]: call.request, ...destinationOf(call), ...contextOf(call) });
}

const contextOf = (p: { context?: Readonly<Record<string, unknown>> }) => (p.context === undefined ? {} : { [O.context]: p.context });

function destinationOf(call: HttpPayload): { path?: string } {
  if (call.path === undefined) return {};
  if (!DESTINATION_PATH.test(call.path) || call.path.split('/').some((s) => s === '.' || s === '..')) throw new InvalidInputError('outbox path', `must be an absolute path of plain segments, got ${describeValue(call.path)}`);
  return { [O.path]: call.path };
}

const digest = (table: string, pk: string) => createHash('sha256').update(`${table}\u0000${pk}`).digest();

/** The identity every delivery of (table, pk) carries (DESIGN.md, Message identity). */
export const messageIdentity = {
  /** RFC 5322 Message-ID: the same for every resend of one outbox item. */
  messageId: (table: string, pk: string): string => `<${digest(table, pk).toString('hex').slice(0, 40)}@outbox.fenced-workflow>`,
  /** The HTTP Idempotency-Key: the provider replays its first answer for it. */
  idempotencyKey: (table: string, pk: string): string => `outbox-${digest(table, pk).toString('base64url').slice(0, 43)}`,
  /** Message tag values (SES allows only [A-Za-z0-9_-]): the id and the table, base64url. */
  tag: (s: string): string => Buffer.from(s, 'utf8').toString('base64url'),
  untag: (s: string): string => Buffer.from(s, 'base64url').toString('utf8'),
  headers: (table: string, pk: string): Record<string, string> => ({ 'X-Outbox-Id': pk, 'X-Outbox-Table': table }),
} as const;

/** Reads an item consistently (the reconciler's and tests' view). */
export async function readOutboxItem(doc: DynamoDBDocumentClient, table: string, pk: string): Promise<OutboxItem | undefined> {
  const out = await doc.send(new GetCommand({ TableName: table, Key: { pk }, ConsistentRead: true }));
  return out.Item as OutboxItem | undefined;
}

export interface Change {
  readonly set: Record<string, unknown>;
  readonly remove?: readonly string[];
  /** Numbers added, or strings added to a string set. */
  readonly add?: Record<string, number | Set<string>>;
  /** The condition, over `#<name>` placeholders of the attributes it names. */
  readonly condition: string;
  readonly values: Record<string, unknown>;
  readonly names: readonly string[];
}

/** The most a person's note on an item may say (a decision's, a retry's). */
const NOTE_MAX = 500;

/** A person's note, kept on the item they acted on: said (`says`: what it must say), and at most NOTE_MAX characters. */
export function personsNote(note: string, says: string): string {
  if (note.trim() === '') throw new InvalidInputError('note', `say ${says} (kept on the item)`);
  if (note.length > NOTE_MAX) throw new InvalidInputError('note', `at most ${NOTE_MAX} characters, got ${note.length}`);
  return note;
}

/** What a settle creates with it (follow-ups.ts followUpsOf): the follow-up items, or why none could be. */
export interface FollowUpWrite {
  readonly items: readonly Record<string, unknown>[];
  readonly error?: string;
  /** The attribute that lists them on the parent: `followUps` for a settle's, `bounceFollowUps` for a bounce's. */
  readonly listAs?: string;
}

const NO_FOLLOW_UPS: FollowUpWrite = { items: [] };

/**
 * One conditional UpdateItem; false when the condition did not hold (someone else moved the item).
 * With follow-ups, one TransactWriteItems: the update, listing them on the item (`followUps`), and
 * each follow-up put under `attribute_not_exists(pk)`: created with the settle or not at all.
 */
export async function change(doc: DynamoDBDocumentClient, table: string, pk: string, c: Change, next: FollowUpWrite = NO_FOLLOW_UPS): Promise<boolean> {
  const listed = { ...c.set, ...(next.items.length > 0 ? { [next.listAs ?? O.followUps]: next.items.map((i) => String(i.pk)) } : {}), ...(next.error === undefined ? {} : { [O.followUpError]: next.error }) };
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ...c.values };
  const name = (a: string) => ((names[`#${a}`] = a), `#${a}`);
  const sets = Object.entries(listed).map(([a, v], i) => ((values[`:s${i}`] = v), `${name(a)} = :s${i}`));
  const adds = Object.entries(c.add ?? {}).map(([a, v], i) => ((values[`:a${i}`] = v), `${name(a)} :a${i}`));
  const removes = (c.remove ?? []).map(name);
  c.names.forEach(name);
  const expr = [sets.length ? `SET ${sets.join(', ')}` : '', adds.length ? `ADD ${adds.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : ''].filter(Boolean).join(' ');
  const update = { TableName: table, Key: { pk }, UpdateExpression: expr, ConditionExpression: c.condition, ExpressionAttributeNames: names, ExpressionAttributeValues: values };
  try {
    if (next.items.length === 0) await doc.send(new UpdateCommand(update));
    else await doc.send(new TransactWriteCommand({ TransactItems: [{ Update: update }, ...next.items.map((Item) => ({ Put: { TableName: table, Item, ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } } }))] }));
    return true;
  } catch (e) {
    if (isConditionalCheckFailed(e)) return false;
    const cancelled = e as { name?: string; CancellationReasons?: { Code?: string }[] };
    if (cancelled.name !== 'TransactionCanceledException') throw e;
    const reasons = cancelled.CancellationReasons ?? [];
    if (reasons[0]?.Code === 'ConditionalCheckFailed') return false;
    // A follow-up already there while its parent was not yet settled: only a write outside the settle can have made it.
    throw new TransactionFailedError(reasons, { cause: e });
  }
}

const byToken = (token: string) => ({ condition: '#status = :sending AND #claimToken = :token', values: { ':sending': 'SENDING', ':token': token }, names: [O.status, O.claimToken] });

/**
 * PENDING → SENDING with a fresh claim token. false: someone else claimed it, it is done, it is
 * deferred past `now` (throttled, held), or the provider's record of an earlier send is on it (a
 * record that came after that send's claim was given back): the record settles it
 * (settleByRecord), never a resend.
 */
export function claim(doc: DynamoDBDocumentClient, table: string, pk: string, token: string, now: number): Promise<boolean> {
  return change(doc, table, pk, {
    set: { [O.status]: 'SENDING', [O.claimToken]: token, [O.claimedAt]: now },
    add: { [O.attempts]: 1 },
    condition: '#status = :pending AND attribute_not_exists(#providerEvents) AND (attribute_not_exists(#notBefore) OR #notBefore <= :now)',
    values: { ':pending': 'PENDING', ':now': now },
    names: [O.status, O.providerEvents, O.notBefore],
  });
}

/**
 * PENDING → SENT (the provider's record shows it took the message) or FAILED (its record shows a
 * Reject), for an item no claim holds: its record came after the claim that sent it was given
 * back. false: already settled, or claimed (then the claim's holder settles it).
 */
export function settleByRecord(doc: DynamoDBDocumentClient, table: string, pk: string, record: { providerMessageId: string; now: number } | { rejected: string }, next?: FollowUpWrite): Promise<boolean> {
  const recorded = { condition: '#status = :pending AND attribute_exists(#providerEvents)', values: { ':pending': 'PENDING' }, names: [O.status, O.providerEvents] };
  if ('rejected' in record) return change(doc, table, pk, { set: { [O.status]: 'FAILED', [O.failureReason]: record.rejected.slice(0, 500), [O.refusal]: 'request' }, remove: [O.unsent], ...recorded });
  return change(doc, table, pk, { set: { [O.status]: 'SENT', [O.providerMessageId]: record.providerMessageId, [O.sentAt]: record.now }, remove: [O.unsent, O.heldReason], ...recorded }, next);
}

/**
 * The reconciler takes over a claim it presumes dead (older than its threshold): SENDING with
 * the token it saw → SENDING with its own, counting the earlier send as ambiguous (it may have
 * been delivered: the resend is a possible duplicate, recorded as such).
 */
export function takeOver(doc: DynamoDBDocumentClient, table: string, pk: string, seen: OutboxItem, token: string, now: number): Promise<boolean> {
  const t = byToken(seen.claimToken!);
  // Its sender counted its own send already (recordAmbiguous): not twice.
  const counted = seen.ambiguousClaim !== undefined && seen.ambiguousClaim === seen.claimToken;
  // An email's record may have arrived since it was read: the record settles it, not a resend.
  const unrecorded = seen.kind === 'email' ? { condition: `${t.condition} AND attribute_not_exists(#providerEvents)`, names: [...t.names, O.providerEvents] } : {};
  return change(doc, table, pk, { set: { [O.claimToken]: token, [O.claimedAt]: now }, add: { [O.attempts]: 1, ...(counted ? {} : { [O.ambiguousSends]: 1 }) }, ...t, ...unrecorded });
}

/** SENDING (ours) → SENT with the provider's message id. false: our claim was taken over. */
export function markSent(doc: DynamoDBDocumentClient, table: string, pk: string, token: string, providerMessageId: string, now: number, next?: FollowUpWrite): Promise<boolean> {
  return change(doc, table, pk, { set: { [O.status]: 'SENT', [O.providerMessageId]: providerMessageId, [O.sentAt]: now }, remove: [O.claimToken, O.unsent, O.heldReason], ...byToken(token) }, next);
}

/** SENDING (ours) → PENDING: the provider certainly did not accept it (refused, unreachable); sent again later. */
export function release(doc: DynamoDBDocumentClient, table: string, pk: string, token: string): Promise<boolean> {
  return change(doc, table, pk, { set: { [O.status]: 'PENDING' }, remove: [O.claimToken], ...byToken(token) });
}

/**
 * How an item was refused for good: the provider declined the effect itself (a card declined: a
 * business outcome, whose `refusedForGood` steps follow), or refused our request (a bad address, a
 * malformed body, an unknown route: our bug or our configuration, alarmed, followed by nothing).
 */
export type Refusal = { readonly of: 'effect'; readonly next?: FollowUpWrite } | { readonly of: 'request' };
const failed = (reason: string, r: Refusal) => ({ [O.status]: 'FAILED', [O.failureReason]: reason.slice(0, 500), [O.refusal]: r.of });

/** SENDING (ours) → FAILED: the provider refused it for good (a bad address, a request it will never take, a declined card). */
export function markFailed(doc: DynamoDBDocumentClient, table: string, pk: string, token: string, reason: string, refusal: Refusal = { of: 'request' }): Promise<boolean> {
  return change(doc, table, pk, { set: failed(reason, refusal), remove: [O.claimToken, O.unsent], ...byToken(token) }, refusal.of === 'effect' ? refusal.next : undefined);
}

/** SENDING (ours) → UNKNOWN: nobody can tell whether it was delivered; a person decides (alarm). */
export function markUnknown(doc: DynamoDBDocumentClient, table: string, pk: string, token: string, reason: string): Promise<boolean> {
  return change(doc, table, pk, { set: { [O.status]: 'UNKNOWN', [O.failureReason]: reason.slice(0, 500) }, remove: [O.claimToken, O.unsent], ...byToken(token) });
}

/** No claim (an http item): the answer is recorded only while the item is still PENDING, so the first recorded answer stands. */
/** The condition of every write to an http item, which has no claim: still PENDING. */
export const unclaimed = { condition: '#status = :pending', values: { ':pending': 'PENDING' }, names: [O.status] };

/** PENDING → SENT with the provider's id, for an item sent without a claim (its provider deduplicated on the key). false: already settled. */
export function markSentUnclaimed(doc: DynamoDBDocumentClient, table: string, pk: string, providerMessageId: string, now: number, next?: FollowUpWrite): Promise<boolean> {
  return change(doc, table, pk, { set: { [O.status]: 'SENT', [O.providerMessageId]: providerMessageId, [O.sentAt]: now }, add: { [O.attempts]: 1 }, remove: [O.unsent, O.heldReason], ...unclaimed }, next);
}

/** PENDING → UNKNOWN, for an item without a claim nobody may send again (past its provider's key retention). false: already settled. */
export function markUnknownUnclaimed(doc: DynamoDBDocumentClient, table: string, pk: string, reason: string): Promise<boolean> {
  return change(doc, table, pk, { set: { [O.status]: 'UNKNOWN', [O.failureReason]: reason.slice(0, 500) }, remove: [O.unsent], ...unclaimed });
}

/** PENDING → FAILED, for an item sent without a claim that the provider refused for good. false: already settled. */
export function markFailedUnclaimed(doc: DynamoDBDocumentClient, table: string, pk: string, reason: string, refusal: Refusal = { of: 'request' }): Promise<boolean> {
  return change(doc, table, pk, { set: failed(reason, refusal), add: { [O.attempts]: 1 }, remove: [O.unsent], ...unclaimed }, refusal.of === 'effect' ? refusal.next : undefined);
}

/** A send whose outcome this sender did not see (the answer was lost): counted on the item under this claim (`ambiguousClaim`), the claim kept. */
export function recordAmbiguous(doc: DynamoDBDocumentClient, table: string, pk: string, token: string): Promise<boolean> {
  return change(doc, table, pk, { set: { [O.ambiguousClaim]: token }, add: { [O.ambiguousSends]: 1 }, ...byToken(token) });
}

/**
 * Why an item waits: throttled (its backoff), or held by the account's state (the reason, shown
 * until it is sent); `refusedRound`: the deferring answer ends a counted round of keyed POSTs, certainly refused.
 */
export type Deferral = { readonly notBefore: number; readonly held?: string; readonly refusedRound?: boolean };

const deferral = (d: Deferral) => ({
  set: { [O.notBefore]: d.notBefore, ...(d.held === undefined ? {} : { [O.heldReason]: d.held.slice(0, 500) }) },
  add: { [O.deferrals]: 1, ...(d.refusedRound ? { [O.keyedRefusals]: 1 } : {}) },
  remove: d.held === undefined ? [O.heldReason] : [],
});

/** SENDING (ours) → PENDING, not to be sent before `notBefore`: the provider took nothing and asked to wait (throttled, held). */
export function deferClaimed(doc: DynamoDBDocumentClient, table: string, pk: string, token: string, d: Deferral): Promise<boolean> {
  const x = deferral(d);
  return change(doc, table, pk, { set: { [O.status]: 'PENDING', ...x.set }, add: x.add, remove: [O.claimToken, ...x.remove], ...byToken(token) });
}

/** PENDING → PENDING not before `notBefore`: an http item, or an item of a batch whose provider said to wait, never sent this time. false: already settled or claimed. */
export function deferUnclaimed(doc: DynamoDBDocumentClient, table: string, pk: string, d: Deferral): Promise<boolean> {
  const x = deferral(d);
  return change(doc, table, pk, { ...x, ...unclaimed });
}

