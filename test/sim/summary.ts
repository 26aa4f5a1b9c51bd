/** The simulator's summary: throughput per shape, violations, coverage, and each control's schedules-to-catch. */
import { BREAKS, CONTROLS } from '../chaos/controls.js';
import { forcedFor } from '../chaos/schedule.js';
import type { SimPlan } from './main.js';
import { RACES, type SimOutcome } from './task.js';

export interface ControlFigures {
  /** The invariant its mistake breaks. */
  breaks: string;
  schedules: number;
  caught: number;
  share: number;
  /** Of the seeds that force the incident's interleaving (even), and of those that leave it to the schedule (odd). */
  forced: { schedules: number; caught: number };
  timed: { schedules: number; caught: number };
  /** Schedules run until the first catch (in seed order); null: never caught. */
  firstCaughtAt: number | null;
  /** The median of the schedules between catches (the first counted from the start): how many schedules a catch costs. */
  medianToCatch: number | null;
}

export interface SimSummary {
  ok: boolean;
  seed: number;
  schedules: number;
  controlSchedules: number;
  shape: string;
  workload: string;
  parallel: number;
  wallMs: number;
  /** Every schedule run (the protocol's and the controls'), per wall second, and per hour at that rate. */
  schedulesPerSecond: number;
  schedulesPerHour: number;
  /** Per shape (the protocol's and the controls' schedules): how many, the threads' time, schedules per thread-second, and per schedule its events, DynamoDB requests and virtual time; and the thread time per request. */
  shapes: Record<string, { schedules: number; cpuMs: number; perThreadSecond: number; meanEvents: number; meanRequests: number; meanVirtualMs: number; msPerRequest: number }>;
  violations: Record<string, number>;
  /** Per shape, the share of the protocol's schedules that hit each race (task.ts RACES). */
  races: Record<string, Record<string, number>>;
  failed: { seed: number; shape: string; failed: string[]; first: string; replay: string; faultsBefore: number; faultsAfter: number }[];
  covered: Record<string, number>;
  faults: Record<string, number>;
  controls: Record<string, ControlFigures>;
  /** The controls not run, and why each cannot show in the workload. */
  skippedControls: { control: string; why: string }[];
  uncaught: { variant: string; seed: number; replay?: string }[];
  /** `--compare-local K`: the same schedules on DynamoDB Local, measured in this run. */
  localBaseline?: import('./compare-local.js').LocalBaseline;
}

const median = (xs: number[]): number | null => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)]!;
};

function controlFigures(variant: (typeof CONTROLS)[number], runs: SimOutcome[]): ControlFigures {
  const bySeed = [...runs].sort((a, b) => a.seed - b.seed);
  const gaps: number[] = [];
  let since = 0;
  let first: number | null = null;
  bySeed.forEach((o, i) => {
    since++;
    if (!o.ok) return;
    if (first === null) first = i + 1;
    gaps.push(since);
    since = 0;
  });
  const part = (forced: boolean) => {
    const xs = bySeed.filter((o) => forcedFor(o.seed) === forced);
    return { schedules: xs.length, caught: xs.filter((o) => o.ok).length };
  };
  const caught = bySeed.filter((o) => o.ok).length;
  return { breaks: BREAKS[variant], schedules: bySeed.length, caught, share: bySeed.length === 0 ? 0 : Math.round((caught / bySeed.length) * 1000) / 1000, forced: part(true), timed: part(false), firstCaughtAt: first, medianToCatch: median(gaps) };
}

