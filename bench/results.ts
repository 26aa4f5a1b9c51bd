/** One benchmark run's figures, the goals they answer to, and the --json object. */
import type { BundleResult } from './bundle.js';
import type { ClientCost } from './client.js';
import type { Contention } from './contention.js';
import type { Fairness } from './fairness.js';
import type { FloorResult } from './floor.js';
import type { IdempotencyComparison } from './idempotency.js';
import type { PeerWaits } from './peer-waits.js';
import type { ShardingResult } from './sharding.js';
import type { StreamsResult } from './streams.js';
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
  idempotency?: IdempotencyComparison;
  peerWaits?: PeerWaits;
  streams?: StreamsResult;
  sharding?: ShardingResult;
}

/** The peer-wait figures of one side (bench/peer-waits.ts), by name prefix. */
export const peerSide = (run: BenchRun, name: string) => run.peerWaits?.sides.find((s) => s.name.startsWith(name));
const OURS_WATCH = 'this library (version-watch)';
const PEER_NAMES = ['dynamodb-lock-client', '@deliveryhero/dynamodb-lock'];

/** The new goals' own verdicts (issue 16), shared by goals() and the --json fields. */
export function newVerdicts(run: BenchRun) {
  const t = run.throughput;
  const idem = run.idempotency;
  const ours = peerSide(run, OURS_WATCH);
  const peers = PEER_NAMES.map((n) => peerSide(run, n)).filter((x) => x !== undefined);
  const sh = run.sharding;
  const init = run.bundle?.init;
  return {
    fencedVsBareTransaction: t === undefined ? undefined : t.sequential.bareRatio >= 0.9,
    libraryVsRaw: run.floor === undefined ? undefined : run.floor.libraryVsRaw >= 0.95,
    vsPowertoolsIdempotency: idem === undefined ? undefined : idem.ratio >= 3 && idem.ours.wcuPerEffect <= idem.powertools.wcuPerEffect,
    peersTakeover: ours === undefined ? undefined : ours.takeoverMedianRatio <= 1.1,
    peersContention: ours === undefined || peers.length === 0 ? undefined : peers.every((p) => ours.requestsPerContenderPerLease <= p.requestsPerContenderPerLease),
    streams: run.streams === undefined ? undefined : run.streams.ratio >= 0.9,
    sharding: sh === undefined ? undefined : sh.rows.every((r) => r.invariantsHeld) && Math.min(...sh.rows.map((r) => r.vsOneShard)) >= 0.9,
    workerInit: init === undefined ? undefined : init.bundledMs / init.runtimeSdkMs <= 1,
  };
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
    g('fencedVsBareTransaction', 'Fenced units ÷ the same effects as a bare TransactWriteItems, one job', '≥ 0.9', t?.sequential.bareRatio, (v) => v >= 0.9, 3),
    g('libraryVsRaw', "Library's fenced unit ÷ the identical request over plain HTTP", '≥ 0.95', run.floor?.libraryVsRaw, (v) => v >= 0.95),
    g('vsPowertoolsIdempotency', 'Once-only effects/s, ours ÷ Powertools idempotency (at no more WCU per effect)', '≥ 3', run.idempotency?.ratio, () => newVerdicts(run).vsPowertoolsIdempotency === true),
    g('peers.takeover', 'Takeover after a holder crash ÷ lease, ours (version-watch), median', '≤ 1.1', peerSide(run, OURS_WATCH)?.takeoverMedianRatio, (v) => v <= 1.1, 3),
    g('peers.contention', `Requests per contender per lease period, ours (${run.peerWaits?.contenders ?? 'n'} contenders), no more than either peer`, '≤ peers', peerSide(run, OURS_WATCH)?.requestsPerContenderPerLease, () => newVerdicts(run).peersContention === true),
    g('streams', 'Fenced effects/s with streams ÷ without (fresh DynamoDB Local)', '≥ 0.9', run.streams?.ratio, (v) => v >= 0.9),
    g('sharding', `Sharded run: invariants at K = ${run.sharding?.rows.map((r) => r.shards).join(', ') ?? '1, 2, 4, 8'} and effects/s ÷ one shard's, worst K`, '≥ 0.9, all correct', run.sharding ? Math.min(...run.sharding.rows.map((r) => r.vsOneShard)) : undefined, () => newVerdicts(run).sharding === true, 3),
    g('workerInit', 'Worker init, deployed bundle ÷ runtime-SDK variant', '≤ 1', run.bundle ? run.bundle.init.bundledMs / run.bundle.init.runtimeSdkMs : undefined, (v) => v <= 1),
  ];
}

/**
 * Attempts run again because a job ended uncertain (a renewal or commit unconfirmed on a loaded
 * machine: the worker stops, as it must), per measurement: fenced phases and our idempotency jobs
 * run again with fresh jobs (bench/throughput.ts), shards are redelivered (bench/sharding.ts).
 */
export function uncertainRetries(run: BenchRun): Record<'throughput' | 'streams' | 'idempotency' | 'sharding', number | null> {
  const t = run.throughput;
  return {
    throughput: t ? t.sequential.uncertainRetries + t.parallel.uncertainRetries : null,
    streams: run.streams?.uncertainRetries ?? null,
    idempotency: run.idempotency?.uncertainRetries ?? null,
    sharding: run.sharding ? run.sharding.rows.reduce((n, r) => n + r.redeliveries, 0) : null,
  };
}

