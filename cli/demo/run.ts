/**
 * The faulted run of a workload (the invoice sample by default; `--workload NAME`): several runs
 * (three schedule slots: billing periods, days; one job each, or its shards), several concurrent worker
 * invocations, the sweeper on a schedule, and injected faults — a worker paused between read
 * and write, a crash after the fence raise and before the first unit, a crash mid-run, a
 * duplicate delivery. Then the invariant report, read back from the tables and their streams.
 *
 * Times are scaled down (a lease of ~1.5 s instead of 30 s) so the run takes seconds; every
 * ratio the protocol depends on is kept (stale-after > lease, visibility timeout >= 6 x the
 * invocation timeout, pause > lease).
 */
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamo, systemClock, type Dynamo } from '../../lib/protocol/index.js';
import { METRIC, readJob, readRun, type HttpProvider, type Job, type TableNames, type Workload } from '../../lib/workflow/index.js';
import { DEFAULT_WORKLOAD, workloadNamed } from '../../lib/workloads/index.js';
import { createStarterHandler } from '../../functions/starter-handler.js';
import { createSweeperHandler } from '../../functions/sweeper-handler.js';
import { createWorkerHandler } from '../../functions/worker-handler.js';
import { asFunction, type AwsCallRecorder } from '../local/aws-calls.js';
import type { Effects } from '../local/effects-env.js';
import { FaultPlan, tableProbes, type Fault } from './faults.js';
import { deliveryWaitingFor, unitsWaitingFor, type ProgressUpdate } from './progress.js';
import { checkInvariants, type InvariantReport } from '../check/invariants.js';
import { LocalQueue } from '../local/queue.js';
import { LEASE_MS, LocalRuntime, slotOf, STALL_MS } from '../local/runtime.js';
import { RunEffects } from './run-effects.js';
import { LocalTelemetry } from '../local/telemetry.js';
import { Timeline } from '../shared/timeline.js';
import { startFaultProxy, type WireExchange } from '../local/fault-proxy.js';
import { WireCheck } from '../check/wire-check.js';

export interface RunOptions {
  /** The checker's client (direct to the engine). */
  dynamo: Dynamo;
  /**
   * Where the run's handlers reach the engine: its endpoint, through a recording proxy (the wire
   * FENCE check), or a wire of the caller's that tells each exchange the same way (the simulator's).
   */
  endpoint: string | HandlersWire;
  streams: DynamoDBStreamsClient;
  tables: TableNames;
  /** Items per run (the invoice sample's customers, the reports' tenants). */
  items: number;
  workers: number;
  seed: number;
  leaseMode?: 'wall-clock' | 'version-watch';
  /** Shard jobs per period's run (default 1). */
  shards?: number;
  /** The stages' counts: the units, then the outbox items' delivery; with what a count that stands still waits for. */
  onProgress?: (p: ProgressUpdate) => void;
  /** The bucket and the providers; `set` is the run's document folder (named like its tables). */
  effects: Effects;
  set: string;
  /** Records every AWS call each function makes (cli/local/aws-calls.ts): attached to the handlers' clients for this run. */
  calls?: AwsCallRecorder;
  /** The workload: its processor, documents, starter payloads and checks. @default the registry's default */
  workload?: Workload<any>;
  /** The sender's http providers instead of the run's own (a negative control: test/destinations.test.ts). */
  http?: Readonly<Record<string, HttpProvider>>;
  /** Inject the faults (default true); false: a quiet run whose request counts follow only the work (the call profile). */
  faults?: boolean;
  /** How many of the workload's local runs to start (default all three: the profile runs one, as a plan plans one). */
  periods?: number;
}

/** The handlers' clients on a wire that tells every exchange that reached the engine. */
export type HandlersWire = (onExchange: (ex: WireExchange) => void) => Promise<{ readonly dynamo: Dynamo; close(): Promise<void> }>;

