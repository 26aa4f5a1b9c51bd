/**
 * Steps that depend on an effect's outcome: a receipt once the payment provider accepted the
 * charge, a "payment failed" email once it declined the card, a webhook once the receipt went out.
 *
 * A workload declares each step (Workload.steps): which items it follows (`after`: the email items,
 * an http target's items, or the items another step created), on which settled outcome (`on`),
 * what it creates (`creates`: email or an http target), and a pure function from the settled item
 * to the next effect's payload, or nothing. The follow-up is created by the very write that
 * settles its parent (outbox.ts `change`): one TransactWriteItems that moves the parent to SENT or
 * FAILED under the parent's own condition (still PENDING, or still this claim's) and puts each
 * follow-up under `attribute_not_exists(pk)`, listing them on the parent (`followUps`). A sender,
 * a duplicate stream delivery, the reconciler and the recorder racing on one item therefore create
 * its follow-ups once or not at all, and a follow-up's id is its parent's with the step's name
 * (stable across retries). Nothing follows an uncertain answer or UNKNOWN: those are a person's.
 * A `bounced` step follows a hard bounce of a SENT email: the recorder, which receives it, creates
 * its follow-ups in the write that records it (recorder.ts), listed in `bounceFollowUps`.
 *
 * A follow-up is an outbox item like any other (sent, retried, reconciled, recorded), with
 * `parent` and `step`; it carries no generation: the fence guarded its parent's creation, and the
 * parent's settle guards the follow-up's (the wire check holds it to that).
 */
import { describeValue, InvalidInputError } from '../../protocol/index.js';
import { OUTBOX_ATTR as O } from '../schema.js';
import type { Clock } from '../../protocol/index.js';
import { METRIC, type Telemetry } from '../ports.js';
import { outboxEmail, outboxHttp, type EmailPayload, type FollowUpWrite, type HttpPayload, type OutboxItem, type Refusal } from './outbox.js';

/** A settled outcome a step can follow. `refusedForGood`: the provider refused the effect itself (a declined card), not our request. `bounced`: an email the provider took came back for good. */
export type StepOutcome = 'accepted' | 'refusedForGood' | 'bounced';
export const STEP_OUTCOMES: readonly StepOutcome[] = ['accepted', 'refusedForGood', 'bounced'];

/** The items an email step or a bounce follows: the email items. */
export const EMAIL_SOURCE = 'email';

export interface FollowUpStep {
  /** The step's name: its follow-up's id is `<parent id>>` + name. */
  readonly name: string;
  /** The items it follows: `email`, an http target's name (the items the units create), or another step's name (that step's follow-ups). */
  readonly after: string;
  readonly on: StepOutcome;
  /** What it creates: `email`, or an http target of the workload. */
  readonly creates: string;
  /** The next effect's payload from the settled parent (its payload, its `context`, the provider's id); undefined: nothing this time. Pure. */
  next(parent: OutboxItem): EmailPayload | HttpPayload | undefined;
  readonly description: string;
}

/** The longest chain of steps a workload may declare (charge → receipt → webhook is 2). */
export const MAX_CHAIN = 8;
const STEP_NAME = /^[a-z][a-z0-9-]{0,30}$/;

/** Which declared source an item is: its step if a follow-up, else `email` or its http target. */
export const sourceOf = (item: Pick<OutboxItem, 'kind' | 'target' | 'step'>): string => item.step ?? (item.kind === 'email' ? EMAIL_SOURCE : String(item.target));

/** A follow-up's id: its parent's with the step's name (stable: every settler derives the same). */
export const followUpId = (parentId: string, step: string): string => `${parentId}>${step}`;

/**
 * The declared steps' own consistency, checked where the workload is registered: names unique and
 * apart from the sources, every `after` and `creates` one the workload has, bounces only after
 * email, and the chains acyclic and at most MAX_CHAIN long.
 */
