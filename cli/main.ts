/**
 * `npm start` — the main job on an embedded DynamoDB Local — and the ops CLI.
 *
 *   npm start                               incident replay (with and without the fence),
 *                                           a faulted invoice run, the invariant report, a timeline SVG
 *   npm start -- --customers 1000 --workers 6 --seed 3 --json
 *   npm run cli -- status --endpoint http://127.0.0.1:8000 --table-prefix fw-...-
 *   npm run cli -- status --outputs cdk-outputs.json      (a deployed stack, standard credentials)
 *   npm run cli -- requeue 'invoice-run#2026-11' --outputs cdk-outputs.json
 *   npm run cli -- raise-epoch --epoch 1 --outputs cdk-outputs.json
 *   npm run cli -- seal --epoch 1 --outputs cdk-outputs.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createDynamo, FencedError, InvalidInputError, systemClock } from '../lib/protocol/index.js';
import { ensureTables, tableNames } from '../lib/workflow/index.js';
import { startDynamoLocal, type DynamoLocal } from './dynamodb-local.js';
import { intFlag, urlFlag } from './flags.js';
import { replayIncident } from './incident.js';
import { invoiceRun } from './run.js';
import { renderSvg } from './timeline.js';
import { streamsClient } from './streams.js';
import { opsCommand, OPS_COMMANDS, opsHelp } from './ops.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const HELP = `Fenced workflows on DynamoDB — the main job and the ops CLI.

Usage:
  npm start [-- options]            run the demo on an embedded DynamoDB Local (default)
  npm run cli -- <command> [options]

Demo options:
  --endpoint URL        use an existing DynamoDB (e.g. http://127.0.0.1:8000) instead of starting one
  --table-prefix P      table name prefix (default: fw-<timestamp>-)
  --customers N         customers per billing period (default 400; 3 periods)
  --workers N           concurrent worker invocations (default 4)
  --seed N              seed for customers and amounts (default 1)
  --lease-mode M        wall-clock (default) or version-watch
  --out FILE            where to write the timeline SVG (default out/timeline.svg)
  --json                print one JSON report on stdout and nothing else there
  --help                this text

Commands: ${OPS_COMMANDS.join(', ')} (npm run cli -- <command> --help)
`;

interface DemoFlags {
  endpoint?: string;
  prefix: string;
  customers: number;
  workers: number;
  seed: number;
  leaseMode: 'wall-clock' | 'version-watch';
  out: string;
  json: boolean;
}

export function parseDemoFlags(argv: string[]): DemoFlags | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      endpoint: { type: 'string' },
      'table-prefix': { type: 'string' },
      customers: { type: 'string' },
      workers: { type: 'string' },
      seed: { type: 'string' },
      'lease-mode': { type: 'string' },
      out: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return 'help';
  urlFlag('endpoint', values.endpoint);
  const stamp = new Date().toISOString().replace(/[-:T.Z]/g, '').slice(0, 14);
  const prefix = values['table-prefix'] ?? `fw-${stamp}-`;
  tableNames(prefix); // validates
  return {
    ...(values.endpoint === undefined ? {} : { endpoint: values.endpoint }),
    prefix,
    customers: intFlag('customers', values.customers, 400, 0, 1_000_000),
    workers: intFlag('workers', values.workers, 4, 1, 64),
    seed: intFlag('seed', values.seed, 1, 0, 2 ** 31 - 1 - 10),
    leaseMode: leaseModeFlag(values['lease-mode']),
    out: values.out ?? 'out/timeline.svg',
    json: values.json,
  };
}

function leaseModeFlag(raw: string | undefined): DemoFlags['leaseMode'] {
  if (raw === undefined || raw === 'wall-clock' || raw === 'version-watch') return raw ?? 'wall-clock';
  throw new InvalidInputError('--lease-mode', `must be wall-clock or version-watch, got "${raw}"`);
}

async function demo(flags: DemoFlags): Promise<number> {
  const out = flags.json ? (_: string) => undefined : (line: string) => process.stdout.write(line + '\n');
  const started = Date.now();
  let local: DynamoLocal | undefined;
  if (flags.endpoint === undefined) {
    out('Starting DynamoDB Local (the real engine, in memory)…');
    local = await startDynamoLocal();
  }
  const endpoint = flags.endpoint ?? local!.endpoint;
  const stop = async () => local?.stop();
  process.once('SIGINT', () => void stop().finally(() => process.exit(130)));
  try {
    const dynamo = createDynamo({ endpoint });
    const streams = streamsClient(endpoint);
    const incidentTables = tableNames(`${flags.prefix}incident-`);
    const unsafeTables = tableNames(`${flags.prefix}incident-unsafe-`);
    const runTables = tableNames(flags.prefix);
    await Promise.all([incidentTables, unsafeTables, runTables].map((n) => ensureTables(dynamo.client, n)));

    out('\n1. The incident (source article): A pauses past its lease; B takes over; A wakes and writes.');
    out('   With the fence:');
    const safe = await replayIncident({ doc: dynamo.doc, tables: incidentTables, clock: systemClock, fenced: true, log: out });
    out('   Without the fence (UNSAFE variant, its own tables):');
    const unsafe = await replayIncident({ doc: dynamo.doc, tables: unsafeTables, clock: systemClock, fenced: false, log: out });

    out(`\n2. Invoice run: ${flags.customers} customers x 3 periods, ${flags.workers} workers, sweeper, injected faults.`);
    let bar: { update(n: number): void; stop(): void; setTotal(n: number): void } | undefined;
    if (!flags.json && process.stderr.isTTY) {
      const { SingleBar, Presets } = await import('cli-progress');
      const b = new SingleBar({ format: '   units {bar} {value}/{total}', stream: process.stderr, clearOnComplete: false }, Presets.shades_classic);
      b.start(1, 0);
      bar = b;
    }
    let lastPct = -1;
    const run = await invoiceRun({
      dynamo,
      streams,
      tables: runTables,
      customers: flags.customers,
      workers: flags.workers,
      seed: flags.seed,
      leaseMode: flags.leaseMode,
      onProgress: (done, total) => {
        if (bar) {
          bar.setTotal(total);
          bar.update(done);
        } else {
          const pct = Math.floor((done / Math.max(1, total)) * 10) * 10;
          if (pct !== lastPct) out(`   progress: ${done}/${total} units (${pct}%)`);
          lastPct = pct;
        }
      },
    });
    bar?.stop();

    for (const f of run.faults) out(`   fault: ${f.name} (${f.lane}, t=${f.atMs} ms)`);
    out(`   ${run.units} units committed in ${run.elapsedMs} ms; ${run.invocations} invocations (${run.crashes} crashed, ${run.timeouts} timed out), ${run.sweeps} sweeps, ${run.deadLetters} dead letters`);
    out(`   metrics: ${Object.entries(run.metrics).map(([k, v]) => `${k}=${v}`).join(' ')}`);
    for (const j of run.jobs) out(`   ${j.id}: ${j.status} ${j.cursor}/${j.totalUnits} units, requeued ${j.requeues}x`);

    out('\n3. Invariants (read back from the tables and their streams):');
    for (const [name, r] of Object.entries(run.invariants.invariants)) {
      out(`   ${r.ok ? 'PASS' : 'FAIL'}  ${name}${r.ok ? '' : ': ' + r.violations.join('; ')}`);
    }
    const s = run.invariants.stats;
    out(`   ${s.invoices} invoices, ${s.charges} charges, total ${(s.totalCents / 100).toFixed(2)} EUR (expected ${s.expectedInvoices} and ${(s.expectedTotalCents / 100).toFixed(2)} EUR)`);

    const svgPath = resolve(flags.out);
    mkdirSync(resolve(svgPath, '..'), { recursive: true });
    writeFileSync(
      svgPath,
      renderSvg('Fenced workflows on DynamoDB: what happened', [
        { title: 'The incident, with the fence', subtitle: "A's stale write is rejected; B's invoices stand", events: safe.timeline.events },
        { title: 'The same schedule without the fence (UNSAFE)', subtitle: "A overwrites B's invoices", events: unsafe.timeline.events },
        { title: `Invoice run: ${flags.customers} customers x 3 periods, ${flags.workers} workers, faults`, events: run.timeline.events },
      ]),
    );
    out(`\nTimeline picture: ${svgPath}`);

    const incidentOk = safe.aRejected && unsafe.overwritten.length > 0;
    const ok = incidentOk && run.invariants.ok;
    const report = {
      ok,
      elapsedMs: Date.now() - started,
      endpoint: flags.endpoint ?? 'embedded',
      tablePrefix: flags.prefix,
      incident: {
        fenced: { generations: safe.generations, staleWriteRejected: safe.aRejected },
        unsafe: { generations: unsafe.generations, invoicesOverwritten: unsafe.overwritten.length, chargesStoppedByOperationKey: unsafe.chargesSuppressed },
      },
      run: {
        customersPerPeriod: flags.customers,
        periods: run.jobs.length,
        workers: flags.workers,
        seed: flags.seed,
        leaseMode: flags.leaseMode,
        elapsedMs: run.elapsedMs,
        unitsCommitted: run.units,
        invocations: run.invocations,
        crashed: run.crashes,
        timedOut: run.timeouts,
        sweeps: run.sweeps,
        deadLetters: run.deadLetters,
        faults: run.faults,
        metrics: run.metrics,
        jobs: run.jobs,
      },
      invariants: run.invariants.invariants,
      stats: run.invariants.stats,
      timelineSvg: svgPath,
    };
    if (flags.json) process.stdout.write(JSON.stringify(report) + '\n');
    else out(ok ? '\nAll invariants hold.' : '\nFAILED: see above.');
    return ok ? 0 : 1;
  } finally {
    await stop();
  }
}

export async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  try {
    if (first !== undefined && !first.startsWith('-')) {
      if (first === 'help') {
        process.stdout.write(HELP);
        return 0;
      }
      if (!OPS_COMMANDS.includes(first as (typeof OPS_COMMANDS)[number])) {
        throw new InvalidInputError('command', `unknown command "${first}"; expected one of ${OPS_COMMANDS.join(', ')}`);
      }
      return await opsCommand(first as (typeof OPS_COMMANDS)[number], rest);
    }
    const flags = parseDemoFlags(argv);
    if (flags === 'help') {
      process.stdout.write(HELP + '\n' + opsHelp());
      return 0;
    }
    return await demo(flags);
  } catch (e) {
    if (e instanceof FencedError || (e instanceof TypeError && 'code' in e && String(e.code).startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`error: ${e.message}\n(--help for usage)\n`);
      return 2;
    }
    throw e;
  }
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('cli/main.ts')) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    },
  );
}
