/**
 * `npm run model`: model-checks model/fenced.pml (the lease, fence and idempotency protocol) and
 * model/effects.pml (documents and the outbox) with SPIN.
 *
 * For each variant (model/variants.ts): `spin -a` with its -D defines in a fresh temp dir, `gcc`
 * the verifier, run `./pan`, parse what it reports (model/check.ts). The safe models must verify
 * (0 errors, complete search), fenced.pml for safety and for the liveness property PROGRESS;
 * every broken variant must be refuted (>= 1 error, a trail). Trails are kept (with a readable
 * story of each counterexample) in a temp dir, or in `--keep-trails DIR`. Compiled verifiers are
 * kept in node_modules/.cache/fenced-model/, keyed by the model's text, the defines, the compile
 * flags and the tools' versions (model/verifier-cache.ts; `--no-cache` compiles every one).
 *
 *   npm run model                      table on stdout
 *   npm run model -- --json            one JSON object on stdout
 *   npm run model -- --only safe,NO_FENCE --keep-trails /tmp/trails --jobs 1 --timeout 60
 *   npm run model -- --no-cache        compile every verifier anew
 *
 * Exit status (EXIT): 0 when the safe models verify and every broken variant is refuted; 1 when a
 * check came out otherwise (a counterexample in a safe model, a broken variant not refuted, a
 * failed build); 2 on bad arguments or when spin/gcc are missing; 3 when nothing came out wrong
 * but some check hit its time limit: a timeout is not a counterexample (rerun with --timeout N).
 * Each check's default limit is sized from the states it was measured to store (defaultTimeoutSec).
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { exitStatusOf } from '../cli/shared/entry.js';
import { checkTools, runCheck, type CheckResult } from './check.js';
import { defaultTimeoutSec, MODEL_FILES, VARIANTS, type CheckKind, type Expectation, type ModelName, type VariantSpec } from './variants.js';

export { ToolMissingError, type CheckResult } from './check.js';
export { defaultTimeoutSec, MODEL_FILES, VARIANTS, type CheckKind, type Expectation, type ModelName, type VariantSpec } from './variants.js';

/** A bad argument to the runner (an unknown variant, a malformed number or define): exit status 2. */
export class ModelUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelUsageError';
  }
}

export interface VariantResult {
  /** Which model file: fenced.pml or effects.pml. */
  readonly model: ModelName;
  readonly name: string;
  readonly description: string;
  readonly defines: readonly string[];
  readonly expect: Expectation;
  /** Sum over the variant's checks. */
  errors: number;
  /** The first check's figures (safety when there is one). */
  states: number;
  depth: number;
  timeSec: number;
  complete: boolean;
  trail?: string;
  violation?: string;
  /** Expectation met: verify => 0 errors and complete; refute => >= 1 error with a trail. */
  ok: boolean;
  /** A check hit its time limit (and none came out wrong): no verdict either way. */
  timedOut: boolean;
  checks: Partial<Record<CheckKind, CheckResult>>;
}

export interface ModelReport {
  ok: boolean;
  profile: 'full' | 'quick';
  spin: string;
  /** The model files checked, by name. */
  models: Partial<Record<ModelName, string>>;
  trailsDir: string;
  /** Verifiers this run compiled and reused from the cache; no cacheDir when it kept none (--no-cache). */
  verifiers: { compiled: number; reused: number; cacheDir?: string };
  totalSec: number;
  variants: Record<string, VariantResult>;
  /** 'ok' (exit 0), 'unexpected' (exit 1: some check came out wrong), 'timeout' (exit 3: only time limits hit). */
  verdict: Verdict;
}

export type Verdict = 'ok' | 'unexpected' | 'timeout';

/** Where `npm run model` and `npm test` keep compiled verifiers: beside vite's, wiped with node_modules. */
export const DEFAULT_CACHE_DIR = resolve(import.meta.dirname, '..', 'node_modules', '.cache', 'fenced-model');

/** The exit statuses of `npm run model`. */
export const EXIT = { ok: 0, unexpected: 1, usage: 2, timeout: 3 } as const;

