// tier: full
/**
 * A person's mistakes, as the commands see them: an endpoint that refuses or is not DynamoDB,
 * an --out path that cannot be written, unknown flags of chaos, bench, fuzz and model. Each is
 * one line on stderr that says what to do, exit 2, nothing written, no stack trace.
 *
 * Each script runs once as its own process (the wiring: its wrapper, exit status, stderr), and
 * that refusal must read the same in-process; every other case calls the script's entry in this
 * process through the same error mapping (inProcess), ~2 CPU-s less each.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDynamo } from '../lib/protocol/index.js';
import { cli as chaosEntry } from './chaos/main.js';
import { main as fuzzEntry } from './fuzz/main.js';
import { main as benchEntry } from '../bench/main.js';
import { main as cliEntry } from '../cli/main.js';
import { main as modelEntry } from '../model/run.js';
import type { Entry } from '../cli/shared/entry.js';
import { expectOneLineError, inProcess, tsx } from './support/spawn.js';

const ENTRIES = {
  'cli/main.ts': cliEntry,
  'test/chaos/main.ts': chaosEntry,
  'bench/main.ts': benchEntry,
  'test/fuzz/main.ts': fuzzEntry,
  'model/run.ts': modelEntry,
} satisfies Record<string, Entry>;
type Script = keyof typeof ENTRIES;
/** The script's entry in this process. */
const run = (script: Script, args: string[]) => inProcess(ENTRIES[script], args);
const cli = (args: string[]) => run('cli/main.ts', args);

const endpoint = inject('dynamoEndpoint');
let html: Server;
let htmlEndpoint: string;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cli-errors-'));
  html = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html><body>a web server, not DynamoDB</body></html>');
  });
  await new Promise<void>((r) => html.listen(0, '127.0.0.1', () => r()));
  htmlEndpoint = `http://127.0.0.1:${(html.address() as { port: number }).port}`;
});
afterAll(() => {
  html?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function tablesWithPrefix(prefix: string): Promise<string[]> {
  const { client } = createDynamo({ endpoint });
  try {
    const names: string[] = [];
    let start: string | undefined;
    do {
      const out = await client.send(new ListTablesCommand({ ExclusiveStartTableName: start }));
      names.push(...(out.TableNames ?? []));
      start = out.LastEvaluatedTableName;
    } while (start);
    return names.filter((n) => n.startsWith(prefix));
  } finally {
    client.destroy();
  }
}

describe('each script as a person runs it: its own process', () => {
  it.each([
    ['cli/main.ts', ['demo', '--endpoint', 'http://127.0.0.1:9', '--customers', '1'], ['nothing answers at http://127.0.0.1:9 (connection refused)', 'npm run dynamodb']],
    ['test/chaos/main.ts', ['--bogus'], ["Unknown option '--bogus'"]],
    ['bench/main.ts', ['--bogus'], ["Unknown option '--bogus'"]],
    ['test/fuzz/main.ts', ['--bogus'], ["Unknown option '--bogus'"]],
    ['model/run.ts', ['--bogus'], ["Unknown option '--bogus'"]],
  ] as [Script, string[], string[]][])('%s %s: one line, exit 2, nothing on stdout; in-process it reads the same', async (script, args, mentions) => {
    const r = await tsx(script, args);
    expectOneLineError(r, ...mentions);
    expect(r.stdout).toBe('');
    const here = await run(script, args);
    expect({ code: here.code, stdout: here.stdout, stderr: here.stderr }).toEqual({ code: r.code, stdout: r.stdout, stderr: r.stderr });
  });
});

describe('an --endpoint that is not a running DynamoDB', () => {
  it('an HTML answer: npm start says it is not DynamoDB', async () => {
    const r = await cli(['demo', '--endpoint', htmlEndpoint, '--customers', '1']);
    expectOneLineError(r, `${htmlEndpoint} answered, but not as DynamoDB (HTTP 200, text/html)`);
    expect(r.stdout).toBe('');
  });

  it('the ops CLI says the same', async () => {
    expectOneLineError(await cli(['status', '--endpoint', 'http://127.0.0.1:9', '--table-prefix', 'fw-x-']), 'nothing answers at http://127.0.0.1:9');
    expectOneLineError(await cli(['status', '--endpoint', htmlEndpoint, '--table-prefix', 'fw-x-']), 'not as DynamoDB');
  });
});

describe('an --out path that cannot be written is refused before the run', () => {
  it.each([
    ['under a file', () => join(writeFile('a-file'), 'timeline.svg'), /--out: cannot write .*: .*a-file is a file, not a folder/],
    ['a directory', () => dir, /--out: cannot write .*: it is a directory/],
  ])('%s', async (_what, out, message) => {
    const prefix = `t-badout-${randomBytes(4).toString('hex')}-`;
    const r = await cli(['demo', '--endpoint', endpoint, '--table-prefix', prefix, '--customers', '1', '--out', out()]);
    expectOneLineError(r, message);
    expect(r.stdout).not.toContain('The incident');
    expect(await tablesWithPrefix(prefix)).toEqual([]);
  });
});

function writeFile(name: string): string {
  const f = join(dir, name);
  writeFileSync(f, 'x');
  return f;
}

describe('unknown and bad flags of the other commands', () => {
  it.each([
    ['test/chaos/main.ts', ['--runs'], "Option '--runs <value>' argument missing"],
    ['bench/main.ts', ['--only', 'nope'], '--only: unknown step "nope"'],
    ['bench/main.ts', ['--endpoint', 'http://127.0.0.1:9'], 'nothing answers at http://127.0.0.1:9'],
    ['bench/main.ts', ['--quick', '--write-docs'], '--write-docs: needs a full run'],
    ['test/chaos/main.ts', ['--endpoint', 'http://127.0.0.1:9'], 'nothing answers at http://127.0.0.1:9'],
    ['cli/main.ts', ['demo', '--bogus'], "Unknown option '--bogus'"],
  ] as [Script, string[], string][])('%s %s', async (script, args, message) => {
    const r = await run(script, args);
    expectOneLineError(r, message);
  });
});

describe('a negative number and a typo get the good one-line message', () => {
  it.each([
    [['demo', '--customers', '-5'], '--customers: must be an integer in [0, 1000000], got "-5"'],
    [['demo', '--customers=-5'], '--customers: must be an integer in [0, 1000000], got "-5"'],
    [['demo', '--custmers', '5'], "Unknown option '--custmers'; did you mean --customers?"],
    [['status', '--endpont', 'http://127.0.0.1:9'], "Unknown option '--endpont'; did you mean --endpoint?"],
    [['stauts'], 'unknown command "stauts"; did you mean "status"?'],
    [['frobnicate'], 'unknown command "frobnicate"; expected one of demo,'],
  ])('%s', async (args, message) => {
    const r = await cli(args);
    expectOneLineError(r, message);
    expect(r.stderr).not.toContain('did you mean "frobnicate"');
    expect(r.stdout).toBe('');
  });

  it('no suggestion when nothing is close', async () => {
    const r = await cli(['demo', '--bogus']);
    expectOneLineError(r, "Unknown option '--bogus'");
    expect(r.stderr).not.toContain('did you mean');
  });
});
