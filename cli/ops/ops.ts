/**
 * Ops commands: status, requeue, decide (cli/ops/decide.ts), retry (cli/ops/retry.ts), raise-epoch, seal, pause, resume (cli/ops/pause.ts), plan (cli/ops/plan.ts). They work against DynamoDB Local
 * (--endpoint + --table-prefix) or a deployed stack (--outputs cdk-outputs.json from
 * `cdk deploy --outputs-file`, or explicit --*-table flags) with the standard credential chain.
 */
import { readFileSync } from 'node:fs';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  assertEpoch,
  ConfigError,
  createDynamo,
  EPOCH_RECORD_KEY,
  formatGeneration,
  InvalidInputError,
  MAX_EPOCH,
  raiseEpoch,
  scanAll,
  seal,
  systemClock,
  type Generation,
} from '../../lib/protocol/index.js';
import {
  assertJobId,
  claimRequeue,
  fencesOfLease,
  isJobItem,
  isRunItem,
  readJob,
  runFromItem,
  runStatus,
  TABLE_NAME,
  TABLE_ROLES,
  tableNames,
  type TableNames,
  type TableRole,
  type Workload,
} from '../../lib/workflow/index.js';
import { DEFAULT_WORKLOAD, workloadNamed } from '../../lib/workloads/index.js';
import { OUTPUTS } from '../../infra/outputs.js';
import { intFlag, parseFlags, urlFlag } from '../shared/flags.js';
import { decide, DECIDE_USAGE, decisionOf, type DecideFlags } from './decide.js';
import { retry, RETRY_USAGE, retryNoteOf } from './retry.js';
import { COST_HELP, costCommand } from './cost.js';
import { outboxSummary, renderOutboxSummary } from './outbox-summary.js';
import { PLAN_HELP, planCommand } from './plan.js';
import { listPrefixes } from './prefixes.js';

export const OPS_COMMANDS = ['status', 'requeue', 'start', 'redrive', 'decide', 'retry', 'raise-epoch', 'seal', 'pause', 'resume', 'plan', 'cost'] as const;
export type OpsCommand = (typeof OPS_COMMANDS)[number];

const COMMON = `Where (one of):
  --endpoint URL --table-prefix P     DynamoDB Local (or any endpoint) with prefixed tables
  --outputs FILE [--stack NAME]       a deployed stack: cdk deploy --outputs-file FILE (--stack when it holds several)
  --leases-table T --fences-table T --jobs-table T --records-table T --outbox-table T [--queue-url U]
Also: --workload NAME (the stack's: read from --outputs when it names one; default invoices), --region R, --json`;

