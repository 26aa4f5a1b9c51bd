/**
 * CHAIN (DESIGN.md, "Invariants every run must satisfy"): the steps that follow an outcome
 * (lib/workflow/effects/follow-ups.ts), judged from the job's input (Workload.checks.outbox: each
 * follow-up it demands, with the outcome it follows) and the providers' own records (what the
 * payment provider performed or declined, what the email provider received), never through the
 * sender's code:
 *   - a follow-up exists exactly when its parent settled with the outcome its step follows: the
 *     provider took the parent and it is SENT (`accepted`), or the provider declined it and it is
 *     FAILED as a refusal of the effect (`refusedForGood`); for UNKNOWN, a refusal of our request
 *     or an item not settled, none;
 *   - each was created by its parent's settle: on the Outbox stream, the MODIFY that settled the
 *     parent (PENDING or SENDING to SENT or FAILED, or a person's decision on it UNKNOWN) lists it
 *     in `followUps`, it was inserted once, and every follow-up a settle lists exists; a decision
 *     is judged as every settle, by the provider's record: the steps of a decision it contradicts
 *     (taken, where it declined) are violations;
 *   - a `bounced` step's follow-up exists exactly when the email provider's own record shows a
 *     hard bounce of its parent (a Permanent bounce, or the suppression list's), created by the
 *     MODIFY that recorded it (listing it in `bounceFollowUps`), once; a soft bounce or a
 *     complaint demands none;
 *   - none exists that its job's input does not demand. What each says is DELIVERY's, as for the
 *     unit's own items;
 *   - a new attempt of a declined effect was made by a retry, once, of an effect its provider did
 *     not take (invariants-attempts.ts).
 */
import type { ExpectedEffect, StepOutcome } from '../../lib/workflow/index.js';
import { headerOf } from '../local/sink-core.js';
import type { StreamChange } from '../local/streams.js';
import type { EffectsSources } from './invariants-effects.js';
import { checkAttempts } from './invariants-attempts.js';

type Item = Record<string, unknown>;
type Add = (name: 'CHAIN', msg: string) => void;

export interface ChainStats {
  /** Follow-ups created, and of them those after an accepted parent, a declined one and a hard-bounced email. */
  followUps: number;
  accepted: number;
  refusedForGood: number;
  bounced: number;
  /** Parents the payment provider declined (its own record). */
  declined: number;
}

/** The items any provider has a record of (a request with their key, a message with their id), taken or not. */
function seenByProvider(table: string, sources: EffectsSources): Set<string> {
  const out = new Set<string>();
  for (const r of sources.payments ?? []) if (r.outboxTable === table && r.outboxId !== undefined) out.add(r.outboxId);
  for (const m of sources.mails ?? []) {
    const id = headerOf(m.raw, 'X-Outbox-Id');
    if (id !== undefined && headerOf(m.raw, 'X-Outbox-Table') === table) out.add(id);
  }
  return out;
}

/** What each parent came to at its provider, from the provider's own record: taken, or declined for good. */
function providerOutcomes(table: string, sources: EffectsSources): Map<string, StepOutcome> {
  const out = new Map<string, StepOutcome>();
  for (const r of sources.payments ?? []) {
    if (r.outboxTable !== table || r.outboxId === undefined) continue;
    if (r.declined !== undefined) out.set(r.outboxId, 'refusedForGood');
    else if ((r.charges?.length ?? 1) > 0) out.set(r.outboxId, 'accepted');
  }
  for (const m of sources.mails ?? []) {
    const id = headerOf(m.raw, 'X-Outbox-Id');
    if (id !== undefined && headerOf(m.raw, 'X-Outbox-Table') === table) out.set(id, 'accepted');
  }
  return out;
}

/** The outcome an item's steps follow: its settle, confirmed by its provider's record; undefined for none (UNKNOWN, our request refused, unsettled). */
function outcomeOf(item: Item | undefined, atProvider: StepOutcome | undefined, mailsRead: boolean): StepOutcome | undefined {
  if (item === undefined) return undefined;
  // An email's record cannot be read (an outside SMTP server): its settle alone says (CHAIN is then partly unchecked, as DELIVERY is).
  const provider = item.kind === 'email' && !mailsRead ? (item.status === 'SENT' ? 'accepted' : undefined) : atProvider;
  if (item.status === 'SENT' && provider === 'accepted') return 'accepted';
  if (item.status === 'FAILED' && item.refusal === 'effect' && provider === 'refusedForGood') return 'refusedForGood';
  return undefined;
}

const listed = (image: Item | undefined, as = 'followUps'): string[] => (Array.isArray(image?.[as]) ? (image[as] as string[]) : []);

