/**
 * `npm run -s cli -- profile [--write]`: measures where the invoice run's writes land. Two quiet
 * local runs (no faults) of the real handlers with the effects, every call of every function
 * recorded (cli/local/aws-calls.ts, the records the IAM test evaluates) with the engine's
 * ConsumedCapacity, and accounted by cli/demo/call-profile.ts; the runs grow their customers and
 * their shards by different factors, which tells a customer's key from a shard's. Prints the
 * profile; --write stores it as lib/workloads/invoices/profile.ts, which the planner reads.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { createDynamo, type Dynamo } from '../../lib/protocol/index.js';
import { ensureTables, tableNames, type LoadProfile } from '../../lib/workflow/index.js';
import { recordAwsCalls } from '../local/aws-calls.js';
import { buildProfile, LoadProfiler, type MeasuredRun } from './call-profile.js';
import { startDynamoLocal } from '../local/dynamodb-local.js';
import { startEffects, type Effects } from '../local/effects-env.js';
import { parseFlags } from '../shared/flags.js';
import { requireTools } from '../local/prerequisites.js';
import { invoiceRun, UNIT_SIZE, type HandlersWire } from './run.js';
import { streamsClient } from '../local/streams.js';

export const PROFILE_HELP = `profile [--write] [--json]: measures the invoice run's write and read units per table, index,
partition-key value and purpose, from two quiet local runs (DynamoDB Local's ConsumedCapacity).
  --write   store it as lib/workloads/invoices/profile.ts (the planner's shares)
  --json    the profile as one JSON object
  npm run -s cli -- profile --write`;

/**
 * The two runs, one period each (a plan is one period's run): customers x2, shards x3, so a
 * shard's key is told from a customer's; 26 customers a shard at least, 3 units of 10.
 */
export const PROFILE_RUNS = [
  { customers: 80, shards: 2 },
  { customers: 160, shards: 6 },
] as const;

/** Where a profile's runs happen: DynamoDB Local's (profileOnEndpoint), or the simulator's. */
export interface ProfileEngine {
  /** Run `i`'s engine: the checker's client and streams, the handlers' wire, the effects; `close` after the run. */
  open(i: number): Promise<{ dynamo: Dynamo; streams: DynamoDBStreamsClient; wire: string | HandlersWire; effects: Effects; close(): Promise<void> }>;
}

/** DynamoDB Local at `endpoint`, with the local servers for the effects. */
export const profileOnEndpoint = (endpoint: string): ProfileEngine => ({
  async open(i) {
    const dynamo = createDynamo({ endpoint });
    const effects = await startEffects({ doc: dynamo.doc, bucket: `profile-${i}` });
    const streams = streamsClient(endpoint);
    return {
      dynamo,
      streams,
      wire: endpoint,
      effects,
      close: async () => {
        await effects.close();
        streams.destroy();
        dynamo.client.destroy();
      },
    };
  },
});

/** Measures the profile on an engine at `endpoint` (tables with `prefix`). */
export const measureProfile = (endpoint: string, prefix: string): Promise<LoadProfile> => measureProfileOn(profileOnEndpoint(endpoint), prefix);

/** Measures the profile with the runs on `engine` (tables with `prefix`). */
export async function measureProfileOn(engine: ProfileEngine, prefix: string): Promise<LoadProfile> {
  const measured: MeasuredRun[] = [];
  for (const [i, r] of PROFILE_RUNS.entries()) {
    const tables = tableNames(`${prefix}${i}-`);
    const { dynamo, streams, wire, effects, close } = await engine.open(i);
    // The functions' calls (the checker's and the run's own waits are no function's: not recorded).
    const calls = recordAwsCalls();
    try {
      await ensureTables(dynamo.client, tables);
      const run = await invoiceRun({ dynamo, endpoint: wire, streams, tables, effects, set: '', items: r.customers, workers: 4, shards: r.shards, seed: 1, faults: false, periods: 1, calls });
      const profiler = new LoadProfiler(tables);
      for (const c of calls.records) if (c.service === 'dynamodb') profiler.observe(c);
      measured.push({ run: { items: r.customers, shards: r.shards, units: run.units }, load: profiler.load, agreement: profiler.agreement });
    } finally {
      await close();
    }
  }
  return buildProfile(measured[0]!, measured[1]!, `npm run -s cli -- profile --write (one period of ${PROFILE_RUNS.map((r) => `${r.customers} customers in ${r.shards} shards`).join(', then ')}; ${UNIT_SIZE} per unit)`);
}

export const PROFILE_FILE = fileURLToPath(new URL('../../lib/workloads/invoices/profile.ts', import.meta.url));

export function profileSource(p: LoadProfile): string {
  return `/**
 * The invoice run's measured load profile (generated: ${p.measuredWith}).
 * Do not edit: measure again. test/profile.test.ts checks it against a fresh measurement.
 */
import type { LoadProfile } from '../../workflow/index.js';

export const INVOICE_PROFILE: LoadProfile = ${compact(round(p))};
`;
}

/** One line per field, and per entry of a list: a stored profile that diffs line by line. */
function compact(p: LoadProfile): string {
  const lines = Object.entries(p).map(([k, v]) => (Array.isArray(v) && k !== 'runs' ? `  ${k}: [\n${v.map((x) => `    ${JSON.stringify(x)},`).join('\n')}\n  ],` : `  ${k}: ${JSON.stringify(v)},`));
  return `{\n${lines.join('\n')}\n}`;
}

/** Figures to 4 significant digits: a stored profile that reads well and diffs little. */
function round(p: LoadProfile): LoadProfile {
  return JSON.parse(JSON.stringify(p, (_, v) => (typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(4)) : v)));
}

export async function profileCommand(argv: string[]): Promise<number> {
  if (argv.includes('--help')) {
    process.stdout.write(`${PROFILE_HELP}\n`);
    return 0;
  }
  const { values } = parseFlags({ args: argv, options: { write: { type: 'boolean', default: false }, json: { type: 'boolean', default: false } }, allowPositionals: false });
  requireTools(['java'], 'DynamoDB Local');
  const local = await startDynamoLocal();
  try {
    const p = await measureProfile(local.endpoint, 'profile-');
    if (values.write) writeFileSync(PROFILE_FILE, profileSource(p));
    process.stdout.write(values.json ? `${JSON.stringify(p)}\n` : `${renderProfile(p)}\n${values.write ? `written: ${PROFILE_FILE}\n` : ''}`);
    return 0;
  } finally {
    await local.stop();
  }
}

export function renderProfile(p: LoadProfile): string {
  const L = [`Load profile (${p.measuredWith})`, '  writes (units per customer, per unit, or per shard over the larger run: those the planner counts itself):'];
  for (const w of p.writes) L.push(`    ${`${w.role}${w.index === undefined ? '' : `/${w.index}`}`.padEnd(26)} ${w.basis.padEnd(8)} ${w.units.toFixed(3).padStart(9)}  ${w.purpose}`);
  L.push(`  index writes by the rules, checked against the engine on single-item writes: ${p.indexRules.agreed} of ${p.indexRules.checked} alike`);
  L.push('  hottest key value per pattern (units in the larger run):');
  for (const k of p.keys) L.push(`    ${`${k.role}${k.index === undefined ? '' : `/${k.index}`}`.padEnd(26)} ${k.scope.padEnd(6)} ${String(k.values).padStart(5)} values  ${k.pattern}  (w ${(k.hottest.item + k.hottest.unit + k.hottest.shard).toFixed(1)}, r ${k.hottest.read.toFixed(1)})`);
  return L.join('\n');
}