export function summarize(plan: SimPlan, outcomes: SimOutcome[], wallMs: number): SimSummary {
  const protocol = outcomes.filter((o) => o.variant === 'fenced');
  const shapes: SimSummary['shapes'] = {};
  for (const o of outcomes) {
    const s = (shapes[o.shape] ??= { schedules: 0, cpuMs: 0, perThreadSecond: 0, meanEvents: 0, meanRequests: 0, meanVirtualMs: 0, msPerRequest: 0 });
    s.schedules++;
    s.cpuMs += o.ms;
    s.meanEvents += o.events;
    s.meanRequests += o.requests;
    s.meanVirtualMs += o.virtualMs;
  }
  for (const s of Object.values(shapes)) {
    s.perThreadSecond = Math.round((s.schedules / (s.cpuMs / 1000)) * 10) / 10;
    s.msPerRequest = s.meanRequests > 0 ? Math.round((s.cpuMs / s.meanRequests) * 1000) / 1000 : 0;
    s.meanEvents = Math.round(s.meanEvents / s.schedules);
    s.meanRequests = Math.round(s.meanRequests / s.schedules);
    s.meanVirtualMs = Math.round(s.meanVirtualMs / s.schedules);
    s.cpuMs = Math.round(s.cpuMs);
  }
  const violations: Record<string, number> = { FENCE: 0, ONCE: 0, PROGRESS: 0, TOKENS: 0, DOCS: 0, DELIVERY: 0, CHAIN: 0, RUNS: 0, LEASE: 0, RUN: 0, WORLD: 0, UNSUPPORTED: 0 };
  const covered: Record<string, number> = {};
  const faults: Record<string, number> = {};
  for (const o of protocol) {
    for (const f of o.failed) violations[f] = (violations[f] ?? 0) + 1;
    for (const c of o.covered) covered[c] = (covered[c] ?? 0) + 1;
    for (const f of new Set(o.faultsFired.map((x) => x.replace(/ for \d+ ms$/, '')))) faults[f] = (faults[f] ?? 0) + 1;
  }
  const races: SimSummary['races'] = {};
  for (const shape of new Set(protocol.map((o) => o.shape))) {
    const runs = protocol.filter((o) => o.shape === shape);
    races[shape] = Object.fromEntries(Object.keys(RACES).map((race) => [race, Math.round((runs.filter((o) => o.races.includes(race)).length / runs.length) * 1000) / 1000]));
  }
  const controls: Record<string, ControlFigures> = {};
  for (const c of CONTROLS) {
    const runs = outcomes.filter((o) => o.variant === c);
    if (runs.length > 0) controls[c] = controlFigures(c, runs);
  }
  const failed = protocol.filter((o) => !o.ok).map((o) => ({ seed: o.seed, shape: o.shape, failed: o.failed, first: o.saved?.first ?? '', replay: o.saved?.replay ?? '', faultsBefore: o.saved?.faultsBefore ?? 0, faultsAfter: o.saved?.faultsAfter ?? 0 }));
  const uncaught = outcomes.filter((o) => o.variant !== 'fenced' && !o.ok).map((o) => ({ variant: o.variant, seed: o.seed, ...(o.saved ? { replay: o.saved.replay } : {}) }));
  const perSecond = outcomes.length / (wallMs / 1000);
  const controlsOk = Object.values(controls).every((c) => c.medianToCatch !== null && c.medianToCatch <= 1000);
  return {
    ok: failed.length === 0 && controlsOk,
    seed: plan.seed,
    schedules: plan.schedules,
    controlSchedules: plan.controlSchedules,
    shape: plan.shape,
    workload: plan.workload,
    parallel: plan.parallel,
    wallMs: Math.round(wallMs),
    schedulesPerSecond: Math.round(perSecond * 10) / 10,
    schedulesPerHour: Math.round(perSecond * 3600),
    shapes,
    violations,
    races,
    failed: failed.slice(0, 50),
    covered,
    faults,
    controls,
    skippedControls: plan.skippedControls ?? [],
    uncaught: uncaught.slice(0, 50),
  };
}

export function summaryLines(s: SimSummary): string[] {
  const lines = [
    `${s.schedules} schedules of the real protocol on the ${s.workload} workload (seeds ${s.seed}..${s.seed + s.schedules - 1}, shape ${s.shape}) and ${s.controlSchedules} of each control, ${s.parallel} thread(s): ${(s.wallMs / 1000).toFixed(1)} s, ${s.schedulesPerSecond} schedules/s (${s.schedulesPerHour.toLocaleString('en-US')} an hour)`,
    ...Object.entries(s.shapes).map(([k, v]) => `  ${k}: ${v.schedules} schedules, ${v.perThreadSecond} per thread-second; each ${v.meanEvents} events, ${v.meanRequests} DynamoDB requests, ${(v.meanVirtualMs / 1000).toFixed(1)} virtual s; ${v.msPerRequest} ms of thread time per request`),
    `violations: ${Object.entries(s.violations).map(([k, v]) => `${k} ${v}`).join(', ')}`,
    ...s.failed.map((f) => `  seed ${f.seed} (${f.shape}) ${f.failed.join(',')}: ${f.first}\n    shrunk to ${f.faultsAfter} faults (from ${f.faultsBefore}); ${f.replay}`),
    `covered: ${Object.entries(s.covered).map(([k, v]) => `${k} ${v}`).join(', ')}`,
    ...Object.entries(s.races).map(([shape, rs]) => `  races hit, ${shape}: ${Object.entries(rs).map(([k, v]) => `${k} ${Math.round(v * 100)} %`).join(', ')}`),
    ...Object.entries(s.controls).map(([k, c]) => `  control ${k} (${c.breaks}): caught ${c.caught}/${c.schedules} (forced ${c.forced.caught}/${c.forced.schedules}, timed ${c.timed.caught}/${c.timed.schedules}), first at ${c.firstCaughtAt ?? 'never'}, median ${c.medianToCatch ?? '-'} schedules to catch`),
    ...s.skippedControls.map((k) => `  control ${k.control}: not run, ${k.why}`),
    ...(s.localBaseline ? [`baseline: the first ${s.localBaseline.schedules} schedules on DynamoDB Local, one at a time: ${s.localBaseline.msPerSchedule} ms each against ${s.localBaseline.simMsPerSchedule} ms of one simulator thread (${s.localBaseline.speedup}x); the same verdict in ${s.localBaseline.sameVerdicts}`] : []),
    s.ok ? 'OK' : 'FAILED',
  ];
  return lines;
}