export function assertSteps(steps: readonly FollowUpStep[], outbox: { readonly email: boolean; readonly http: readonly { readonly target: string }[] }, bad: (field: string, why: string) => never): void {
  const targets = outbox.http.map((h) => h.target);
  const creatable = [...(outbox.email ? [EMAIL_SOURCE] : []), ...targets];
  const byName = new Map<string, FollowUpStep>();
  for (const s of steps) {
    if (!STEP_NAME.test(s.name) || s.name === EMAIL_SOURCE || targets.includes(s.name)) bad('steps', `name ${describeValue(s.name)} must match ${STEP_NAME} and be neither "email" nor an http target`);
    if (byName.has(s.name)) bad('steps', `two steps are named ${s.name}`);
    byName.set(s.name, s);
    if (!STEP_OUTCOMES.includes(s.on)) bad(`steps.${s.name}.on`, `must be one of ${STEP_OUTCOMES.join(', ')}, got ${describeValue(s.on)}`);
    if (!creatable.includes(s.creates)) bad(`steps.${s.name}.creates`, `must be one of ${creatable.join(', ') || '(none: the workload has no effects)'}, got ${describeValue(s.creates)}`);
  }
  for (const s of steps) {
    const source = byName.get(s.after)?.creates ?? s.after;
    if (!byName.has(s.after) && !creatable.includes(s.after)) bad(`steps.${s.name}.after`, `must be email, an http target or a step, got ${describeValue(s.after)}`);
    if (s.on === 'bounced' && source !== EMAIL_SOURCE) bad(`steps.${s.name}.on`, `bounced follows email items only; ${s.after} creates ${source}`);
    let depth = 1;
    for (let up = byName.get(s.after); up !== undefined; up = byName.get(up.after)) {
      if (up === s || ++depth > MAX_CHAIN) bad(`steps.${s.name}.after`, up === s ? 'the steps form a cycle' : `chains are at most ${MAX_CHAIN} steps long`);
    }
  }
}

/**
 * The follow-ups of `parent` settled with `outcome`, as the items to put (each like the unit's own
 * outbox items, plus `parent`, `step` and its creation time), and any step whose `next` failed or
 * gave a payload its declaration does not allow (then none of them is created: the parent settles
 * with `followUpError` and an operator is alarmed).
 */
export function followUpsOf(steps: readonly FollowUpStep[] | undefined, table: string, parent: OutboxItem, outcome: StepOutcome, now: number): { items: Record<string, unknown>[]; error?: string } {
  const due = (steps ?? []).filter((s) => s.after === sourceOf(parent) && s.on === outcome);
  const items: Record<string, unknown>[] = [];
  for (const s of due) {
    try {
      const payload = s.next(parent);
      if (payload !== undefined) items.push({ ...draft(s, table, parent, payload), [O.parent]: parent.pk, [O.step]: s.name, [O.updatedAt]: now });
    } catch (e) {
      return { items: [], error: `step ${s.name}: ${e instanceof Error ? e.message : String(e)}`.slice(0, 500) };
    }
  }
  return { items };
}

function draft(s: FollowUpStep, table: string, parent: OutboxItem, payload: EmailPayload | HttpPayload): Record<string, unknown> {
  const id = followUpId(parent.pk, s.name);
  const origin = { jobId: parent.jobId, unit: parent.unit };
  if (s.creates === EMAIL_SOURCE) {
    if (!('to' in payload)) throw new InvalidInputError(`steps.${s.name}`, 'creates email, and its next() gave no email');
    return outboxEmail(table, id, origin, payload).item;
  }
  if (!('target' in payload) || payload.target !== s.creates) throw new InvalidInputError(`steps.${s.name}`, `creates ${s.creates}, and its next() gave ${'target' in payload ? `target ${payload.target}` : 'an email'}`);
  return outboxHttp(table, id, origin, payload).item;
}

/** What a settler (the sender, the reconciler) knows that follow-ups need. */
export interface SettlerDeps {
  readonly steps?: readonly FollowUpStep[] | undefined;
  readonly table: string;
  readonly clock: Clock;
  readonly telemetry: Telemetry;
}

/**
 * The follow-ups of `item` settled with `outcome`, now: each step sees the item as its settle
 * leaves it (`settled`: the provider's id, the refusal's reason). A step that failed is counted
 * (its parent settles with the error, alarmed).
 */
export function followUps(deps: SettlerDeps, item: OutboxItem, outcome: StepOutcome, settled: Partial<OutboxItem> = {}): FollowUpWrite {
  const next = followUpsOf(deps.steps, deps.table, { ...item, ...settled }, outcome, deps.clock.wallNow());
  if (next.error !== undefined) {
    deps.telemetry.count(METRIC.outboxFollowUpFailed);
    deps.telemetry.event('outbox-follow-up-failed', { table: deps.table, pk: item.pk, error: next.error });
  }
  return next;
}

/** A declined item's refusal: of the effect, with its `refusedForGood` follow-ups. */
export const declinedBy = (deps: SettlerDeps, item: OutboxItem, reason: string): Refusal => ({ of: 'effect', next: followUps(deps, item, 'refusedForGood', { status: 'FAILED', refusal: 'effect', failureReason: reason }) });
