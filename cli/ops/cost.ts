/**
 * `npm run cli -- cost --template cdk.out/<stack>.template.json [--json]`: what a deployed stack
 * costs a month doing nothing, read from its synthesized template (the dashboards, the alarms and
 * the metrics each one evaluates, the KMS keys, the secrets, the enabled schedules and the
 * functions they invoke, the SQS event source's polling), at on-demand list prices and with no
 * free tier (PRICES_US_EAST_1, IDLE_PRICES_US_EAST_1). A run's own cost is the plan's
 * (`npm run cli -- plan --customers N`). Every figure is computed, none measured on AWS.
 */
import { readFileSync } from 'node:fs';
import { InvalidInputError } from '../../lib/protocol/index.js';
import { IDLE_PRICES_US_EAST_1, PRICES_US_EAST_1, UNSENT_SHARDS } from '../../lib/workflow/index.js';
import { parseFlags } from '../shared/flags.js';

export const COST_HELP = `cost --template FILE [--json]: the idle monthly cost of a synthesized stack (npm run synth writes
cdk.out/<stack>.template.json) at ${IDLE_PRICES_US_EAST_1.region} list prices of ${IDLE_PRICES_US_EAST_1.date}, without free tiers: the
dashboards, alarms, keys, secrets, schedules, the functions they run, the work queue's polling.
A run's own cost: npm run cli -- plan --customers N.
  npm run synth -- -c senderAddress=billing@your-company.com && npm run cli -- cost --template cdk.out/FencedWorkflow.template.json`;

type Resource = { Type: string; Properties?: Record<string, any> };
type Template = { Resources: Record<string, Resource> };

export interface CostLine {
  readonly what: string;
  readonly count: number;
  readonly unit: string;
  readonly dollars: number;
}

export interface IdleCost {
  readonly lines: CostLine[];
  readonly total: number;
}

const MINUTES_A_MONTH = 30 * 24 * 60;

/** Invocations a month of a schedule expression: rate(...) exactly; a cron or at() as the few it is (1 a month for the starter's monthly cron). */
export function invocationsAMonth(expression: string): number {
  const rate = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
  if (rate !== null) {
    const every = Number(rate[1]) * (rate[2]!.startsWith('minute') ? 1 : rate[2]!.startsWith('hour') ? 60 : 1440);
    return Math.floor(MINUTES_A_MONTH / every);
  }
  const cron = /^cron\((\S+) (\S+) (\S+) (\S+) (\S+) (\S+)\)$/.exec(expression);
  if (cron !== null) {
    const [, minute, hour, day] = cron;
    if (minute !== '*' && hour !== '*' && day !== '*' && day !== '?') return 1; // once a month
    if (minute !== '*' && hour !== '*') return 30; // once a day
    return MINUTES_A_MONTH; // as often as every minute, at most
  }
  return 0;
}

/** The metrics an alarm evaluates: each MetricStat of a metric-math alarm, or its one metric. */
const alarmMetrics = (p: Record<string, any>): number => (Array.isArray(p.Metrics) ? p.Metrics.filter((m: { MetricStat?: unknown }) => m.MetricStat !== undefined).length : 1);

