/**
 * `npm run chaos -- --runs N --seed S [--json] [--concurrency K] [--control-runs M] [--no-controls]`
 *
 * Runs N seeded schedules of the real protocol and, by default, M runs of each negative control,
 * on one embedded DynamoDB Local. A real-protocol run that violates an invariant, and a control
 * run that is NOT caught, print their seed and save their history under .chaos/.
 * `--runs 1 --seed S` replays seed S.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createDynamo, InvalidInputError } from '../../lib/protocol/index.js';
import { METRIC } from '../../lib/workflow/index.js';
import { startDynamoLocal } from '../../cli/dynamodb-local.js';
import { intFlag as int } from '../../cli/flags.js';
import { streamsClient } from '../../cli/streams.js';
import type { InvariantName } from '../../cli/invariants.js';
import { CONTROLS, type Variant } from './controls.js';
import { chaosRun, type RunRecord } from './harness.js';
import type { ChaosLeaseMode } from './schedule.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

type Tally = { runs: number; caught: number };

export interface ChaosSummary {
  runs: number;
  /** Per invariant, real-protocol runs that broke it; LEASE: a lease held by two while every clock kept its bound. */
  violations: Record<InvariantName | 'LEASE', number>;
  /** Per control: all runs, and those with the incident's interleaving forced (even seeds) or left to timing (odd). */
  controls: Record<(typeof CONTROLS)[number], Tally & { forced: Tally; timed: Tally }>;
  /** Real-protocol runs per lease mode, with clock skew beyond the bound, with a DR drill. */
  dimensions: { wallClock: number; versionWatch: number; skewed: number; drills: number; successorCrashes: number };
  /** Takeovers before the replaced holder's expiry (true time) in skewed runs: allowed, FENCE must still hold. */
  skewOverlaps: { runs: number; overlaps: number };
  /** Real-protocol runs in which the fence refused at least one stale write, and how many it refused in all. */
  fenceRefusals: { runs: number; writes: number };
  failedSeeds: number[];
  uncaughtControls: { variant: string; seed: number }[];
  elapsedMs: number;
  runsPerMinute: number;
}

export interface ChaosOptions {
  runs: number;
  seed: number;
  concurrency: number;
  controlRuns: number;
  endpoint?: string;
  historyDir?: string;
  /** Runs per embedded DynamoDB Local before it is replaced by a fresh one. Default 100. */
  recycleEvery?: number;
  /** Force one lease mode for every run (default: a third of the seeds run version-watch). */
  leaseMode?: ChaosLeaseMode;
  onRun?: (r: RunRecord, done: number, total: number) => void;
}

const tally = (): Tally => ({ runs: 0, caught: 0 });

