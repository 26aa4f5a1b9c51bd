/**
 * `npm run chaos -- --runs N --seed S [--json] [--concurrency K] [--control-runs M] [--no-controls] [--stalls-allowed] [--workload NAME]`
 * `npm run chaos -- --replay S | --replay CONTROL@S`
 *
 * Runs N seeded schedules of the real protocol and, by default, M runs of each negative control,
 * on one embedded DynamoDB Local. A real-protocol run that violates an invariant, and a control
 * run that is NOT caught, print their seed and save their history under .chaos/.
 * `--runs 1 --seed S` (or `--replay S`) replays seed S alone; `--replay checkThenAct@S` replays
 * one control's run, as an uncaught control is printed. `--stalls-allowed` (the short run `.ci/run`
 * makes on a machine of unknown speed): a run the stall watchdog cut short is a stall, not a
 * failure, its partial state still checked for every safety invariant (stall-verdict.ts).
 * `--workload NAME`: a registered workload's runs under the same schedules (workload-runs.ts), the
 * controls whose mistake cannot show in it listed with the reason instead of run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createDynamo, InvalidInputError } from '../../lib/protocol/index.js';
import { METRIC } from '../../lib/workflow/index.js';
import { startDynamoLocal } from '../../cli/local/dynamodb-local.js';
import { checkEndpoint } from '../../cli/local/endpoint.js';
import { runScript } from '../../cli/shared/entry.js';
import { intFlag as int, parseFlags, urlFlag } from '../../cli/shared/flags.js';
import { streamsClient } from '../../cli/local/streams.js';
import type { InvariantName } from '../../cli/check/invariants.js';
import type { EffectsStats } from '../../cli/check/invariants-effects.js';
import type { Workload } from '../../lib/workflow/index.js';
import { DEFAULT_WORKLOAD, workloadNamed } from '../../lib/workloads/index.js';
import { BREAKS, controlCannotShow, CONTROLS, type Variant } from './controls.js';
import { chaosRun, localChaosEnv, type RunRecord } from './harness.js';
import { stallVerdict } from './stall-verdict.js';
import type { ChaosLeaseMode } from './schedule.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

type Tally = { runs: number; caught: number };

export interface ChaosSummary {
  runs: number;
  /** Per invariant, real-protocol runs that broke it; LEASE: a lease held by two while every clock kept its bound. */
  violations: Record<InvariantName | 'LEASE', number>;
  /** Per control: all runs, and those with the incident's interleaving forced (even seeds) or left to timing (odd). */
  controls: Record<(typeof CONTROLS)[number], Tally & { forced: Tally; timed: Tally; byWire: Tally }>;
  /** Real-protocol runs per lease mode, with clock skew beyond the bound, with a DR drill. */
  dimensions: { wallClock: number; versionWatch: number; skewed: number; drills: number; successorCrashes: number };
  /** Takeovers before the replaced holder's expiry (true time) in skewed runs: allowed, FENCE must still hold. */
  skewOverlaps: { runs: number; overlaps: number };
  /** Per fault (worker and effect faults, durations left out), the real-protocol runs in which it fired, not only was armed. */
  faults: Record<string, number>;
  /** Real-protocol runs in which the fence refused at least one stale write, and how many it refused in all. */
  fenceRefusals: { runs: number; writes: number };
  /** The external effects of the real-protocol runs, summed: what the checker counted in the bucket, the sink and the payment provider. */
  effects: EffectsTotals;
  /** The structural FENCE check of the real-protocol runs, summed: what the proxy saw the engine apply. */
  wire: WireTotals;
  failedSeeds: number[];
  uncaughtControls: { variant: string; seed: number }[];
  elapsedMs: number;
  runsPerMinute: number;
}

export interface WireTotals {
  runs: number;
  transactions: number;
  effectWritesChecked: number;
  fenceWrites: number;
  replays: number;
  violations: number;
}

function addWire(into: WireTotals, r: RunRecord): void {
  const w = r.report.stats.wire;
  if (w === undefined) return;
  into.runs++;
  for (const f of ['transactions', 'effectWritesChecked', 'fenceWrites', 'replays', 'violations'] as const) into[f] += w[f];
}

