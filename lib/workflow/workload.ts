/**
 * A workload: everything a fork writes, in one descriptor that every generic part reads. The
 * construct (which effect functions exist, their environment, the documents prefix and its
 * grants), the Lambda entries (the processor, the starter's input, the unit-size cap), the local
 * run and the checker (what a finished job must have written) all take it from here, so a fork
 * is one folder under lib/workloads/ and one line in its registry (docs/fork.md).
 *
 * Pure data and pure functions: no SDK and no CDK here, so the stack, the bundles and the
 * checker load the same module.
 */
import { describeValue, InvalidInputError } from '../protocol/index.js';
import { shardJobId, MAX_SHARDS, type ShardSpec } from './runs.js';
import { maxUnitSize, type Processor } from './processor.js';
import { assertSteps, type FollowUpStep, type StepOutcome } from './effects/follow-ups.js';
import type { DeclineRule } from './effects/providers.js';

/** What the starter knows when it starts a run: the payload (a schedule's input or an operator's), the time, the stack's settings. */
export interface StartRequest {
  /** The payload's fields, unvalidated: the workload's `start.runOf` checks them (InvalidInputError). */
  readonly payload: Readonly<Record<string, unknown>>;
  /** The schedule's time (EventBridge's `time`), or now. */
  readonly time: Date;
  /** The stack's item count per run (RUN_ITEMS) when the payload names none. */
  readonly items: number;
  readonly unitSize: number;
}

/** The run the starter creates: its id (one per schedule slot: the starter is idempotent by it) and the whole run's input. */
export interface RunStart<Input> {
  readonly runId: string;
  readonly input: Input;
}

export interface WorkloadStart<Input> {
  /** When the stack's schedule starts a run (EventBridge Scheduler cron fields, UTC). */
  readonly schedule: { readonly minute: string; readonly hour: string; readonly day?: string; readonly month?: string; readonly weekDay?: string; readonly description: string };
  /** The payload fields `runOf` accepts (the starter refuses any other, by name). */
  readonly payloadFields: readonly string[];
  runOf(req: StartRequest): RunStart<Input>;
  /** The items a run covers ([0, N)); shards tile them. */
  itemsOf(input: Input): number;
  /** The input of the shard that covers items [from, to) of the run. */
  shardOf(input: Input, range: { from: number; to: number }): Input;
  /** The items a job (a shard, or a whole run) covers: its range of the run's [0, N). */
  rangeOf(input: Input): { from: number; to: number };
  /** The most items in one run: the stack's setting and the starter's payload are checked against it. */
  readonly maxItems: number;
}

/** An http target the workload's outbox items name, and how its endpoint is found. */
export interface HttpTargetSpec {
  /** The item's `target` (an http effect's provider). The endpoint comes from `<TARGET>_URL` (httpTargetEnv). */
  readonly target: string;
  /** `per-item`: each item names its own path below the endpoint (HttpPayload.path: a tenant's webhook). @default 'fixed' */
  readonly destination?: 'fixed' | 'per-item';
  /** How long the provider keeps an Idempotency-Key (Stripe: 24 h). @default 24 h */
  readonly keyRetentionMs?: number;
  /** What it is, for the stack's description and `workloads`. */
  readonly description: string;
  /** How the provider says a refusal of the effect in a 2xx body (`200 {"status": "failed"}`), if it does: a decline, never an acceptance. A 402 is a decline whatever this says. */
  readonly declines?: DeclineRule;
}

