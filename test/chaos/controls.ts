/**
 * NEGATIVE CONTROLS — deliberately broken protocol variants, test code only (never in lib/).
 * Each one is a mistake the source article warns about. The chaos harness runs them under the
 * same schedules as the real protocol; its independent checker must catch every one of them,
 * which is the evidence that a clean run of the real protocol means something.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { DeleteCommand, GetCommand, PutCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  asGeneration,
  type Effect,
  buildFencedUnit,
  decodeCancellation,
  isConditionalCheckFailed,
  StaleGenerationError,
  type CommitOutcome,
  type FenceContext,
  type FencedUnit,
} from '../../lib/protocol/index.js';
import { fencedProtocol, followUpsOf, messageIdentity, recordBounce, recordSesEvent, type EmailProvider, type FollowUpStep, type HttpProvider, type OutboxItem, type ProtocolOps, type SenderHooks, type SendResult, type StepOutcome, type Workload } from '../../lib/workflow/index.js';
import type { Effects } from '../../cli/local/effects-env.js';
import type { FaultPoint } from '../../cli/demo/faults.js';

export const CONTROLS = [
  'leaseOnly',
  'checkThenAct',
  'separateFenceWrite',
  'counterReset',
  'fenceBypass',
  'claimOnSweeperCount',
  'sendFromWorker',
  'documentInPlace',
  'resendPastRetention',
  'heldAsFailed',
  'amountDoubled',
  'wrongRecipient',
  'wrongDestination',
  'extraCall',
  'receiptOnDecline',
  'followUpTwice',
  'followUpBeforeSettle',
  'bounceOnComplaint',
] as const;
export type Variant = 'fenced' | (typeof CONTROLS)[number];

/**
 * The invariant each control must break (docs/verification.md, negative controls); LEASE: a lease
 * held by two. A control run counts as caught only when THIS one fails: a stall reported as
 * PROGRESS on a loaded machine is no evidence that the checker saw the mistake.
 */
export const BREAKS: Record<(typeof CONTROLS)[number], 'FENCE' | 'ONCE' | 'PROGRESS' | 'TOKENS' | 'DOCS' | 'DELIVERY' | 'CHAIN' | 'LEASE'> = {
  leaseOnly: 'FENCE',
  checkThenAct: 'FENCE',
  separateFenceWrite: 'FENCE',
  counterReset: 'TOKENS',
  fenceBypass: 'FENCE',
  claimOnSweeperCount: 'LEASE',
  sendFromWorker: 'DELIVERY',
  documentInPlace: 'DOCS',
  resendPastRetention: 'DELIVERY',
  heldAsFailed: 'DELIVERY',
  amountDoubled: 'DELIVERY',
  wrongRecipient: 'DELIVERY',
  wrongDestination: 'DELIVERY',
  extraCall: 'DELIVERY',
  receiptOnDecline: 'CHAIN',
  followUpTwice: 'CHAIN',
  followUpBeforeSettle: 'CHAIN',
  bounceOnComplaint: 'CHAIN',
};

/**
 * The processor's mistakes in what its effects say (the meaning controls): every protocol step
 * is the real one, and the unit's outbox items are rewritten before its commit. Written for any
 * workload: they read only what every outbox item has (an email's `to`, an http call's `request`
 * and `path`), never one workload's fields.
 */
type Rewrite = (outbox: readonly Effect[]) => Effect[];
const withItem = (e: Effect, over: Record<string, unknown>): Effect => ({ ...e, item: { ...e.item, ...over } });
const isKind = (kind: 'email' | 'http') => (e: Effect) => e.item.kind === kind;
/** Each item of `kind` given the next one's value of `field` (the last the first's); where that changes nothing, `fallback` of its own. */
function rotate(outbox: readonly Effect[], kind: 'email' | 'http', field: string, fallback: (own: unknown) => unknown): Effect[] {
  const mine = outbox.filter(isKind(kind));
  return outbox.map((e) => {
    const k = mine.indexOf(e);
    if (k < 0) return e;
    const next = mine[(k + 1) % mine.length]!.item[field];
    return withItem(e, { [field]: next !== e.item[field] ? next : fallback(e.item[field]) });
  });
}
const doubled = (v: unknown): unknown => (typeof v === 'number' ? 2 * v : v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, doubled(x)])) : v);
const MEANING: Record<'amountDoubled' | 'wrongRecipient' | 'wrongDestination' | 'extraCall', Rewrite> = {
  // Every number a call carries (an amount, a count) twice what the input says.
  amountDoubled: (outbox) => outbox.map((e) => (isKind('http')(e) ? withItem(e, { request: doubled(e.item.request) }) : e)),
  // Each email to another recipient of the unit (alone in its unit: to an address of nobody's).
  wrongRecipient: (outbox) => rotate(outbox, 'email', 'to', (to) => `someone-else.${String(to)}`),
  // Each call to another item's destination (all alike: below a path of nobody's).
  wrongDestination: (outbox) => rotate(outbox, 'http', 'path', (path) => `${typeof path === 'string' ? path : ''}/misrouted`),
  // The unit's first call made twice, under an id of its own (an extra charge).
  extraCall: (outbox) => {
    const first = outbox.find(isKind('http'));
    return first === undefined ? [...outbox] : [...outbox, withItem(first, { pk: `${String(first.item.pk)}#again` })];
  },
};