/** The fault proxy on DynamoDB Local at `endpoint`, with no fault of its own: the handlers' recorded wire. */
const proxiedWire = (endpoint: string): HandlersWire => async (onExchange) => {
  const proxy = await startFaultProxy(endpoint, { onExchange });
  const dynamo = createDynamo({ endpoint: proxy.endpoint });
  return {
    dynamo,
    close: async () => {
      dynamo.client.destroy();
      await proxy.close();
    },
  };
};

export interface RunResult {
  jobs: { id: string; status: string; cursor: number; totalUnits: number; requeues: number }[];
  /** One per period: its shards and whether its completion check recorded it done. */
  runs: { id: string; shards: number; done: boolean }[];
  elapsedMs: number;
  /** From the start until the last unit committed (and every run's completion was recorded). */
  unitsMs: number;
  /** The outbox items' delivery after the last unit: how many, how many are still unsent, and how long it took. */
  delivery: Delivery;
  units: number;
  invocations: number;
  timeouts: number;
  crashes: number;
  sweeps: number;
  deadLetters: number;
  metrics: Record<string, number>;
  faults: { name: string; lane: string; atMs: number }[];
  invariants: InvariantReport;
  timeline: Timeline;
  /** Why the run stopped waiting before every job finished, if it did. */
  gaveUp?: string;
  /** The external effects' faults that fired, and what the reconciler and the collector did. */
  effects: { faults: string[]; notInjected: string[]; senderKilled: boolean; reconciled: { fromRecord: number; resent: number; delivered: number; unknown: number }; collected: number; streamDeadLetters: number };
}

/** The invoice sample's three billing periods (its local payloads): one job each, or its shards. */
export const PERIODS = ['2026-09', '2026-10', '2026-11'];
export const UNIT_SIZE = 10;
// The local runtime's lease and stall limit (cli/local/runtime.ts): ops' local requeue uses them too.
export { LEASE_MS, STALL_MS };

export function defaultFaults(jobIds: readonly string[], unitsPerJob: number): Fault[] {
  const [j1, j2 = j1, j3 = j2] = jobIds;
  if (j1 === undefined) return [];
  // Small runs have few units: keep every fault on a unit that exists (and not the last).
  const at = (unit: number) => Math.max(0, Math.min(unit, unitsPerJob - 2));
  return [
    // Until a successor has taken the job over and committed this very unit (the article's
    // incident, forced by that event, not hoped for by timing: on a machine of any speed the
    // paused write comes after the successor's). The bound only ends a run that stalled anyway.
    { name: 'paused between read and write', point: 'before-commit', jobId: j1, unit: at(2), action: { kind: 'pause', ms: STALL_MS, until: 'successor-commits' } },
    { name: 'crash after fence raise, before the first unit', point: 'after-fence-raise', jobId: j2!, action: { kind: 'crash' } },
    // Not after a job's LAST commit (one-unit jobs: --customers 10 or fewer): that job is DONE, and
    // its run's completion check then waits for the message's redelivery after the visibility
    // timeout, longer than this run waits for it.
    ...(unitsPerJob >= 2 ? [{ name: 'crash mid-run, after a commit', point: 'after-commit' as const, jobId: j3!, unit: at(4), action: { kind: 'crash' as const } }] : []),
  ];
}

const workloadOf = (opts: RunOptions): Workload<any> => opts.workload ?? workloadNamed(DEFAULT_WORKLOAD);

export async function invoiceRun(opts: RunOptions): Promise<RunResult> {
  // Every handler's request goes through the wire, which tells the wire check what the engine
  // applied; the checker itself reads the engine directly.
  const wire = new WireCheck({ ...opts.tables, fencePrefix: workloadOf(opts).fenceKeyPrefix });
  const handlers = await (typeof opts.endpoint === 'string' ? proxiedWire(opts.endpoint) : opts.endpoint)((ex) => wire.observe(ex));
  // The handlers' clients, and the run's own (the embedded SMTP sink's recorder writes with it):
  // what the checker and the run's waits send there is no function's, and is not recorded.
  opts.calls?.attach(handlers.dynamo.client).attach(opts.dynamo.client).attach(opts.streams).attach(opts.effects.s3).documentSet(opts.set);
  try {
    return await runThroughProxy(opts, handlers.dynamo, wire);
  } finally {
    await handlers.close();
  }
}