export interface RunOptions {
  /** Variant names to run (default: all). */
  only?: readonly string[];
  /** Where trails and stories go (default: a new dir under os.tmpdir()). */
  trailsDir?: string;
  /** pan runs in parallel (default 2: the CI machine has 2 cores). */
  jobs?: number;
  /**
   * Per-check wall-clock limit in seconds (spin + gcc + pan). Default: each check's own
   * (defaultTimeoutSec: from its measured states, at least 120).
   */
  timeoutSec?: number;
  /** pan's memory bound in MB (-DMEMLIM). Default 2048. */
  memLimitMb?: number;
  /** Extra defines applied to every variant (e.g. smaller bounds); they win over the variant's. */
  extraDefines?: readonly string[];
  /** 'quick' applies each variant's smaller test bounds (VariantSpec.quick). Default 'full'. */
  profile?: 'full' | 'quick';
  /** Where compiled verifiers are kept between runs (DEFAULT_CACHE_DIR); null keeps none. */
  cacheDir?: string | null;
  /** Override a model's file (tests). */
  modelFiles?: Partial<Record<ModelName, string>>;
  onResult?: (v: VariantResult) => void;
}

/** The check came out as the variant expects: verify => 0 errors and complete; refute => >= 1 error with a trail. */
function expectationMet(expect: Expectation, c: CheckResult): boolean {
  return expect === 'verify' ? c.errors === 0 && c.complete : c.errors >= 1 && c.trail !== undefined;
}

function summarise(spec: VariantSpec, checks: Partial<Record<CheckKind, CheckResult>>): VariantResult {
  const list = spec.checks.map((k) => checks[k]).filter((c): c is CheckResult => c !== undefined);
  const first = list[0];
  const errors = list.reduce((n, c) => n + (c.errors < 0 ? 0 : c.errors), 0);
  const broken = list.some((c) => c.errors < 0 || c.timedOut);
  const wrong = list.some((c) => !c.timedOut && (c.errors < 0 || !expectationMet(spec.expect, c)));
  const withTrail = list.find((c) => c.trail !== undefined);
  const ok = !broken && list.length === spec.checks.length && list.every((c) => expectationMet(spec.expect, c));
  const violation = (withTrail ?? list.find((c) => c.violation !== undefined))?.violation;
  return {
    model: spec.model,
    name: spec.name,
    description: spec.description,
    defines: spec.defines,
    expect: spec.expect,
    errors,
    states: first?.states ?? 0,
    depth: first?.depth ?? 0,
    timeSec: Number(list.reduce((t, c) => t + c.wallSec, 0).toFixed(2)),
    complete: list.every((c) => c.complete),
    ...(withTrail?.trail === undefined ? {} : { trail: withTrail.trail }),
    ...(violation === undefined ? {} : { violation }),
    ok,
    timedOut: !wrong && list.some((c) => c.timedOut),
    checks,
  };
}

/** What the run came to: a timeout is not a counterexample, and never hides one. */
export function verdictOf(variants: readonly VariantResult[]): Verdict {
  if (variants.every((v) => v.ok)) return 'ok';
  return variants.some((v) => !v.ok && !v.timedOut) ? 'unexpected' : 'timeout';
}

/** A limit to rerun with: twice the largest limit a check hit. */
export function suggestedTimeoutSec(report: Pick<ModelReport, 'variants'>): number {
  const hit = Object.values(report.variants).flatMap((v) => Object.values(v.checks).filter((c) => c?.timedOut === true).map((c) => c!.limitSec));
  return 2 * Math.max(0, ...hit);
}

/** The last line of the table, and the exit status. */
export function verdictLine(report: ModelReport): { code: number; line: string } {
  if (report.verdict === 'ok') return { code: EXIT.ok, line: 'OK: the safe models verify and every broken variant is refuted.' };
  if (report.verdict === 'unexpected') return { code: EXIT.unexpected, line: 'FAILED: see UNEXPECTED rows above (and TIMEOUT ones, if any).' };
  const names = Object.values(report.variants).filter((v) => v.timedOut).map((v) => v.name);
  return { code: EXIT.timeout, line: `${timeoutNote(report)}; hit by ${names.join(', ')}. Nothing came out wrong.` };
}

const timeoutNote = (report: Pick<ModelReport, 'variants'>) => `TIMEOUT (not a counterexample): rerun with --timeout ${suggestedTimeoutSec(report)}`;

