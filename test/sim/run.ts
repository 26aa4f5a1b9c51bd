/**
 * One simulated schedule: a fresh world of the seed, a fresh in-memory engine, and the chaos
 * harness's run (the real handlers, the local runtime, the faults, the independent checker)
 * inside it. Nothing of a run survives it but its record, so a seed replays exactly.
 */
import { createHash } from 'node:crypto';
import { BREAKS, type Variant } from '../chaos/controls.js';
import { chaosRun, scheduleOf, type RunRecord } from '../chaos/harness.js';
import type { Schedule } from '../chaos/schedule.js';
import type { Workload } from '../../lib/workflow/index.js';
import type { AwsCallRecorder } from '../../cli/local/aws-calls.js';
import { DynamoModel, type DynamoModelOptions } from './dynamodb/model.js';
import { comparedShapes } from './dynamodb/shape.js';
import type { SimClientOptions } from './dynamodb/clients.js';
import { simChaosEnv } from './env.js';
import { shaper, type Shape } from './shapes.js';
import { ledger } from './protocol-workload.js';
import { InvalidInputError } from '../../lib/protocol/index.js';
import { inWorld, SimWorldError, type World } from './world.js';

export interface SimRun {
  seed: number;
  variant: Variant;
  shape: Shape;
  /** The real protocol: no invariant failed and no lease was held by two. A control: the invariant its mistake breaks failed. */
  ok: boolean;
  /** The invariants that failed (and LEASE), with their first violation. */
  failed: { name: string; first: string }[];
  /** What the model was asked and does not implement: a run with any is void, never a pass. */
  unsupported: string[];
  /** The world's own verdict when it cut the run off (deadlock, limits). */
  worldError?: string;
  virtualMs: number;
  events: number;
  /** A digest of the run's history and wire: two runs of one seed must agree on it (the replay check). */
  digest: string;
  record?: RunRecord;
  schedule: Schedule;
}

export interface SimOptions {
  shape?: Shape;
  /** Run this schedule instead of the seed's (a shrunk one). */
  schedule?: Schedule;
  /** Keep the harness's full record (history, report) in the result. */
  keepRecord?: boolean;
  /** The workload the runs are (default the registry's default: the invoice sample). */
  workload?: Workload<any>;
  /** Record every AWS call of the run's functions (the IAM evaluation of the chaos file). */
  calls?: AwsCallRecorder;
  /** Told every request the engine receives, in order (the fidelity test's traces). */
  onRequest?: DynamoModelOptions['onRequest'];
  /** Which request shapes the model answers (default: those the fidelity test compared; `any`: every one, for a trace). */
  shapes?: 'compared' | 'any' | ReadonlySet<string>;
  /** How the run's clients send (test/sim/dynamodb/short-cut.ts): the short-cut (default), compared with the SDK's path, or the SDK's path. */
  shortCut?: SimClientOptions['shortCut'];
}

/** The schedule a simulated run of `seed` carries out. */
export function simSchedule(seed: number, variant: Variant, shape: Shape): Schedule {
  const shape_ = shaper(shape);
  return scheduleOf(seed, variant, shape_ === undefined ? {} : { shape: shape_ }).schedule;
}

/** The workload a shape runs: the protocol shape's own (no outbox, no documents), or the one asked for. */
export function workloadOfShape(shape: Shape, asked: Workload<any> | undefined): Workload<any> | undefined {
  if (shape !== 'protocol') return asked;
  if (asked !== undefined && asked !== ledger) throw new InvalidInputError('--workload', `the protocol shape runs its own workload (per item one record, no outbox, no documents), not ${asked.name}`);
  return ledger;
}

export async function simulateOne(seed: number, variant: Variant, opts: SimOptions = {}): Promise<SimRun> {
  const shape = opts.shape ?? 'small';
  const workload = workloadOfShape(shape, opts.workload);
  const schedule = opts.schedule ?? simSchedule(seed, variant, shape);
  let world: World | undefined;
  let model: DynamoModel | undefined;
  let record: RunRecord | undefined;
  let worldError: string | undefined;
  try {
    record = await inWorld(seed, async (w) => {
      world = w;
      model = new DynamoModel({ now: () => w.wallNow, indexLag: true, ...(opts.shapes === 'any' ? {} : { shapes: typeof opts.shapes === 'object' ? opts.shapes : comparedShapes() }), ...(opts.onRequest ? { onRequest: opts.onRequest } : {}) });
      return chaosRun(simChaosEnv(w, model, opts.shortCut === undefined ? {} : { shortCut: opts.shortCut }), seed, variant, { schedule, keepTables: true, ...(workload ? { workload } : {}), ...(opts.calls ? { calls: opts.calls } : {}) });
    });
  } catch (e) {
    if (!(e instanceof SimWorldError)) throw e;
    worldError = e.message;
  }
  const unsupported: string[] = [...new Set<string>(model?.unsupported ?? [])];
  const failed = record === undefined ? [] : failures(record);
  const caught = variant === 'fenced' ? failed.length === 0 : failed.some((f) => f.name === BREAKS[variant]);
  return {
    seed,
    variant,
    shape,
    ok: worldError === undefined && unsupported.length === 0 && record !== undefined && record.error === undefined && caught,
    failed,
    unsupported,
    ...(worldError === undefined ? {} : { worldError }),
    virtualMs: Math.round(world?.now ?? 0),
    events: world?.events ?? 0,
    digest: digestOf(record),
    ...(opts.keepRecord && record !== undefined ? { record } : {}),
    schedule,
  };
}

function failures(r: RunRecord): { name: string; first: string }[] {
  const out = Object.entries(r.report.invariants)
    .filter(([, inv]) => !inv.ok)
    .map(([name, inv]) => ({ name, first: inv.violations[0] ?? '(no detail)' }));
  if (r.leaseViolation) out.push({ name: 'LEASE', first: `${r.overlaps} takeover(s) before the holder's expiry with every clock in bound` });
  if (r.error !== undefined) out.push({ name: 'RUN', first: r.error });
  return out;
}

const digestOf = (r: RunRecord | undefined): string =>
  createHash('sha256')
    .update(JSON.stringify(r === undefined ? null : { history: r.history, report: r.report, faults: r.faultsFired }))
    .digest('hex')
    .slice(0, 16);