async function runThroughProxy(opts: RunOptions, dynamo: Dynamo, wire: WireCheck): Promise<RunResult> {
  const clock = systemClock;
  const invocationTimeoutMs = LEASE_MS * 8;
  const sweepIntervalMs = Math.round(LEASE_MS / 3);
  const timeline = new Timeline(() => clock.monotonicNow());
  const telemetry = new LocalTelemetry(timeline, undefined, LEASE_MS);
  // AWS asks for 6x the function timeout, for the poller's own batch retries; this queue has none.
  // 2x brings a crashed invocation's message back well inside STALL_MS: a crash right after a
  // shard's last commit leaves its run's completion to that redelivery.
  const queue = new LocalQueue({ clock, visibilityTimeoutMs: invocationTimeoutMs * 2, maxReceiveCount: 5 });
  let runtime: LocalRuntime | undefined;
  // A crash ends its invocation at once.
  const workload = workloadOf(opts);
  const plan = new FaultPlan([], clock, timeline, (owner) => runtime?.crash(owner), tableProbes(opts.dynamo, opts.tables, workload.fenceKeyPrefix));
  const mode = opts.leaseMode === 'version-watch' ? { kind: 'version-watch' as const } : { kind: 'wall-clock' as const, maxClockSkewMs: 50 };
  const lease = { epoch: 0, durationMs: LEASE_MS, mode };
  // The handlers' sends are SQS SendMessage calls in AWS: recorded at the port when recording.
  const base = { doc: dynamo.doc, tables: opts.tables, clock, queue: opts.calls?.queue(queue) ?? queue, telemetry };

  const { processor, fenceKeyPrefix } = workload;
  const fx = new RunEffects({ dynamo, streams: opts.streams, tables: opts.tables, set: opts.set, effects: opts.effects, clock, telemetry, timeline, leaseMs: LEASE_MS, faults: opts.faults !== false, fenceKeyPrefix, steps: workload.steps, ...(opts.http ? { http: opts.http } : {}), ...(processor.documents ? { catalog: processor.documents } : {}), ...(opts.calls ? { calls: opts.calls } : {}) });
  const fence = fenceKeyPrefix === undefined ? {} : { fenceKeyPrefix };
  const worker = createWorkerHandler({ ...base, processor, ...fence, lease, hooks: plan, documents: fx.documents }, { safetyMarginMs: Math.round(LEASE_MS / 2) });
  const sweeper = createSweeperHandler({ ...base, lease, staleAfterMs: LEASE_MS * 2, sweepIntervalMs });
  const starter = createStarterHandler({ ...base, workload, unitSize: workload.local.unitSize, items: opts.items, shards: opts.shards ?? 1 });
  runtime = new LocalRuntime({
    clock,
    queue,
    worker,
    sweeper,
    concurrency: opts.workers,
    batchSize: 1,
    invocationTimeoutMs,
    sweepIntervalMs,
  });

  const started = clock.monotonicNow();
  const { jobIds, runIds, faults, totalUnits } = await startPeriods(opts, starter, queue, timeline);
  plan.add(faults);

  fx.arm();
  runtime.start();
  fx.start();
  const background = fx.background(COLLECT_AFTER_MS);
  const { jobs, gaveUp } = await waitForUnits(opts, { jobIds, runIds, totalUnits, plan, faults });
  const unitsMs = Math.round(clock.monotonicNow() - started);
  const delivering = watchDelivery(opts, fx);
  // Let paused workers wake up and try their (stale) writes before we read the tables back.
  const wakeBy = clock.monotonicNow() + LEASE_MS * 8;
  while (plan.activePauses > 0 && clock.monotonicNow() < wakeBy) await clock.sleep(50);
  await clock.sleep(200);
  await runtime.stop();
  const delivery = await delivering.stop(await fx.settle(STALL_MS, COLLECT_AFTER_MS));
  await background.stop();
  await fx.stop();
  const elapsedMs = Math.round(clock.monotonicNow() - started);

  const runs = await Promise.all(runIds.map(async (id) => {
    const r = await readRun(opts.dynamo.doc, opts.tables.jobs, id);
    return { id, shards: r?.shardCount ?? 0, done: r?.doneAt !== undefined };
  }));
  const invariants = await checkInvariants({ client: opts.dynamo.client, doc: opts.dynamo.doc, streams: opts.streams }, opts.tables, fx.sources(), wire.report(), workload);
  return {
    jobs: jobs.map((j, i) => ({ id: j?.id ?? jobIds[i]!, status: j?.status ?? 'MISSING', cursor: j?.cursor ?? 0, totalUnits: j?.totalUnits ?? 0, requeues: j?.requeues ?? 0 })),
    runs,
    elapsedMs,
    unitsMs,
    delivery,
    units: telemetry.get(METRIC.unitsCommitted),
    invocations: runtime.invocations,
    timeouts: runtime.timeouts,
    crashes: runtime.crashes,
    sweeps: runtime.sweeps,
    deadLetters: queue.deadLetters.length,
    metrics: Object.fromEntries(telemetry.counts),
    faults: plan.fired.map((f) => ({ name: f.name, lane: slotOf(f.owner), atMs: Math.round(f.at - started) })),
    invariants,
    timeline,
    ...(gaveUp === undefined ? {} : { gaveUp }),
    effects: fx.summary(),
  };
}

