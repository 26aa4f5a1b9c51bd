/**
 * The variants `npm run model` checks (model/run.ts runs them): each names its Promela model,
 * its -D defines, the checks it gets, what it must come to, and smaller bounds for `--quick`.
 */
import { fileURLToPath } from 'node:url';

export type CheckKind = 'safety' | 'liveness';
export type Expectation = 'verify' | 'refute';
/** fenced.pml: the lease + fence + idempotency protocol; effects.pml: documents and the outbox. */
export type ModelName = 'fenced' | 'effects';

export const MODEL_FILES: Readonly<Record<ModelName, string>> = {
  fenced: fileURLToPath(new URL('./fenced.pml', import.meta.url)),
  effects: fileURLToPath(new URL('./effects.pml', import.meta.url)),
};

export interface VariantSpec {
  readonly model: ModelName;
  readonly name: string;
  readonly description: string;
  /** Preprocessor defines for spin -a, e.g. ['NO_FENCE'] or ['NW=3']. */
  readonly defines: readonly string[];
  readonly checks: readonly CheckKind[];
  readonly expect: Expectation;
  /** Smaller bounds for `--quick` (the test), per check; merged over `defines`. */
  readonly quick?: Partial<Record<CheckKind, readonly string[]>>;
  /**
   * Profiles in which this variant's verification is small (under about a million states): pan
   * is then compiled -O0, 3 s faster to build than -O2 on a loaded machine, which more than pays
   * for the slower search. Refutations always are.
   */
  readonly smallIn?: readonly ('full' | 'quick')[];
  /**
   * States pan stored for each check at the full bounds (deterministic: model/README.md,
   * "Measured"). model/run.ts sizes the check's default time limit from it. Every verification
   * has one; a refutation stops at its first error and fits the floor.
   */
  readonly measuredStates?: Partial<Record<CheckKind, number>>;
}

