/**
 * A new attempt of an effect its provider declined (the customer has since fixed their card), or
 * of an UNKNOWN one the provider has no record of: a new outbox item under a new id, so a new
 * Idempotency-Key, never a resend of the declined key (which would replay the decline, or, past
 * its retention, charge a second time what a person already settled). The attempt says what the
 * item it replaces said (same payload, same context, same step), and the steps that follow its
 * outcome are its own (a receipt once the new attempt is taken).
 *
 * One write: a TransactWriteItems that marks the replaced item `retriedBy` the new id (conditional
 * on it being declined or UNKNOWN and not yet retried) and puts the attempt under
 * `attribute_not_exists(pk)`. Two people retrying at once: one attempt is created, the other
 * refused. An attempt of an attempt counts on from the first (`<first>#attempt-3`). A person
 * starts it (npm run cli -- retry); a workload may also declare a step that does it (a step after
 * a decline that creates the same target: its follow-up is a new attempt under its own key).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../../protocol/index.js';
import { AttemptRefusedError } from '../errors.js';
import { OUTBOX_ATTR as O } from '../schema.js';
import { change, outboxEmail, outboxHttp, personsNote, readOutboxItem, type OutboxItem } from './outbox.js';

/** Attempt n of the item first written as `first`. */
export const attemptId = (first: string, n: number): string => `${first}#attempt-${n}`;

/** Why `item` cannot take a new attempt; undefined: it can. */
function refusalOf(item: OutboxItem | undefined): string | undefined {
  if (item === undefined) return 'does not exist';
  if (item.retriedBy !== undefined) return `was retried already, by ${item.retriedBy.join(', ')}`;
  if (item.status === 'UNKNOWN' || (item.status === 'FAILED' && item.refusal === 'effect')) return undefined;
  return item.status === 'FAILED' ? 'is FAILED as a refusal of our request, not declined' : `is ${item.status}`;
}

/** The attempt's item: what `item` says, under `id`, with its place in the line of attempts. */
function attemptOf(table: string, item: OutboxItem, id: string, n: number, now: number): Record<string, unknown> {
  const origin = { jobId: item.jobId, unit: item.unit };
  const context = item.context === undefined ? {} : { context: item.context };
  const draft =
    item.kind === 'email'
      ? outboxEmail(table, id, origin, { to: String(item.to), subject: String(item.subject), body: String(item.body), ...context })
      : outboxHttp(table, id, origin, { target: String(item.target), request: item.request ?? {}, ...(item.path === undefined ? {} : { path: item.path }), ...context });
  return { ...draft.item, [O.attemptOf]: item.attemptOf ?? item.pk, [O.attempt]: n, ...(item.step === undefined ? {} : { [O.step]: item.step }), [O.updatedAt]: now };
}

/** Creates the next attempt of declined or UNKNOWN item `id`; AttemptRefusedError when its state refuses one. Returns the attempt's id. */
export async function retryAsNewAttempt(deps: { readonly doc: DynamoDBDocumentClient; readonly table: string; readonly clock: Clock }, id: string, note: string): Promise<string> {
  personsNote(note, 'why it is tried again');
  const item = await readOutboxItem(deps.doc, deps.table, id);
  const refused = refusalOf(item);
  if (refused !== undefined) throw new AttemptRefusedError(id, refused);
  const n = (item!.attempt ?? 1) + 1;
  const next = attemptId(item!.attemptOf ?? item!.pk, n);
  const now = deps.clock.wallNow();
  const retryable = { condition: '(#status = :unknown OR (#status = :failed AND #refusal = :effect)) AND attribute_not_exists(#retriedBy)', values: { ':unknown': 'UNKNOWN', ':failed': 'FAILED', ':effect': 'effect' }, names: [O.status, O.refusal, O.retriedBy] };
  const ok = await change(deps.doc, deps.table, id, { set: { [O.retryNote]: note, [O.retriedAt]: now }, ...retryable }, { items: [attemptOf(deps.table, item!, next, n, now)], listAs: O.retriedBy });
  if (!ok) throw new AttemptRefusedError(id, refusalOf(await readOutboxItem(deps.doc, deps.table, id)) ?? 'moved while the attempt was written');
  return next;
}