/** A control run whose mistake the structural FENCE check found on its own. */
const caughtOnWire = (r: RunRecord): boolean => (r.report.stats.wire?.violations ?? 0) > 0;

type Counts<T> = { [K in keyof T]: { [F in keyof T[K] as T[K][F] extends number ? F : never]: number } };
export type EffectsTotals = Counts<EffectsStats>;

const effectsTotals = (): EffectsTotals => ({
  documents: { written: 0, referenced: 0, orphaned: 0, collected: 0 },
  emails: { items: 0, sent: 0, delivered: 0, duplicated: 0, ambiguous: 0, unknown: 0, failed: 0 },
  payments: { items: 0, sent: 0, performed: 0, requests: 0, pastRetention: 0, resentPastRetention: 0 },
  providers: { throttled: 0, ambiguous5xx: 0, paused: 0, sandbox: 0, bounced: 0, complained: 0, deferredItems: 0, troubleRecorded: 0 },
  chains: { followUps: 0, accepted: 0, refusedForGood: 0, bounced: 0, declined: 0 },
});

function addEffects(into: EffectsTotals, run: EffectsStats): void {
  // Every field of `into` is a number in `run` (Counts keeps only those).
  for (const kind of Object.keys(into) as (keyof EffectsTotals)[]) {
    const sums = into[kind] as Record<string, number>;
    const from = run[kind] as unknown as Record<string, number>;
    for (const f of Object.keys(sums)) sums[f]! += from[f]!;
  }
}

export interface ChaosOptions {
  runs: number;
  seed: number;
  concurrency: number;
  controlRuns: number;
  endpoint?: string;
  historyDir?: string;
  /** The controls that run `controlRuns` times each. Default: all of CONTROLS. */
  controls?: readonly (typeof CONTROLS)[number][];
  /** Runs per embedded DynamoDB Local before it is replaced by a fresh one. Default 100. */
  recycleEvery?: number;
  /** Force one lease mode for every run (default: a third of the seeds run version-watch). */
  leaseMode?: ChaosLeaseMode;
  /** The workload the runs are (default the invoice sample). */
  workload?: Workload<any>;
  onRun?: (r: RunRecord, done: number, total: number) => void;
}

const tally = (): Tally => ({ runs: 0, caught: 0 });