/** A record a finished job must have written: its key, whether it is once-only, and fields it must carry. */
export interface ExpectedRecord {
  readonly pk: string;
  /** Once-only (inserted once, never modified or removed); else an upsert (the fence alone guards it). */
  readonly once: boolean;
  /** Fields compared with `===` on the final item. */
  readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * The checker's view of the workload (cli/check/): what "every input was processed once" means,
 * recomputed from a job's input alone, never through the processor's code path.
 */
/**
 * What one outbox item must say, recomputed from the job's input alone (never through the
 * processor): for an email its recipient and the text its subject and body must carry (an amount,
 * a period); for an http call its target, its destination (`path` below the target's endpoint;
 * absent: the endpoint itself) and the request fields that matter (compared deeply; fields not
 * listed are free). DELIVERY compares the item, and what the provider itself received, with it.
 */
export type ExpectedEffect = (
  | { readonly id: string; readonly kind: 'email'; readonly to: string; readonly says: readonly string[] }
  | { readonly id: string; readonly kind: 'http'; readonly target: string; readonly path?: string; readonly request: Readonly<Record<string, unknown>> }
) & {
  /** A follow-up (Workload.steps): demanded exactly when its parent settled with `on`, as its provider's own record shows; never otherwise. */
  readonly after?: FollowUpExpectation;
};

/** When a follow-up is demanded: its parent's id, the step that creates it, the outcome it follows. */
export interface FollowUpExpectation {
  readonly parent: string;
  readonly step: string;
  readonly on: StepOutcome;
}

export interface WorkloadChecks<Input> {
  /** Records are counted per group (a period, a day) once every job of the group is DONE. */
  groupOfInput(input: Input): string;
  /** The group a record key belongs to; undefined: not a record of this workload (an ONCE violation). */
  groupOfRecord(pk: string): string | undefined;
  /** Whether a record key is once-only (its stream must show one INSERT and nothing else). */
  isOnce(pk: string): boolean;
  /** Every record a DONE job (a shard: its range) must have written. */
  records(input: Input): Iterable<ExpectedRecord>;
  /** Every outbox item a DONE job must have created, and what each must say: recomputed from the input alone, never through the processor. */
  outbox(input: Input): Iterable<ExpectedEffect>;
  /** Records that point to a document; the document must hold these fields equal to its record's. */
  readonly documents?: { pointsTo(pk: string): boolean; readonly sameFields: readonly string[] };
  /** The report's own figures from the final records (e.g. charges and their total). */
  figures?(records: readonly Readonly<Record<string, unknown>>[]): Record<string, number>;
}

export interface Workload<Input = unknown> {
  /** The registry's name: `--workload NAME`, the stack's `-c workload=NAME`, the functions' WORKLOAD. */
  readonly name: string;
  readonly description: string;
  readonly processor: Processor<Input>;
  /** Effects the processor writes per item; the unit-size cap is maxUnitSize(effectsPerItem) everywhere. */
  readonly effectsPerItem: number;
  readonly defaultUnitSize: number;
  /** The fence key's prefix (`<prefix><jobId>`). @default 'fence#'. Never change it on a deployed stack: a worker of the old version would check the old fence. */
  readonly fenceKeyPrefix?: string;
  readonly start: WorkloadStart<Input>;
  /** The outbox's effects: whether it sends email (the stack creates SES and the recorder only then), and its http targets. */
  readonly outbox: { readonly email: boolean; readonly http: readonly HttpTargetSpec[] };
  /**
   * What follows each settled outcome of an item (effects/follow-ups.ts): a receipt after a charge
   * the provider accepted, a "payment failed" email after a decline. Created exactly once, by the
   * write that settles the item. None: every item is one step.
   */
  readonly steps?: readonly FollowUpStep[];
  readonly checks: WorkloadChecks<Input>;
  /** Construct ids a deployed stack already has (the Records table's): kept so an upgrade does not replace a table. */
  readonly stackIds?: { readonly records?: string };
  /**
   * The local run (`npm start -- --workload NAME`): its default items per run, its unit size, and
   * the starter payloads of its runs (three schedule slots, each `items` items, from the seed), so
   * a run is reproducible.
   */
  readonly local: { readonly items: number; readonly unitSize: number; payloads(items: number, seed: number): Record<string, unknown>[] };
}

/** The unit-size cap of a workload: one transaction holds a unit's effects, its fence and its checkpoint. */
export const unitSizeCap = (w: Pick<Workload, 'effectsPerItem'>): number => maxUnitSize(w.effectsPerItem);

/** How long an http target's provider keeps an Idempotency-Key when its descriptor says nothing: Stripe's 24 h. */
export const DEFAULT_HTTP_KEY_RETENTION_MS = 86_400_000;

/** The environment variables of an http target: its endpoint (`payments` → PAYMENTS_URL), its key retention, its credential's secret (a live target's). */
export const httpTargetEnv = (target: string): { url: string; keyRetentionMs: string; secretArn: string } => {
  const t = target.toUpperCase().replace(/-/g, '_');
  return { url: `${t}_URL`, keyRetentionMs: `${t}_KEY_RETENTION_MS`, secretArn: `${t}_SECRET_ARN` };
};

const TARGET = /^[a-z][a-z0-9-]{0,30}$/;
const NAME = /^[a-z][a-z0-9-]{1,30}$/;

/** A descriptor's own consistency, checked where it is registered: a bad one fails the first test and the first synth. */
export function assertWorkload(w: Workload): void {
  const bad = (field: string, why: string): never => {
    throw new InvalidInputError(`workload ${w.name}.${field}`, why);
  };
  if (!NAME.test(w.name)) bad('name', `must match ${NAME}, got ${describeValue(w.name)}`);
  if (!Number.isSafeInteger(w.effectsPerItem) || w.effectsPerItem < 1) bad('effectsPerItem', `must be an integer >= 1, got ${describeValue(w.effectsPerItem)}`);
  const cap = unitSizeCap(w);
  if (cap < 1) bad('effectsPerItem', `${w.effectsPerItem} effects per item leave no room for one item in a transaction`);
  if (!Number.isSafeInteger(w.defaultUnitSize) || w.defaultUnitSize < 1 || w.defaultUnitSize > cap) bad('defaultUnitSize', `must be in [1, ${cap}] (maxUnitSize(${w.effectsPerItem})), got ${describeValue(w.defaultUnitSize)}`);
  if (w.local.unitSize > cap) bad('local.unitSize', `must be at most ${cap}`);
  for (const t of w.outbox.http) if (!TARGET.test(t.target)) bad('outbox.http', `target ${describeValue(t.target)} must match ${TARGET}`);
  if (w.fenceKeyPrefix !== undefined && !/^[a-z][a-z0-9-]*#$/.test(w.fenceKeyPrefix)) bad('fenceKeyPrefix', `must be lowercase letters ending in "#", got ${describeValue(w.fenceKeyPrefix)}`);
  for (const t of w.outbox.http) if (t.declines !== undefined && (t.declines.field === '' || t.declines.values.length === 0)) bad(`outbox.http.${t.target}.declines`, 'must name a field and at least one value');
  if (w.steps !== undefined) assertSteps(w.steps, w.outbox, bad);
}

/** Shard i of k over n items: [from, to). The k ranges tile [0, n) with no gap and no overlap, sizes within one item. */
export function shardRange(n: number, i: number, k: number): { from: number; to: number } {
  return { from: Math.floor((i * n) / k), to: Math.floor(((i + 1) * n) / k) };
}

/** A shard count the run can take: 1..MAX_SHARDS, and no more shards than items (an empty shard does nothing). */
export function assertShardCount(shards: number, items: number): void {
  const max = Math.min(MAX_SHARDS, Math.max(1, items));
  if (!Number.isSafeInteger(shards) || shards < 1 || shards > max) {
    throw new InvalidInputError('shards', `must be an integer in [1, ${max}] for ${items} items (at most ${MAX_SHARDS}, at most one per item), got ${describeValue(shards)}`);
  }
}

/** The k shard jobs of a run: shard i covers shardRange(N, i, k). */
export function shardsOfRun<Input>(w: Workload<Input>, runId: string, input: Input, k: number): ShardSpec[] {
  const n = w.start.itemsOf(input);
  return Array.from({ length: k }, (_, i) => {
    const shard = w.start.shardOf(input, shardRange(n, i, k));
    return { id: shardJobId(runId, i, k), totalUnits: w.processor.totalUnits(shard), input: { ...(shard as Record<string, unknown>) } };
  });
}