/** The scheduler's starter, once per local run (the stand-in for the workload's schedule), and the faults for the jobs it started. */
async function startPeriods(opts: RunOptions, starter: ReturnType<typeof createStarterHandler>, queue: LocalQueue, timeline: Timeline) {
  const starts = [];
  const payloads = workloadOf(opts).local.payloads(opts.items, opts.seed);
  for (const payload of payloads.slice(0, opts.periods ?? payloads.length)) starts.push(await asFunction('starter', () => starter(payload)));
  const jobIds = starts.flatMap((r) => r.jobs.map((j) => j.jobId));
  const runIds = starts.map((r) => r.runId);
  const jobs = await Promise.all(jobIds.map((id) => readJob(opts.dynamo.doc, opts.tables.jobs, id)));
  // The faults hit the first shard of each period (the period's only job without shards), on units every shard has.
  const unitsPerJob = Math.min(...jobs.map((j) => j?.totalUnits ?? 1));
  const faults = opts.faults === false ? [] : defaultFaults(starts.map((r) => r.jobId), unitsPerJob);
  // A duplicate delivery of the first job's message.
  if (jobIds[0] !== undefined && opts.faults !== false) {
    await queue.send({ jobId: jobIds[0], reason: 'start' });
    timeline.add('queue', 'duplicate', `duplicate delivery of ${jobIds[0]}`);
  }
  const totalUnits = jobs.reduce((n, j) => n + (j?.totalUnits ?? 0), 0);
  return { jobIds, runIds, faults, totalUnits };
}

export interface Delivery {
  items: number;
  unsent: number;
  ms: number;
}