/** Runs every variant (or `only`) and reports. Throws ToolMissingError if spin or gcc is missing. */
export async function runModel(options: RunOptions = {}): Promise<ModelReport> {
  const t0 = performance.now();
  // Bad arguments first, before looking for the tools.
  const unknown = (options.only ?? []).filter((n) => !VARIANTS.some((v) => v.name === n));
  if (unknown.length > 0) throw new ModelUsageError(`unknown variant(s): ${unknown.join(', ')}; known: ${VARIANTS.map((v) => v.name).join(', ')}`);
  const specs = options.only === undefined ? VARIANTS : options.only.map((n) => VARIANTS.find((v) => v.name === n)!);
  const { spin, tools } = await checkTools();
  const cacheDir = options.cacheDir === undefined ? DEFAULT_CACHE_DIR : options.cacheDir === null ? undefined : resolve(options.cacheDir);
  const models: Partial<Record<ModelName, string>> = {};
  for (const s of specs) models[s.model] = resolve(options.modelFiles?.[s.model] ?? MODEL_FILES[s.model]);
  const trailsDir = options.trailsDir === undefined ? mkdtempSync(join(tmpdir(), 'model-trails-')) : resolve(options.trailsDir);
  mkdirSync(trailsDir, { recursive: true });
  const cfg = {
    memLimitMb: options.memLimitMb ?? 2048,
    extraDefines: options.extraDefines ?? [],
    profile: options.profile ?? 'full',
    trailsDir,
    ...(cacheDir === undefined ? {} : { cache: { dir: cacheDir, tools } }),
  };

  // Longest first (liveness, then verifications), so two lanes finish together.
  const tasks = specs
    .flatMap((spec) => spec.checks.map((kind) => ({ spec, kind })))
    .sort((a, b) => weight(b) - weight(a));
  const done = new Map<string, Partial<Record<CheckKind, CheckResult>>>();
  const variants: Record<string, VariantResult> = {};
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) {
      const task = tasks[next++]!;
      const timeoutSec = options.timeoutSec ?? defaultTimeoutSec(task.spec, task.kind, cfg.profile, cfg.extraDefines);
      const r = await runCheck(task.spec, task.kind, { ...cfg, timeoutSec, modelFile: models[task.spec.model]! });
      const checks = done.get(task.spec.name) ?? {};
      checks[task.kind] = r;
      done.set(task.spec.name, checks);
      if (task.spec.checks.every((k) => checks[k] !== undefined)) {
        variants[task.spec.name] = summarise(task.spec, checks);
        options.onResult?.(variants[task.spec.name]!);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.jobs ?? 2, tasks.length)) }, lane));

  const ordered: Record<string, VariantResult> = {};
  for (const s of specs) ordered[s.name] = variants[s.name]!;
  const checks = Object.values(ordered).flatMap((v) => Object.values(v.checks)).filter((c): c is CheckResult => c !== undefined && c.errors >= 0);
  const reused = checks.filter((c) => c.verifierCached).length;
  return {
    ok: specs.every((s) => ordered[s.name]?.ok === true),
    profile: cfg.profile,
    spin,
    models,
    trailsDir,
    verifiers: { compiled: checks.length - reused, reused, ...(cacheDir === undefined ? {} : { cacheDir }) },
    totalSec: Number(((performance.now() - t0) / 1000).toFixed(2)),
    variants: ordered,
    verdict: verdictOf(Object.values(ordered)),
  };
}

function weight(t: { spec: VariantSpec; kind: CheckKind }): number {
  return (t.kind === 'liveness' && t.spec.expect === 'verify' ? 4 : 0) + (t.spec.expect === 'verify' ? 2 : 0);
}

const fmtInt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');