export async function chaos(opts: ChaosOptions): Promise<ChaosSummary> {
  const started = Date.now();
  const tasks: { seed: number; variant: Variant }[] = [];
  for (let i = 0; i < opts.runs; i++) tasks.push({ seed: opts.seed + i, variant: 'fenced' });
  for (const c of CONTROLS) for (let i = 0; i < opts.controlRuns; i++) tasks.push({ seed: opts.seed + i, variant: c });
  const summary: ChaosSummary = {
    runs: opts.runs,
    violations: { FENCE: 0, ONCE: 0, PROGRESS: 0, TOKENS: 0, LEASE: 0 },
    controls: Object.fromEntries(CONTROLS.map((c) => [c, { ...tally(), forced: tally(), timed: tally() }])) as ChaosSummary['controls'],
    dimensions: { wallClock: 0, versionWatch: 0, skewed: 0, drills: 0, successorCrashes: 0 },
    skewOverlaps: { runs: 0, overlaps: 0 },
    fenceRefusals: { runs: 0, writes: 0 },
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
  // DynamoDB Local slows down as thousands of tables and streams come and go in one process:
  // an embedded instance is recycled every `recycleEvery` runs.
  const chunk = opts.endpoint === undefined ? (opts.recycleEvery ?? 100) : tasks.length;
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
            const r = await chaosRun({ endpoint, direct, streams }, task.seed, task.variant, opts.leaseMode === undefined ? {} : { leaseMode: opts.leaseMode });
            done++;
            if (task.variant === 'fenced') {
              for (const [name, inv] of Object.entries(r.report.invariants)) if (!inv.ok) summary.violations[name as InvariantName]++;
              if (r.leaseViolation) summary.violations.LEASE++;
              countDimensions(summary, r);
              const refused = r.metrics[METRIC.staleGenerationRejected] ?? 0;
              summary.fenceRefusals.writes += refused;
              if (refused > 0) summary.fenceRefusals.runs++;
              if (!r.ok) {
                summary.failedSeeds.push(r.seed);
                save(r);
              }
            } else {
              const c = summary.controls[task.variant];
              const caught = !r.report.ok || r.leaseViolation;
              for (const t of [c, r.forced ? c.forced : c.timed]) {
                t.runs++;
                if (caught) t.caught++;
              }
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
  summary.runsPerMinute = Math.round((tasks.length / summary.elapsedMs) * 60_000 * 10) / 10;
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
}

async function cli(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      runs: { type: 'string' },
      seed: { type: 'string' },
      concurrency: { type: 'string' },
      'control-runs': { type: 'string' },
      'no-controls': { type: 'boolean', default: false },
      endpoint: { type: 'string' },
      'lease-mode': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(
      'npm run chaos -- --runs N --seed S [--json] [--concurrency K] [--control-runs M] [--no-controls] [--lease-mode M] [--endpoint URL]\n' +
        '  N runs of the real protocol (seeds S..S+N-1) and M runs of each negative control\n' +
        '  (default M = clamp(N/10, 10, 100)); failing histories are saved under .chaos/\n',
    );
    return 0;
  }
  const runs = int('runs', values.runs, 20, 0, 1_000_000);
  const seed = int('seed', values.seed, 1, 0, 2 ** 31);
  const controlRuns = values['no-controls'] ? 0 : int('control-runs', values['control-runs'], Math.min(100, Math.max(10, Math.ceil(runs / 10))), 0, 100_000);
  const json = values.json;
  const leaseMode = values['lease-mode'];
  if (leaseMode !== undefined && leaseMode !== 'wall-clock' && leaseMode !== 'version-watch') {
    throw new InvalidInputError('--lease-mode', `must be wall-clock or version-watch, got "${leaseMode}"`);
  }
  const log = (s: string) => process.stderr.write(s + '\n');
  const summary = await chaos({
    runs,
    seed,
    controlRuns,
    concurrency: int('concurrency', values.concurrency, 3, 1, 16),
    ...(values.endpoint === undefined ? {} : { endpoint: values.endpoint }),
    ...(leaseMode === undefined ? {} : { leaseMode }),
    historyDir: resolve('.chaos'),
    onRun: (r, done, total) => {
      const bad = Object.entries(r.report.invariants).filter(([, v]) => !v.ok).map(([k]) => k);
      const verdict = r.variant === 'fenced' ? (r.ok ? 'ok' : `VIOLATION ${bad.join(',')} ${r.error ?? ''}`) : r.report.ok ? 'NOT CAUGHT' : `caught (${bad.join(',')})`;
      if (!json || r.variant === 'fenced' ? !r.ok : r.report.ok) log(`[${done}/${total}] seed ${r.seed} ${r.variant}: ${verdict} (${r.elapsedMs} ms)`);
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
        dimensions: core.dimensions,
        skewOverlaps: core.skewOverlaps,
        elapsedMs: core.elapsedMs,
        runsPerMinute: core.runsPerMinute,
        failedSeeds,
        uncaughtControls,
      }) + '\n',
    );
  } else {
    const w = (s: string) => process.stdout.write(s + '\n');
    w(`\n${core.runs} runs of the real protocol: violations ${Object.entries(core.violations).map(([k, v]) => `${k}=${v}`).join(' ')}`);
    w(`  the fence refused ${core.fenceRefusals.writes} stale writes, in ${core.fenceRefusals.runs} of ${core.runs} runs`);
    const d = core.dimensions;
    w(`  ${d.wallClock} wall-clock, ${d.versionWatch} version-watch; ${d.skewed} with clock skew beyond the bound (${core.skewOverlaps.overlaps} lease overlaps, fenced); ${d.drills} DR drills; ${d.successorCrashes} successors crashed after the fence raise`);
    const pct = (t: Tally) => `${t.caught}/${t.runs}`;
    for (const [c, v] of Object.entries(core.controls)) w(`  control ${c.padEnd(20)} caught ${pct(v)} (${v.runs ? Math.round((v.caught / v.runs) * 100) : 0}%): forced ${pct(v.forced)}, timed ${pct(v.timed)}`);
    w(`${Math.round(core.elapsedMs / 1000)} s, ${core.runsPerMinute} runs/min`);
    if (failedSeeds.length) w(`failing seeds (histories in .chaos/): ${failedSeeds.join(' ')}`);
    if (uncaughtControls.length) w(`uncaught controls: ${uncaughtControls.map((u) => `${u.variant}@${u.seed}`).join(' ')}`);
  }
  const rate = (t: Tally) => t.runs === 0 || t.caught / t.runs >= 0.95;
  const controlsOk = Object.values(core.controls).every((c) => rate(c.forced) && rate(c.timed));
  return failedSeeds.length === 0 && controlsOk ? 0 : 1;
}

if (process.argv[1]?.endsWith('test/chaos/main.ts')) {
  cli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`${e instanceof InvalidInputError ? `error: ${e.message}` : e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(e instanceof InvalidInputError ? 2 : 1);
    },
  );
}