/** Until every job has ended and every run's completion is recorded, or no unit has moved for STALL_MS. */
async function waitForUnits(
  opts: RunOptions,
  w: { jobIds: string[]; runIds: string[]; totalUnits: number; plan: FaultPlan; faults: readonly Fault[] },
): Promise<{ jobs: (Job | undefined)[]; gaveUp?: string }> {
  const clock = systemClock;
  let lastDone = -1;
  let movedAt = clock.monotonicNow();
  for (;;) {
    const jobs = await Promise.all(w.jobIds.map((id) => readJob(opts.dynamo.doc, opts.tables.jobs, id)));
    const done = jobs.reduce((n, j) => n + (j?.cursor ?? 0), 0);
    if (done !== lastDone) [lastDone, movedAt] = [done, clock.monotonicNow()];
    // A crash fault that fired on a job still open: its lease stays until it lapses, then the sweeper requeues.
    const crashed = w.faults.filter((f) => f.action.kind === 'crash' && w.plan.fired.some((x) => x.name === f.name)).map((f) => f.jobId);
    const open = (id: string) => !['DONE', 'FAILED'].includes(jobs[w.jobIds.indexOf(id)]?.status ?? '');
    const waiting = unitsWaitingFor({ sinceMoveMs: clock.monotonicNow() - movedAt, leaseMs: LEASE_MS, pausedWorkers: w.plan.activePauses, crashedJobsUnfinished: crashed.filter(open).length });
    opts.onProgress?.({ stage: 'units', done, total: w.totalUnits, ...(waiting === undefined ? {} : { waiting }) });
    // Ended, and every run whose shards are all DONE has had its completion check recorded.
    if (jobs.every((j) => j?.status === 'DONE' || j?.status === 'FAILED') && (await runsRecorded(opts.dynamo.doc, opts.tables.jobs, w.runIds, jobs))) return { jobs };
    if (clock.monotonicNow() - movedAt > STALL_MS) return { jobs, gaveUp: `no unit committed for ${STALL_MS / 1000} s (${done}/${w.totalUnits} units done)` };
    await clock.sleep(100);
  }
}

/**
 * The delivery stage, watched from the outbox table while fx.settle delivers: after the last
 * unit every item the units created exists; the follow-ups their settles create (a workload's
 * steps) join the count as they come, and what moves is how many are still unsent.
 */
function watchDelivery(opts: RunOptions, fx: RunEffects): { stop: (settled: { at: number; unsent: number }) => Promise<Delivery> } {
  const clock = systemClock;
  const started = clock.monotonicNow();
  const stop = new AbortController();
  let items = 0;
  let unsent = 0;
  const tick = (movedAt: number) => {
    const waiting = deliveryWaitingFor({ sinceMoveMs: clock.monotonicNow() - movedAt, leaseMs: LEASE_MS, streamBacklog: fx.stream.backlog, unsent });
    opts.onProgress?.({ stage: 'delivering', done: items - unsent, total: items, ...(waiting === undefined ? {} : { waiting }) });
  };
  const loop = (async () => {
    let last = -1;
    let movedAt = clock.monotonicNow();
    while (!stop.signal.aborted) {
      [items, unsent] = await Promise.all([fx.items(), fx.unsent()]);
      if (unsent !== last) [last, movedAt] = [unsent, clock.monotonicNow()];
      tick(movedAt);
      await clock.sleep(500, stop.signal).catch(() => undefined);
    }
  })();
  return {
    stop: async (settled) => {
      stop.abort();
      await loop;
      unsent = settled.unsent;
      tick(clock.monotonicNow());
      return { items, unsent, ms: Math.round(settled.at - started) };
    },
  };
}

/** The longest lease plus a margin: an unreferenced document younger than this is left to its writer. */
export const COLLECT_AFTER_MS = LEASE_MS + 1_000;

/**
 * Whether every run whose shards all ended DONE has its `doneAt` (the worker records it after the
 * last shard; after a crash between the two, the message's redelivery does). Shared with chaos.
 */
export async function runsRecorded(doc: DynamoDBDocumentClient, jobsTable: string, runIds: readonly string[], jobs: readonly (Job | undefined)[]): Promise<boolean> {
  const done = new Set(jobs.filter((j) => j?.status === 'DONE').map((j) => j!.id));
  for (const id of runIds) {
    const r = await readRun(doc, jobsTable, id);
    if (r !== undefined && r.shards.every((s) => done.has(s)) && r.doneAt === undefined) return false;
  }
  return true;
}
