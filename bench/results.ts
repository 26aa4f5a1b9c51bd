/** One benchmark run's figures, the goals they answer to, and the --json object. */
import type { BundleResult } from './bundle.js';
import type { ClientCost } from './client.js';
import type { Contention } from './contention.js';
import type { Fairness } from './fairness.js';
import type { FloorResult } from './floor.js';
import type { LeaseCycles } from './leases.js';
import type { Machine } from './machine.js';
import { round } from './stats.js';
import type { Takeover } from './takeover.js';
import type { RequestMix, ThroughputResult } from './throughput.js';

export interface BenchRun {
  machine: Machine;
  quick: boolean;
  seconds: number;
  /** Wall time of each measurement. */
  stepSeconds?: Record<string, number>;
  throughput?: { sequential: ThroughputResult; parallel: ThroughputResult; mix: RequestMix };
  floor?: FloorResult;
  client?: ClientCost;
  leases?: LeaseCycles;
  takeover?: Takeover;
  contention?: Contention;
  fairness?: Fairness;
  bundle?: BundleResult;
}

export interface Goal {
  key: string;
  label: string;
  goal: string;
  value: number | undefined;
  display: string;
  met: boolean | undefined;
}

/** A figure for display with `digits` decimals; 'n/a' when absent or not finite (also bench/report.ts). */
export const fmt = (x: number | undefined, digits = 2): string => (x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(digits));

export function goals(run: BenchRun): Goal[] {
  const g = (key: string, label: string, goal: string, value: number | undefined, ok: (v: number) => boolean, digits = 2, unit = ''): Goal => ({
    key,
    label,
    goal,
    value,
    display: value === undefined ? 'n/a' : `${fmt(value, digits)}${unit}`,
    met: value === undefined ? undefined : ok(value),
  });
  const t = run.throughput;
  const peer = (name: string) => run.leases?.peers.find((p) => p.name === name)?.oursOverPeer;
  return [
    g('fencedVsUnsafe', 'Fenced ÷ unsafe effects/s, one job', '≥ 0.9', t?.sequential.ratio, (v) => v >= 0.9),
    g('fencedVsUnsafeParallel', `Fenced ÷ unsafe effects/s, ${t?.parallel.jobs ?? 'n'} jobs in parallel`, '≥ 0.9', t?.parallel.ratio, (v) => v >= 0.9),
    g('requestsPerUnit', 'Requests per fenced unit (steady state)', '1', t?.mix.requestsPerUnit, (v) => v <= 1, 3),
    g('wcuPerEffect', 'WCU per effect (AWS pricing, from the request mix)', '≤ 2.2', t?.mix.wcuPerEffect, (v) => v <= 2.2, 3),
    g('peers.dynamodb-lock-client', 'Lease cycles/s, ours ÷ dynamodb-lock-client', '≥ 1.5', peer('dynamodb-lock-client'), (v) => v >= 1.5),
    g('peers.@deliveryhero/dynamodb-lock', 'Lease cycles/s, ours ÷ @deliveryhero/dynamodb-lock', '≥ 1.5', peer('@deliveryhero/dynamodb-lock'), (v) => v >= 1.5),
    g('takeoverRatio', 'Takeover ÷ lease duration, median', '≤ 1.1', run.takeover?.medianRatio, (v) => v <= 1.1, 3),
    g('takeoverMaxRatio', 'Takeover ÷ lease duration, max', '≤ 1.1', run.takeover?.maxRatio, (v) => v <= 1.1, 3),
    g('contention', `Requests per contender per lease period (${run.contention?.contenders ?? 32} contenders)`, '≤ 2', run.contention?.requestsPerContenderPerLease, (v) => v <= 2),
    g('fairRequests', `Fair acquire: requests per contender per lease period (${run.fairness?.contenders ?? 32} contenders)`, '≤ 1', run.fairness?.fair.requestsPerContenderPerLease, (v) => v <= 1),
    g('fairNeverServed', `Fair acquire: contenders never served in ${run.fairness?.periods ?? 'n'} lease periods`, '0', run.fairness?.fair.neverServed, (v) => v === 0, 0),
    g('bundleKB', 'Worker bundle, minified, as deployed (KB)', '≤ 250', run.bundle?.kb, (v) => v <= 250, 0, ' KB'),
  ];
}

