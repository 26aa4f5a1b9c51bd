/**
 * New attempts (lib/workflow/effects/attempts.ts), a person's retry of a declined effect under a
 * new key, judged from the Outbox stream and the providers' own records, never the retry's code:
 *   - each was created by the write that marked the item it replaces `retriedBy` it (the stream's
 *     MODIFY that added `retriedBy`), and inserted once;
 *   - the item it replaces was declined by its provider (the provider's record), or, UNKNOWN, is in
 *     no record of the provider at all: an attempt of an effect the provider took is a second one;
 *   - it says what its first attempt's input says, and its steps' follow-ups are demanded as its
 *     first attempt's are (withAttempts: DELIVERY and CHAIN judge them as any other).
 */
import type { ExpectedEffect } from '../../lib/workflow/index.js';
import type { StreamChange } from '../local/streams.js';
import type { StepOutcome } from '../../lib/workflow/index.js';

type Item = Record<string, unknown>;
type Add = (name: 'CHAIN', msg: string) => void;

const listed = (image: Item | undefined): string[] => (Array.isArray(image?.retriedBy) ? (image.retriedBy as string[]) : []);

/** What the inputs demand, with each attempt in the outbox demanded as its first attempt is, its steps' follow-ups under its own id. */
export function withAttempts(demanded: ReadonlyMap<string, ExpectedEffect>, outbox: readonly Item[]): Map<string, ExpectedEffect> {
  const out = new Map(demanded);
  for (const a of outbox) {
    const first = typeof a.attemptOf === 'string' ? a.attemptOf : undefined;
    const own = first === undefined ? undefined : demanded.get(first);
    if (first === undefined || own === undefined) continue;
    const id = String(a.pk);
    const { after: _after, ...said } = own;
    out.set(id, { ...said, id });
    const under = (x: string) => `${id}${x.slice(first.length)}`;
    for (const e of demanded.values()) {
      if (e.after !== undefined && e.id.startsWith(`${first}>`)) out.set(under(e.id), { ...e, id: under(e.id), after: { ...e.after, parent: under(e.after.parent) } });
    }
  }
  return out;
}

/** The attempts validly created (each by its predecessor's retry, once, of an effect its provider did not take); violations added as CHAIN's. */
export function checkAttempts(outbox: readonly Item[], outboxStream: readonly StreamChange[], atProvider: ReadonlyMap<string, StepOutcome>, seenByProvider: ReadonlySet<string>, add: Add): Set<string> {
  const byId = new Map(outbox.map((i) => [String(i.pk), i]));
  const retriedBy = new Map<string, string>();
  const inserts = new Map<string, number>();
  for (const c of outboxStream) {
    if (c.event === 'MODIFY' && listed(c.oldImage).length === 0) for (const id of listed(c.newImage)) retriedBy.set(id, c.key);
    if (c.event === 'INSERT' && c.newImage?.attemptOf !== undefined) inserts.set(c.key, (inserts.get(c.key) ?? 0) + 1);
  }
  const valid = new Set<string>();
  for (const [id, n] of inserts) {
    const replaced = retriedBy.get(id);
    const was = replaced === undefined ? undefined : byId.get(replaced);
    if (replaced === undefined) add('CHAIN', `${id}: a new attempt no retry created (no MODIFY of the item it replaces lists it in retriedBy)`);
    else if (n > 1) add('CHAIN', `${id}: a new attempt created ${n} times`);
    else if (atProvider.get(replaced) === 'accepted') add('CHAIN', `${id}: a new attempt of ${replaced}, which its provider took: the effect a second time`);
    else if (atProvider.get(replaced) !== 'refusedForGood' && (was?.status !== 'UNKNOWN' || seenByProvider.has(replaced))) add('CHAIN', `${id}: a new attempt of ${replaced}, which its provider neither declined nor never saw (${String(was?.status ?? 'missing')})`);
    else valid.add(id);
  }
  return valid;
}