/** fenced.pml. Bounds are the model's defaults unless defined here. */
const FENCED: readonly VariantSpec[] = [
  {
    model: 'fenced',
    name: 'safe',
    description: 'the protocol as implemented: 2 workers sharing one owner id, 2 units, 1 crash, 1 lapse, 1 ambiguous request',
    defines: [],
    checks: ['safety', 'liveness'],
    expect: 'verify',
    quick: { liveness: ['AMBIG=0'] },
    measuredStates: { safety: 2_874_826, liveness: 1_402_041 },
  },
  {
    model: 'fenced',
    name: 'safe-3w',
    description: 'the protocol with 3 workers (owner ids 1,2,1), 1 crash, 1 lapse, queue of 1, no ambiguous request',
    defines: ['NW=3', 'NOWNERS=2', 'AMBIG=0', 'QMAX=1'],
    checks: ['safety'],
    expect: 'verify',
    quick: { safety: ['U=1'] },
    measuredStates: { safety: 4_515_843 },
  },
  {
    model: 'fenced',
    name: 'safe-vw',
    description: 'version-watch: the requeue receiver watches the version a full duration on its own clock; the sweeper only triggers',
    defines: ['VERSION_WATCH'],
    checks: ['safety', 'liveness'],
    expect: 'verify',
    quick: { safety: ['U=1'], liveness: ['AMBIG=0', 'U=1'] },
    measuredStates: { safety: 9_143_321, liveness: 3_651_913 },
  },
  {
    model: 'fenced',
    name: 'safe-seal',
    description: 'a DR drill at any moment: the seal raises every lease counter and the fence its key protects, created if absent',
    defines: ['SEAL'],
    checks: ['safety'],
    expect: 'verify',
    quick: { safety: ['U=1'] },
    measuredStates: { safety: 25_683_884 },
  },
  {
    model: 'fenced',
    name: 'NO_FENCE',
    description: 'lease only: no fence raise, no fence condition in the unit transaction',
    defines: ['NO_FENCE'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    model: 'fenced',
    name: 'CHECK_THEN_ACT',
    description: 'generation read and compared in code, then written without a condition',
    defines: ['CHECK_THEN_ACT'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    model: 'fenced',
    name: 'RELEASE_NO_GEN',
    description: 'release and renew conditioned on the owner only',
    defines: ['RELEASE_NO_GEN'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    model: 'fenced',
    name: 'COUNTER_RESET',
    description: 'release deletes the lease item, so the generation restarts',
    defines: ['COUNTER_RESET'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    model: 'fenced',
    name: 'SWEEPER_COUNT',
    description: "version-watch claimed on the sweeper's count of unchanged sweeps, with no wait of the claimant's own",
    defines: ['VERSION_WATCH', 'SWEEPER_COUNT'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    model: 'fenced',
    name: 'SEAL_SKIPS_ABSENT',
    description: 'the seal raises only fences that exist: an old holder paused before its first raise creates one below the floor',
    defines: ['SEAL', 'SEAL_SKIPS_ABSENT'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    model: 'fenced',
    name: 'NO_SWEEPER',
    description: 'liveness control: no sweeper (and no end-state check): only PROGRESS can catch it',
    defines: ['NO_SWEEPER', 'NO_ENDCHECK'],
    checks: ['liveness'],
    expect: 'refute',
  },
];

/** The delivery faults switched off: the documents side alone (the collector never reads the outbox). */
const NO_DELIVERY_FAULTS = ['NS=1', 'AMBSENDS=0', 'REJECTS=0', 'SCRASHES=0', 'DUPS=0'];

/** effects.pml. Bounds are the model's defaults (U=1, 2 workers, 2 senders, every fault once) unless defined here. */
const EFFECTS: readonly VariantSpec[] = [
  {
    model: 'effects',
    name: 'effects',
    description: 'documents and the outbox as implemented: 1 unit, 2 workers (1 takeover of a running holder, 1 crash), 2 senders, 1 duplicate record, 1 sender death, 1 ambiguous send, 1 refusal',
    defines: [],
    checks: ['safety'],
    expect: 'verify',
    quick: { safety: ['NS=1'] },
    smallIn: ['quick'],
    measuredStates: { safety: 3_144_972 },
  },
  {
    model: 'effects',
    name: 'effects-2u',
    description: 'the same with 2 units (a delivery while the next unit is in flight): 1 sender, 1 takeover, 1 worker crash, 1 ambiguous send',
    defines: ['U=2', 'NS=1', 'DUPS=0', 'REJECTS=0', 'SCRASHES=0'],
    checks: ['safety'],
    expect: 'verify',
    quick: { safety: ['WCRASHES=0', 'AMBSENDS=0'] },
    smallIn: ['quick'],
    measuredStates: { safety: 1_603_346 },
  },
  {
    model: 'effects',
    name: 'effects-2r',
    description: 'two reconcilers whose runs overlap, racing each other and the sender for one item: 1 sender death, 1 ambiguous send',
    defines: ['NR=2', 'NS=1', 'DUPS=0', 'REJECTS=0'],
    checks: ['safety'],
    expect: 'verify',
    quick: { safety: ['LAPSES=0', 'WCRASHES=0'] },
    smallIn: ['quick'],
    measuredStates: { safety: 1_141_568 },
  },
  {
    model: 'effects',
    name: 'effects-collect',
    description: 'the orphan collector at any moment, asking first whether the generation can still commit, then the pointer: 2 units, 1 takeover, 1 worker crash',
    defines: ['COLLECTOR', 'U=2', ...NO_DELIVERY_FAULTS],
    checks: ['safety'],
    expect: 'verify',
    quick: { safety: ['U=1', 'COLLECTS=2'] },
    smallIn: ['quick'],
    measuredStates: { safety: 4_587_657 },
  },
  {
    model: 'effects',
    name: 'sendFromWorker',
    description: 'no outbox: the worker emails the customer itself while it processes the unit, before its commit',
    defines: ['SEND_FROM_WORKER'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    model: 'effects',
    name: 'documentInPlace',
    description: "the document overwritten in place: one key per customer, no If-None-Match, no generation in the key, no pointer (needs no crash)",
    defines: ['DOCUMENT_IN_PLACE', 'WCRASHES=0'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    model: 'effects',
    name: 'collectPointerFirst',
    description: "the collector reads the pointer BEFORE it asks whether the object's generation can still commit (collector.ts's order today; needs no crash)",
    defines: ['COLLECTOR', 'COLLECT_POINTER_FIRST', 'WCRASHES=0'],
    checks: ['safety'],
    expect: 'refute',
  },
];

/** Every variant, fenced.pml's first. */
export const VARIANTS: readonly VariantSpec[] = [...FENCED, ...EFFECTS];

/** No check's default time limit is below this (spin -a + gcc + pan), in seconds. */
export const TIMEOUT_FLOOR_SEC = 120;
/**
 * The slowest pan throughput measured for each kind of check, in states stored per second: the
 * shared 2-core machine at load average 6–8 (model/README.md, "Measured": safe-3w's safety
 * search, 4.5 M states in 36 s; safe-vw's liveness search, 3.65 M states in 199 s).
 */
export const SLOWEST_STATES_PER_SEC: Readonly<Record<CheckKind, number>> = { safety: 125_000, liveness: 18_000 };
/** How much slower than the slowest measurement a default limit still allows: a busier laptop. */
export const TIMEOUT_HEADROOM = 2.5;
/** spin -a plus gcc -O2 on a loaded machine, with room. */
export const BUILD_SEC = 30;

/**
 * The default time limit of one check: its measured states at the slowest measured rate, times
 * the headroom, plus the build; never below the floor. The measurement holds at the full bounds
 * only: with `--quick` (smaller) or `--define` (any) bounds, the floor applies.
 */
export function defaultTimeoutSec(spec: VariantSpec, kind: CheckKind, profile: 'full' | 'quick', extraDefines: readonly string[] = []): number {
  const states = spec.measuredStates?.[kind];
  if (states === undefined || profile !== 'full' || extraDefines.length > 0) return TIMEOUT_FLOOR_SEC;
  return Math.max(TIMEOUT_FLOOR_SEC, Math.ceil((states / SLOWEST_STATES_PER_SEC[kind]) * TIMEOUT_HEADROOM + BUILD_SEC));
}