/** The emails the provider's own record shows hard-bounced (its events; where it cannot be read, the events recorded on the items). */
function hardBounced(table: string, outbox: readonly Item[], sources: EffectsSources): Set<string> {
  const hard = (e: string) => e === 'BOUNCE' || e === 'SUPPRESSED';
  if (sources.troubleEvents !== undefined) return new Set(sources.troubleEvents.filter((t) => t.outboxTable === table && hard(t.event)).map((t) => t.outboxId));
  const recorded = (i: Item) => [...((i.providerEvents as Iterable<string> | undefined) ?? [])].some((e) => hard(e.split(':')[0]!));
  return new Set(outbox.filter(recorded).map((i) => String(i.pk)));
}
const SETTLED = new Set(['SENT', 'FAILED']);

/** Per parent, the follow-ups its settle listed (the stream's MODIFY from PENDING or SENDING to SENT or FAILED, or a person's decision on an UNKNOWN item). */
function settleListings(outboxStream: readonly StreamChange[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const c of outboxStream) {
    const was = c.oldImage?.status;
    const decided = was === 'UNKNOWN' && c.newImage?.decidedBy !== undefined;
    if (c.event === 'MODIFY' && (was === 'PENDING' || was === 'SENDING' || decided) && SETTLED.has(String(c.newImage?.status))) out.set(c.key, [...(out.get(c.key) ?? []), ...listed(c.newImage)]);
    // The recorder's write that recorded a hard bounce with its follow-ups.
    if (c.event === 'MODIFY' && c.oldImage?.bounceFollowUps === undefined && c.newImage?.bounceFollowUps !== undefined) out.set(c.key, [...(out.get(c.key) ?? []), ...listed(c.newImage, 'bounceFollowUps')]);
  }
  return out;
}

/** CHAIN over the outbox, its stream, the demanded effects and the providers' records; returns the follow-ups validly created (DELIVERY judges what they say). */
export function checkChains(table: string, outbox: readonly Item[], outboxStream: readonly StreamChange[], demanded: ReadonlyMap<string, ExpectedEffect>, sources: EffectsSources, add: Add): { created: Set<string>; stats: ChainStats } {
  const byId = new Map(outbox.map((i) => [String(i.pk), i]));
  const settles = settleListings(outboxStream);
  const inserts = new Map<string, number>();
  for (const c of outboxStream) if (c.event === 'INSERT' && c.newImage?.parent !== undefined) inserts.set(c.key, (inserts.get(c.key) ?? 0) + 1);
  const created = new Set<string>();
  for (const [id, n] of inserts) {
    const parent = String(byId.get(id)?.parent ?? outboxStream.find((c) => c.key === id)?.newImage?.parent);
    if (!(settles.get(parent) ?? []).includes(id)) add('CHAIN', `${id}: a follow-up not created by its parent ${parent}'s settle (no MODIFY settling the parent lists it)`);
    else if (n > 1) add('CHAIN', `${id}: a follow-up created ${n} times`);
    else created.add(id);
  }
  for (const [parent, ids] of settles) for (const id of ids) if (!byId.has(id)) add('CHAIN', `${parent}: its settle lists ${id}, which was never created`);
  const atProvider = providerOutcomes(table, sources);
  const bounced = hardBounced(table, outbox, sources);
  const stats: ChainStats = { followUps: inserts.size, accepted: 0, refusedForGood: 0, bounced: 0, declined: [...atProvider.values()].filter((o) => o === 'refusedForGood').length };
  for (const e of demanded.values()) {
    if (e.after === undefined) continue;
    const parent = byId.get(e.after.parent);
    const outcome = e.after.on === 'bounced' ? (bounced.has(e.after.parent) ? 'bounced' : undefined) : outcomeOf(parent, atProvider.get(e.after.parent), sources.mails !== undefined);
    const exists = byId.has(e.id);
    if (exists && outcome !== e.after.on) add('CHAIN', `${e.id}: step ${e.after.step} follows ${e.after.on}, and its parent ${e.after.parent} came to ${outcome ?? `no outcome a step follows (${String(parent?.status ?? 'missing')})`}`);
    if (!exists && outcome === e.after.on) add('CHAIN', `${e.id}: its parent ${e.after.parent} came to ${outcome}, and step ${e.after.step}'s follow-up is missing`);
    if (exists && outcome === e.after.on) stats[outcome === 'bounced' ? 'bounced' : outcome === 'refusedForGood' ? 'refusedForGood' : 'accepted']++;
  }
  for (const i of outbox) if (i.parent !== undefined && demanded.get(String(i.pk))?.after === undefined) add('CHAIN', `${String(i.pk)}: a follow-up its job's input does not demand`);
  for (const id of checkAttempts(outbox, outboxStream, atProvider, seenByProvider(table, sources), add)) created.add(id);
  return { created, stats };
}
