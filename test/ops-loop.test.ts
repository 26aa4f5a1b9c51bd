// tier: full
/**
 * The local ops loop a newcomer follows from the README, run as written: the first sh block of
 * its "Ops CLI" section, read from README.md (so the test breaks when the README drifts), each
 * command run as a child process in order. `npm run dynamodb` keeps a DynamoDB Local; `npm start
 * -- --endpoint ... --leave-unfinished` prints the table prefix, the status command and the job it
 * left part way; `status` shows it unfinished; `requeue` runs it here to DONE (no queue outlives
 * npm start); `status` shows every job DONE; Ctrl-C stops DynamoDB Local and Java with it.
 *
 * Only what a test cannot take as written is changed: a free port instead of :8000 (another
 * DynamoDB may hold it), the prefix the demo printed instead of the README's example, and a
 * smaller run (--customers 30 --workers 2, --out in a temporary folder) to keep the test short.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, portIsFree } from '../cli/local/dynamodb-local.js';
import { LEFT_PERIOD } from '../cli/demo/leave-unfinished.js';
import { expectOneLineError, startTsx, tsx, type Running } from './support/spawn.js';

const dir = mkdtempSync(join(tmpdir(), 'ops-loop-'));
let served: Running | undefined;
afterAll(async () => {
  await served?.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** A shell line's words: single quotes kept together (the job id's `#`), a `#` after a space starts a comment. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const m of line.matchAll(/'([^']*)'|(#.*$)|(\S+)/g)) {
    if (m[2] !== undefined) break;
    words.push(m[1] ?? m[3]!);
  }
  return words;
}

/** The commands of the first sh block under the README's "## Ops CLI", comments dropped. */
function readmeOpsLoop(readme: string): string[][] {
  const section = readme.slice(readme.indexOf('\n## Ops CLI\n'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .map(shellWords)
    .filter((w) => w.length > 0);
}

const README_ENDPOINT = 'http://127.0.0.1:8000';
const README_PREFIX = /^fw-\d{14}-$/;

describe('the README ops loop', () => {
  it('is the loop this test runs: dynamodb, start leaving a job unfinished, status, requeue, status', () => {
    const loop = readmeOpsLoop(readFileSync(new URL('../README.md', import.meta.url), 'utf8'));
    expect(loop.map((w) => w.slice(0, 4).join(' '))).toEqual(['npm run dynamodb', 'npm start -- --endpoint', 'npm run cli --', 'npm run cli --', 'npm run cli --']);
    expect(loop.map((w) => w[3] === '--' ? w[4] : w[1])).toEqual(['run', 'start', 'status', 'requeue', 'status']);
    expect(shellWords("npm run cli -- requeue 'invoice-run#2026-12' --endpoint X   # comment")).toEqual(['npm', 'run', 'cli', '--', 'requeue', 'invoice-run#2026-12', '--endpoint', 'X']);
  });

  it('runs as written, in order, and ends with every job DONE', async () => {
    const loop = readmeOpsLoop(readFileSync(new URL('../README.md', import.meta.url), 'utf8'));
    const port = await freePort();
    const endpoint = `http://127.0.0.1:${port}`;
    let prefix: string | undefined;
    const outputs: string[] = [];
    const left = `invoice-run#${LEFT_PERIOD}`;
    for (const words of loop) {
      // The README's endpoint and prefix, as the reader replaces them with theirs.
      const args = words.map((w) => w.replaceAll(README_ENDPOINT, endpoint)).map((w) => (README_PREFIX.test(w) ? (prefix ?? w) : w));
      if (args.slice(0, 3).join(' ') === 'npm run dynamodb') {
        served = startTsx('cli/main.ts', ['dynamodb', ...args.slice(3), '--port', String(port)]);
        const [, at] = await served.waitFor(/is running at (http:\/\/127\.0\.0\.1:\d+) until Ctrl-C/);
        expect(at).toBe(endpoint);
        // A second one on the same port is refused in one line.
        expectOneLineError(await tsx('cli/main.ts', ['dynamodb', '--port', String(port)]), `port ${port} is in use`, `--endpoint http://127.0.0.1:${port}`);
        continue;
      }
      const main = args[1] === 'start' ? ['demo', ...args.slice(3), '--customers', '30', '--workers', '2', '--out', join(dir, 't.svg')] : args.slice(4);
      const r = await tsx('cli/main.ts', main, { killAfterMs: 200_000 });
      expect(r.code, `${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(0);
      outputs.push(r.stdout);
      if (args[1] === 'start') prefix = checkDemo(r.stdout, endpoint, left);
    }
    const [, before, requeued, after] = outputs as [string, string, string, string];
    expect(jobLine(before, left)).toMatch(/\sRUNNING\s+1\/3 units /);
    expect(requeued).toContain(`${left}: ran here: DONE 3/3 units`);
    const jobs = before.split('\n').filter((l) => / units /.test(l) && l.trim().startsWith('invoice-run#'));
    expect(jobs).toHaveLength(4);
    for (const j of after.split('\n').filter((l) => / units /.test(l) && l.trim().startsWith('invoice-run#'))) expect(j).toMatch(/\sDONE\s/);
    expect(jobLine(after, left)).toMatch(/\sDONE\s+3\/3 units .*requeues 1/);

    const stopped = await served!.stop('SIGINT');
    served = undefined;
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stdout).toContain('stopped');
    expect(await portIsFree(port)).toBe(true); // Java is gone with it
  }, 300_000);
});

const jobLine = (status: string, id: string) => status.split('\n').find((l) => l.trim().startsWith(`${id} `) && / units /.test(l)) ?? `(no job line for ${id} in)\n${status}`;

/** The demo's human output: its stages, its tables, the status command, and the job it left with the command that finishes it. */
function checkDemo(stdout: string, endpoint: string, left: string): string {
  // The units, then the delivery as a stage of its own, and their times apart.
  expect(stdout).toMatch(/^ {3}progress: 9\/9 units \(100%\), done$/m);
  // An email and a payment per customer, and the follow-up of each payment the provider took or declined.
  const delivered = Number(/^ {3}delivering: (\d+)\/\1 outbox items sent \(100%\), done$/m.exec(stdout)?.[1]);
  expect(delivered).toBeGreaterThan(180);
  expect(stdout.indexOf('   delivering:')).toBeGreaterThan(stdout.indexOf('   progress: 9/9 units'));
  expect(stdout).toMatch(new RegExp(`^ {3}9 units committed in \\d+\\.\\d s; then ${delivered} outbox items delivered in \\d+\\.\\d s \\(the run took \\d+\\.\\d s\\)$`, 'm'));
  const prefix = stdout.match(/^Tables: prefix (fw-\d{14}-) at http:\/\/127\.0\.0\.1:\d+$/m)?.[1];
  expect(prefix, stdout).toBeDefined();
  expect(stdout.match(/^ {2}npm run cli -- (status .*)$/m)?.[1]).toBe(`status --endpoint ${endpoint} --table-prefix ${prefix}`);
  expect(stdout).toContain(`Left unfinished (--leave-unfinished): ${left}, RUNNING 1/3 units: its worker crashed`);
  expect(stdout).toContain(`  npm run cli -- requeue '${left}' --endpoint ${endpoint} --table-prefix ${prefix}`);
  expect(stdout).toContain('All invariants hold.');
  return prefix!;
}
