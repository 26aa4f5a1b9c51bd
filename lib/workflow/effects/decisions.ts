/**
 * A person's decision on an UNKNOWN item: the one outcome no provider answer settled (a saved 500,
 * sends nobody saw past their record's lag, a key past its retention). After reading the
 * provider's own record (its dashboard, its API, the charge id), an operator settles the item as
 * taken (`accepted`, SENT with the provider's id) or declined (`declined`, FAILED as a refusal of
 * the effect), and the steps that follow that outcome are created by the same write, under the
 * same rule as every settle (follow-ups.ts): one TransactWriteItems, conditional on the item still
 * being UNKNOWN, each follow-up under `attribute_not_exists`. Two operators deciding at once:
 * one decision stands, the other is refused and writes nothing. Nothing here is automatic: an
 * UNKNOWN item stays so until a person decides.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError } from '../../protocol/index.js';
import { DecisionRefusedError } from '../errors.js';
import { OUTBOX_ATTR as O } from '../schema.js';
import { followUps, type SettlerDeps } from './follow-ups.js';
import { change, personsNote, readOutboxItem, type OutboxItem } from './outbox.js';

/** What the person found at the provider: it took the effect (with its id there), or declined it. */
export type Decision = { readonly outcome: 'accepted'; readonly providerMessageId: string; readonly note: string } | { readonly outcome: 'declined'; readonly note: string };

export interface DecisionResult {
  readonly id: string;
  readonly status: 'SENT' | 'FAILED';
  /** The follow-ups the decision created (the steps of its outcome). */
  readonly followUps: readonly string[];
  /** A step that could not build its follow-up: the item settled without them (alarmed as every settle's). */
  readonly followUpError?: string;
}

function checkDecision(d: Decision): void {
  personsNote(d.note, 'what the provider showed');
  if (d.outcome === 'accepted' && !/^[\x21-\x7e]{1,255}$/.test(d.providerMessageId)) throw new InvalidInputError('provider id', 'must be the provider\'s id of what it took (1-255 printable characters, no spaces)');
}

/** Settles UNKNOWN item `id` as the person decided, with the follow-ups of that outcome. DecisionRefusedError: it is missing or not UNKNOWN. */
export async function decideUnknown(deps: SettlerDeps & { readonly doc: DynamoDBDocumentClient }, id: string, d: Decision): Promise<DecisionResult> {
  checkDecision(d);
  const item = await readOutboxItem(deps.doc, deps.table, id);
  if (item?.status !== 'UNKNOWN') throw new DecisionRefusedError(id, item?.status);
  const now = deps.clock.wallNow();
  const decided = { [O.decidedBy]: 'operator', [O.decisionNote]: d.note, [O.decidedAt]: now };
  const unknown = { condition: '#status = :unknown', values: { ':unknown': 'UNKNOWN' }, names: [O.status] };
  const settled: Partial<OutboxItem> =
    d.outcome === 'accepted' ? { status: 'SENT', providerMessageId: d.providerMessageId } : { status: 'FAILED', refusal: 'effect', failureReason: `declined, an operator's decision: ${d.note}` };
  const next = followUps(deps, item, d.outcome === 'accepted' ? 'accepted' : 'refusedForGood', settled);
  const ok = await change(deps.doc, deps.table, id, { set: { ...settled, ...(d.outcome === 'accepted' ? { [O.sentAt]: now } : {}), ...decided }, ...unknown }, next);
  if (!ok) throw new DecisionRefusedError(id, (await readOutboxItem(deps.doc, deps.table, id))?.status);
  return { id, status: settled.status as 'SENT' | 'FAILED', followUps: next.items.map((i) => String(i.pk)), ...(next.error === undefined ? {} : { followUpError: next.error }) };
}
