/**
 * One model check: `spin -a` (with the variant's -D defines) in a fresh temp dir, `gcc` the
 * verifier (or take the one kept for the same input: verifier-cache.ts), run `pan`, parse what it
 * reports, and keep the trail (with a readable story of the counterexample and the replay command)
 * when it found an error. model/run.ts schedules these.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { CheckKind, Expectation, VariantSpec } from './variants.js';
import { verifierFor, type VerifierCache } from './verifier-cache.js';

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
  /** Killed at its time limit: not a counterexample, and not a verification either. */
  timedOut: boolean;
  /** The time limit this check ran under (spin + gcc + pan), in seconds. */
  limitSec: number;
  trail?: string;
  story?: string[];
  replay?: string;
  /** The defines this check was generated with (variant + profile + extra). */
  defines: string[];
  compileFlags: string[];
  panArgs: string[];
  /** The verifier was a kept binary (verifier-cache.ts): spin -a and gcc did not run. */
  verifierCached: boolean;
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

/**
 * The installed spin's version line, and both tools' (what a kept verifier was built with);
 * throws ToolMissingError when spin or gcc is absent.
 */
export async function checkTools(): Promise<{ spin: string; tools: string }> {
  const spinOut = await run('spin', ['-V'], tmpdir(), 10_000);
  const gcc = await run('gcc', ['--version'], tmpdir(), 10_000);
  const spin = spinOut.stdout.trim() || spinOut.stderr.trim();
  return { spin, tools: `${spin}\n${gcc.stdout.split('\n')[0]!.trim()}` };
}

const num = (re: RegExp, text: string): number => {
  const m = re.exec(text);
  return m?.[1] === undefined ? 0 : Number(m[1]);
};

/** Parses ./pan's report. */
function parsePan(out: string): Omit<CheckResult, 'kind' | 'wallSec' | 'timedOut' | 'limitSec' | 'defines' | 'compileFlags' | 'panArgs' | 'verifierCached'> {
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

function flagsFor(kind: CheckKind, expect: Expectation, memLimitMb: number, small: boolean): { cc: string[]; pan: string[] } {
  // The large verifications run long enough to pay for -O2; the refutations stop at once: compile fast.
  const common = [expect === 'verify' && !small ? '-O2' : '-O0', '-w', `-DMEMLIM=${memLimitMb}`];
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

/** What runCheck needs besides the variant: the limits, the bounds, where the model and the trails are. */
export interface CheckOptions {
  /** This check's time limit for spin + gcc + pan, in seconds. */
  readonly timeoutSec: number;
  readonly memLimitMb: number;
  readonly extraDefines: readonly string[];
  readonly profile: 'full' | 'quick';
  /** The .pml file of the variant's model. */
  readonly modelFile: string;
  readonly trailsDir: string;
  /** Where compiled verifiers are kept (verifier-cache.ts); without it every check compiles. */
  readonly cache?: VerifierCache;
}

/** Copies pan's trail out of the work dir and replays it into the story of the counterexample. */
async function keepTrail(spec: VariantSpec, kind: CheckKind, work: string, defines: readonly string[], opts: CheckOptions, msLeft: number, result: CheckResult): Promise<void> {
  const name = basename(opts.modelFile);
  const trailIn = join(work, `${name}.trail`);
  if (!existsSync(trailIn)) return;
  const stem = `${spec.name}-${kind}`;
  const trail = join(opts.trailsDir, `${stem}.trail`);
  copyFileSync(trailIn, trail);
  const replay = await run('spin', ['-t', ...defines, name], work, Math.max(5_000, msLeft));
  const story = (replay.stdout + replay.stderr)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('EVT ') || l.includes('Error:') || l.includes('text of failed') || l.includes('START OF CYCLE'))
    .map((l) => l.replace(/^EVT /, ''));
  result.trail = trail;
  result.story = story;
  result.replay = `spin -t -p -k ${trail} ${defines.join(' ')} ${opts.modelFile}`.replace(/\s+/g, ' ');
  writeFileSync(join(opts.trailsDir, `${stem}.txt`), [`${spec.name} (${kind}): ${result.violation ?? ''}`, `replay: ${result.replay}`, '', ...story, ''].join('\n'));
}

/** One check of one variant, within `opts.timeoutSec` for spin + gcc + pan together. */
export async function runCheck(spec: VariantSpec, kind: CheckKind, opts: CheckOptions): Promise<CheckResult> {
  const started = performance.now();
  const deadline = started + opts.timeoutSec * 1000;
  const left = () => deadline - performance.now();
  const work = mkdtempSync(join(tmpdir(), `${spec.model}-model-${spec.name}-${kind}-`));
  const defines = mergeDefines(spec.defines, opts.profile === 'quick' ? spec.quick?.[kind] : undefined, opts.extraDefines).map((d) => `-D${d}`);
  const { cc, pan } = flagsFor(kind, spec.expect, opts.memLimitMb, spec.smallIn?.includes(opts.profile) === true);
  const base = { kind, defines: defines.map((d) => d.slice(2)), compileFlags: cc, panArgs: pan, limitSec: opts.timeoutSec };
  const overTime = (step: string) => `${step} exceeded the ${opts.timeoutSec} s limit`;
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
    verifierCached: false,
  });
  const name = basename(opts.modelFile);
  try {
    copyFileSync(opts.modelFile, join(work, name));
    let refused: CheckResult | undefined;
    const compile = async (): Promise<string | undefined> => {
      const gen = await run('spin', ['-a', ...defines, name], work, left());
      if (gen.code !== 0 || !existsSync(join(work, 'pan.c'))) {
        refused = gen.timedOut ? failed(overTime('spin -a'), true) : failed(`spin -a failed: ${(gen.stderr || gen.stdout).trim()}`);
        return undefined;
      }
      const comp = await run('gcc', [...cc, '-o', 'pan', 'pan.c'], work, left());
      if (comp.code !== 0) {
        refused = comp.timedOut ? failed(overTime('gcc'), true) : failed(`gcc failed: ${comp.stderr.trim().slice(0, 2000)}`);
        return undefined;
      }
      return join(work, 'pan');
    };
    const verifier = opts.cache === undefined ? { path: await compile(), cached: false } : await verifierFor(opts.cache, { modelFile: opts.modelFile, defines, compileFlags: cc }, compile);
    if (verifier.path === undefined) return refused ?? failed('the verifier another check was compiling for the same input did not build');
    // Run where the model is: pan writes its trail into its working folder.
    const verify = await run(verifier.path, pan, work, left());
    if (verify.timedOut) return failed(overTime('pan'), true);
    const parsed = parsePan(verify.stdout + verify.stderr);
    const result: CheckResult = { ...base, ...parsed, wallSec: 0, timedOut: false, verifierCached: verifier.cached };
    // A negative control needs its trail; a failing safe model even more so.
    if (parsed.errors > 0) await keepTrail(spec, kind, work, defines, opts, left(), result);
    result.wallSec = (performance.now() - started) / 1000;
    return result;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