export async function chaos(opts: ChaosOptions): Promise<ChaosSummary> {
  const started = Date.now();
  const tasks: { seed: number; variant: Variant }[] = [];
  for (let i = 0; i < opts.runs; i++) tasks.push({ seed: opts.seed + i, variant: 'fenced' });
  for (const c of opts.controls ?? CONTROLS) for (let i = 0; i < opts.controlRuns; i++) tasks.push({ seed: opts.seed + i, variant: c });
  const summary: ChaosSummary = {
    runs: opts.runs,
    violations: { FENCE: 0, ONCE: 0, PROGRESS: 0, TOKENS: 0, DOCS: 0, DELIVERY: 0, CHAIN: 0, RUNS: 0, LEASE: 0 },
    controls: Object.fromEntries(CONTROLS.map((c) => [c, { ...tally(), forced: tally(), timed: tally(), byWire: tally() }])) as ChaosSummary['controls'],
    dimensions: { wallClock: 0, versionWatch: 0, skewed: 0, drills: 0, successorCrashes: 0 },
    skewOverlaps: { runs: 0, overlaps: 0 },
    faults: {},
    fenceRefusals: { runs: 0, writes: 0 },
    effects: effectsTotals(),
    wire: { runs: 0, transactions: 0, effectWritesChecked: 0, fenceWrites: 0, replays: 0, violations: 0 },
    failedSeeds: [],
    uncaughtControls: [],
    elapsedMs: 0,
    runsPerMinute: 0,
  };
  const save = (r: RunRecord) => {
    if (opts.historyDir === undefined) return;
    mkdirSync(opts.historyDir, { recursive: true });
    writeFileSync(resolve(opts.historyDir, `${r.variant}-${r.seed}.json`), JSON.stringify(r, null, 1));
  };
  let done = 0;
  // DynamoDB Local slows down every write to a streamed table as the stream records of all its
  // tables pile up, deleted tables' included (4 ms a request fresh, 10-12 ms after 100 tables of
  // 100 items: README, Tests), and slow runs are what make a timed control miss: an embedded
  // instance is recycled every `recycleEvery` runs, by default two rounds of the concurrency
  // (measured, seeds 17-48 at concurrency 8: 210 s with a new instance every 32 runs, 101 s every
  // 16, 123 s every 8, where each chunk waits for its slowest run).
  const chunk = opts.endpoint === undefined ? (opts.recycleEvery ?? Math.max(16, opts.concurrency * 2)) : tasks.length;
  for (let from = 0; from < tasks.length; from += chunk) {
    const slice = tasks.slice(from, from + chunk);
    const local = opts.endpoint === undefined ? await startDynamoLocal() : undefined;
    const endpoint = opts.endpoint ?? local!.endpoint;
    const direct = createDynamo({ endpoint });
    const streams = streamsClient(endpoint);
    let next = 0;
    try {
      await Promise.all(
        Array.from({ length: Math.max(1, opts.concurrency) }, async () => {
          for (;;) {
            const task = slice[next++];
            if (task === undefined) return;
            const r = await chaosRun(localChaosEnv({ endpoint, direct, streams }), task.seed, task.variant, {
              ...(opts.leaseMode === undefined ? {} : { leaseMode: opts.leaseMode }),
              ...(opts.workload === undefined ? {} : { workload: opts.workload }),
            });
            done++;
            if (task.variant === 'fenced') {
              for (const [name, inv] of Object.entries(r.report.invariants)) if (!inv.ok) summary.violations[name as InvariantName]++;
              if (r.leaseViolation) summary.violations.LEASE++;
              countDimensions(summary, r);
              addEffects(summary.effects, r.report.stats.effects);
              addWire(summary.wire, r);
              const refused = r.metrics[METRIC.staleGenerationRejected] ?? 0;
              summary.fenceRefusals.writes += refused;
              if (refused > 0) summary.fenceRefusals.runs++;
              if (!r.ok) {
                summary.failedSeeds.push(r.seed);
                save(r);
              }
            } else {
              const c = summary.controls[task.variant];
              const caught = caughtBy(task.variant, r);
              for (const t of [c, r.forced ? c.forced : c.timed]) {
                t.runs++;
                if (caught) t.caught++;
              }
              c.byWire.runs++;
              if (caughtOnWire(r)) c.byWire.caught++;
              if (!caught) {
                summary.uncaughtControls.push({ variant: task.variant, seed: task.seed });
                save(r);
              }
            }
            opts.onRun?.(r, done, tasks.length);
          }
        }),
      );
    } finally {
      direct.client.destroy();
      streams.destroy();
      await local?.stop();
    }
  }
  summary.elapsedMs = Date.now() - started;
  summary.runsPerMinute = summary.elapsedMs > 0 ? Math.round((tasks.length / summary.elapsedMs) * 60_000 * 10) / 10 : 0;
  return summary;
}


function countDimensions(summary: ChaosSummary, r: RunRecord): void {
  const d = summary.dimensions;
  if (r.schedule.leaseMode === 'wall-clock') d.wallClock++;
  else d.versionWatch++;
  if (r.schedule.drill !== undefined) d.drills++;
  if (r.schedule.incident === 'successor-crashes') d.successorCrashes++;
  if (r.schedule.skews.some((s) => Math.abs(s) > r.schedule.maxClockSkewMs / 2)) {
    d.skewed++;
    summary.skewOverlaps.runs++;
    summary.skewOverlaps.overlaps += r.overlaps;
  }
  for (const name of new Set(r.faultsFired.map((f) => f.replace(/ for \d+ ms$/, '')))) summary.faults[name] = (summary.faults[name] ?? 0) + 1;
}

/** A control run counts as caught only when the invariant its mistake breaks fails (BREAKS). */
export function caughtBy(variant: (typeof CONTROLS)[number], r: RunRecord): boolean {
  const expected = BREAKS[variant];
  return expected === 'LEASE' ? r.leaseViolation : !r.report.invariants[expected].ok;
}

