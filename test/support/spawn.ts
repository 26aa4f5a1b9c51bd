/**
 * The project's commands as a user runs them: a child process (tsx, or vitest itself), its exit
 * code, stdout and stderr, and how long it took; a script's entry in this process; and a PATH
 * that lacks chosen tools, to see what a machine without them prints (a temp folder of links to
 * the real tools we keep).
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { which } from '../../cli/local/prerequisites.js';
import { exitStatusOf, type Entry } from '../../cli/shared/entry.js';

export const root = resolve(import.meta.dirname, '..', '..');
const VITEST = join(root, 'node_modules', 'vitest', 'vitest.mjs');

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  /** Killed (SIGKILL) after this long; the result then has code null. */
  killAfterMs?: number;
}

function run(args: string[], opts: SpawnOptions): Promise<Ran> {
  return new Promise((done, fail) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', FORCE_COLOR: '0', NO_COLOR: '1', ...(opts.env ?? process.env) },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = opts.killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), opts.killAfterMs);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr, ms: Math.round(performance.now() - started) });
    });
  });
}

/**
 * `npx tsx <script> ...args` from the repository root, as one process (`node --import tsx`, not
 * tsx's wrapper around a second node), so that a kill reaches the command itself.
 */
export const tsx = (script: string, args: string[], opts: SpawnOptions = {}): Promise<Ran> => run(['--import', 'tsx', script, ...args], opts);

/** `npx vitest ...args` from the repository root (a nested test run). */
export const vitest = (args: string[], opts: SpawnOptions = {}): Promise<Ran> => run([VITEST, ...args], opts);

/**
 * A PATH of one temp folder holding links to `keep` (found on the real PATH) and the `scripts`
 * given (name → shell script body), and nothing else: a machine without every other tool.
 */
export function barePath(keep: readonly string[], scripts: Record<string, string> = {}): { path: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'bare-path-'));
  for (const name of keep) {
    const real = which(name);
    if (real === undefined) throw new TypeError(`barePath: ${name} is not on this machine's PATH`);
    symlinkSync(real, join(dir, name));
  }
  symlinkSync(process.execPath, join(dir, 'node'));
  for (const [name, body] of Object.entries(scripts)) {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  }
  return { path: dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** This environment with PATH replaced, and nothing of the running vitest worker that a nested run could mistake for its own. */
export function envWithPath(path: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(VITEST|TINYPOOL|NODE_OPTIONS)/.test(k)) env[k] = v;
  return { ...env, PATH: path };
}

/** A refusal a person can act on: exit 2, one line on stderr naming each of `mentions`, no stack trace, nothing on stdout. */
export function expectOneLineError(r: Ran, ...mentions: (string | RegExp)[]): void {
  const where = `${r.stdout}\n${r.stderr}`;
  if (r.code !== 2) throw new TypeError(`expected exit 2, got ${r.code}:\n${where}`);
  const lines = r.stderr.trim().split('\n');
  if (lines.length !== 1) throw new TypeError(`expected one line on stderr, got ${lines.length}:\n${r.stderr}`);
  if (/\n\s+at |node:internal/.test(r.stderr)) throw new TypeError(`stack trace on stderr:\n${r.stderr}`);
  for (const m of mentions) {
    const found = typeof m === 'string' ? r.stderr.includes(m) : m.test(r.stderr);
    if (!found) throw new TypeError(`stderr does not mention ${String(m)}:\n${r.stderr}`);
  }
}

/** A command that keeps running (npm run dynamodb): wait for a line, then stop it with a signal. */
export interface Running {
  /** Resolves with the first match of `re` on stdout (rejects if the process ends first). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends `signal` and resolves with how it ended. */
  stop(signal?: NodeJS.Signals): Promise<Ran>;
  readonly pid: number | undefined;
}

export function startTsx(script: string, args: string[]): Running {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: root,
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', FORCE_COLOR: '0' },
  });
  let stdout = '';
  let stderr = '';
  const closed = new Promise<Ran>((done) =>
    child.on('close', (code) => done({ code, stdout, stderr, ms: Math.round(performance.now() - started) })),
  );
  const listeners = new Set<() => void>();
  child.stdout.on('data', (c: Buffer) => ((stdout += c.toString()), listeners.forEach((l) => l())));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return {
    pid: child.pid,
    waitFor: (re, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = stdout.match(re);
          if (m) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(m);
          }
        };
        const timer = setTimeout(() => reject(new TypeError(`no ${re} on stdout within ${timeoutMs} ms:\n${stdout}\n${stderr}`)), timeoutMs);
        listeners.add(check);
        void closed.then((r) => reject(new TypeError(`exited ${r.code} before ${re}:\n${r.stdout}\n${r.stderr}`)));
        check();
      }),
    stop: (signal = 'SIGINT') => {
      child.kill(signal);
      return closed;
    },
  };
}

/**
 * A script's entry run in this process, as its own wrapper runs it (exitStatusOf: the same mapping
 * of errors to a line and an exit status), with stdout and stderr captured: a refusal checked
 * without starting a process (~2 CPU-s each). One real process per script proves the wiring.
 */
export async function inProcess(entry: Entry, args: string[]): Promise<Ran> {
  const out = { stdout: '', stderr: '' };
  const saved = { stdout: process.stdout.write, stderr: process.stderr.write };
  const sink = (stream: 'stdout' | 'stderr') =>
    ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      out[stream] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      const done = rest.find((r): r is () => void => typeof r === 'function');
      if (done) queueMicrotask(done);
      return true;
    }) as typeof process.stdout.write;
  const started = performance.now();
  process.stdout.write = sink('stdout');
  process.stderr.write = sink('stderr');
  try {
    const code = await exitStatusOf(entry, args);
    return { code, ...out, ms: Math.round(performance.now() - started) };
  } finally {
    process.stdout.write = saved.stdout;
    process.stderr.write = saved.stderr;
  }
}
