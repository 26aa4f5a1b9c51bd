/**
 * `npm run model`: model-checks model/fenced.pml with SPIN.
 *
 * For each variant: `spin -a` (with its -D defines) in a fresh temp dir, `gcc` the verifier,
 * run `./pan`, parse what it reports. The safe model must verify (0 errors, complete search)
 * for safety and for the liveness property PROGRESS; every broken variant must be refuted
 * (>= 1 error, a trail). Trails are kept (with a readable story of each counterexample) in a
 * temp dir, or in `--keep-trails DIR`; nothing is written inside the repository.
 *
 *   npm run model                      table on stdout
 *   npm run model -- --json            one JSON object on stdout
 *   npm run model -- --only safe,NO_FENCE --keep-trails /tmp/trails --jobs 1 --timeout 60
 *
 * Exit status: 0 when the safe model verifies and every broken variant is refuted; 1 when not;
 * 2 on bad arguments or when spin/gcc are missing.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const MODEL_FILE = fileURLToPath(new URL('./fenced.pml', import.meta.url));

export type CheckKind = 'safety' | 'liveness';
export type Expectation = 'verify' | 'refute';

export interface VariantSpec {
  readonly name: string;
  readonly description: string;
  /** Preprocessor defines for spin -a, e.g. ['NO_FENCE'] or ['NW=3']. */
  readonly defines: readonly string[];
  readonly checks: readonly CheckKind[];
  readonly expect: Expectation;
  /** Smaller bounds for `--quick` (the test), per check; merged over `defines`. */
  readonly quick?: Partial<Record<CheckKind, readonly string[]>>;
}