/**
 * resendPastRetention lives in the sender, not the worker: its providers no longer declare their
 * key retention, so the sender and the reconciler resend an http item at any age (the rule
 * switched off). Past the stand-in's retention that resend is a second charge under one key.
 */
export function senderProviders(variant: Variant, http: Readonly<Record<string, HttpProvider>>): Readonly<Record<string, HttpProvider>> | undefined {
  if (variant === 'heldAsFailed') return Object.fromEntries(Object.entries(http).map(([target, p]) => [target, { ...(p.keyRetentionMs === undefined ? {} : { keyRetentionMs: p.keyRetentionMs }), name: p.name, post: async (call) => heldAsFailed(await p.post(call)) } satisfies HttpProvider]));
  if (variant !== 'resendPastRetention') return undefined;
  return Object.fromEntries(Object.entries(http).map(([target, p]) => [target, { name: p.name, post: (call) => p.post(call) } satisfies HttpProvider]));
}

/**
 * heldAsFailed lives in the sender too: an answer refused for the account's state (paused,
 * sandbox) is taken as a refusal for good, so its item ends FAILED although the state lifts,
 * the mistake of item 3 of the providers issue. DELIVERY finds a FAILED item its provider never refused for good.
 */
const heldAsFailed = (r: SendResult): SendResult => (r.kind === 'held' ? { kind: 'rejected', permanent: true, reason: r.reason } : r);

export function senderEmail(variant: Variant, email: EmailProvider): EmailProvider | undefined {
  if (variant !== 'heldAsFailed') return undefined;
  return { name: email.name, send: async (mail) => heldAsFailed(await email.send(mail)) };
}

/**
 * The chain controls live in the sender's steps and writes (lib/workflow/effects/follow-ups.ts),
 * written for any workload's steps:
 *   receiptOnDecline      every step that follows an acceptance follows a decline too (a receipt
 *                         emailed to a customer whose card was declined);
 *   followUpTwice         the settle creates nothing; after it, every settler puts the follow-ups
 *                         of what it sees with a write of its own, unconditioned (created outside
 *                         the settle's transaction, again by each racing settler);
 *   followUpBeforeSettle  the settle creates nothing; the follow-ups of the provider's answer are
 *                         put as soon as it comes, before the write that settles the item.
 * `steps`: what the sender's settle creates; `senderHooks`: the writes outside it.
 */
export function senderChain(variant: Variant, steps: readonly FollowUpStep[] | undefined, doc: DynamoDBDocumentClient): { steps: readonly FollowUpStep[] | undefined; senderHooks?: SenderHooks } {
  // wrongRecipient's mistake in the steps: each follow-up email (a receipt) to an address of nobody's, as the units' own emails are rotated.
  if (variant === 'wrongRecipient') return { steps: steps?.map((s) => (s.creates === 'email' ? { ...s, next: (p: OutboxItem) => misaddressed(s.next(p)) } : s)) };
  if (variant === 'receiptOnDecline') return { steps: (steps ?? []).flatMap((s) => (s.on === 'accepted' ? [s, { ...s, on: 'refusedForGood' as const }] : [s])) };
  if (variant !== 'followUpTwice' && variant !== 'followUpBeforeSettle') return { steps };
  const put = async (table: string, pk: string, outcome: StepOutcome | undefined) => {
    const item = (await doc.send(new GetCommand({ TableName: table, Key: { pk }, ConsistentRead: true }))).Item as OutboxItem | undefined;
    if (item === undefined || outcome === undefined) return;
    for (const f of followUpsOf(steps, table, item, outcome, Date.now()).items) await doc.send(new PutCommand({ TableName: table, Item: f }));
  };
  const at = variant === 'followUpTwice' ? 'after-settle' : 'after-send';
  const outcomeOf = (result: string | undefined): StepOutcome | undefined => (result === 'accepted' || result === 'sent' ? 'accepted' : result === 'declined' ? 'refusedForGood' : undefined);
  return { steps: [], senderHooks: { at: async (point, info) => (point === at ? put(info.table, info.pk, outcomeOf(info.result)) : undefined) } };
}