/** The --json object: the fields first, then extras. */
export function jsonReport(run: BenchRun): Record<string, unknown> {
  const t = run.throughput;
  const peers: Record<string, number | null> = {};
  for (const p of run.leases?.peers ?? []) peers[p.name] = round(p.oursOverPeer);
  const r = (x: number | undefined, d = 3) => (x === undefined ? null : round(x, d));
  return {
    fencedVsUnsafe: r(t?.sequential.ratio),
    requestsPerUnit: r(t?.mix.requestsPerUnit),
    wcuPerEffect: r(t?.mix.wcuPerEffect),
    peers,
    takeoverMs: r(run.takeover?.medianMs, 0),
    leaseMs: run.takeover?.leaseMs ?? null,
    contention: {
      contenders: run.contention?.contenders ?? 32,
      requestsPerContenderPerLease: r(run.contention?.requestsPerContenderPerLease),
      maxWaitMs: r(run.contention?.maxWaitMs, 0),
      maxServedWaitMs: r(run.contention?.maxServedWaitMs, 0),
      medianWaitMs: r(run.contention?.medianWaitMs, 0),
      acquisitions: run.contention?.acquisitions ?? null,
      neverServed: run.contention?.neverServed ?? null,
    },
    fairness: run.fairness ? fairnessJson(run.fairness) : null,
    bundleKB: r(run.bundle?.kb, 1),
    // Extras.
    fencedVsUnsafeParallel: r(t?.parallel.ratio),
    parallelJobs: t?.parallel.jobs ?? null,
    renewalsPerUnit: r(t?.mix.renewalsPerUnit, 4),
    takeoverRatio: r(run.takeover?.medianRatio),
    takeoverMaxRatio: r(run.takeover?.maxRatio),
    takeoverMaxMs: r(run.takeover?.maxMs, 0),
    maxClockSkewMs: run.takeover?.maxClockSkewMs ?? null,
    bundleKBSdkExternal: r(run.bundle?.sdkExternalKb, 1),
    workerInitMs: run.bundle ? { bundled: r(run.bundle.init.bundledMs, 1), runtimeSdk: r(run.bundle.init.runtimeSdkMs, 1) } : null,
    dynamoDbLocalCeiling: run.floor
      ? { sequential: r(run.floor.ceilingSequential), parallel: r(run.floor.ceilingParallel), transactionEngine: r(run.floor.engineSequential) }
      : null,
    goalsMet: Object.fromEntries(goals(run).map((x) => [x.key, x.met ?? null])),
    machine: { cpu: run.machine.cpu, cores: run.machine.cores, node: run.machine.node, dynamoDbLocal: run.machine.dynamoDbLocal, loadAverage: run.machine.loadAverage },
    seconds: round(run.seconds, 0),
    stepSeconds: run.stepSeconds ?? {},
    quick: run.quick,
  };
}

/** The fair-waiting figures: today's acquire and the fair one, side by side (bench/fairness.ts). */
function fairnessJson(x: Fairness): Record<string, unknown> {
  const side = (s: Fairness['plain']) => ({
    requestsPerContenderPerLease: round(s.requestsPerContenderPerLease, 3),
    leaseRequestsPerLease: round(s.leaseRequestsPerLease, 2),
    neverServed: s.neverServed,
    grants: s.grants,
    maxWaitMs: round(s.maxWaitMs, 0),
    maxWaitPerPosition: round(s.maxWaitPerPosition, 3),
    medianWaitPerPosition: round(s.medianWaitPerPosition, 3),
    takeoverAfterCrashMs: { median: round(s.takeoverMedianMs, 0), max: round(s.takeoverMaxMs, 0), crashes: s.crashes },
    tokensInOrder: s.tokensInOrder,
  });
  return { contenders: x.contenders, periods: x.periods, leaseMs: x.leaseMs, maxClockSkewMs: x.maxClockSkewMs, holdMs: x.holdMs, awayMs: x.awayMs, crashEvery: x.crashEvery, plain: side(x.plain), fair: side(x.fair) };
}