/** One line for the table and docs/benchmarks.md; undefined when nothing was retried. */
export function retriesLine(run: BenchRun): string | undefined {
  const counted = Object.entries(uncertainRetries(run)).filter((e): e is [string, number] => e[1] !== null && e[1] > 0);
  if (counted.length === 0) return undefined;
  return `jobs that ended uncertain and ran again (fresh jobs; each figure is from a clean attempt): ${counted.map(([k, n]) => `${k} ${n}`).join(', ')}`;
}

/** The --json object: the issue's fields first, then extras. */
export function jsonReport(run: BenchRun): Record<string, unknown> {
  const t = run.throughput;

  const r = (x: number | undefined, d = 3) => (x === undefined ? null : round(x, d));
  return {
    fencedVsUnsafe: r(t?.sequential.ratio),
    requestsPerUnit: r(t?.mix.requestsPerUnit),
    wcuPerEffect: r(t?.mix.wcuPerEffect),
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
    ...issue16Fields(run),
    uncertainRetries: uncertainRetries(run),
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

/** The fields issue 16 names, each with its goal and `goalsMet`, measured against a baseline of the same run. */
function issue16Fields(run: BenchRun): Record<string, unknown> {
  const r = (x: number | undefined, d = 3) => (x === undefined || !Number.isFinite(x) ? null : round(x, d));
  const v = newVerdicts(run);
  const t = run.throughput;
  const fl = run.floor;
  const idem = run.idempotency;
  const pw = run.peerWaits;
  const cycles: Record<string, number | null> = {};
  for (const p of run.leases?.peers ?? []) cycles[p.name] = r(p.oursOverPeer);
  const b = run.bundle?.init;
  return {
    fencedVsBareTransaction: t
      ? { value: r(t.sequential.bareRatio), parallel: r(t.parallel.bareRatio), fencedEffectsPerSec: r(t.sequential.fencedEffectsPerSec, 0), bareTransactionEffectsPerSec: r(t.sequential.bareEffectsPerSec, 0), goal: '>= 0.9', goalsMet: v.fencedVsBareTransaction }
      : null,
    libraryVsRaw: fl ? { value: r(fl.libraryVsRaw), libraryMs: r(fl.libraryMs, 2), rawHttpMs: r(fl.sequentialMs.t27, 2), goal: '>= 0.95', goalsMet: v.libraryVsRaw } : null,
    vsPowertoolsIdempotency: idem
      ? {
          effectsPerSecRatio: r(idem.ratio),
          ours: { effectsPerSec: r(idem.ours.effectsPerSec, 0), requestsPerEffect: r(idem.ours.requestsPerEffect), wcuPerEffect: r(idem.ours.wcuPerEffect) },
          powertools: { version: idem.powertoolsVersion, effectsPerSec: r(idem.powertools.effectsPerSec, 0), requestsPerEffect: r(idem.powertools.requestsPerEffect), wcuPerEffect: r(idem.powertools.wcuPerEffect) },
          goal: '>= 3x the effects/s at no more WCU per effect',
          goalsMet: v.vsPowertoolsIdempotency,
        }
      : null,
    peers: {
      leaseCycles: cycles,
      takeover: pw ? Object.fromEntries(pw.sides.map((s) => [s.name, { medianRatio: r(s.takeoverMedianRatio), maxRatio: r(s.takeoverMaxRatio), requestsPerTakeover: r(s.requestsPerTakeover, 2) }])) : null,
      contention: pw ? Object.fromEntries(pw.sides.map((s) => [s.name, { requestsPerContenderPerLease: r(s.requestsPerContenderPerLease), grants: s.contentionGrants, gaveUp: s.contentionGaveUp, overlap: s.overlap }])) : null,
      leaseMs: pw?.leaseMs ?? null,
      goal: { leaseCycles: '>= 1.5 (ours / each peer)', takeover: 'ours (version-watch) <= 1.1 x lease', contention: 'ours <= each peer' },
      goalsMet: {
        leaseCycles: run.leases ? run.leases.peers.every((p) => p.oursOverPeer >= 1.5) : null,
        takeover: v.peersTakeover ?? null,
        contention: v.peersContention ?? null,
      },
    },
    streams: run.streams
      ? { withStreamsEffectsPerSec: r(run.streams.withStreamsEffectsPerSec, 0), withoutStreamsEffectsPerSec: r(run.streams.withoutStreamsEffectsPerSec, 0), ratio: r(run.streams.ratio), onAws: 'a stream adds no write latency', goal: '>= 0.9 (fresh DynamoDB Local)', goalsMet: v.streams }
      : null,
    sharding: run.sharding
      ? {
          customers: run.sharding.customers,
          rows: run.sharding.rows.map((x) => ({ shards: x.shards, effectsPerSec: r(x.effectsPerSec, 0), vsOneShard: r(x.vsOneShard), invariantsHeld: x.invariantsHeld, redeliveries: x.redeliveries, planSeconds: r(x.planSeconds, 2), plan10MSeconds: r(x.plan10MSeconds, 0), plan10MBinding: x.plan10MBinding })),
          note: 'one DynamoDB Local process: correctness and client overhead, not AWS scaling (planSeconds: the planner\'s AWS figure)',
          goal: 'every K correct; effects/s >= 0.9 x one shard',
          goalsMet: v.sharding,
        }
      : null,
    workerInit: b ? { bundledMs: r(b.bundledMs, 1), runtimeSdkMs: r(b.runtimeSdkMs, 1), ratio: r(b.bundledMs / b.runtimeSdkMs), goal: '<= 1', goalsMet: v.workerInit } : null,
  };
}