/**
 * bounceOnComplaint lives in the recorder: a complaint (or a soft bounce) is followed as if the
 * address had bounced for good: after recording it as it is, the recorder puts the `bounced`
 * steps' follow-ups too, in the same kind of write the real recorder makes for a hard bounce. The
 * merchant hears of a receipt that reached its subscriber.
 */
export function controlRecorder(variant: Variant, doc: DynamoDBDocumentClient, steps: readonly FollowUpStep[] | undefined): typeof recordSesEvent | undefined {
  if (variant !== 'bounceOnComplaint') return undefined;
  return async (deps, detail) => {
    const recorded = await recordSesEvent(deps, detail);
    const soft = detail.eventType === 'Complaint' || (detail.eventType === 'Bounce' && detail.bounce?.bounceType !== 'Permanent');
    const id = detail.mail?.tags?.outboxId?.[0];
    if (!soft || id === undefined) return recorded;
    const pk = messageIdentity.untag(id);
    const item = (await doc.send(new GetCommand({ TableName: deps.table, Key: { pk }, ConsistentRead: true }))).Item as OutboxItem | undefined;
    if (item === undefined) return recorded;
    const next = followUpsOf(steps, deps.table, item, 'bounced', Date.now());
    if (next.items.length > 0) await recordBounce(doc, deps.table, pk, 'COMPLAINT', detail.mail.messageId, next);
    return recorded;
  };
}

const misaddressed = (mail: ReturnType<FollowUpStep['next']>): ReturnType<FollowUpStep['next']> => (mail !== undefined && 'to' in mail ? { ...mail, to: `someone-else.${mail.to}` } : mail);

/** Called by a control between its check and its write: where the schedule puts its pause. */
export type InsideCommit = (point: FaultPoint, info: { jobId: string; owner: string; generation?: number; unit?: number }) => Promise<void>;

type Items = ReturnType<typeof buildFencedUnit>['items'];

/** The unit's effects and checkpoint with every condition removed but the once-only keys. */
function unconditional(items: Items): Items {
  const [, checkpoint, ...effects] = items;
  const cp = checkpoint!.Update!;
  const { ConditionExpression: _c, ReturnValuesOnConditionCheckFailure: _r, ...rest } = cp;
  const values = { ...rest.ExpressionAttributeValues };
  delete values[':expected'];
  return [{ Update: { ...rest, ExpressionAttributeValues: values } }, ...effects];
}

/**
 * Sends the items; `withFence` says whether items[0] is the fence (else it is the checkpoint).
 * A cancellation for a conflict with another transaction is retried, as the library does: the
 * control's one mistake is the missing condition, not a give-up the real protocol never makes.
 */
async function send(ctx: FenceContext, unit: FencedUnit, items: Items, withFence = false): Promise<CommitOutcome> {
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return { status: 'committed', attempts: attempt };
    } catch (e) {
      if (!(e instanceof Error) || e.name !== 'TransactionCanceledException') throw e;
      // Realign the reasons with [fence, checkpoint, ...effects] for the library's decoder.
      const reasons = (e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      const decoded = decodeCancellation(unit, withFence ? reasons : [{ Code: 'None' }, ...reasons], e);
      if (decoded instanceof Error) throw decoded;
      if (decoded !== 'conflict' || attempt >= 5) throw e;
      await new Promise((r) => setTimeout(r, 10 * attempt));
    }
  }
}

const ownerOf = (unit: FencedUnit) => String(unit.checkpoint.key);

/** What the effect controls reach: the run's providers and bucket. */
export interface ControlEnv {
  doc: FenceContext['doc'];
  leasesTable: string;
  effects?: Effects;
  outboxTable?: string;
  set?: string;
}

