/**
 * `npm start`: the main job. DynamoDB Local (embedded, or --endpoint), the article's incident
 * with and without the fence, a faulted invoice run, the invariant report, a timeline SVG.
 *
 * Bad input is refused before anything is written (exit 2, one line): flags, an --out path that
 * cannot be written, an --endpoint that is not DynamoDB, a --table-prefix whose tables exist, an
 * --s3-endpoint that does not answer as S3, an --smtp server that does not greet as SMTP.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { DescribeTableCommand, ResourceNotFoundException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamo, InvalidInputError, systemClock } from '../../lib/protocol/index.js';
import { ensureTables, MAX_SHARDS, tableNames, type TableNames, type Workload } from '../../lib/workflow/index.js';
import { DEFAULT_WORKLOAD, workloadNamed } from '../../lib/workloads/index.js';
import { startDynamoLocal, type DynamoLocal } from '../local/dynamodb-local.js';
import { bucketFlag, smtpFlag, startEffects, type Effects } from '../local/effects-env.js';
import { checkEndpoint } from '../local/endpoint.js';
import { intFlag, outFileFlag, parseFlags, urlFlag } from '../shared/flags.js';
import { incidentHeading, replayIncident, type IncidentResult } from './incident.js';
import { invoiceRun, PERIODS, type RunResult } from './run.js';
import { recordAwsCalls, writeCalls } from '../local/aws-calls.js';
import { renderSvg, splitDelivery } from '../shared/timeline.js';
import { streamsClient } from '../local/streams.js';
import { progressReporter } from './progress.js';
import { requireTools } from '../local/prerequisites.js';
import { leaveUnfinished, type LeftJob } from './leave-unfinished.js';
import { invariantLine, metricsLine, plural } from './report-lines.js';

export const DEMO_HELP = `npm start [-- options]: the main job on DynamoDB Local (embedded unless --endpoint).

  --endpoint URL        use a running DynamoDB (npm run dynamodb starts one that stays) instead of
                        an embedded one that stops with the run; the tables stay there for the ops CLI
  --table-prefix P      table name prefix (default: fw-<timestamp>-); its tables must not exist yet
  --workload NAME       the registered workload to run (default invoices; npm run cli -- workloads)
  --items N             items per run, 3 runs (default: the workload's; invoices 400, reports 300)
  --customers N         the invoice sample's name for --items
  --workers N           concurrent worker invocations (default 4)
  --shards K            shard jobs per period's run (default 1), each its own lease, fence,
                        checkpoint and customer range; at most one per customer
  --seed N              seed for the items (amounts, usage; default 1)
  --lease-mode M        wall-clock (default) or version-watch
  --s3-endpoint URL     an S3-compatible endpoint (path-style) for the documents instead of the
                        embedded one (npm run cli -- s3-endpoint runs the project's own on its own)
  --bucket NAME         the documents bucket (default fenced-workflow-documents; created if absent)
  --smtp HOST:PORT      send the emails to that SMTP server, not the embedded sink (the checker then
                        cannot read what was received, and says so); npm run cli -- smtp-sink runs one
  --out FILE            where to write the timeline SVG (default out/timeline.svg)
  --leave-unfinished    (with --endpoint) after the checked run, start one more period's job and
                        crash its worker after its first commit, with no sweeper left to recover
                        it: the report names the job and the requeue command that finishes it
  --calls FILE          write every AWS call each function made in the invoice run to FILE, one
                        JSON record a line (cli/local/aws-calls.ts: function, action, ARNs, input,
                        consumed capacity); npm test evaluates them against the stack's IAM
  --json                print one JSON report on stdout and nothing else there
  --help                this text
`;

export interface DemoFlags {
  endpoint?: string;
  prefix: string;
  /** The workload the run runs (`--workload NAME`, the registry's). */
  workload: Workload<any>;
  /** Items per run (`--items`; the invoice sample's `--customers`). */
  customers: number;
  workers: number;
  shards: number;
  seed: number;
  leaseMode: 'wall-clock' | 'version-watch';
  s3Endpoint?: string;
  bucket?: string;
  smtp?: { host: string; port: number };
  /** Absolute path, checked writable. */
  out: string;
  json: boolean;
  /** Leave one job part way for the ops loop (cli/demo/leave-unfinished.ts). */
  leaveUnfinished: boolean;
  /** Where to write the invoice run's AWS call records (absolute, checked writable). */
  calls?: string;
}

