/**
 * The variants `npm run model` checks (model/run.ts runs them): each names its Promela model,
 * its -D defines, the checks it gets, what it must come to, and smaller bounds for `--quick`.
 */
import { fileURLToPath } from 'node:url';

export type CheckKind = 'safety' | 'liveness';
export type Expectation = 'verify' | 'refute';
/** fenced.pml: the lease + fence + idempotency protocol. */
export type ModelName = 'fenced';

export const MODEL_FILES: Readonly<Record<ModelName, string>> = {
  fenced: fileURLToPath(new URL('./fenced.pml', import.meta.url)),
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
  },
  {
    model: 'fenced',
    name: 'safe-3w',
    description: 'the protocol with 3 workers (owner ids 1,2,1), 1 crash, 1 lapse, queue of 1, no ambiguous request',
    defines: ['NW=3', 'NOWNERS=2', 'AMBIG=0', 'QMAX=1'],
    checks: ['safety'],
    expect: 'verify',
    quick: { safety: ['U=1'] },
  },
  {
    model: 'fenced',
    name: 'safe-vw',
    description: 'version-watch: the requeue receiver watches the version a full duration on its own clock; the sweeper only triggers',
    defines: ['VERSION_WATCH'],
    checks: ['safety', 'liveness'],
    expect: 'verify',
    quick: { safety: ['U=1'], liveness: ['AMBIG=0', 'U=1'] },
  },
  {
    model: 'fenced',
    name: 'safe-seal',
    description: 'a DR drill at any moment: the seal raises every lease counter and the fence its key protects, created if absent',
    defines: ['SEAL'],
    checks: ['safety'],
    expect: 'verify',
    quick: { safety: ['U=1'] },
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

/** Every variant. */
export const VARIANTS: readonly VariantSpec[] = [...FENCED];