export function controlProtocol(variant: Variant, inside: InsideCommit, env: ControlEnv): ProtocolOps {
  // A unit is checked once, before its write; retries of the write (e.g. after the worker drops
  // a duplicate charge) do not check again: that is what "check, then act" means.
  const checked = new Set<string>();
  const once = async (unit: FencedUnit, check: () => Promise<void>) => {
    const key = `${unit.token.job}|${unit.generation}|${unit.token.unit}`;
    if (checked.has(key)) return;
    await check();
    checked.add(key);
    await inside('inside-commit', { jobId: ownerOf(unit), owner: '', generation: unit.generation, unit: unit.token.unit });
  };
  switch (variant) {
    case 'amountDoubled':
    case 'wrongRecipient':
    case 'wrongDestination':
    case 'extraCall': {
      const table = env.outboxTable ?? '';
      return {
        ...fencedProtocol,
        commitUnit: (ctx, unit, opts) => fencedProtocol.commitUnit(ctx, { ...unit, effects: [...unit.effects.filter((e) => e.table !== table), ...MEANING[variant](unit.effects.filter((e) => e.table === table))] }, opts),
      };
    }
    case 'fenced':
    // The worker's protocol is the real one: this control's mistake is the sender's (senderProviders).
    case 'resendPastRetention':
    case 'heldAsFailed':
    // The chain controls' mistakes are the sender's too (senderChain).
    case 'receiptOnDecline':
    case 'followUpTwice':
    case 'followUpBeforeSettle':
    // The recorder's mistake (controlRecorder).
    case 'bounceOnComplaint':
      return fencedProtocol;
    // The lease alone: no fence anywhere; the writes carry no condition.
    case 'leaseOnly':
      return {
        ...fencedProtocol,
        raiseFence: async () => undefined,
        commitUnit: async (ctx, unit, opts = {}) => {
          const { items } = buildFencedUnit(unit, opts.now ?? Date.now());
          return send(ctx, unit, unconditional(items));
        },
      };
    // Read the fence, compare in code, then write without a condition: check-then-act.
    case 'checkThenAct':
      return {
        ...fencedProtocol,
        commitUnit: async (ctx, unit, opts = {}) => {
          await once(unit, async () => {
            const fence = await ctx.doc.send(new GetCommand({ TableName: unit.fence.table, Key: { pk: unit.fence.resource }, ConsistentRead: true }));
            const current = fence.Item?.generation;
            if (typeof current === 'number' && current > unit.generation) {
              throw new StaleGenerationError(unit.fence.resource, unit.generation, asGeneration(current));
            }
          });
          const { items } = buildFencedUnit(unit, opts.now ?? Date.now());
          const [fenceItem] = items;
          const { ConditionExpression: _c, ReturnValuesOnConditionCheckFailure: _r, ...setFence } = fenceItem!.Update!;
          return send(ctx, unit, [{ Update: setFence }, ...unconditional(items)], true);
        },
      };
    // The fence is checked and raised in its own write; the effects follow in another. The raise
    // is the unit's own fence action, stamped with the unit's `now`: the stream tie (same
    // generation, same updatedAt) holds, and only the wire shows the two requests apart.
    case 'separateFenceWrite':
      return {
        ...fencedProtocol,
        commitUnit: async (ctx, unit, opts = {}) => {
          const { items } = buildFencedUnit(unit, opts.now ?? Date.now());
          await once(unit, async () => {
            try {
              await ctx.doc.send(new UpdateCommand(items[0]!.Update!));
            } catch (e) {
              if (!isConditionalCheckFailed(e)) throw e;
              throw new StaleGenerationError(unit.fence.resource, unit.generation, undefined);
            }
          });
          return send(ctx, unit, unconditional(items));
        },
      };
    // The fence item dropped from the unit's transaction: the checkpoint and the once-only keys
    // still hold, so a stale holder lands exactly when its successor raised the fence and
    // crashed before any unit.
    case 'fenceBypass':
      return {
        ...fencedProtocol,
        commitUnit: async (ctx, unit, opts = {}) => {
          const { items } = buildFencedUnit(unit, opts.now ?? Date.now());
          return send(ctx, unit, items.slice(1));
        },
      };
    // Version-watch claimed on the sweeper's count of unchanged sweeps, with no wait of its own:
    // back-to-back sweeps hand a live lease to a second holder (the defect of DESIGN.md's
    // "Nothing else can stand in for it").
    case 'claimOnSweeperCount':
      return {
        ...fencedProtocol,
        watch: (leases, key, seen) => leases.tryAcquire(key, { observation: { ...seen.observation, waitMs: 0 } }),
      };
    // The worker emails the customers itself, right before its commit, and writes no outbox
    // item: a holder paused past its lease emails again what its successor already sent.
    case 'sendFromWorker':
      return {
        ...fencedProtocol,
        commitUnit: async (ctx, unit, opts) => {
          const email = env.effects?.email;
          const table = env.outboxTable ?? '';
          for (const e of unit.effects.filter((x) => x.table === table && x.item.kind === 'email')) {
            const id = e.item.pk;
            await email?.send({ from: env.effects!.from, to: String(e.item.to), subject: String(e.item.subject), text: String(e.item.body), messageId: messageIdentity.messageId(table, id), headers: messageIdentity.headers(table, id), tags: {} });
          }
          return fencedProtocol.commitUnit(ctx, { ...unit, effects: unit.effects.filter((x) => !(x.table === table && x.item.kind === 'email')) }, { ...(opts?.now === undefined ? {} : { now: opts.now }) });
        },
      };
    // The document overwritten in place: no generation in its key, no If-None-Match, no pointer.
    case 'documentInPlace':
      return {
        ...fencedProtocol,
        publish: async (target, drafts) => {
          for (const d of drafts) {
            const key = `${env.set}/${d.name.replace(/\/\d+\.json$/, '.json')}`;
            await env.effects!.s3.send(new PutObjectCommand({ Bucket: env.effects!.bucket, Key: key, Body: d.body, ContentType: d.contentType }));
          }
          return new Map();
        },
      };
    // Release deletes the lease item: the next acquire restarts the counter.
    case 'counterReset':
      return {
        ...fencedProtocol,
        release: async (_leases, lease) => {
          await env.doc.send(
            new DeleteCommand({
              TableName: env.leasesTable,
              Key: { pk: lease.key },
              ConditionExpression: '#o = :me AND #g = :g',
              ExpressionAttributeNames: { '#o': 'owner', '#g': 'generation' },
              ExpressionAttributeValues: { ':me': lease.owner, ':g': lease.generation },
            }),
          );
          return { released: true };
        },
      };
  }
}