export function parseDemoFlags(argv: string[]): DemoFlags | 'help' {
  const { values } = parseFlags({
    args: argv,
    options: {
      endpoint: { type: 'string' },
      'table-prefix': { type: 'string' },
      workload: { type: 'string' },
      items: { type: 'string' },
      customers: { type: 'string' },
      workers: { type: 'string' },
      shards: { type: 'string' },
      seed: { type: 'string' },
      'lease-mode': { type: 'string' },
      's3-endpoint': { type: 'string' },
      bucket: { type: 'string' },
      smtp: { type: 'string' },
      out: { type: 'string' },
      json: { type: 'boolean', default: false },
      'leave-unfinished': { type: 'boolean', default: false },
      calls: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    allowPositionals: false,
  });
  if (values.help) return 'help';
  urlFlag('endpoint', values.endpoint);
  urlFlag('s3-endpoint', values['s3-endpoint']);
  if (values['leave-unfinished'] && values.endpoint === undefined) throw new InvalidInputError('--leave-unfinished', 'needs --endpoint: the embedded DynamoDB Local stops with the run, and the job left with it');
  if (values.bucket !== undefined && values['s3-endpoint'] === undefined) throw new InvalidInputError('--bucket', 'names a bucket of --s3-endpoint URL; the embedded endpoint has its own');
  const bucket = bucketFlag(values.bucket);
  const smtp = smtpFlag(values.smtp);
  const stamp = new Date().toISOString().replace(/[-:T.Z]/g, '').slice(0, 14);
  const prefix = values['table-prefix'] ?? `fw-${stamp}-`;
  tableNames(prefix); // validates
  const workload = workloadNamed(values.workload ?? DEFAULT_WORKLOAD, '--workload');
  if (values.items !== undefined && values.customers !== undefined) throw new InvalidInputError('--customers', 'is --items under the invoice sample\'s name: give one of them');
  // --customers: the invoice sample's name for --items, kept for its users.
  const customers = values.customers === undefined ? intFlag('items', values.items, workload.local.items, 0, 1_000_000) : intFlag('customers', values.customers, workload.local.items, 0, 1_000_000);
  const shards = intFlag('shards', values.shards, 1, 1, Math.min(MAX_SHARDS, Math.max(1, customers)));
  return {
    ...(values.endpoint === undefined ? {} : { endpoint: values.endpoint }),
    prefix,
    workload,
    customers,
    workers: intFlag('workers', values.workers, 4, 1, 64),
    shards,
    seed: intFlag('seed', values.seed, 1, 0, 2 ** 31 - 1 - 10),
    leaseMode: leaseModeFlag(values['lease-mode']),
    ...(values['s3-endpoint'] === undefined ? {} : { s3Endpoint: values['s3-endpoint'] }),
    ...(bucket === undefined ? {} : { bucket }),
    ...(smtp === undefined ? {} : { smtp }),
    out: outFileFlag('out', values.out ?? 'out/timeline.svg'),
    json: values.json,
    leaveUnfinished: values['leave-unfinished'],
    ...(values.calls === undefined ? {} : { calls: outFileFlag('calls', values.calls) }),
  };
}

function leaseModeFlag(raw: string | undefined): DemoFlags['leaseMode'] {
  if (raw === undefined || raw === 'wall-clock' || raw === 'version-watch') return raw ?? 'wall-clock';
  throw new InvalidInputError('--lease-mode', `must be wall-clock or version-watch, got "${raw}"`);
}

/** A table set's document folder, named like its tables (DESIGN.md, Documents): the prefix without its separator. */
export const documentSet = (prefix: string): string => prefix.replace(/[-_.]+$/, '') || 'run';

/** The three table sets of one run: the incident, its unsafe replay, the invoice run. */
const tableSets = (prefix: string): TableNames[] => [tableNames(`${prefix}incident-`), tableNames(`${prefix}incident-unsafe-`), tableNames(prefix)];

/**
 * A run on tables an earlier run left would count their units and jobs as its own (and report
 * 500 % progress): a prefix whose tables exist is refused before anything is written.
 */
async function refuseExistingTables(client: DynamoDBClient, prefix: string, endpoint: string): Promise<void> {
  const names = tableSets(prefix).flatMap((set) => Object.values(set));
  const found = await Promise.all(
    names.map((TableName) =>
      client.send(new DescribeTableCommand({ TableName })).then(
        () => TableName,
        (e: unknown) => {
          if (e instanceof ResourceNotFoundException) return undefined;
          throw e;
        },
      ),
    ),
  );
  const existing = found.filter((n) => n !== undefined);
  if (existing.length > 0) {
    throw new InvalidInputError(
      '--table-prefix',
      `tables with prefix "${prefix}" exist already at ${endpoint} (${existing.length}, e.g. ${existing[0]}): an earlier run's; pick a new prefix, or leave out --table-prefix for a fresh one`,
    );
  }
}

interface Outcome {
  safe: IncidentResult;
  unsafe: IncidentResult;
  run: RunResult;
}

/** Every way the main job can fail, each named: an empty list is a pass. */
export function failures({ safe, unsafe, run }: Outcome): string[] {
  const out: string[] = [];
  if (!safe.aRejected) out.push("the incident with the fence: A's stale write was not rejected");
  if (unsafe.overwritten.length === 0) out.push("the incident without the fence: A overwrote none of B's invoices (the bug the fence prevents did not show)");
  if (safe.documents !== undefined && (safe.documents.aReferenced > 0 || safe.documents.aKeys.length === 0)) out.push("the incident with the fence: A's documents are not orphans");
  if (safe.emails !== undefined && safe.emails.customersWithTwo > 0) out.push('the incident with the fence: a customer got two emails');
  if (unsafe.documents !== undefined && unsafe.documents.overwrittenInPlace === 0) out.push("the incident without the fence: A's documents replaced none of B's");
  if (unsafe.emails?.perCustomer !== undefined && unsafe.emails.customersWithTwo === 0) out.push('the incident without the fence: no customer got a second, stale email');
  for (const [name, r] of Object.entries(run.invariants.invariants)) {
    if (!r.ok) out.push(`invariant ${name}: ${r.violations.slice(0, 3).join('; ')}${r.violations.length > 3 ? ` (+${r.violations.length - 3} more)` : ''}`);
  }
  return out;
}

export async function demo(flags: DemoFlags): Promise<number> {
  const out = flags.json ? (_: string) => undefined : (line: string) => process.stdout.write(line + '\n');
  const started = Date.now();
  if (flags.endpoint !== undefined) await checkEndpoint(flags.endpoint);
  let local: DynamoLocal | undefined;
  if (flags.endpoint === undefined) {
    requireTools(['java'], 'DynamoDB Local');
    out('Starting DynamoDB Local (the real engine, in memory; it stops with this run)…');
    local = await startDynamoLocal();
  }
  const endpoint = flags.endpoint ?? local!.endpoint;
  let effects: Effects | undefined;
  const stop = async () => {
    await effects?.close();
    await local?.stop();
  };
  process.once('SIGINT', () => void stop().finally(() => process.exit(130)));
  try {
    const dynamo = createDynamo({ endpoint });
    await refuseExistingTables(dynamo.client, flags.prefix, endpoint);
    const [incidentTables, unsafeTables, runTables] = tableSets(flags.prefix) as [TableNames, TableNames, TableNames];
    // Before any table exists: an --s3-endpoint or --smtp that does not answer as one is refused first.
    effects = await startEffects({ doc: dynamo.doc, httpTargets: flags.workload.outbox.http, steps: flags.workload.steps, ...(flags.s3Endpoint === undefined ? {} : { s3Endpoint: flags.s3Endpoint }), ...(flags.bucket === undefined ? {} : { bucket: flags.bucket }), ...(flags.smtp === undefined ? {} : { smtp: flags.smtp }) });
    await Promise.all([incidentTables, unsafeTables, runTables].map((n) => ensureTables(dynamo.client, n)));
    out(`Tables: prefix ${flags.prefix} at ${flags.endpoint ?? `${endpoint} (embedded)`}`);
    out(`Documents: bucket ${effects.bucket} at ${effects.s3Url}${effects.embeddedS3 ? ' (embedded S3 endpoint)' : ''}; emails: ${effects.emailName}; payments: embedded provider ${effects.payments.url}`);
    const streams = streamsClient(endpoint);
    const fx = (set: string) => ({ effects: effects!, set, dynamo, streams });

    out(`\n${incidentHeading(flags.workload.name)}`);
    out('   With the fence:');
    const safe = await replayIncident({ doc: dynamo.doc, tables: incidentTables, clock: systemClock, fenced: true, log: out, effects: fx(documentSet(`${flags.prefix}incident-`)) });
    printIncidentEffects(safe, out);
    out('   Without the fence (UNSAFE variant, its own tables and folder):');
    const unsafe = await replayIncident({ doc: dynamo.doc, tables: unsafeTables, clock: systemClock, fenced: false, log: out, effects: fx(documentSet(`${flags.prefix}incident-unsafe-`)) });
    printIncidentEffects(unsafe, out);

    const sharded = flags.shards > 1 ? ` (${flags.shards} shards each)` : '';
    const runs = flags.workload.local.payloads(flags.customers, flags.seed).length;
    out(`\n2. The ${flags.workload.name} run (${flags.workload.description}): ${plural(flags.customers, 'item')} x ${plural(runs, 'run')}${sharded}, ${plural(flags.workers, 'worker')}, sweeper, injected faults.`);
    const progress = await progressReporter({ json: flags.json, tty: process.stderr.isTTY === true, out });
    const calls = flags.calls === undefined ? undefined : recordAwsCalls();
    const run = await invoiceRun({
      ...(calls === undefined ? {} : { calls }),
      dynamo,
      endpoint,
      streams,
      tables: runTables,
      effects,
      set: documentSet(flags.prefix),
      workload: flags.workload,
      items: flags.customers,
      workers: flags.workers,
      shards: flags.shards,
      seed: flags.seed,
      leaseMode: flags.leaseMode,
      onProgress: progress.update,
    });
    progress.stop();
    printRun(run, out);
    const left = flags.leaveUnfinished ? await leaveUnfinished({ doc: dynamo.doc, tables: runTables, customers: flags.customers, seed: flags.seed }) : undefined;
    writeTimeline(flags, safe, unsafe, run);
    out(`\nTimeline picture: ${flags.out}`);
    if (calls !== undefined && flags.calls !== undefined) {
      writeCalls(flags.calls, calls.records);
      out(`AWS calls of the functions: ${calls.records.length} recorded, in ${flags.calls}`);
    }

    const failed = failures({ safe, unsafe, run });
    if (flags.json) process.stdout.write(JSON.stringify({ ...report(flags, started, { safe, unsafe, run }, failed), ...(left === undefined ? {} : { leftUnfinished: { ...left, finish: requeueCommand(flags, left) } }) }) + '\n');
    else printVerdict(flags, failed, out, left);
    return failed.length === 0 ? 0 : 1;
  } finally {
    await stop();
  }
}

function printIncidentEffects(r: IncidentResult, out: (line: string) => void): void {
  if (r.documents === undefined || r.emails === undefined) return;
  const d = r.documents;
  const e = r.emails;
  if (r.fenced) out(`   file: B's ${plural(d.bKeys.length, 'document')} ${d.bKeys.length === 1 ? 'is' : 'are'} published by its invoices; A's ${d.aKeys.length} ${d.aKeys.length === 1 ? 'is an orphan' : 'are orphans'} (${d.aReferenced} referenced)`);
  else out(`   file: A replaced ${d.overwrittenInPlace} of B's documents in place with its stale generation's content`);
  const two = e.perCustomer === undefined ? 'no record to count (--smtp)' : `${plural(e.customersWithTwo, 'customer')} got two emails`;
  out(`   email: ${e.fromB} sent for B${r.fenced ? ' (through the outbox)' : ''}, ${e.fromA} for A; ${two}`);
}

function printRun(run: RunResult, out: (line: string) => void): void {
  for (const f of run.faults) out(`   fault: ${f.name} (${f.lane}, t=${f.atMs} ms)`);
  out(`   ${stageTimes(run)}`);
  out(`   ${plural(run.invocations, 'invocation')} (${run.crashes} crashed, ${run.timeouts} timed out), ${plural(run.sweeps, 'sweep')}, ${plural(run.deadLetters, 'dead letter')}`);
  out(`   ${metricsLine(run.metrics)}`);
  for (const j of run.jobs) out(`   ${j.id}: ${j.status} ${j.cursor}/${plural(j.totalUnits, 'unit')}, requeued ${j.requeues}x`);
  for (const r of run.runs) if (r.shards > 1) out(`   run ${r.id}: ${r.shards} shards, ${r.done ? 'DONE (every shard DONE, recorded once)' : 'not done'}`);
  if (run.gaveUp) out(`   gave up waiting: ${run.gaveUp}`);

  out('\n3. Invariants (read back from the tables and their streams):');
  for (const [name, r] of Object.entries(run.invariants.invariants)) {
    out(`   ${invariantLine(name, r)}`);
  }
  const s = run.invariants.stats;
  if (s.wire !== undefined) {
    const w = s.wire;
    out(`   wire (structural FENCE check, from the ${plural(w.transactions, 'transaction')} the engine applied): ${plural(w.effectWritesChecked, 'effect write')} each inside a transaction with its fence's action conditioned on its generation, ${plural(w.fenceWrites, 'fence write')}, ${plural(w.replays, 'token replay')}; ${plural(w.violations, 'violation')}`);
  }
  const figures = Object.entries(s.figures).map(([k, v]) => `${k} ${v}`).join(', ');
  out(`   ${plural(s.records, 'record')} in the finished runs (expected ${s.expectedRecords})${figures === '' ? '' : `: ${figures}`}`);
  const { documents: d, emails: m, payments: p } = s.effects;
  out(`   documents: ${d.written} written, ${d.referenced} referenced, ${d.orphaned} orphaned, ${d.collected} collected`);
  const record = m.recordChecked ? `${m.delivered} received by the provider, ${m.duplicated} duplicated` : 'the provider\'s record not readable (--smtp): deliveries not counted';
  out(`   emails: ${m.sent}/${m.items} sent, ${record}, ${plural(m.ambiguous, 'ambiguous send')}, ${m.unknown} unknown, ${m.failed} refused for good (FAILED)`);
  out(`   http calls: ${p.sent}/${p.items} sent, ${p.performed} performed by the provider for ${plural(p.requests, 'request')} (replays answered from its record)`);
  const x = run.effects;
  out(`   effect faults: ${x.faults.join('; ')}${x.senderKilled ? '; a sender killed after the provider accepted' : ''}`);
  if (x.notInjected.length > 0) out(`   effect faults not injected: ${x.notInjected.join('; ')}`);
  out(`   reconciler: ${x.reconciled.fromRecord} from the provider's record, ${x.reconciled.resent} resent, ${x.reconciled.delivered} sent by it because their stream delivery never came or was given up, ${x.reconciled.unknown} unknown; collector: ${plural(x.collected, 'orphan')} removed`);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The units' time and the delivery's apart: the delivery after the last unit can take longer than the units did. */
export function stageTimes(run: Pick<RunResult, 'units' | 'unitsMs' | 'delivery' | 'elapsedMs'>): string {
  const d = run.delivery;
  const delivered = d.unsent === 0 ? `${d.items} outbox items delivered in ${seconds(d.ms)}` : `${d.items - d.unsent}/${d.items} outbox items delivered in ${seconds(d.ms)}, ${d.unsent} left unsent`;
  return `${run.units} units committed in ${seconds(run.unitsMs)}; then ${delivered} (the run took ${seconds(run.elapsedMs)})`;
}

/** The ops CLI's command that finishes the job left unfinished (quoted for a shell: `#` starts a comment). */
const requeueCommand = (flags: DemoFlags, left: LeftJob) => `npm run cli -- requeue '${left.jobId}' --endpoint ${flags.endpoint} --table-prefix ${flags.prefix}`;

function printVerdict(flags: DemoFlags, failed: string[], out: (line: string) => void, left?: LeftJob): void {
  if (failed.length === 0) out('\nAll invariants hold.');
  else for (const f of failed) out(`\nFAILED: ${f}`);
  if (flags.endpoint !== undefined) {
    out(`\nThe tables stay at ${flags.endpoint}. Look at them:`);
    out(`  npm run cli -- status --endpoint ${flags.endpoint} --table-prefix ${flags.prefix}`);
    if (left !== undefined) {
      out(`\nLeft unfinished (--leave-unfinished): ${left.jobId}, ${left.status} ${left.cursor}/${left.totalUnits} units: ${left.how}. Finish it:`);
      out(`  ${requeueCommand(flags, left)}`);
    }
  } else {
    out('\nThe embedded DynamoDB Local stops now, and its tables with it. To keep them for the ops CLI:');
    out('  npm run dynamodb                                   (in another terminal: it stays until Ctrl-C)');
    out('  npm start -- --endpoint http://127.0.0.1:8000');
  }
}

function writeTimeline(flags: DemoFlags, safe: IncidentResult, unsafe: IncidentResult, run: RunResult): void {
  mkdirSync(dirname(flags.out), { recursive: true });
  writeFileSync(
    flags.out,
    renderSvg('Fenced workflows on DynamoDB: what happened', [
      { title: 'The incident, with the fence', subtitle: "A's stale write is rejected; B's invoices stand", events: safe.timeline.events, labels: 'all' },
      { title: 'The same schedule without the fence (UNSAFE)', subtitle: "A overwrites B's invoices", events: unsafe.timeline.events, labels: 'all' },
      ...splitDelivery(
        { title: `Invoice run: ${flags.customers} customers x ${PERIODS.length} periods, ${flags.workers} workers, faults`, subtitle: 'the workers and the sweeper, up to the last unit', events: run.timeline.events, labels: 'story' },
        { title: "The same run's outbox delivery and effects, on their own time axis", subtitle: `the sender, the reconciler, the collector: ${run.delivery.items} outbox items, most delivered after the last unit` },
      ),
    ]),
  );
}

function report(flags: DemoFlags, started: number, { safe, unsafe, run }: Outcome, failed: string[]) {
  return {
    ok: failed.length === 0,
    failures: failed,
    elapsedMs: Date.now() - started,
    endpoint: flags.endpoint ?? 'embedded',
    tablePrefix: flags.prefix,
    incident: {
      fenced: { generations: safe.generations, staleWriteRejected: safe.aRejected, documents: safe.documents, emails: safe.emails },
      unsafe: { generations: unsafe.generations, invoicesOverwritten: unsafe.overwritten.length, chargesStoppedByOperationKey: unsafe.chargesSuppressed, documents: unsafe.documents, emails: unsafe.emails },
    },
    run: {
      customersPerPeriod: flags.customers,
      periods: run.jobs.length,
      workers: flags.workers,
      shards: flags.shards,
      seed: flags.seed,
      leaseMode: flags.leaseMode,
      elapsedMs: run.elapsedMs,
      unitsMs: run.unitsMs,
      delivery: run.delivery,
      unitsCommitted: run.units,
      invocations: run.invocations,
      crashed: run.crashes,
      timedOut: run.timeouts,
      sweeps: run.sweeps,
      deadLetters: run.deadLetters,
      faults: run.faults,
      metrics: run.metrics,
      jobs: run.jobs,
      effects: run.effects,
      runs: run.runs,
    },
    invariants: run.invariants.invariants,
    stats: run.invariants.stats,
    timelineSvg: flags.out,
  };
}
