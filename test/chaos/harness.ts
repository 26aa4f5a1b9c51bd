/**
 * One chaos run: a schedule (schedule.ts) executed against the real handlers on DynamoDB Local,
 * the workers' DynamoDB traffic through a fault proxy (lost, delayed and refused requests), the
 * local runtime's queue and scheduler, workers with their own (possibly skewed) clocks, an
 * optional disaster-recovery drill, then the independent invariant checker on the tables and
 * streams. The variant is the real protocol or a negative control (controls.ts).
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { createDynamo, driftedClock, FencedError, raiseEpoch, seal, skewedClock, systemClock, type Dynamo, type SealReport } from '../../lib/protocol/index.js';
import { invoices } from '../../lib/workloads/invoices/index.js';
import { ensureTables, fenceKeyOf, type Workload, fencesOfLease, readJob, runIdOfJob, RunInputMismatchError, TABLE_ROLES, tableNames, type TableNames, type WorkerDeps } from '../../lib/workflow/index.js';
import { createStarterHandler, type StarterHandler } from '../../functions/starter-handler.js';
import { createSweeperHandler } from '../../functions/sweeper-handler.js';
import { createWorkerHandler, type WorkerHandler } from '../../functions/worker-handler.js';
import { FaultPlan, tableProbes } from '../../cli/demo/faults.js';
import { checkInvariants, overlapsOf, type InvariantReport } from '../../cli/check/invariants.js';
import { LocalQueue } from '../../cli/local/queue.js';
import { LocalRuntime, slotOf } from '../../cli/local/runtime.js';
import { LocalTelemetry } from '../../cli/local/telemetry.js';
import { startEffects, type Effects, type EffectsOptions } from '../../cli/local/effects-env.js';
import { RunEffects } from '../../cli/demo/run-effects.js';
import { runsRecorded } from '../../cli/demo/run.js';
import { startFaultProxy, type FaultRules, type WireExchange } from '../../cli/local/fault-proxy.js';
import type { StreamActivity } from '../../cli/local/outbox-stream.js';
import { WireCheck } from '../../cli/check/wire-check.js';
import { asFunction, outsideFunctions, type AwsCallRecorder } from '../../cli/local/aws-calls.js';
import { scheduleRuns, type ScheduleRuns } from './workload-runs.js';
import { controlProtocol, controlRecorder, senderChain, senderEmail, senderProviders, type Variant } from './controls.js';
import { forControl, forcedFor, makeSchedule, rng, type ChaosLeaseMode, type Schedule } from './schedule.js';


export interface RunRecord {
  seed: number;
  variant: Variant;
  /** For a control: whether the incident's interleaving was forced (even seeds) or left to timing. */
  forced: boolean;
  ok: boolean;
  elapsedMs: number;
  report: InvariantReport;
  /** Takeovers before the replaced holder's expiry, in true time (the schedule's skews taken out). */
  overlaps: number;
  /** An overlap while every clock kept its stated bound: a lease handed to a second live holder. */
  leaseViolation: boolean;
  schedule: Schedule;
  faultsFired: string[];
  /** The worker the incident stalled (the owner the pause fired for), if it fired. */
  stalledOwner?: string;
  metrics: Record<string, number>;
  drill?: { sealedAtMs: number; reports: SealReport[] };
  history: string[];
  error?: string;
}

/** The starter fault's name in the summary: it fired when its start was refused. */
export const RESTART_FAULT = 'a running period started again with another input (refused)';

/** A chaos run that could not be carried out as scheduled (its report says why). */
class ChaosRunError extends FencedError {
  readonly code = 'CHAOS_RUN';
}

const isRenewal = (json: unknown) => {
  const u = (json as { UpdateExpression?: string } | undefined)?.UpdateExpression;
  return typeof u === 'string' && u.startsWith('SET #expiresAt');
};