const HELP =
  'npm run chaos -- --runs N --seed S [--json] [--concurrency K] [--control-runs M] [--controls A,B] [--no-controls] [--lease-mode M] [--endpoint URL] [--stalls-allowed] [--workload NAME]\n' +
  '  N runs of the real protocol (seeds S..S+N-1) and M runs of each negative control\n' +
  '  (default M = clamp(N/10, 10, 100); none for --runs 1, a replay); failing histories are saved under .chaos/\n' +
  '  --stalls-allowed: a run cut short by the stall watchdog is a stall, not a failure (its partial\n' +
  '  state is checked for safety all the same); at least one run must finish\n' +
  '  --workload NAME: a registered workload (npm run cli -- workloads) under the same schedules; the\n' +
  '  controls whose mistake cannot show in it are listed with the reason, not run\n' +
  'npm run chaos -- --replay S            replay seed S of the real protocol alone\n' +
  `npm run chaos -- --replay CONTROL@S    replay one control's run (${CONTROLS.join(', ')}), as uncaught ones are printed\n`;

export interface ChaosPlan {
  runs: number;
  seed: number;
  controlRuns: number;
  controls: readonly (typeof CONTROLS)[number][];
}

/** `--replay 417` or `--replay checkThenAct@5003`: exactly that one run. */
function replayPlan(spec: string): ChaosPlan {
  const m = /^(?:([A-Za-z]+)@)?(\d+)$/.exec(spec);
  const variant = m?.[1];
  if (m === null || (variant !== undefined && variant !== 'fenced' && !(CONTROLS as readonly string[]).includes(variant))) {
    throw new InvalidInputError('--replay', `must be a seed (417) or CONTROL@SEED with CONTROL one of ${CONTROLS.join(', ')}, got "${spec}"`);
  }
  const seed = int('replay', m[2], 0, 0, 2 ** 31);
  if (variant === undefined || variant === 'fenced') return { runs: 1, seed, controlRuns: 0, controls: [] };
  return { runs: 0, seed, controlRuns: 1, controls: [variant as (typeof CONTROLS)[number]] };
}

/** What to run, from the flags: a replay runs its one seed; controls only when asked, or with a longer run. */
export function chaosPlan(values: { runs?: string; seed?: string; 'control-runs'?: string; 'no-controls'?: boolean; replay?: string; controls?: string }): ChaosPlan {
  if (values.replay !== undefined) {
    for (const f of ['runs', 'seed', 'control-runs'] as const) if (values[f] !== undefined) throw new InvalidInputError('--replay', `names its run alone: leave out --${f}`);
    return replayPlan(values.replay);
  }
  const runs = int('runs', values.runs, 20, 0, 1_000_000);
  const seed = int('seed', values.seed, 1, 0, 2 ** 31);
  // One run is a replay of one seed: its controls would be 40 runs nobody asked for.
  const defaultControlRuns = runs === 1 ? 0 : Math.min(100, Math.max(10, Math.ceil(runs / 10)));
  const controlRuns = values['no-controls'] ? 0 : int('control-runs', values['control-runs'], defaultControlRuns, 0, 100_000);
  if (runs === 0 && controlRuns === 0) throw new InvalidInputError('--runs', 'nothing to run: give --runs N, or --control-runs M for the controls alone');
  return { runs, seed, controlRuns, controls: controlsFlag(values.controls) };
}

/** `--controls a,b`: a subset of the negative controls (default all). */
function controlsFlag(raw: string | undefined): readonly (typeof CONTROLS)[number][] {
  if (raw === undefined) return CONTROLS;
  const names = raw.split(',').filter((x) => x !== '');
  const unknown = names.filter((n) => !(CONTROLS as readonly string[]).includes(n));
  if (names.length === 0 || unknown.length > 0) throw new InvalidInputError('--controls', `must be a comma-separated list of ${CONTROLS.join(', ')}, got "${raw}"`);
  return names as (typeof CONTROLS)[number][];
}

