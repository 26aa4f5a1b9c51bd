/**
 * `npm run cli -- plan --customers N [--shards K] [--json]`: the capacity plan of a period's
 * invoice run on AWS (lib/workloads/invoices/plan.ts). Every figure is computed from the stated
 * assumptions and AWS's documented limits and list prices (lib/workflow/capacity.ts); none is
 * measured on DynamoDB Local. Bad input: one line, exit 2.
 */
import { InvalidInputError } from '../../lib/protocol/index.js';
import { AWS_LIMITS, DEFAULT_ASSUMPTIONS, DEFAULT_UNFINISHED_JOB_ALARM_MINUTES, MAX_SHARDS, PRICES_US_EAST_1, TABLE_ROLES } from '../../lib/workflow/index.js';
import { planInvoiceRun, type InvoicePlan } from '../../lib/workloads/invoices/plan.js';
import { DEFAULT_UNIT_SIZE, MAX_UNIT_SIZE } from '../../lib/workloads/invoices/invoices.js';
import { intFlag, parseFlags } from '../shared/flags.js';

export const PLAN_HELP = `plan --customers N [--shards K] [--json]: units, requests, write units, S3 puts and emails of a
period's invoice run on AWS, its cost at on-demand list prices (${PRICES_US_EAST_1.region}, ${PRICES_US_EAST_1.date}), its wall time, and
which limit binds with the setting that raises it. Without --shards it recommends a count.
  --customers N            customers in the period (1..1000000000)
  --shards K               shard jobs of the run (1..${MAX_SHARDS})
  --unit-size U            customers per fenced unit (1..${MAX_UNIT_SIZE}; the stack's default ${DEFAULT_UNIT_SIZE})
  --unit-latency-ms L      one unit's TransactWriteItems on AWS (default ${DEFAULT_ASSUMPTIONS.unitLatencyMs}; see docs/scale.md)
  --table-write-units W    the table-level write quota, if raised (default ${AWS_LIMITS.tableWriteUnitsPerSecond})
  --lambda-concurrency C   the account's Lambda concurrent executions (aws lambda get-account-settings; default ${AWS_LIMITS.lambdaConcurrency}): the stack's accountConcurrency
  --json                   one JSON object on stdout
  npm run cli -- plan --customers 10000000 --json`;