/** Lost, delayed and refused requests, each drawn from the run's own PRNG. */
function injectFaults(proxy: FaultRules, schedule: Schedule): void {
  const r = rng(schedule.seed ^ 0x5bd1e995);
  const always = { times: Infinity };
  if (schedule.throttleP > 0) proxy.error({ ...always, when: () => r() < schedule.throttleP }, 'ThrottlingException');
  if (schedule.conflictP > 0) {
    // A conflict with another transaction, or throttling (an on-demand GSI under a burst answers it
    // as a cancellation reason): refused before anything is applied, retried by the library.
    const reason = () => (r() < 0.5 ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' } : { Code: 'ThrottlingError', Message: 'Throughput exceeds the current capacity' });
    proxy.respond(
      { ...always, target: 'TransactWriteItems', when: () => r() < schedule.conflictP },
      () => ({ __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException', message: 'injected cancellation', CancellationReasons: [{ Code: 'None' }, reason()] }),
      400,
    );
  }
  if (schedule.dropCommitP > 0) proxy.drop({ ...always, target: 'TransactWriteItems', when: () => r() < schedule.dropCommitP });
  if (schedule.renewDelayP > 0) proxy.delay({ ...always, target: 'UpdateItem', when: (q) => isRenewal(q.json) && r() < schedule.renewDelayP }, Math.round(schedule.leaseMs * 0.4));
  if (schedule.delayP > 0) proxy.delay({ ...always, when: () => r() < schedule.delayP }, Math.round(schedule.delayMaxMs * r()));
}

/** The slot index (0-based) behind an owner or request id `w3-…`. */
const slotIndex = (ownerOrRequest: string): number => Number(slotOf(ownerOrRequest).slice(1)) - 1;

/**
 * Where a chaos run happens: the engine the checker reads directly, and the two things a run
 * builds of its own: the handlers' wire (every request through the fault rules, each exchange
 * told to the wire check) and the external effects. On DynamoDB Local: the fault proxy and the
 * local servers (localChaosEnv); in the simulator: the in-memory wire and stand-ins (test/sim).
 */
export interface ChaosEnv {
  readonly direct: Dynamo;
  readonly streams: DynamoDBStreamsClient;
  wire(onExchange: (ex: WireExchange) => void): Promise<ChaosWire>;
  effects(opts: EffectsOptions): Promise<Effects>;
  /**
   * How often the run's observers poll: the harness's progress watch and the stream stand-in
   * (default 50 ms each). In the simulator every poll is CPU time, and none is the code under test.
   */
  readonly pacing?: { progressPollMs?: number; streamPollMs?: number };
  /** The engine tells its stream's appends (the simulator's model): the stream is delivered on them, not polled. */
  readonly streamActivity?: StreamActivity;
}

export interface ChaosWire {
  /** The handlers' clients. */
  readonly dynamo: Dynamo;
  readonly faults: FaultRules;
  close(): Promise<void>;
}

/** DynamoDB Local at `endpoint`: the handlers' requests through a fault proxy, the effects on the local servers. */
export function localChaosEnv(env: { endpoint: string; direct: Dynamo; streams: DynamoDBStreamsClient }): ChaosEnv {
  return {
    direct: env.direct,
    streams: env.streams,
    async wire(onExchange) {
      const proxy = await startFaultProxy(env.endpoint, { onExchange });
      const dynamo = createDynamo({ endpoint: proxy.endpoint, maxAttempts: 3, requestTimeoutMs: 5_000 });
      return {
        dynamo,
        faults: proxy,
        close: async () => {
          await proxy.close();
          dynamo.client.destroy();
        },
      };
    },
    effects: (opts) => startEffects(opts),
  };
}

export interface ChaosRunOptions {
  deadlineMs?: number;
  keepTables?: boolean;
  leaseMode?: ChaosLeaseMode;
  calls?: AwsCallRecorder;
  /** Run this schedule instead of the seed's own (a shrunk or edited one: the simulator's replay). */
  schedule?: Schedule;
  /** The workload its runs are (default the invoice sample): its processor, starter, fence prefix, providers and checks. */
  workload?: Workload<any>;
}

/** The schedule a chaos run of `seed` and `variant` carries out. */
export function scheduleOf(seed: number, variant: Variant, opts: { leaseMode?: ChaosLeaseMode; shape?: (s: Schedule) => Schedule } = {}): { schedule: Schedule; forced: boolean } {
  const drawn = makeSchedule(seed, opts.leaseMode === undefined ? {} : { leaseMode: opts.leaseMode });
  const base = opts.shape === undefined ? drawn : opts.shape(drawn);
  const forced = variant === 'fenced' || forcedFor(seed);
  return { schedule: variant === 'fenced' ? base : forControl(base, variant, forced), forced };
}

export async function chaosRun(env: ChaosEnv, seed: number, variant: Variant, opts: ChaosRunOptions = {}): Promise<RunRecord> {
  const drawn = scheduleOf(seed, variant, opts);
  const forced = drawn.forced;
  const workload = opts.workload ?? invoices;
  // Every fence this run's workers raise, and everything that reads them, has the workload's prefix.
  const FENCE_PREFIX = fenceKeyOf('', workload.fenceKeyPrefix); // the workload's prefix, or the default when it names none
  const runs = scheduleRuns(workload, opts.schedule ?? drawn.schedule);
  // A workload with no outbox and no documents (the simulator's protocol shape): no stream, reconciler or collector runs, as its stack would have none.
  const effectful = workload.outbox.email || workload.outbox.http.length > 0 || workload.processor.documents !== undefined;
  const schedule = runs.schedule;
  const clock = systemClock;
  const started = clock.monotonicNow();
  const at = () => Math.round(clock.monotonicNow() - started);
  const tables = tableNames(`chaos-${seed}-${variant}-`);
  const history: string[] = [];
  await ensureTables(env.direct.client, tables);
  // The wire the structural FENCE check reads: every request of the run's handlers that reached the engine.
  const wire = new WireCheck({ ...tables, fencePrefix: FENCE_PREFIX });
  const handlersWire = await env.wire((ex) => wire.observe(ex));
  injectFaults(handlersWire.faults, schedule);
  const viaProxy = handlersWire.dynamo;
  // The handlers' clients (the effects' functions use the direct one): the checker's and the drill's calls are no function's.
  opts.calls?.attach(viaProxy.client).attach(env.direct.client).attach(env.streams).documentSet(`chaos-${seed}-${variant}`);

  const telemetry = new LocalTelemetry(undefined, (line) => history.push(`${at()} ${line}`));
  const queue = new LocalQueue({ clock, visibilityTimeoutMs: schedule.leaseMs * 48, maxReceiveCount: 10 });
  let runtime: LocalRuntime | undefined;
  const plan = new FaultPlan(
    schedule.faults,
    clock,
    undefined,
    (owner) => {
      history.push(`${at()} CRASH ${owner}`);
      runtime?.crash(owner);
    },
    tableProbes(env.direct, tables, FENCE_PREFIX),
    (fault, info) => {
      if (!schedule.requeueOnPause || fault !== schedule.faults[0]) return;
      history.push(`${at()} REQUEUE ${info.jobId} while ${info.owner} is stalled`);
      void queue.send({ jobId: info.jobId, reason: 'requeue' });
    },
  );
  const mode = schedule.leaseMode === 'wall-clock' ? { kind: 'wall-clock' as const, maxClockSkewMs: schedule.maxClockSkewMs } : { kind: 'version-watch' as const };
  // One object for every invocation: the drill raises its epoch, as a redeploy would.
  const lease = { epoch: 0, durationMs: schedule.leaseMs, mode };
  const deps = { doc: viaProxy.doc, tables, clock, queue: opts.calls?.queue(queue) ?? queue, telemetry };
  // The external effects: a bucket, an SMTP sink and a payment provider of this run's own.
  // The payment provider forgets keys after 16 leases (Stripe: 24 h, scaled); the sender stops 4
  // leases before: the margin covers a POST's way on a loaded machine, and the stream's retries
  // and the reconciler's first pass (6 leases) leave an item stuck by a short outage well inside it.
  const chain = senderChain(variant, workload.steps, env.direct.doc);
  // The recorder creates a hard bounce's follow-ups with the sender's steps (a control's rewrite of
  // them included); the two controls that move the settle's follow-ups into hooks leave it the workload's.
  const recorderSteps = chain.senderHooks === undefined ? chain.steps : workload.steps;
  const record = controlRecorder(variant, env.direct.doc, workload.steps);
  const effects = await env.effects({ doc: env.direct.doc, httpTargets: workload.outbox.http, paymentsKeyRetentionMs: schedule.leaseMs * 16, sendTimeoutMs: schedule.leaseMs, steps: recorderSteps, ...(record === undefined ? {} : { record }) });
  opts.calls?.attach(effects.s3);
  const http = senderProviders(variant, effects.http);
  const email = senderEmail(variant, effects.email);
  const fx = new RunEffects({
    fenceKeyPrefix: FENCE_PREFIX,
    ...(workload.processor.documents ? { catalog: workload.processor.documents } : {}),
    ...chain,
    dynamo: env.direct,
    streams: env.streams,
    tables,
    set: `chaos-${seed}-${variant}`,
    effects,
    clock,
    telemetry,
    leaseMs: schedule.leaseMs,
    faults: true,
    keyRetentionMarginMs: schedule.leaseMs * 4,
    ...(env.pacing?.streamPollMs === undefined ? {} : { streamPollMs: env.pacing.streamPollMs }),
    ...(env.streamActivity === undefined ? {} : { streamActivity: env.streamActivity }),
    ...(http === undefined ? {} : { http }),
    ...(email === undefined ? {} : { email }),
    providerFaults: schedule.providerFaults,
    ...(schedule.retentionOutage === undefined ? {} : { retentionOutage: schedule.retentionOutage }),
    ...(opts.calls ? { calls: opts.calls } : {}),
  });
  const protocol = controlProtocol(variant, (point, info) => plan.at(point, info), { doc: viaProxy.doc, leasesTable: tables.leases, effects, outboxTable: tables.outbox, set: `chaos-${seed}-${variant}` });
  // Each concurrency slot is a host with its own wall clock.
  const workers: WorkerHandler[] = schedule.skews.map((skew, i) => {
    const drift = schedule.drifts?.[i] ?? 0;
    const host = skew === 0 ? clock : skewedClock(clock, skew);
    const worker: WorkerDeps = { ...deps, clock: drift === 0 ? host : driftedClock(host, drift), processor: workload.processor, fenceKeyPrefix: FENCE_PREFIX, lease, hooks: plan, protocol, documents: fx.documents };
    return createWorkerHandler(worker, { safetyMarginMs: schedule.leaseMs });
  });
  const sweepOnce = createSweeperHandler({ ...deps, lease, staleAfterMs: schedule.leaseMs * 2, sweepIntervalMs: Math.round(schedule.leaseMs / 3) });
  const sweeper = async () => {
    let report;
    // Back to back (a burst), and each tick possibly twice at once (EventBridge is at-least-once).
    for (let i = 0; i < schedule.sweepBurst; i++) report = schedule.overlappingSweeps ? (await Promise.all([sweepOnce({}), sweepOnce({})]))[0]! : await sweepOnce({});
    return report!;
  };
  const startOnce = createStarterHandler({ ...deps, doc: env.direct.doc, unitSize: schedule.unitSize, workload, items: 0, shards: schedule.shards ?? 1 });
  // The scheduler's invocation of the starter: its calls are the starter's.
  const starter: StarterHandler = (event) => asFunction('starter', () => startOnce(event));
  runtime = new LocalRuntime({
    clock,
    queue,
    worker: (event, context) => workers[slotIndex(context.awsRequestId)]!(event, context),
    sweeper,
    concurrency: schedule.workers,
    batchSize: 1,
    invocationTimeoutMs: schedule.leaseMs * 8,
    sweepIntervalMs: Math.round(schedule.leaseMs / 3),
    onError: (e) => history.push(`ERROR ${String(e)}`),
  });

  const jobIds = [...runs.jobIds];
  let error: string | undefined;
  let drill: RunRecord['drill'];
  try {
    for (const i of schedule.jobs.keys()) await starter(runs.payload(i));
    const timers = schedule.duplicates.map((d) =>
      setTimeout(() => {
        history.push(`${at()} DUPLICATE ${jobIds[d.job]}`);
        void queue.send({ jobId: jobIds[d.job]!, reason: 'start' });
      }, d.atMs),
    );
    let restarting: Promise<string | undefined> | undefined;
    const restart = schedule.restart;
    if (restart !== undefined) {
      timers.push(setTimeout(() => (restarting = restartWithOtherInput(starter, runs, schedule, restart, history, at)), restart.atMs));
    }
    let drilling: Promise<void> | undefined;
    if (schedule.drill !== undefined) {
      timers.push(
        setTimeout(() => {
          drilling = (async () => {
            // The runbook: record the new epoch, redeploy with it, seal. Workers in flight hold epoch-0 leases.
            history.push(`${at()} DRILL raise epoch 1, seal`);
            await raiseEpoch(env.direct.doc, tables.leases, 1);
            lease.epoch = 1;
            const reports = await seal(env.direct.doc, tables, 1, { fencesOf: (leaseKey) => fencesOfLease(leaseKey, FENCE_PREFIX) });
            drill = { sealedAtMs: at(), reports };
          })().catch((e: unknown) => void history.push(`ERROR drill ${String(e)}`));
        }, schedule.drill.atMs),
      );
    }
    fx.arm();
    runtime.start();
    if (effectful) fx.start();
    const background = effectful ? fx.background(schedule.leaseMs * 3) : { stop: async () => undefined };
    await watchProgress(env.direct, tables, jobIds, schedule, history, opts.deadlineMs, env.pacing?.progressPollMs ?? 50);
    timers.forEach(clearTimeout);
    await drilling;
    const accepted = await restarting;
    if (accepted !== undefined) throw new ChaosRunError(accepted);
    // Paused workers wake up and try their writes: wait for them before reading back.
    const settle = clock.monotonicNow() + schedule.leaseMs * 40;
    while (plan.activePauses > 0 && clock.monotonicNow() < settle) await clock.sleep(25);
    await clock.sleep(schedule.delayMaxMs + 100);
    await runtime.stop();
    if (effectful) await fx.settle(Math.max(15_000, schedule.leaseMs * 30), schedule.leaseMs * 3);
    await background.stop();
  } catch (e) {
    error = String(e);
    await runtime.stop();
  } finally {
    await fx.stop();
    await handlersWire.close();
  }
  const report = await checkInvariants({ client: env.direct.client, doc: env.direct.doc, streams: env.streams }, tables, fx.sources(), wire.report(), workload);
  await effects.close();
  if (!opts.keepTables) {
    await Promise.all(TABLE_ROLES.map((role) => env.direct.client.send(new DeleteTableCommand({ TableName: tables[role] })).catch(() => undefined)));
  }
  const overlaps = overlapsOf(report.takeovers, (owner) => schedule.skews[slotIndex(owner)] ?? 0).length;
  const clocksInBound = schedule.skews.every((s) => Math.abs(s) <= schedule.maxClockSkewMs / 2);
  const leaseViolation = clocksInBound && overlaps > 0;
  return {
    seed,
    variant,
    forced,
    ok: report.ok && !leaseViolation && error === undefined,
    elapsedMs: at(),
    report,
    overlaps,
    leaseViolation,
    schedule,
    faultsFired: [
      ...plan.fired.map((f) => f.name),
      ...fx.fired,
      ...(fx.senderKilled ? ['sender killed after the provider accepted'] : []),
      ...(history.some((h) => h.includes('RESTART refused')) ? [RESTART_FAULT] : []),
    ],
    ...stalled(plan.fired, schedule),
    metrics: Object.fromEntries(telemetry.counts),
    ...(drill === undefined ? {} : { drill }),
    history,
    ...(error === undefined ? {} : { error }),
  };
}

/**
 * The starter fault: a second start of a running period with another customer count must be
 * refused (RunInputMismatchError) and write nothing; an accepted one is an error of the run (the
 * checker's RUNS and ONCE then also see the shards it made).
 */
async function restartWithOtherInput(starter: StarterHandler, runs: ScheduleRuns, schedule: Schedule, restart: NonNullable<Schedule['restart']>, history: string[], at: () => number): Promise<string | undefined> {
  const j = schedule.jobs[restart.job]!;
  history.push(`${at()} RESTART ${j.period} with ${restart.customers} customers (stored: ${j.customers})`);
  try {
    await starter(runs.payload(restart.job, restart.customers));
  } catch (e) {
    if (e instanceof RunInputMismatchError) {
      history.push(`${at()} RESTART refused: ${e.message}`);
      return undefined;
    }
    history.push(`ERROR restart ${String(e)}`);
    return undefined;
  }
  return `a second start of ${j.period} with ${restart.customers} customers (stored: ${j.customers}) was accepted, not refused`;
}

function stalled(fired: readonly { name: string; owner: string }[], schedule: Schedule): { stalledOwner?: string } {
  const owner = fired.find((f) => f.name === schedule.faults[0]?.name)?.owner;
  return owner === undefined ? {} : { stalledOwner: owner };
}

/**
 * PROGRESS is judged by a stall watchdog, not a stopwatch: the run ends when every job ended, or
 * when no job advanced for `stallMs` (a protocol that stopped making progress), not when a loaded
 * machine makes every round trip slow. A hard cap bounds the run anyway.
 */
async function watchProgress(direct: Dynamo, tables: TableNames, jobIds: string[], schedule: Schedule, history: string[], deadlineMs: number | undefined, pollMs: number): Promise<void> {
  const clock = systemClock;
  const started = clock.monotonicNow();
  const stallMs = deadlineMs ?? Math.max(15_000, schedule.leaseMs * 60);
  const runIds = [...new Set(jobIds.map(runIdOfJob))];
  const hardCap = started + stallMs * 8;
  let lastProgress = clock.monotonicNow();
  let lastCursors = '';
  for (;;) {
    const jobs = await Promise.all(jobIds.map((id) => readJob(direct.doc, tables.jobs, id)));
    // Ended, and every finished run recorded (a redelivery records it after a crash on the last commit).
    if (jobs.every((j) => j?.status === 'DONE' || j?.status === 'FAILED') && (await runsRecorded(direct.doc, tables.jobs, runIds, jobs))) return;
    const cursors = jobs.map((j) => j?.cursor ?? 0).join(',');
    if (cursors !== lastCursors) {
      lastCursors = cursors;
      lastProgress = clock.monotonicNow();
    }
    if (clock.monotonicNow() > lastProgress + stallMs || clock.monotonicNow() > hardCap) {
      history.push(`DEADLINE with jobs ${jobs.map((j) => `${j?.id}:${j?.status}:${j?.cursor}/${j?.totalUnits}`).join(' ')}`);
      return;
    }
    await clock.sleep(pollMs);
  }
}