export function formatTable(report: ModelReport): string {
  const header = ['model', 'variant', 'check', 'expect', 'result', 'errors', 'states', 'transitions', 'depth', 'pan s', 'wall s', 'MB', 'defines', 'violation / trail'];
  const rows: string[][] = [];
  for (const v of Object.values(report.variants)) {
    for (const [kind, c] of Object.entries(v.checks)) {
      if (c === undefined) continue;
      const met = expectationMet(v.expect, c);
      rows.push([
        v.model,
        v.name,
        kind,
        v.expect,
        c.timedOut ? 'TIMEOUT' : met ? (v.expect === 'verify' ? 'verified' : 'refuted') : 'UNEXPECTED',
        String(c.errors),
        fmtInt(c.states),
        fmtInt(c.transitions),
        String(c.depth),
        c.panSec.toFixed(2),
        c.wallSec.toFixed(1),
        c.memoryMb.toFixed(0),
        c.defines.join(' ') || '-',
        c.timedOut ? `${c.violation ?? ''}: ${timeoutNote(report)}` : c.errors === 0 ? (c.complete ? '' : 'search incomplete') : `${c.violation ?? ''}${c.trail ? `  ${c.trail}` : ''}`,
      ]);
    }
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i >= 5 && i <= 11 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  const out = [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
  out.push('', `${report.spin}; ${report.profile} bounds; models ${Object.values(report.models).join(', ')}; trails in ${report.trailsDir}; verifiers ${report.verifiers.compiled} compiled, ${report.verifiers.reused} reused${report.verifiers.cacheDir === undefined ? '' : ` (kept in ${report.verifiers.cacheDir})`}; ${report.totalSec} s in all`);
  for (const v of Object.values(report.variants)) {
    const c = Object.values(v.checks).find((x) => x?.story !== undefined);
    if (c?.story === undefined) continue;
    out.push('', `${v.name}: ${c.violation ?? ''}`, ...c.story.map((s) => `  ${s}`));
  }
  out.push('', verdictLine(report).line);
  return out.join('\n');
}

export async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        json: { type: 'boolean', default: false },
        quick: { type: 'boolean', default: false },
        'keep-trails': { type: 'string' },
        only: { type: 'string' },
        jobs: { type: 'string' },
        timeout: { type: 'string' },
        'mem-limit': { type: 'string' },
        define: { type: 'string', multiple: true },
        'no-cache': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    return EXIT.usage;
  }
  if (values.help) {
    process.stdout.write(
      'usage: npm run model -- [--json] [--quick] [--keep-trails DIR] [--only safe,NO_FENCE,...] [--jobs N] [--timeout SEC] [--mem-limit MB] [--define NAME=V ...] [--no-cache]\n' +
        `variants: ${VARIANTS.map((v) => v.name).join(', ')}\n` +
        '--timeout SEC: the limit of every check (spin + gcc + pan); default each check its own, sized from its measured states (at least 120 s)\n' +
        `--no-cache: compile every verifier anew (default: reuse the one kept for the same model text, defines, flags and tools in ${DEFAULT_CACHE_DIR})\n` +
        'exit status: 0 all as expected; 1 a check came out wrong (UNEXPECTED); 2 bad arguments or spin/gcc missing;\n' +
        '  3 TIMEOUT only: some check hit its time limit, which is not a counterexample (rerun with a larger --timeout)\n',
    );
    return 0;
  }
  const positive = (name: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new ModelUsageError(`--${name} must be a positive integer, got ${JSON.stringify(v)}`);
    return n;
  };
  let opts: RunOptions;
  try {
    const jobs = positive('jobs', values.jobs);
    const timeoutSec = positive('timeout', values.timeout);
    const memLimitMb = positive('mem-limit', values['mem-limit']);
    for (const d of values.define ?? []) {
      if (!/^[A-Z_][A-Z0-9_]*(=\d+)?$/.test(d)) throw new ModelUsageError(`--define must look like NAME or NAME=123, got ${JSON.stringify(d)}`);
    }
    opts = {
      ...(values.only === undefined ? {} : { only: values.only.split(',').map((s) => s.trim()).filter(Boolean) }),
      ...(values['keep-trails'] === undefined ? {} : { trailsDir: values['keep-trails'] }),
      ...(values.quick ? { profile: 'quick' as const } : {}),
      ...(jobs === undefined ? {} : { jobs }),
      ...(timeoutSec === undefined ? {} : { timeoutSec }),
      ...(memLimitMb === undefined ? {} : { memLimitMb }),
      ...(values.define === undefined ? {} : { extraDefines: values.define }),
      ...(values['no-cache'] ? { cacheDir: null } : {}),
    };
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    return EXIT.usage;
  }

  let report: ModelReport;
  try {
    if (!values.json) opts.onResult = (v) => process.stderr.write(`  ${v.name}: ${v.ok ? 'as expected' : v.timedOut ? 'TIMEOUT (not a counterexample)' : 'UNEXPECTED'} (${v.timeSec} s)\n`);
    report = await runModel(opts);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    return EXIT.usage;
  }
  process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${formatTable(report)}\n`);
  return verdictLine(report).code;
}

const invoked = process.argv[1] === undefined ? undefined : pathToFileURL(resolve(process.argv[1])).href;
// exitCode, not exit(): the process ends when the checks' children have.
if (invoked === import.meta.url) void exitStatusOf(main, process.argv.slice(2), { bugStatus: 2 }).then((status) => (process.exitCode = status));