/** Why a control's mistake cannot show in a workload (undefined: it can), in a line a person reads. */
export function controlCannotShow(variant: (typeof CONTROLS)[number], w: Parameters<typeof controlAppliesTo>[1]): string | undefined {
  if (controlAppliesTo(variant, w)) return undefined;
  if (variant === 'documentInPlace') return 'its units write no documents';
  if (variant === 'receiptOnDecline') return 'none of its steps follows both an acceptance and a decline';
  if (variant === 'followUpTwice' || variant === 'followUpBeforeSettle') return 'it declares no steps';
  if (variant === 'bounceOnComplaint') return 'none of its steps follows a bounce';
  if (variant === 'sendFromWorker') return w.outbox.email ? 'its units create no email (only its steps do)' : 'its units create no email';
  if (variant === 'wrongRecipient') return 'it sends no email';
  if (variant === 'heldAsFailed') return 'it has no outbox';
  return 'its units create no http call';
}

/** Whether a control's mistake can show in a workload: an email sent from the worker needs emails, an overwritten document documents, a provider's refusals http calls. */
export function controlAppliesTo(variant: (typeof CONTROLS)[number], w: Workload<any>): boolean {
  switch (variant) {
    case 'receiptOnDecline':
      // A decline comes from an http provider; a step must follow an acceptance of what it declines.
      return (w.steps ?? []).some((s) => s.on === 'accepted') && (w.steps ?? []).some((s) => s.on === 'refusedForGood');
    case 'followUpTwice':
    case 'followUpBeforeSettle':
      return (w.steps ?? []).length > 0;
    case 'bounceOnComplaint':
      return (w.steps ?? []).some((s) => s.on === 'bounced');
    case 'sendFromWorker':
      return unitsCreateEmail(w);
    case 'documentInPlace':
      return w.processor.documents !== undefined;
    case 'resendPastRetention':
      return w.outbox.http.length > 0;
    case 'heldAsFailed':
      return w.outbox.email || w.outbox.http.length > 0;
    case 'wrongRecipient':
      return w.outbox.email;
    case 'amountDoubled':
    case 'wrongDestination':
    case 'extraCall':
      return w.outbox.http.length > 0;
    default:
      return true;
  }
}

/** Whether a workload's units create email, not only its steps: read off its checks for a local run's input (never its processor). */
function unitsCreateEmail(w: Workload<any>): boolean {
  if (!w.outbox.email) return false;
  const { input } = w.start.runOf({ payload: w.local.payloads(w.local.unitSize, 1)[0]!, time: new Date(0), items: w.local.unitSize, unitSize: w.local.unitSize });
  return [...w.checks.outbox(input)].some((e) => e.kind === 'email' && e.after === undefined);
}