/** The human summary: only what ran, and no rate for a run too short to have one. */
export function summaryLines(s: ChaosSummary, workload?: string): string[] {
  const also = workload === undefined || workload === DEFAULT_WORKLOAD ? '' : ` --workload ${workload}`;
  const out: string[] = [''];
  if (s.runs > 0) {
    out.push(`${s.runs} run${s.runs === 1 ? '' : 's'} of the real protocol: violations ${Object.entries(s.violations).map(([k, v]) => `${k}=${v}`).join(' ')}`);
    out.push(`  the fence refused ${s.fenceRefusals.writes} stale writes, in ${s.fenceRefusals.runs} of ${s.runs} runs`);
    const d = s.dimensions;
    out.push(`  ${d.wallClock} wall-clock, ${d.versionWatch} version-watch; ${d.skewed} with clock skew beyond the bound (${s.skewOverlaps.overlaps} lease overlaps, all fenced); ${d.drills} DR drills; ${d.successorCrashes} successors crashed after their fence raise`);
    const fired = Object.entries(s.faults).sort(([a], [b]) => a.localeCompare(b));
    if (fired.length > 0) out.push(`  faults fired (runs): ${fired.map(([f, n]) => `${f} ${n}`).join('; ')}`);
    const { documents: o, emails: m, payments: p, providers: v } = s.effects;
    const w = s.wire;
    out.push(`  wire (structural FENCE, ${w.runs} runs): ${w.transactions} transactions applied, ${w.effectWritesChecked} effect writes checked, ${w.fenceWrites} fence writes, ${w.replays} token replays; ${w.violations} violations`);
    out.push(`  documents ${o.written} written, ${o.referenced} referenced, ${o.orphaned} orphaned, ${o.collected} collected; emails ${m.items} queued, ${m.delivered} received, ${m.duplicated} duplicated (${m.ambiguous} ambiguous sends); payments ${p.performed} performed for ${p.requests} requests, ${p.pastRetention} past-retention refused (${p.resentPastRetention} resent past retention)`);
    out.push(`  providers misbehaving: ${v.throttled} throttled, ${v.ambiguous5xx} 5xx (maybe taken), ${v.paused} paused, ${v.sandbox} sandbox refusals, ${v.bounced} bounced, ${v.complained} complaints; ${v.deferredItems} items deferred, ${v.troubleRecorded} trouble events recorded`);
    const c = s.effects.chains;
    if (c.followUps > 0 || c.declined > 0) out.push(`  steps: ${c.followUps} follow-ups created, ${c.accepted} after an acceptance, ${c.refusedForGood} after a decline (the provider declined ${c.declined}), ${c.bounced} after a hard bounce`);
  }
  const ran = Object.entries(s.controls).filter(([, v]) => v.runs > 0);
  const rate = (t: Tally) => `${t.caught}/${t.runs}${t.runs > 0 ? ` (${Math.round((t.caught / t.runs) * 100)}%)` : ''}`;
  for (const [c, v] of ran) {
    const halves = (['forced', 'timed'] as const).filter((k) => v[k].runs > 0).map((k) => `${k} ${rate(v[k])}`);
    // For a fence control: how many of its runs the structural check caught on its own.
    if (BREAKS[c as (typeof CONTROLS)[number]] === 'FENCE' && v.byWire.runs > 0) halves.push(`on the wire ${rate(v.byWire)}`);
    out.push(`  control ${c.padEnd(20)} caught ${rate(v)}: ${halves.join(', ')}`);
  }
  if (ran.length === 0) out.push('  negative controls: not run (--control-runs M runs each M times; --replay CONTROL@S one of them)');
  const total = s.runs + ran.reduce((n, [, v]) => n + v.runs, 0);
  out.push(`${Math.round(s.elapsedMs / 1000)} s${total > 1 && s.runsPerMinute > 0 ? `, ${s.runsPerMinute} runs/min` : ''}`);
  if (s.failedSeeds.length) out.push(`failing seeds (histories in .chaos/): ${s.failedSeeds.join(' ')}${also === '' ? '' : ` (replay one: --replay ${s.failedSeeds[0]}${also})`}`);
  if (s.uncaughtControls.length) out.push(`uncaught controls: ${s.uncaughtControls.map((u) => `${u.variant}@${u.seed}`).join(' ')} (replay one: --replay ${s.uncaughtControls[0]!.variant}@${s.uncaughtControls[0]!.seed}${also})`);
  return out;
}