const USAGE: Record<OpsCommand, string> = {
  status: `status: leases, fences, jobs (each with its share done and time left) and runs at a glance, each sorted by key;\n--outbox adds what the outbox came to per target (states, declines, bounces, complaints; a Scan: for a run's worth).\n  npm run cli -- status --outputs cdk-outputs.json [--outbox]\n  npm run cli -- status --endpoint URL --prefixes     the table prefixes present there (one per npm start)\n${COMMON}`,
  requeue: `requeue <jobId>: have an unfinished job picked up again: a conditional update of the job
(heartbeat, requeues; refused if a live worker moved it meanwhile), then
  - with a work queue (--outputs, or --queue-url): a message to it, for the deployed workers;
  - locally (--endpoint, no queue: none outlives npm start): this command runs the job itself,
    with the worker handler Lambda runs, until it is DONE (or a live holder has it).
  npm run cli -- requeue 'invoice-run#2026-11' --outputs cdk-outputs.json
  npm run cli -- requeue 'invoice-run#2026-11' --endpoint http://127.0.0.1:8000 --table-prefix fw-...-
${COMMON}`,
  'raise-epoch': `raise-epoch --epoch E: record E as the current epoch (never lower). Then deploy with\n-c fenceEpoch=E and run seal. See docs/runbook-dr.md.\n  npm run cli -- raise-epoch --epoch 1 --outputs cdk-outputs.json\n${COMMON}`,
  pause: `pause: stop the worker receiving: disables its SQS event source mapping and waits until Lambda says
Disabled. Messages wait in the queue; no receive counts toward the DLQ. Never throttle the worker instead.
  npm run cli -- pause --outputs cdk-outputs.json     (or --mapping-id UUID [--region R])`,
  resume: `resume: enable the worker's SQS event source mapping again and wait until Lambda says Enabled.
  npm run cli -- resume --outputs cdk-outputs.json    (or --mapping-id UUID [--region R])`,
  decide: `${DECIDE_USAGE}\n${COMMON}`,
  retry: `${RETRY_USAGE}\n${COMMON}`,
  start: `start --items N [--payload JSON]: start a run now, as the schedule would: invokes the stack's starter
with {"items": N} (the run's size in any workload) and the workload's own fields from --payload, and prints
the run it created, or found (one run per schedule slot: a second start starts nothing new).
  npm run cli -- start --items 50 --outputs cdk-outputs.json [--stack NAME]    (or --function-name NAME [--region R])`,
  redrive: `redrive [--wait]: move the work queue's dead-letter messages back to the work queue (SQS's message move
task; the source is the queue whose redrive policy names the DLQ), once the cause is fixed. --wait follows the move
until it ends. A redriven message whose job is done does nothing.
  npm run cli -- redrive --outputs cdk-outputs.json [--stack NAME] [--wait]    (or --dlq-arn ARN [--region R])`,
  plan: PLAN_HELP,
  cost: COST_HELP,
  seal: `seal --epoch E: raise every fence and lease counter to E * 2^32 so every older token is\nrejected at once. Idempotent and restartable.\n  npm run cli -- seal --epoch 1 --outputs cdk-outputs.json\n${COMMON}`,
};

export const opsHelp = (): string => OPS_COMMANDS.map((c) => USAGE[c]).join('\n\n') + '\n';

interface Target {
  doc: DynamoDBDocumentClient;
  /** The stack's workload: its processor for a local requeue, its fence key prefix for the seal. */
  workload: Workload<any>;
  endpoint?: string;
  tables: TableNames;
  queueUrl?: string;
  region?: string;
}

/**
 * Finds table names and the queue URL in `cdk deploy --outputs-file` JSON: by this stack's output
 * names (infra/outputs.ts), else by pattern, for a fork's stack that names its outputs its own way.
 */
export function tablesFromOutputs(json: unknown, stack?: string): { tables: TableNames; queueUrl?: string } {
  const flat = stackOutputs(json, stack);
  const find = (re: RegExp) => Object.entries(flat).find(([k]) => re.test(k))?.[1];
  const tables = {} as Record<TableRole, string>;
  for (const role of TABLE_ROLES) {
    const name = flat[OUTPUTS[role]] ?? find(new RegExp(`${role}.*table.*name|${role}table`, 'i'));
    if (name === undefined) throw new InvalidInputError('--outputs', `no output for the ${role} table name`);
    tables[role] = name;
  }
  const queueUrl = flat[OUTPUTS.queueUrl] ?? find(/^work.*queue.*url/i);
  return queueUrl === undefined ? { tables } : { tables, queueUrl };
}

/**
 * One stack's outputs from `cdk deploy --outputs-file` JSON (keyed by stack name). A file of
 * several stacks (staging and prod, two forks) needs `--stack`: reading their outputs together
 * would mix one stack's Leases with another's Fences.
 */