export function parsePlanFlags(argv: string[]): Parameters<typeof planInvoiceRun>[0] & { json: boolean } {
  const { values } = parseFlags({
    args: argv,
    options: {
      customers: { type: 'string' },
      shards: { type: 'string' },
      'unit-size': { type: 'string' },
      'unit-latency-ms': { type: 'string' },
      'table-write-units': { type: 'string' },
      'lambda-concurrency': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: false,
  });
  if (values.customers === undefined) throw new InvalidInputError('--customers', 'is required');
  const customers = intFlag('customers', values.customers, 0, 1, 1_000_000_000);
  const shards = values.shards === undefined ? undefined : intFlag('shards', values.shards, 1, 1, Math.min(MAX_SHARDS, customers));
  return {
    customers,
    ...(shards === undefined ? {} : { shards }),
    unitSize: intFlag('unit-size', values['unit-size'], DEFAULT_UNIT_SIZE, 1, MAX_UNIT_SIZE),
    assumptions: { unitLatencyMs: intFlag('unit-latency-ms', values['unit-latency-ms'], DEFAULT_ASSUMPTIONS.unitLatencyMs, 1, 1_000) },
    tableWriteUnits: intFlag('table-write-units', values['table-write-units'], AWS_LIMITS.tableWriteUnitsPerSecond, 1_000, 100_000_000),
    lambdaConcurrency: intFlag('lambda-concurrency', values['lambda-concurrency'], AWS_LIMITS.lambdaConcurrency, AWS_LIMITS.newAccountLambdaConcurrency, 10_000_000),
    json: values.json,
  };
}

const n = (x: number, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const duration = (s: number) => (s < 120 ? `${n(s, 1)} s` : s < 7200 ? `${n(s / 60, 1)} min` : `${n(s / 3600, 2)} h`);

export function renderPlan(p: InvoicePlan): string {
  const L: string[] = [];
  L.push(`Invoice run of ${n(p.customers)} customers, ${p.shards} shard(s)${p.shards === p.recommendedShards ? ' (recommended)' : ` (recommended: ${p.recommendedShards})`}, ${p.unitSize} customers per unit`);
  L.push(`  units ${n(p.units)} (${n(p.unitsPerShard)} in the longest shard), worker invocations ${n(p.invocations)}`);
  L.push(`  requests: ${Object.entries(p.requests).map(([k, v]) => `${k} ${n(v)}`).join(', ')}`);
  L.push(`  write units ${n(p.writeUnits.total)} (${Object.entries(p.writeUnits).filter(([k]) => k !== 'total').map(([k, v]) => `${k} ${n(v)}`).join(', ')}), read units ${n(p.readUnits)}`);
  L.push(`  write units per customer ${n(p.writeUnitsPerCustomer.total, 2)}: ${perCustomer(p)}`);
  L.push(`  hottest key per table and index (write units/s at the pace the shards allow, of ${n(AWS_LIMITS.partitionWriteUnitsPerSecond)} per partition): ${p.partitions
    .map((x) => `${x.table}${x.index === undefined ? '' : `/${x.index}`} ${x.key} ${n(x.writeUnitsPerSecond)}${x.writeUnitsPerSecond > x.limit.writeUnitsPerSecond ? ' (OVER)' : ''}`)
    .join(', ')}`);
  L.push(`  S3 puts ${n(p.s3Puts)}, emails ${n(p.emails)}, payment provider calls ${n(p.paymentCalls)}`);
  L.push(`  cost (${PRICES_US_EAST_1.region}, on-demand list prices of ${PRICES_US_EAST_1.date}): $${n(p.cost.total!, 2)} = ${Object.entries(p.cost).filter(([k]) => k !== 'total').map(([k, v]) => `${k} $${n(v, 2)}`).join(', ')}`);
  L.push(`  wall time ${duration(p.wallSeconds)} at ${p.assumptions.unitLatencyMs} ms per unit; on tables never pre-warmed: ${duration(p.wallSecondsUnwarmed)}`);
  L.push(`  binds: ${p.binding.name} (${n(p.binding.demands)} ${p.binding.unit} wanted, ${n(p.binding.allows)} allowed); raise: ${p.binding.raise}`);
  L.push('  limits (the shortest wall time each allows; demand as a share of what it allows):');
  for (const v of [...p.limits].sort((a, b) => b.seconds - a.seconds)) {
    L.push(`    ${duration(v.seconds).padStart(10)}  ${v.name}: ${n(v.demands)} of ${n(v.allows)} ${v.unit} (${n((100 * v.demands) / v.allows)} %)`);
  }
  L.push(`  stack settings: ${stackContext(p)} (worker event source maximum concurrency ${p.settings.workerMaxConcurrency})`);
  L.push(`  ${unfinishedJobAlarmLine(p.wallSecondsUnwarmed)}`);
  L.push('  warm throughput is billed when it is raised (DynamoDB pricing, warm throughput) and can never be lowered: a deploy that lowers it fails and rolls back');
  const missing = Object.keys(p.settings.warmWriteUnits).filter((r) => !(TABLE_ROLES as string[]).includes(r));
  if (missing.length > 0) L.push(`  (no ${missing.join(', ')} table in this stack yet: warm it the same way when it has one)`);
  return L.join('\n');
}

/**
 * UnfinishedJobTooOld against the run's own duration: a healthy run of hours would page someone
 * every time it runs. Judged on tables never pre-warmed (the longer time), with twice that as the
 * margin a setting must leave.
 */
export function unfinishedJobAlarmLine(jobSeconds: number): string {
  const at = DEFAULT_UNFINISHED_JOB_ALARM_MINUTES;
  const needed = Math.ceil((2 * jobSeconds) / 60);
  const head = `alarm UnfinishedJobTooOld: fires when a job stays unfinished over ${at} min (unfinishedJobAlarmMinutes); this run's jobs take up to ${duration(jobSeconds)}`;
  return needed <= at ? `${head}: it fits` : `${head}: it would fire during a healthy run; deploy with -c unfinishedJobAlarmMinutes=${needed}`;
}

/** The per-customer write units by table and index (the breakdown by purpose is in --json). */
function perCustomer(p: InvoicePlan): string {
  const by = new Map<string, number>();
  for (const w of p.writeUnitsPerCustomer.breakdown) {
    const at = `${w.table}${w.index === undefined ? '' : `/${w.index}`}`;
    by.set(at, (by.get(at) ?? 0) + w.units);
  }
  return [...by].map(([at, u]) => `${at} ${n(u, 2)}`).join(', ');
}

/** The CDK context that deploys the plan: its shards, and warm throughput on the tables this stack has. */
export function stackContext(p: InvoicePlan): string {
  const indexes = (r: string) => {
    const ix = p.settings.warmIndexWriteUnits[r as keyof typeof p.settings.warmIndexWriteUnits];
    return ix === undefined ? {} : { indexes: Object.fromEntries(Object.entries(ix).map(([name, w]) => [name, { write: w }])) };
  };
  const warm = Object.fromEntries(Object.entries(p.settings.warmWriteUnits).filter(([r]) => (TABLE_ROLES as string[]).includes(r)).map(([r, w]) => [r, { write: w, ...indexes(r) }]));
  return `-c shards=${p.settings.shards} -c accountConcurrency=${p.settings.lambdaConcurrency} -c warmThroughput='${JSON.stringify(warm)}'`;
}

export function planCommand(argv: string[]): number {
  if (argv.includes('--help')) {
    process.stdout.write(`${PLAN_HELP}\n`);
    return 0;
  }
  const { json, ...input } = parsePlanFlags(argv);
  const plan = planInvoiceRun(input);
  process.stdout.write(json ? `${JSON.stringify({ ...plan, stackContext: stackContext(plan), prices: PRICES_US_EAST_1, awsLimits: AWS_LIMITS })}\n` : `${renderPlan(plan)}\n`);
  return 0;
}