export function idleCost(template: Template): IdleCost {
  const p = IDLE_PRICES_US_EAST_1;
  const of = (type: string) => Object.entries(template.Resources).filter(([, r]) => r.Type === type);
  const lines: CostLine[] = [];
  const add = (what: string, count: number, unit: string, dollars: number) => lines.push({ what, count, unit, dollars });

  add('CloudWatch dashboards', of('AWS::CloudWatch::Dashboard').length, 'dashboards', of('AWS::CloudWatch::Dashboard').length * p.dashboardPerMonth);
  const metrics = of('AWS::CloudWatch::Alarm').reduce((n, [, r]) => n + alarmMetrics(r.Properties ?? {}), 0);
  add(`CloudWatch alarms (${of('AWS::CloudWatch::Alarm').length})`, metrics, 'alarm metrics', metrics * p.alarmMetricPerMonth);
  add('KMS keys (their rotations add $1 each for the first two)', of('AWS::KMS::Key').length, 'keys', of('AWS::KMS::Key').length * p.kmsKeyPerMonth);
  add('Secrets Manager secrets', of('AWS::SecretsManager::Secret').length, 'secrets', of('AWS::SecretsManager::Secret').length * p.secretPerMonth);

  // The schedules that run while idle, and what each run of their function costs.
  const fnOf = (arn: unknown): Resource | undefined => {
    const id = (arn as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt']?.[0];
    return id === undefined ? undefined : template.Resources[id];
  };
  let runs = 0;
  let gbSeconds = 0;
  let reconcilerRuns = 0;
  let sweeperRuns = 0;
  for (const [, s] of of('AWS::Scheduler::Schedule')) {
    if (s.Properties?.State === 'DISABLED') continue;
    const n = invocationsAMonth(String(s.Properties?.ScheduleExpression ?? ''));
    const fn = fnOf(s.Properties?.Target?.Arn);
    const service = String(fn?.Properties?.Environment?.Variables?.POWERTOOLS_SERVICE_NAME ?? '');
    runs += n;
    gbSeconds += n * ((Number(fn?.Properties?.MemorySize ?? 128) / 1024) * p.assumedIdleRunSeconds);
    if (service === 'reconciler') reconcilerRuns += n;
    if (service === 'sweeper') sweeperRuns += n;
  }
  add('EventBridge Scheduler invocations', runs, 'invocations', (runs / 1e6) * p.schedulerPerMillion);
  add(`Lambda: the scheduled runs (${p.assumedIdleRunSeconds} s each, their memory)`, runs, 'invocations', (runs / 1e6) * PRICES_US_EAST_1.lambdaRequestPerMillion + gbSeconds * PRICES_US_EAST_1.lambdaArmGbSecond);
  // Each reconciler run queries every key of the unsent index (and the retired ones' 1), each sweep the sparse index once: 0.5 read units each on an empty index.
  const queries = reconcilerRuns * (UNSENT_SHARDS + 1) + sweeperRuns;
  add(`DynamoDB queries of the idle runs (reconciler ${UNSENT_SHARDS + 1} a run, sweeper 1)`, queries, 'queries', ((queries * 0.5) / 1e6) * PRICES_US_EAST_1.dynamoReadRequestUnitPerMillion);
  const pollers = of('AWS::Lambda::EventSourceMapping').filter(([, m]) => JSON.stringify(m.Properties?.EventSourceArn ?? '').includes('Queue')).length;
  const receives = pollers * p.sqsPollersPerMapping * p.sqsLongPollsPerMinute * MINUTES_A_MONTH;
  add(`SQS long polling of the work queue (${p.sqsPollersPerMapping} pollers, 20 s each)`, receives, 'requests', (receives / 1e6) * PRICES_US_EAST_1.sqsRequestPerMillion);
  add('X-Ray traces of the scheduled runs (active tracing)', runs, 'traces', (runs / 1e6) * p.xrayTracePerMillion);
  add('CloudWatch Logs ingestion of the scheduled runs (~1 KB each)', runs, 'KB', (runs / 1024 / 1024) * p.logsIngestionPerGb);
  // The gauges the sweeper and the reconciler publish on every run: a custom metric each, all month.
  const gauges = (sweeperRuns > 0 ? 1 : 0) + (reconcilerRuns > 0 ? 1 : 0);
  add('custom metrics published while idle (the sweeper and reconciler gauges)', gauges, 'metrics', gauges * p.customMetricPerMonth);
  return { lines, total: lines.reduce((t, l) => t + l.dollars, 0) };
}

const money = (d: number) => `$${d.toFixed(2)}`;

export function renderIdleCost(c: IdleCost, name: string): string {
  const width = Math.max(...c.lines.map((l) => l.what.length));
  const out = [`Idle cost of ${name}, a month (${IDLE_PRICES_US_EAST_1.region} list prices of ${IDLE_PRICES_US_EAST_1.date}, no free tier): ${money(c.total)}`];
  for (const l of c.lines) out.push(`  ${l.what.padEnd(width)}  ${String(Math.round(l.count)).padStart(9)} ${l.unit.padEnd(14)} ${money(l.dollars).padStart(7)}`);
  out.push('  A run adds its own (npm run cli -- plan --customers N); storage, PITR and retained documents grow with the data.');
  return out.join('\n');
}

export function costCommand(argv: string[]): number {
  if (argv.includes('--help')) {
    process.stdout.write(`${COST_HELP}\n`);
    return 0;
  }
  const { values } = parseFlags({ args: argv, options: { template: { type: 'string' }, json: { type: 'boolean', default: false } }, allowPositionals: false });
  if (values.template === undefined) throw new InvalidInputError('--template', 'is required: a synthesized template (npm run synth writes cdk.out/<stack>.template.json)');
  let template: Template;
  try {
    template = JSON.parse(readFileSync(values.template, 'utf8')) as Template;
  } catch (e) {
    throw new InvalidInputError('--template', `${values.template} is not a readable JSON template: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
  if (typeof template?.Resources !== 'object' || template.Resources === null) throw new InvalidInputError('--template', `${values.template} has no Resources: not a CloudFormation template`);
  const cost = idleCost(template);
  const name = values.template.replace(/^.*\//, '').replace(/\.template\.json$/, '');
  process.stdout.write(values.json ? `${JSON.stringify({ stack: name, ...cost, prices: IDLE_PRICES_US_EAST_1 })}\n` : `${renderIdleCost(cost, name)}\n`);
  return 0;
}