export function stackOutputs(json: unknown, stack?: string): Record<string, string> {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new InvalidInputError('--outputs', 'must be a JSON object');
  const stacks = Object.entries(json as Record<string, unknown>).filter(([, v]) => typeof v === 'object' && v !== null && !Array.isArray(v));
  const names = stacks.map(([n]) => n).join(', ');
  let chosen: unknown;
  if (stack !== undefined) {
    chosen = stacks.find(([n]) => n === stack)?.[1];
    if (chosen === undefined) throw new InvalidInputError('--stack', `no stack ${JSON.stringify(stack.slice(0, 128))} in the outputs file (${names || 'none'})`);
  } else if (stacks.length > 1) {
    throw new InvalidInputError('--stack', `the outputs file holds ${stacks.length} stacks (${names}); pick one with --stack NAME`);
  } else {
    chosen = stacks[0]?.[1] ?? {};
  }
  return Object.fromEntries(Object.entries(chosen as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

const REGION = /^[a-z0-9-]{1,63}$/;

/**
 * The stack's workload: the outputs' WorkloadName when the stack names one, else --workload, else
 * the default. A --workload that contradicts the outputs is refused: a seal with another
 * workload's fence prefix would raise fences no worker checks and leave the real ones below the floor.
 */
function workloadOf(flag: string | undefined, fromOutputs: string | undefined): Workload<any> {
  if (flag !== undefined && fromOutputs !== undefined && flag !== fromOutputs) throw new InvalidInputError('--workload', `the stack's outputs name workload "${fromOutputs}", not "${flag}"`);
  return workloadNamed(fromOutputs ?? flag ?? DEFAULT_WORKLOAD, '--workload');
}

function target(values: Record<string, string | boolean | undefined>): Target {
  const str = (k: string) => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
  // Checked before any client exists: the SDK would fail only at the first request, with a bare error.
  const endpoint = urlFlag('endpoint', str('endpoint'));
  const region = str('region');
  if (region !== undefined && !REGION.test(region)) throw new InvalidInputError('--region', `must be a region name like eu-west-1, got "${region}"`);
  let tables: TableNames;
  let queueUrl = urlFlag('queue-url', str('queue-url'));
  for (const r of TABLE_ROLES) {
    const name = str(`${r}-table`);
    if (name !== undefined && !TABLE_NAME.test(name)) throw new InvalidInputError(`--${r}-table`, `must be 3-255 chars of [a-zA-Z0-9_.-], got "${name}"`);
  }
  if (str('outputs') !== undefined) {
    const found = tablesFromOutputs(readOutputs(str('outputs')!), str('stack'));
    tables = found.tables;
    queueUrl ??= found.queueUrl;
  } else if (str('table-prefix') !== undefined) {
    tables = tableNames(str('table-prefix')!);
  } else if (TABLE_ROLES.every((r) => str(`${r}-table`) !== undefined)) {
    tables = Object.fromEntries(TABLE_ROLES.map((r) => [r, str(`${r}-table`)!])) as unknown as TableNames;
  } else {
    throw new ConfigError('tables', 'say which tables: --outputs FILE, --table-prefix P (with --endpoint; status --prefixes lists those there), or all five --*-table flags');
  }
  const { doc } = createDynamo({ ...(endpoint ? { endpoint } : {}), ...(region ? { region } : {}) });
  return { doc, workload: workloadOf(str('workload'), str('outputs') === undefined ? undefined : stackOutputs(readOutputs(str('outputs')!), str('stack'))[OUTPUTS.workload]), tables, ...(endpoint ? { endpoint } : {}), ...(queueUrl ? { queueUrl } : {}), ...(region ? { region } : {}) };
}

/** status --prefixes: the table prefixes at --endpoint (or in --region), not one prefix's tables. */
async function prefixesHere(command: OpsCommand, values: { endpoint?: string; region?: string; json: boolean }): Promise<number> {
  if (command !== 'status') throw new InvalidInputError('--prefixes', 'is a flag of status only');
  const endpoint = urlFlag('endpoint', values.endpoint);
  if (values.region !== undefined && !REGION.test(values.region)) throw new InvalidInputError('--region', `must be a region name like eu-west-1, got "${values.region}"`);
  const { client } = createDynamo({ ...(endpoint ? { endpoint } : {}), ...(values.region ? { region: values.region } : {}) });
  try {
    return await listPrefixes(client, endpoint ?? `region ${values.region ?? 'of the standard chain'}`, values.json);
  } finally {
    client.destroy();
  }
}

type Flags = Record<string, string | boolean | undefined>;

/**
 * What the commands that call a stack's resource (start, redrive, pause, resume) share: the
 * region, checked, and the resource's name from its own flag or, failing that, from the outputs
 * file's `output` of the stack (--stack).
 */
function resourceTarget(values: Flags, flag: string, output: string): { name: string | undefined; region?: string } {
  const str = (k: string) => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
  const region = str('region');
  if (region !== undefined && !REGION.test(region)) throw new InvalidInputError('--region', `must be a region name like eu-west-1, got "${region}"`);
  let name = str(flag);
  if (name === undefined && str('outputs') !== undefined) name = stackOutputs(readOutputs(str('outputs')!), str('stack'))[output];
  return { name, ...(region ? { region } : {}) };
}

/** `redrive [--wait]`: the work DLQ's messages back to the work queue (cli/ops/redrive.ts). */
async function redriveNow(values: Flags): Promise<number> {
  const { name, ...where } = resourceTarget(values, 'dlq-arn', OUTPUTS.deadLetterQueueArn);
  const { redriveDeadLetters } = await import('./redrive.js');
  return redriveDeadLetters(name, { ...where, wait: values.wait === true, json: values.json === true });
}

/** `start --items N [--payload JSON]`: the stack's starter, invoked now (cli/ops/start.ts). */
async function startNow(values: Flags): Promise<number> {
  const raw = typeof values.payload === 'string' ? values.payload : undefined;
  let payload: Record<string, unknown> = {};
  if (raw !== undefined) {
    try {
      payload = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      throw new InvalidInputError('--payload', `must be a JSON object, got ${raw.slice(0, 100)}`);
    }
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new InvalidInputError('--payload', 'must be a JSON object');
  }
  if (typeof values.items === 'string') payload = { ...payload, items: intFlag('items', values.items, 0, 0, 100_000_000) };
  const { name, ...where } = resourceTarget(values, 'function-name', OUTPUTS.starterFunction);
  const { startRunNow } = await import('./start.js');
  return startRunNow({ functionName: name, ...where }, payload, values.json === true);
}

/** pause/resume need the event source mapping, not the tables: from --mapping-id or the outputs file. */
async function pauseOrResume(command: 'pause' | 'resume', values: Flags): Promise<number> {
  const { name, ...where } = resourceTarget(values, 'mapping-id', OUTPUTS.workerEventSourceMapping);
  const { setWorkerReceiving } = await import('./pause.js');
  return setWorkerReceiving(command === 'resume', { mappingId: name, ...where }, values.json === true);
}

function readOutputs(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InvalidInputError('--outputs', `cannot read ${file}: ${(e as Error).message}`);
  }
}

const gen = (v: unknown) => (typeof v === 'number' ? formatGeneration(v as Generation) : '-');

type Item = Awaited<ReturnType<typeof scanAll>>[number];

/** A scan's items in key order: a scan returns them in hash order. */
function byKey<T extends Record<string, unknown>>(items: T[]): T[] {
  return [...items].sort((a, b) => (String(a.pk) < String(b.pk) ? -1 : String(a.pk) > String(b.pk) ? 1 : 0));
}

/**
 * A job's share done and, while it runs, the time left at the pace it has kept since it was
 * created (queueing and hand-offs included): ` (40 %, ~2 min left)`. Nothing for a job that has
 * not committed a unit, or has ended.
 */
export function progressOf(j: { status?: unknown; cursor?: unknown; totalUnits?: unknown; createdAt?: unknown }, now: number): string {
  const done = Number(j.cursor);
  const total = Number(j.totalUnits);
  if (!(total > 0) || !(done >= 0)) return '';
  const share = ` (${Math.floor((100 * done) / total)} %`;
  const ended = j.status === 'DONE' || j.status === 'FAILED';
  const since = now - Number(j.createdAt);
  if (ended || done === 0 || !(since > 0)) return `${share})`;
  const leftS = Math.round(((total - done) * since) / done / 1000);
  return `${share}, ~${leftS < 120 ? `${leftS} s` : leftS < 7200 ? `${Math.round(leftS / 60)} min` : `${(leftS / 3600).toFixed(1)} h`} left)`;
}

async function status(t: Target, json: boolean, withOutbox = false): Promise<number> {
  const [leases, fences, allJobs] = (await Promise.all([scanAll(t.doc, t.tables.leases), scanAll(t.doc, t.tables.fences), scanAll(t.doc, t.tables.jobs)])).map(byKey) as [Item[], Item[], Item[]];
  const outbox = withOutbox ? outboxSummary(await scanAll(t.doc, t.tables.outbox)) : undefined;
  const now = systemClock.wallNow();
  // The epoch record lives in the Leases table but is not a lease.
  const epoch = leases.find((l) => l.pk === EPOCH_RECORD_KEY)?.epoch;
  const jobLeases = leases.filter((x) => x.pk !== EPOCH_RECORD_KEY);
  // The Jobs table also holds run records (lib/workflow/runs.ts): shown apart, with what their shards say.
  const runs = await Promise.all(allJobs.filter(isRunItem).map(async (r) => {
    const s = await runStatus(t.doc, t.tables.jobs, runFromItem(r));
    return { runId: s.run.id, status: s.status, shards: s.run.shardCount, done: s.shards.filter((x) => x.status === 'DONE').length, doneAt: s.run.doneAt ?? null };
  }));
  // ... and the collector's cursors (lib/workflow/effects/collector-cursor.ts): neither is a job.
  const jobs = allJobs.filter(isJobItem);
  if (json) {
    const recorded = typeof epoch === 'number' ? epoch : null;
    process.stdout.write(JSON.stringify({ epoch: recorded, leases: jobLeases, fences, jobs: jobs.map(({ input: _i, ...j }) => ({ ...j, progress: progressOf(j, now).replace(/^ \(|\)$/g, '') || null })), runs, ...(outbox === undefined ? {} : { outbox }) }) + '\n');
    return 0;
  }
  const w = (s: string) => process.stdout.write(s + '\n');
  w(`Epoch recorded: ${epoch ?? 'none (0)'}`);
  w(`\nLeases (${jobLeases.length}):`);
  for (const l of jobLeases) {
    const exp = typeof l.expiresAt === 'number' ? `${l.expiresAt > now ? 'expires in' : 'expired'} ${Math.abs(Math.round((l.expiresAt - now) / 1000))} s` : '';
    w(`  ${String(l.pk).padEnd(40)} gen ${gen(l.generation).padEnd(10)} ${l.owner ? `held by ${String(l.owner)} ${exp}` : 'free'}`);
  }
  w(`\nFences (${fences.length}):`);
  for (const f of fences) w(`  ${String(f.pk).padEnd(40)} accepts >= ${gen(f.generation)}`);
  w(`\nJobs (${jobs.length}):`);
  for (const j of jobs) {
    const age = typeof j.heartbeatAt === 'number' ? `heartbeat ${Math.round((now - j.heartbeatAt) / 1000)} s ago` : '';
    w(`  ${String(j.pk).padEnd(40)} ${String(j.status).padEnd(8)} ${String(j.cursor)}/${String(j.totalUnits)} units${progressOf(j, now)}  gen ${gen(j.generation)}  requeues ${String(j.requeues ?? 0)}  ${age}${j.failureReason ? `  reason: ${String(j.failureReason)}` : ''}`);
  }
  w(`\nRuns (${runs.length}):`);
  for (const r of runs) w(`  ${r.runId.padEnd(40)} ${r.status.padEnd(10)} ${r.done}/${r.shards} shards DONE${r.doneAt === null ? '' : ', recorded'}`);
  if (outbox !== undefined) w(`\n${renderOutboxSummary(outbox).join('\n')}`);
  return 0;
}

async function requeue(t: Target, jobId: string | undefined, json: boolean): Promise<number> {
  assertJobId(jobId);
  const job = await readJob(t.doc, t.tables.jobs, jobId);
  if (job === undefined) throw new InvalidInputError('jobId', `no job ${jobId}`);
  if (job.status === 'DONE' || job.status === 'FAILED') throw new InvalidInputError('jobId', `job ${jobId} is ${job.status}; nothing to requeue`);
  // Without a queue nothing would pick the job up, and moving its heartbeat would only delay the
  // sweeper: on AWS the queue is needed; locally this process runs the job (cli/ops/local-requeue.ts).
  if (t.queueUrl === undefined && t.endpoint === undefined) {
    throw new ConfigError('--queue-url', 'requeue needs the work queue: pass --outputs FILE or --queue-url URL (or --endpoint for a local run)');
  }
  const claimed = await claimRequeue(t.doc, t.tables.jobs, job, systemClock);
  if (t.queueUrl === undefined) return requeueHere(t, jobId, claimed, json);
  let sent = false;
  if (claimed) {
    // The handlers' queue adapter, so the message is the WorkMessage they send. Imported on use:
    // functions/commons.ts also loads Powertools (~50 ms) that no other command, nor `npm start`, needs.
    const { SqsWorkQueue } = await import('../../functions/commons.js');
    await new SqsWorkQueue(new SQSClient(t.region ? { region: t.region } : {}), t.queueUrl).send({ jobId, reason: 'requeue' });
    sent = true;
  }
  const result = { jobId, claimed, sent, note: claimed ? 'requeued' : 'the job moved meanwhile (live worker); not requeued' };
  process.stdout.write((json ? JSON.stringify(result) : `${result.jobId}: ${result.note}`) + '\n');
  return claimed ? 0 : 1;
}

async function requeueHere(t: Target, jobId: string, claimed: boolean, json: boolean): Promise<number> {
  if (!claimed) return printRequeue({ jobId, claimed, ranHere: false, note: 'the job moved meanwhile (live worker); not requeued' }, json, 1);
  if (!json) process.stderr.write(`${jobId}: requeued; no queue outlives npm start, so running it here…\n`);
  const { runJobHere } = await import('./local-requeue.js');
  const r = await runJobHere(t.doc, t.tables, jobId, t.workload);
  const note = r.busy && r.status !== 'DONE' ? `a live worker holds its lease; left to it (${r.status} ${r.cursor}/${r.totalUnits} units)` : `ran here: ${r.status} ${r.cursor}/${r.totalUnits} units in ${r.invocations} invocation(s)`;
  return printRequeue({ jobId, claimed, ranHere: true, status: r.status, cursor: r.cursor, totalUnits: r.totalUnits, note }, json, r.status === 'DONE' || r.busy ? 0 : 1);
}

function printRequeue(result: { jobId: string; note: string } & Record<string, unknown>, json: boolean, code: number): number {
  process.stdout.write((json ? JSON.stringify(result) : `${result.jobId}: ${result.note}`) + '\n');
  return code;
}

function epochFlag(raw: string | boolean | undefined): number {
  if (typeof raw !== 'string') throw new InvalidInputError('--epoch', 'is required');
  // Number('') and Number(' ') are 0: a blank flag must not mean epoch 0.
  if (!/^\d+$/.test(raw)) throw new InvalidInputError('--epoch', `must be an integer in [0, ${MAX_EPOCH}], got "${raw}"`);
  const e = Number(raw);
  assertEpoch(e, '--epoch');
  return e;
}

/** The flags of the commands that work on tables (and start, pause, resume): the docs' commands are checked against them. */
export const OPS_OPTIONS = {
  endpoint: { type: 'string' },
  'table-prefix': { type: 'string' },
  outputs: { type: 'string' },
  stack: { type: 'string' },
  region: { type: 'string' },
  'leases-table': { type: 'string' },
  'fences-table': { type: 'string' },
  'jobs-table': { type: 'string' },
  'records-table': { type: 'string' },
  'outbox-table': { type: 'string' },
  workload: { type: 'string' },
  'queue-url': { type: 'string' },
  'mapping-id': { type: 'string' },
  'function-name': { type: 'string' },
  items: { type: 'string' },
  payload: { type: 'string' },
  epoch: { type: 'string' },
  accepted: { type: 'boolean' },
  declined: { type: 'boolean' },
  'provider-id': { type: 'string' },
  note: { type: 'string' },
  prefixes: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
  outbox: { type: 'boolean', default: false },
  'dlq-arn': { type: 'string' },
  wait: { type: 'boolean', default: false },
} as const;

export async function opsCommand(command: OpsCommand, argv: string[]): Promise<number> {
  // A plan and a cost need no tables: their own flags (cli/ops/plan.ts, cli/ops/cost.ts).
  if (command === 'plan') return planCommand(argv);
  if (command === 'cost') return costCommand(argv);
  const { values, positionals } = parseFlags({
    args: argv,
    options: OPS_OPTIONS,
    strict: true,
    allowPositionals: command === 'requeue' || command === 'decide' || command === 'retry',
  });
  if (values.help) {
    process.stdout.write(USAGE[command] + '\n');
    return 0;
  }
  if (command === 'requeue' && positionals.length !== 1) throw new InvalidInputError('jobId', 'requeue takes exactly one job id');
  if (command === 'decide' && positionals.length !== 1) throw new InvalidInputError('outboxId', 'decide takes exactly one outbox item id');
  if (command === 'decide') decisionOf(values); // its flags refused before any table is named or read
  if (command === 'retry' && positionals.length !== 1) throw new InvalidInputError('outboxId', 'retry takes exactly one outbox item id');
  if (command === 'retry') retryNoteOf(values.note);
  const epoch = command === 'raise-epoch' || command === 'seal' ? epochFlag(values.epoch) : undefined;
  if (command === 'pause' || command === 'resume') return pauseOrResume(command, values);
  if (command === 'start') return startNow(values);
  if (command === 'redrive') return redriveNow(values);
  if (values.prefixes) return prefixesHere(command, values);
  const t = target(values);
  try {
    return await run(command, t, values, positionals, epoch);
  } catch (e) {
    // A prefix, outputs file or table flag naming tables that do not exist there: a usage error, not a crash.
    if (e instanceof Error && e.name === 'ResourceNotFoundException') {
      throw new ConfigError('tables', `${e.message}: no such table at this endpoint/region; check --table-prefix, --outputs or the --*-table flags`);
    }
    throw e;
  }
}

/** The commands that work on tables: plan and cost return before any is resolved. */
type TableCommand = Exclude<OpsCommand, 'plan' | 'cost' | 'start' | 'redrive' | 'pause' | 'resume'>;

async function run(
  command: TableCommand,
  t: Target,
  values: { json: boolean; outbox?: boolean } & Omit<DecideFlags, 'json'>,
  positionals: string[],
  epoch: number | undefined,
): Promise<number> {
  switch (command) {
    case 'status':
      return status(t, values.json, values.outbox === true);
    case 'requeue':
      return requeue(t, positionals[0], values.json);
    case 'decide':
      return decide(t, positionals[0], values);
    case 'retry':
      return retry(t, positionals[0], values);
    case 'raise-epoch': {
      const r = await raiseEpoch(t.doc, t.tables.leases, epoch!);
      process.stdout.write(
        values.json
          ? JSON.stringify({ epoch, previous: r.previous ?? null }) + '\n'
          : `epoch ${epoch} recorded (was ${r.previous ?? 'none'}). Next: deploy with -c fenceEpoch=${epoch}, then seal --epoch ${epoch}.\n`,
      );
      return 0;
    }
    case 'seal': {
      const reports = await seal(t.doc, t.tables, epoch!, {
        fencesOf: (leaseKey) => fencesOfLease(leaseKey, t.workload.fenceKeyPrefix),
        onProgress: (r) => values.json || process.stderr.write(`  ${r.table}: scanned ${r.scanned}, raised ${r.raised}\n`),
      });
      process.stdout.write(values.json ? JSON.stringify({ epoch, tables: reports }) + '\n' : `sealed at ${formatGeneration((epoch! * 2 ** 32) as Generation)}: ${reports.map((r) => `${r.table} raised ${r.raised}/${r.scanned}${r.created ? `, created ${r.created}` : ''}`).join(', ')}\n`);
      return 0;
    }
  }
}