export async function cli(argv: string[]): Promise<number> {
  const { values } = parseFlags({
    args: argv,
    options: {
      runs: { type: 'string' },
      seed: { type: 'string' },
      replay: { type: 'string' },
      concurrency: { type: 'string' },
      'control-runs': { type: 'string' },
      'no-controls': { type: 'boolean', default: false },
      controls: { type: 'string' },
      endpoint: { type: 'string' },
      'lease-mode': { type: 'string' },
      'stalls-allowed': { type: 'boolean', default: false },
      workload: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const { runs, seed, controlRuns, controls: named } = chaosPlan(values);
  const workload = values.workload === undefined ? undefined : workloadNamed(values.workload, '--workload');
  // A control whose mistake cannot show in the workload (an email sent from the worker, where its units create none) is not run: said, with why.
  const skipped = workload === undefined ? [] : named.flatMap((c) => { const why = controlCannotShow(c, workload); return why === undefined ? [] : [{ control: c, why }]; });
  const controls = named.filter((c) => !skipped.some((k) => k.control === c));
  const endpoint = urlFlag('endpoint', values.endpoint);
  const concurrency = int('concurrency', values.concurrency, 3, 1, 16);
  if (endpoint !== undefined) await checkEndpoint(endpoint);
  const json = values.json;
  const leaseMode = values['lease-mode'];
  if (leaseMode !== undefined && leaseMode !== 'wall-clock' && leaseMode !== 'version-watch') {
    throw new InvalidInputError('--lease-mode', `must be wall-clock or version-watch, got "${leaseMode}"`);
  }
  const log = (s: string) => process.stderr.write(s + '\n');
  const protocolRuns: RunRecord[] = [];
  const summary = await chaos({
    runs,
    seed,
    controlRuns,
    controls,
    concurrency,
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(leaseMode === undefined ? {} : { leaseMode }),
    ...(workload === undefined || workload.name === DEFAULT_WORKLOAD ? {} : { workload }),
    historyDir: resolve('.chaos'),
    onRun: (r, done, total) => {
      if (r.variant === 'fenced') protocolRuns.push(r);
      const bad = Object.entries(r.report.invariants).filter(([, v]) => !v.ok).map(([k]) => k);
      const caught = r.variant !== 'fenced' && caughtBy(r.variant, r);
      const verdict = r.variant === 'fenced' ? (r.ok ? 'ok' : `VIOLATION ${bad.join(',')} ${r.error ?? ''}`) : caught ? `caught (${BREAKS[r.variant]})` : 'NOT CAUGHT';
      if (!json || (r.variant === 'fenced' ? !r.ok : !caught)) log(`[${done}/${total}] seed ${r.seed} ${r.variant}: ${verdict} (${r.elapsedMs} ms)`);
      else if (done % 10 === 0) log(`[${done}/${total}] …`);
    },
  });
  const { failedSeeds, uncaughtControls, ...core } = summary;
  if (json) {
    process.stdout.write(
      JSON.stringify({
        runs: core.runs,
        violations: core.violations,
        controls: core.controls,
        fenceRefusals: core.fenceRefusals,
        effects: core.effects,
        wire: core.wire,
        dimensions: core.dimensions,
        skewOverlaps: core.skewOverlaps,
        faults: core.faults,
        elapsedMs: core.elapsedMs,
        runsPerMinute: core.runsPerMinute,
        failedSeeds,
        uncaughtControls,
        workload: workload?.name ?? DEFAULT_WORKLOAD,
        skippedControls: skipped,
      }) + '\n',
    );
  } else {
    for (const line of summaryLines(summary, workload?.name)) process.stdout.write(line + '\n');
    for (const k of skipped) process.stdout.write(`  control ${k.control}: not run, ${k.why}\n`);
  }
  const rate = (t: Tally) => t.runs === 0 || t.caught / t.runs >= 0.95;
  const controlsOk = Object.values(core.controls).every((c) => rate(c.forced) && rate(c.timed));
  if (!values['stalls-allowed']) return failedSeeds.length === 0 && controlsOk ? 0 : 1;
  const verdict = stallVerdict(protocolRuns);
  log(`stalls allowed: ${verdict.finished.length} run(s) finished (${verdict.finished.join(' ') || 'none'}), ${verdict.stalled.length} cut short by the stall watchdog (${verdict.stalled.join(' ') || 'none'}), safety checked on all`);
  for (const f of verdict.failures) log(`FAILED ${f}`);
  return verdict.failures.length === 0 && controlsOk ? 0 : 1;
}

// A bad flag, an endpoint that is not DynamoDB, no Java: one line, exit 2. Anything else is a bug.
if (process.argv[1]?.endsWith('test/chaos/main.ts')) runScript(cli);
