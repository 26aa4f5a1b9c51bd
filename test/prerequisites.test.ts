// tier: full
/**
 * A machine with only some of the README's prerequisites: `npm test` and `npm start` say at
 * once which tool is missing and the one apt line that installs it (exit 2, no stack trace),
 * instead of failing after minutes of other tests or a 91 s launch timeout.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { main } from '../cli/main.js';
import { javaMajor, missingTools, requireTools } from '../cli/local/prerequisites.js';
import { barePath, envWithPath, expectOneLineError, inProcess, tsx, vitest, type Ran } from './support/spawn.js';

const cleanups: (() => void)[] = [];
afterAll(() => cleanups.forEach((c) => c()));
function path(keep: string[], scripts: Record<string, string> = {}): string {
  const p = barePath(keep, scripts);
  cleanups.push(p.cleanup);
  return p.path;
}

/**
 * A java that says 17 and dies at start. Its compiler "builds" the loopback launcher (an empty
 * class file in the -d folder, $5), then the jar dies.
 */
const DYING_JAVA = {
  java: `case "$1" in -version) echo 'openjdk version "17.0.1-dies"' >&2; exit 0;; -m) mkdir -p "$5" && touch "$5/LoopbackDynamoDB.class"; exit 0;; esac\necho 'Error: could not open the jar' >&2\nexit 1`,
};

/**
 * `npm start -- --customers 1` through cli/main.ts's entry in this process, on a PATH of that
 * folder alone (the first case runs it as its own process, to prove the same refusal there).
 */
async function startOnPath(dir: string): Promise<Ran> {
  vi.stubEnv('PATH', dir);
  try {
    return await inProcess(main, ['demo', '--customers', '1']);
  } finally {
    vi.unstubAllEnvs();
  }
}

describe('the prerequisites check', () => {
  it('names every missing tool and the one apt line that installs them', () => {
    const empty = path([]);
    expect(missingTools(['java', 'spin', 'gcc'], { PATH: empty }).map((m) => m.tool)).toEqual(['java', 'spin', 'gcc']);
    expect(() => requireTools(['java', 'spin', 'gcc'], 'npm test', { PATH: empty })).toThrow(
      /npm test needs Java 17 \(not found on PATH\), spin \(not found on PATH\) and gcc \(not found on PATH\)\. Install: .*apt-get install -y --no-install-recommends openjdk-17-jre-headless spin gcc$/,
    );
    // The machine this runs on has all four (the README's prerequisites).
    expect(missingTools(['java', 'spin', 'gcc', 'jq'])).toEqual([]);
    expect(() => requireTools(['jq'], 'npm test', { PATH: empty })).toThrow(/npm test needs jq \(not found on PATH\)\. Install: .*apt-get install -y --no-install-recommends jq$/);
  });

  it('reads the Java major version of old and new version strings', () => {
    expect(javaMajor('openjdk version "17.0.15" 2025-04-15')).toBe(17);
    expect(javaMajor('java version "1.8.0_292"')).toBe(8);
    expect(javaMajor('openjdk version "21" 2023-09-19')).toBe(21);
    expect(javaMajor('Picked up JAVA_TOOL_OPTIONS\nopenjdk version "11.0.2" 2019-01-15')).toBe(11);
    expect(javaMajor('command not found')).toBeUndefined();
  });
});

describe('npm start on a machine without Java 17', () => {
  it('without java: exit 2 at once, naming Java 17 and the apt line', async () => {
    const r = await tsx('cli/main.ts', ['demo', '--customers', '1'], { env: envWithPath(path(['sh', 'cat'])), killAfterMs: 25_000 });
    expectOneLineError(r, 'Java 17 (not found on PATH)', 'apt-get install -y --no-install-recommends openjdk-17-jre-headless');
    expect(r.stdout).not.toContain('Starting DynamoDB Local');
    console.info(`npm start without java: refused in ${r.ms} ms (process start included)`);
  }, 30_000);

  it('with Java 11: exit 2 at once, naming the version found', async () => {
    const java11 = path(['sh', 'cat'], { java: `echo 'openjdk version "11.0.2" 2019-01-15' >&2` });
    const r = await startOnPath(java11);
    expectOneLineError(r, 'Java 17 (version 11 at', '17 or later needed', 'openjdk-17-jre-headless');
  }, 30_000);

  it('a java that dies at start is reported with what it printed, without waiting for ListTables', async () => {
    const dying = path(['sh', 'cat', 'mkdir', 'touch'], DYING_JAVA);
    const r = await startOnPath(dying);
    expectOneLineError(r, 'DynamoDB Local exited', 'Error: could not open the jar');
  }, 30_000);

  it('a Java runtime without its compiler module is one line naming it, before anything starts', async () => {
    const noCompiler = path(['sh', 'cat'], {
      java: `case "$1" in -version) echo 'openjdk version "17.0.1-nocompiler"' >&2; exit 0;; -m) echo 'Error: Module jdk.compiler not found' >&2; exit 1;; esac\nexit 1`,
    });
    const r = await startOnPath(noCompiler);
    expectOneLineError(r, 'jdk.compiler', 'Module jdk.compiler not found');
  }, 30_000);
});

describe('npm test on a machine without spin and gcc', () => {
  it('stops in its global setup, before any test file runs, naming the missing tools and the apt line', async () => {
    // java is there (so before this check existed the run went on and passed); spin, gcc and jq are not.
    const r = await vitest(['run', 'test/generation.test.ts'], { env: envWithPath(path(['sh', 'cat', 'java'])), killAfterMs: 60_000 });
    const out = r.stdout + r.stderr;
    expect(r.code, out).not.toBe(0);
    expect(out).toContain('npm test needs spin (not found on PATH), gcc (not found on PATH) and jq (not found on PATH)');
    expect(out).toContain('apt-get install -y --no-install-recommends spin gcc jq');
    expect(out).not.toMatch(/Test Files\s+\d+ passed/);
    console.info(`vitest without spin, gcc and jq: stopped in ${r.ms} ms (vitest start included)`);
  }, 90_000);

  it('npm run test:quick needs only Java: its setup passes the tools check without spin and gcc and goes on to start DynamoDB Local', async () => {
    // A java that says 17 and dies at start: the run gets past the tools check (spin and gcc are
    // not asked for) and stops where DynamoDB Local starts, so no second Java runs here.
    const dying = path(['sh', 'cat', 'mkdir', 'touch'], DYING_JAVA);
    const r = await vitest(['run', '--project', 'quick', 'test/generation.test.ts'], { env: envWithPath(dying), killAfterMs: 60_000 });
    const out = r.stdout + r.stderr;
    expect(r.code, out).not.toBe(0);
    expect(out).not.toMatch(/needs spin|needs gcc|gcc \(not found/);
    expect(out).toContain('DynamoDB Local exited');
    expect(out).toContain('Error: could not open the jar');
  }, 90_000);
});