/** The variants `npm run model` checks. Bounds are the model's defaults unless defined here. */
export const VARIANTS: readonly VariantSpec[] = [
  {
    name: 'safe',
    description: 'the protocol as implemented: 2 workers sharing one owner id, 2 units, 1 crash, 1 lapse, 1 ambiguous request',
    defines: [],
    checks: ['safety', 'liveness'],
    expect: 'verify',
    quick: { liveness: ['AMBIG=0'] },
  },
  {
    name: 'safe-3w',
    description: 'the protocol with 3 workers (owner ids 1,2,1), 1 crash, 1 lapse, queue of 1, no ambiguous request',
    defines: ['NW=3', 'NOWNERS=2', 'AMBIG=0', 'QMAX=1'],
    checks: ['safety'],
    expect: 'verify',
    quick: { safety: ['U=1'] },
  },
  {
    name: 'safe-vw',
    description: 'version-watch: the requeue receiver watches the version a full duration on its own clock; the sweeper only triggers',
    defines: ['VERSION_WATCH'],
    checks: ['safety', 'liveness'],
    expect: 'verify',
    quick: { safety: ['U=1'], liveness: ['AMBIG=0', 'U=1'] },
  },
  {
    name: 'safe-seal',
    description: 'a DR drill at any moment: the seal raises every lease counter and the fence its key protects, created if absent',
    defines: ['SEAL'],
    checks: ['safety'],
    expect: 'verify',
    quick: { safety: ['U=1'] },
  },
  {
    name: 'NO_FENCE',
    description: 'lease only: no fence raise, no fence condition in the unit transaction',
    defines: ['NO_FENCE'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    name: 'CHECK_THEN_ACT',
    description: 'generation read and compared in code, then written without a condition',
    defines: ['CHECK_THEN_ACT'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    name: 'RELEASE_NO_GEN',
    description: 'release and renew conditioned on the owner only',
    defines: ['RELEASE_NO_GEN'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    name: 'COUNTER_RESET',
    description: 'release deletes the lease item, so the generation restarts',
    defines: ['COUNTER_RESET'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    name: 'SWEEPER_COUNT',
    description: "version-watch claimed on the sweeper's count of unchanged sweeps, with no wait of the claimant's own",
    defines: ['VERSION_WATCH', 'SWEEPER_COUNT'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    name: 'SEAL_SKIPS_ABSENT',
    description: 'the seal raises only fences that exist: an old holder paused before its first raise creates one below the floor',
    defines: ['SEAL', 'SEAL_SKIPS_ABSENT'],
    checks: ['safety'],
    expect: 'refute',
  },
  {
    name: 'NO_SWEEPER',
    description: 'liveness control: no sweeper (and no end-state check): only PROGRESS can catch it',
    defines: ['NO_SWEEPER', 'NO_ENDCHECK'],
    checks: ['liveness'],
    expect: 'refute',
  },
];

export interface CheckResult {
  readonly kind: CheckKind;
  /** pan's error count (assertion violations, invalid end states, acceptance cycles). */
  errors: number;
  /** First violation pan reported, e.g. "assertion violated (g>=started)". */
  violation?: string;
  states: number;
  matched: number;
  transitions: number;
  depth: number;
  stateVectorBytes: number;
  /** pan's own elapsed time. */
  panSec: number;
  /** Wall time of spin -a + gcc + pan. */
  wallSec: number;
  memoryMb: number;
  /** The search covered the whole state space (no depth/memory truncation, no timeout). */
  complete: boolean;
  timedOut: boolean;
  trail?: string;
  story?: string[];
  replay?: string;
  /** The defines this check was generated with (variant + profile + extra). */
  defines: string[];
  compileFlags: string[];
  panArgs: string[];
}

export interface VariantResult {
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
  checks: Partial<Record<CheckKind, CheckResult>>;
}

export interface ModelReport {
  ok: boolean;
  profile: 'full' | 'quick';
  spin: string;
  model: string;
  trailsDir: string;
  totalSec: number;
  variants: Record<string, VariantResult>;
}

export interface RunOptions {
  /** Variant names to run (default: all). */
  only?: readonly string[];
  /** Where trails and stories go (default: a new dir under os.tmpdir()). */
  trailsDir?: string;
  /** pan runs in parallel (default 2: the CI machine has 2 cores). */
  jobs?: number;
  /** Per-check wall-clock limit in seconds (spin + gcc + pan). Default 120. */
  timeoutSec?: number;
  /** pan's memory bound in MB (-DMEMLIM). Default 2048. */
  memLimitMb?: number;
  /** Extra defines applied to every variant (e.g. smaller bounds); they win over the variant's. */
  extraDefines?: readonly string[];
  /** 'quick' applies each variant's smaller test bounds (VariantSpec.quick). Default 'full'. */
  profile?: 'full' | 'quick';
  /** Override the model file (tests). */
  modelFile?: string;
  onResult?: (v: VariantResult) => void;
}

export class ToolMissingError extends Error {
  constructor(readonly tool: string, cause: unknown) {
    super(
      tool === 'spin'
        ? 'spin is not installed (or not on PATH). Install it: `apt-get install spin` (Debian/Ubuntu); .ci/run installs it when missing.'
        : `${tool} is not installed (or not on PATH); the model checker needs it to compile the verifier.`,
      { cause },
    );
    this.name = 'ToolMissingError';
  }
}

interface Exec {
  stdout: string;
  stderr: string;
  code: number | null;
  timedOut: boolean;
}

function run(cmd: string, args: readonly string[], cwd: string, timeoutMs: number): Promise<Exec> {
  return new Promise((resolveRun, rejectRun) => {
    execFile(
      cmd,
      args as string[],
      { cwd, timeout: Math.max(1, Math.ceil(timeoutMs)), killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
          rejectRun(new ToolMissingError(cmd, error));
          return;
        }
        const timedOut = error !== null && (error as { killed?: boolean }).killed === true;
        const code = error === null ? 0 : typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : null;
        resolveRun({ stdout: String(stdout), stderr: String(stderr), code, timedOut });
      },
    );
  });
}

/** The installed spin's version line; throws ToolMissingError when spin or gcc is absent. */
async function checkTools(): Promise<string> {
  const spin = await run('spin', ['-V'], tmpdir(), 10_000);
  await run('gcc', ['--version'], tmpdir(), 10_000);
  return spin.stdout.trim() || spin.stderr.trim();
}

const num = (re: RegExp, text: string): number => {
  const m = re.exec(text);
  return m?.[1] === undefined ? 0 : Number(m[1]);
};

/** Parses ./pan's report. */
function parsePan(out: string): Omit<CheckResult, 'kind' | 'wallSec' | 'timedOut' | 'defines' | 'compileFlags' | 'panArgs'> {
  const errorsMatch = /errors: (\d+)/.exec(out);
  const violation = /^pan:\d+: (.+?) \(at depth \d+\)/m.exec(out)?.[1] ?? /^pan: (invalid end state.*)$/m.exec(out)?.[1];
  const truncated =
    /max search depth too small/.test(out) ||
    /reached -DMEMLIM bound/.test(out) ||
    /out of memory/.test(out) ||
    /Search not completed/.test(out);
  const errors = errorsMatch?.[1] === undefined ? -1 : Number(errorsMatch[1]);
  return {
    errors,
    ...(violation === undefined ? {} : { violation }),
    states: num(/([\d.e+]+) states, stored/, out),
    matched: num(/([\d.e+]+) states, matched/, out),
    transitions: num(/([\d.e+]+) transitions \(/, out),
    depth: num(/depth reached (\d+)/, out),
    stateVectorBytes: num(/State-vector (\d+) byte/, out),
    panSec: num(/pan: elapsed time ([\d.e+]+) seconds/, out),
    memoryMb: num(/([\d.]+)\s+total actual memory usage/, out),
    // A refuted run stops at its first error: "not completed" is expected there.
    complete: errors >= 0 && !truncated,
  };
}

/** NAME or NAME=V; a later definition of the same NAME replaces an earlier one. */
function mergeDefines(...lists: readonly (readonly string[] | undefined)[]): string[] {
  const byName = new Map<string, string>();
  for (const d of lists.flatMap((l) => l ?? [])) byName.set(d.split('=')[0]!, d);
  return [...byName.values()];
}

function flagsFor(kind: CheckKind, expect: Expectation, memLimitMb: number): { cc: string[]; pan: string[] } {
  // The verifications run long enough to pay for -O2; the refutations stop at once: compile fast.
  const common = [expect === 'verify' ? '-O2' : '-O0', '-w', `-DMEMLIM=${memLimitMb}`];
  if (kind === 'liveness') {
    // Nested DFS for acceptance cycles under weak fairness (-f); NFAIR sized for up to 7 processes.
    return { cc: [...common, '-DNFAIR=3', '-DCOLLAPSE'], pan: ['-a', '-f', '-m200000', '-n'] };
  }
  if (expect === 'refute') {
    // Breadth-first: the shortest counterexample, the most readable trail.
    return { cc: [...common, '-DSAFETY', '-DNOCLAIM', '-DBFS'], pan: ['-n'] };
  }
  return { cc: [...common, '-DSAFETY', '-DNOCLAIM', '-DCOLLAPSE'], pan: ['-m200000', '-n'] };
}

async function runCheck(
  spec: VariantSpec,
  kind: CheckKind,
  opts: Required<Pick<RunOptions, 'timeoutSec' | 'memLimitMb' | 'extraDefines' | 'profile'>> & { modelFile: string; trailsDir: string },
): Promise<CheckResult> {
  const started = performance.now();
  const deadline = started + opts.timeoutSec * 1000;
  const left = () => deadline - performance.now();
  const work = mkdtempSync(join(tmpdir(), `fenced-model-${spec.name}-${kind}-`));
  const defines = mergeDefines(spec.defines, opts.profile === 'quick' ? spec.quick?.[kind] : undefined, opts.extraDefines).map((d) => `-D${d}`);
  const { cc, pan } = flagsFor(kind, spec.expect, opts.memLimitMb);
  const base = { kind, defines: defines.map((d) => d.slice(2)), compileFlags: cc, panArgs: pan };
  const failed = (why: string, timedOut = false): CheckResult => ({
    ...base,
    errors: -1,
    violation: why,
    states: 0,
    matched: 0,
    transitions: 0,
    depth: 0,
    stateVectorBytes: 0,
    panSec: 0,
    wallSec: (performance.now() - started) / 1000,
    memoryMb: 0,
    complete: false,
    timedOut,
  });
  try {
    copyFileSync(opts.modelFile, join(work, 'fenced.pml'));
    const gen = await run('spin', ['-a', ...defines, 'fenced.pml'], work, left());
    if (gen.code !== 0 || !existsSync(join(work, 'pan.c'))) return failed(`spin -a failed: ${(gen.stderr || gen.stdout).trim()}`, gen.timedOut);
    const comp = await run('gcc', [...cc, '-o', 'pan', 'pan.c'], work, left());
    if (comp.code !== 0) return failed(`gcc failed: ${comp.stderr.trim().slice(0, 2000)}`, comp.timedOut);
    const verify = await run('./pan', pan, work, left());
    if (verify.timedOut) return failed(`pan exceeded the ${opts.timeoutSec} s limit`, true);
    const parsed = parsePan(verify.stdout + verify.stderr);
    const result: CheckResult = { ...base, ...parsed, wallSec: 0, timedOut: false };
    if (parsed.errors !== 0 && parsed.errors !== -1) {
      // A negative control needs its trail; a failing safe model even more so.
      const trailIn = join(work, 'fenced.pml.trail');
      if (existsSync(trailIn)) {
        const stem = `${spec.name}-${kind}`;
        const trail = join(opts.trailsDir, `${stem}.trail`);
        copyFileSync(trailIn, trail);
        const replay = await run('spin', ['-t', ...defines, 'fenced.pml'], work, Math.max(5_000, left()));
        const story = (replay.stdout + replay.stderr)
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => l.startsWith('EVT ') || l.includes('Error:') || l.includes('text of failed') || l.includes('START OF CYCLE'))
          .map((l) => l.replace(/^EVT /, ''));
        result.trail = trail;
        result.story = story;
        result.replay = `spin -t -p -k ${trail} ${defines.join(' ')} ${opts.modelFile}`.replace(/\s+/g, ' ');
        writeFileSync(join(opts.trailsDir, `${stem}.txt`), [`${spec.name} (${kind}): ${parsed.violation ?? ''}`, `replay: ${result.replay}`, '', ...story, ''].join('\n'));
      }
    }
    result.wallSec = (performance.now() - started) / 1000;
    return result;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
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
  const withTrail = list.find((c) => c.trail !== undefined);
  const ok = !broken && list.length === spec.checks.length && list.every((c) => expectationMet(spec.expect, c));
  const violation = (withTrail ?? list.find((c) => c.violation !== undefined))?.violation;
  return {
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
    checks,
  };
}

/** Runs every variant (or `only`) and reports. Throws ToolMissingError if spin or gcc is missing. */
export async function runModel(options: RunOptions = {}): Promise<ModelReport> {
  const t0 = performance.now();
  // Bad arguments first, before looking for the tools.
  const unknown = (options.only ?? []).filter((n) => !VARIANTS.some((v) => v.name === n));
  if (unknown.length > 0) throw new Error(`unknown variant(s): ${unknown.join(', ')}; known: ${VARIANTS.map((v) => v.name).join(', ')}`);
  const specs = options.only === undefined ? VARIANTS : options.only.map((n) => VARIANTS.find((v) => v.name === n)!);
  const spin = await checkTools();
  const modelFile = resolve(options.modelFile ?? MODEL_FILE);
  const trailsDir = options.trailsDir === undefined ? mkdtempSync(join(tmpdir(), 'fenced-model-trails-')) : resolve(options.trailsDir);
  mkdirSync(trailsDir, { recursive: true });
  const cfg = {
    timeoutSec: options.timeoutSec ?? 120,
    memLimitMb: options.memLimitMb ?? 2048,
    extraDefines: options.extraDefines ?? [],
    profile: options.profile ?? 'full',
    modelFile,
    trailsDir,
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
      const r = await runCheck(task.spec, task.kind, cfg);
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
  return {
    ok: specs.every((s) => ordered[s.name]?.ok === true),
    profile: cfg.profile,
    spin,
    model: modelFile,
    trailsDir,
    totalSec: Number(((performance.now() - t0) / 1000).toFixed(2)),
    variants: ordered,
  };
}

function weight(t: { spec: VariantSpec; kind: CheckKind }): number {
  return (t.kind === 'liveness' && t.spec.expect === 'verify' ? 4 : 0) + (t.spec.expect === 'verify' ? 2 : 0);
}

const fmtInt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');

function formatTable(report: ModelReport): string {
  const header = ['variant', 'check', 'expect', 'result', 'errors', 'states', 'transitions', 'depth', 'pan s', 'wall s', 'MB', 'defines', 'violation / trail'];
  const rows: string[][] = [];
  for (const v of Object.values(report.variants)) {
    for (const [kind, c] of Object.entries(v.checks)) {
      if (c === undefined) continue;
      const met = expectationMet(v.expect, c);
      rows.push([
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
        c.errors === 0 ? (c.complete ? '' : 'search incomplete') : `${c.violation ?? ''}${c.trail ? `  ${c.trail}` : ''}`,
      ]);
    }
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i >= 4 && i <= 10 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  const out = [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
  out.push('', `${report.spin}; ${report.profile} bounds; model ${report.model}; trails in ${report.trailsDir}; ${report.totalSec} s in all`);
  for (const v of Object.values(report.variants)) {
    const c = Object.values(v.checks).find((x) => x?.story !== undefined);
    if (c?.story === undefined) continue;
    out.push('', `${v.name}: ${c.violation ?? ''}`, ...c.story.map((s) => `  ${s}`));
  }
  out.push('', report.ok ? 'OK: the safe model verifies and every broken variant is refuted.' : 'FAILED: see UNEXPECTED/TIMEOUT rows above.');
  return out.join('\n');
}

async function main(argv: string[]): Promise<number> {
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
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(
      'usage: npm run model -- [--json] [--quick] [--keep-trails DIR] [--only safe,NO_FENCE,...] [--jobs N] [--timeout SEC] [--mem-limit MB] [--define NAME=V ...]\n' +
        `variants: ${VARIANTS.map((v) => v.name).join(', ')}\n`,
    );
    return 0;
  }
  const positive = (name: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${JSON.stringify(v)}`);
    return n;
  };
  let opts: RunOptions;
  try {
    const jobs = positive('jobs', values.jobs);
    const timeoutSec = positive('timeout', values.timeout);
    const memLimitMb = positive('mem-limit', values['mem-limit']);
    for (const d of values.define ?? []) {
      if (!/^[A-Z_][A-Z0-9_]*(=\d+)?$/.test(d)) throw new Error(`--define must look like NAME or NAME=123, got ${JSON.stringify(d)}`);
    }
    opts = {
      ...(values.only === undefined ? {} : { only: values.only.split(',').map((s) => s.trim()).filter(Boolean) }),
      ...(values['keep-trails'] === undefined ? {} : { trailsDir: values['keep-trails'] }),
      ...(values.quick ? { profile: 'quick' as const } : {}),
      ...(jobs === undefined ? {} : { jobs }),
      ...(timeoutSec === undefined ? {} : { timeoutSec }),
      ...(memLimitMb === undefined ? {} : { memLimitMb }),
      ...(values.define === undefined ? {} : { extraDefines: values.define }),
    };
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    return 2;
  }

  let report: ModelReport;
  try {
    if (!values.json) opts.onResult = (v) => process.stderr.write(`  ${v.name}: ${v.ok ? 'as expected' : 'UNEXPECTED'} (${v.timeSec} s)\n`);
    report = await runModel(opts);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    return 2;
  }
  process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${formatTable(report)}\n`);
  return report.ok ? 0 : 1;
}

const invoked = process.argv[1] === undefined ? undefined : pathToFileURL(resolve(process.argv[1])).href;
if (invoked === import.meta.url) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exitCode = 2;
    },
  );
}
