/**
 * `npm run fuzz -- --runs N [--seed S] [--path P] [--endpoint URL] [--json]`
 *
 * The model-based property of test/fuzz/model.ts (the one test/property.test.ts runs 200 times)
 * for N sequences outside vitest: starts its own DynamoDB Local (or uses --endpoint), creates
 * fresh tables, checks, prints a summary. On failure it shrinks, prints the counterexample with
 * the seed and path that replay it (`--seed S --path P`), and exits 1. Bad arguments exit 2.
 */
import fc from 'fast-check';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { createDynamo, InvalidInputError, waitersTableInput } from '../../lib/protocol/index.js';
import { checkEndpoint } from '../../cli/local/endpoint.js';
import { runScript } from '../../cli/shared/entry.js';
import { parseFlags } from '../../cli/shared/flags.js';
import { ensureTables, tableNames } from '../../lib/workflow/index.js';
import { startDynamoLocal, type DynamoLocal } from '../../cli/local/dynamodb-local.js';
import { coverage, leaseFenceProperty, MAX_COMMANDS, MIN_COMMANDS } from './model.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const USAGE = `Usage: npm run fuzz -- [--runs N] [--seed S] [--path P] [--max-commands M] [--endpoint URL] [--json]
  --runs N          sequences to check (default 1000)
  --seed S          fast-check seed (default: random; printed, so any run can be replayed)
  --path P          replay one counterexample: the path printed by a failing run (with its --seed)
  --max-commands M  longest command sequence (default ${MAX_COMMANDS}, at least ${MIN_COMMANDS})
  --endpoint URL    use a running DynamoDB Local instead of starting one
  --json            one JSON summary on stdout`;

interface Flags {
  runs: number;
  seed: number;
  path?: string;
  maxCommands: number;
  endpoint?: string;
  json: boolean;
}

function parseFuzzFlags(argv: string[]): Flags | 'help' {
  const { values } = parseFlags({
    args: argv,
    options: {
      runs: { type: 'string' },
      seed: { type: 'string' },
      path: { type: 'string' },
      'max-commands': { type: 'string' },
      endpoint: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    allowPositionals: false,
  });
  if (values.help) return 'help';
  const int = (name: string, raw: string | undefined, fallback: number, min: number, max: number): number => {
    if (raw === undefined) return fallback;
    const v = Number(raw);
    if (raw.trim() === '' || !Number.isSafeInteger(v) || v < min || v > max) throw new InvalidInputError(`--${name}`, `must be an integer in [${min}, ${max}], got "${raw}"`);
    return v;
  };
  if (values.path !== undefined && !/^\d+(:\d+)*$/.test(values.path)) throw new InvalidInputError('--path', `must look like 12:0:3, got "${values.path}"`);
  if (values.path !== undefined && values.seed === undefined) throw new InvalidInputError('--path', 'needs the --seed it was printed with');
  if (values.endpoint !== undefined && !/^https?:\/\/\S+$/.test(values.endpoint)) throw new InvalidInputError('--endpoint', `must be an http(s) URL, got "${values.endpoint}"`);
  return {
    runs: int('runs', values.runs, 1_000, 1, 10_000_000),
    // fast-check seeds are 32-bit integers
    seed: int('seed', values.seed, Math.floor(Math.random() * 2 ** 31), -(2 ** 31), 2 ** 31 - 1),
    ...(values.path === undefined ? {} : { path: values.path }),
    maxCommands: int('max-commands', values['max-commands'], MAX_COMMANDS, MIN_COMMANDS, 200),
    ...(values.endpoint === undefined ? {} : { endpoint: values.endpoint }),
    json: values.json,
  };
}

export async function main(argv: string[]): Promise<number> {
  const flags = parseFuzzFlags(argv);
  if (flags === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const log = flags.json ? (_: string) => undefined : (line: string) => process.stdout.write(line + '\n');
  let local: DynamoLocal | undefined;
  if (flags.endpoint !== undefined) await checkEndpoint(flags.endpoint);
  else {
    log('Starting DynamoDB Local…');
    local = await startDynamoLocal();
  }
  const endpoint = flags.endpoint ?? local!.endpoint;
  const dynamo = createDynamo({ endpoint });
  try {
    const stamp = new Date().toISOString().replace(/[-:T.Z]/g, '').slice(0, 14);
    const tables = tableNames(`fuzz-${stamp}-${Math.random().toString(36).slice(2, 8)}-`);
    await ensureTables(dynamo.client, tables);
    const waiters = `${tables.leases.replace(/leases$/, '')}waiters`;
    await dynamo.client.send(new CreateTableCommand(waitersTableInput(waiters)));
    const replay = flags.path === undefined ? '' : ` --path ${flags.path}`;
    log(`Checking ${flags.runs} sequences of ${MIN_COMMANDS}-${flags.maxCommands} commands (seed ${flags.seed}${replay}) on ${endpoint}`);
    const started = Date.now();
    let done = 0;
    const property = leaseFenceProperty({ doc: dynamo.doc, tables, waiters }, { maxCommands: flags.maxCommands });
    const progress = setInterval(() => log(`  ${done} sequences, ${coverage.commands ?? 0} commands, ${Math.round((Date.now() - started) / 1000)} s`), 10_000);
    progress.unref();
    const details = await fc.check(
      property.afterEach(() => {
        done++;
      }),
      { numRuns: flags.runs, seed: flags.seed, ...(flags.path === undefined ? {} : { path: flags.path }) },
    );
    clearInterval(progress);
    const elapsedMs = Date.now() - started;
    const summary = {
      ok: !details.failed,
      runs: details.numRuns,
      seed: details.seed,
      commands: coverage.commands ?? 0,
      elapsedMs,
      outcomes: Object.fromEntries(Object.entries(coverage).filter(([k]) => k !== 'commands' && k !== 'sequences').sort()),
      ...(details.failed
        ? {
            counterexample: {
              seed: details.seed,
              path: details.counterexamplePath,
              replay: `npm run fuzz -- --seed ${details.seed} --path ${details.counterexamplePath}`,
              shrinks: details.numShrinks,
              value: fc.stringify(details.counterexample),
              error: details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance),
            },
          }
        : {}),
    };
    if (flags.json) {
      process.stdout.write(JSON.stringify(summary) + '\n');
    } else {
      log(`\n${summary.runs} sequences, ${summary.commands} commands in ${(elapsedMs / 1000).toFixed(1)} s (seed ${summary.seed})`);
      log('Outcomes (command:result = count):');
      for (const [k, n] of Object.entries(summary.outcomes)) log(`  ${k.padEnd(58)} ${n}`);
      if (summary.counterexample) {
        const c = summary.counterexample;
        log(`\nFAILED after ${details.numRuns} sequences (${c.shrinks} shrinks).`);
        log(`Counterexample: ${c.value}`);
        log(`Error: ${c.error}`);
        log(`Replay: ${c.replay}`);
      } else {
        log('\nLibrary and model agreed on every command.');
      }
    }
    return details.failed ? 1 : 0;
  } finally {
    dynamo.client.destroy();
    await local?.stop();
  }
}

// Bad flags, an endpoint that is not DynamoDB, no Java: one line, exit 2. Anything else is a bug.
if (process.argv[1]?.endsWith('test/fuzz/main.ts')) runScript(main);
