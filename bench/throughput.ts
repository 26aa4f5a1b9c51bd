/**
 * Fenced vs unsafe: effects/s of fenced units committed by the real worker (lib/workflow/run-job.ts:
 * lease, fence raise, checkpoint read, then ONE TransactWriteItems per unit = fence + checkpoint
 * + 25 effects) ÷ effects/s of the same 25 effects per unit written by BatchWriteItem with no
 * protection at all. Sequential (one job) and parallel (several jobs at once), several rounds,
 * the two sides alternating within each round so that both see the same machine.
 *
 * The same fenced runs give the request mix: TransactWriteItems per unit in steady state (with
 * renewals counted apart), per-job requests, WCU per effect, and the time split.
 */
import { GetItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { systemClock, type Dynamo } from '../lib/protocol/index.js';
import { runJob, silentTelemetry, TABLE_ROLES, TABLES, type TableNames, type WorkerDeps } from '../lib/workflow/index.js';
import type { BenchEnv } from './env.js';
import { gapsBetween, recordRequests, type LoggedRequest, type RequestLog } from './requests.js';
import { median } from './stats.js';
import { bill, itemSize } from './wcu.js';
import { EFFECTS_PER_UNIT, benchProcessor, createBenchJob, writeBareUnit, writeUnsafeUnit, type BenchInput } from './workload.js';
import { BenchError } from './errors.js';

export interface PhaseResult {
  effectsPerSec: number;
  /** Attempts of this phase thrown away because a job ended uncertain (fenced phases only). */
  retries?: number;
}

/**
 * How many times a fenced phase runs again when one of its jobs ends uncertain. On a loaded
 * machine a renewal or a commit can go unconfirmed past its timeout; the worker then stops its
 * protected work, correctly, and the queue would redeliver the message. The bench does the same
 * with fresh jobs, so that the figure it keeps comes from one clean attempt.
 */
export const MAX_UNCERTAIN_RETRIES = 3;

/** Shown in a BenchError: the outcome with its cause as text. */
const describe = (o: unknown): string => JSON.stringify(o, (_, v) => (v instanceof Error ? String(v) : v));

export interface ThroughputResult {
  jobs: number;
  unitsPerJob: number;
  rounds: { fenced: PhaseResult; unsafe: PhaseResult; bare: PhaseResult; ratio: number; bareRatio: number }[];
  /** Fenced ÷ unsafe BatchWriteItem, median of the rounds' ratios. */
  ratio: number;
  /** Fenced ÷ the same effects as a bare TransactWriteItems (fencedVsBareTransaction), median of the rounds' ratios. */
  bareRatio: number;
  fencedEffectsPerSec: number;
  unsafeEffectsPerSec: number;
  bareEffectsPerSec: number;
  /** Fenced attempts run again because a job ended uncertain, warm-up rounds included (fencedPhase). */
  uncertainRetries: number;
}

export interface RequestMix {
  units: number;
  effects: number;
  jobs: number;
  /** TransactWriteItems attempts per committed unit (steady state). */
  requestsPerUnit: number;
  renewalsPerUnit: number;
  /** Everything else a job costs, per job: acquire, fence raise, checkpoint read, release. */
  perJob: Record<string, number>;
  counts: Record<string, number>;
  wcuPerEffect: number;
  unsafeWcuPerEffect: number;
  rcuPerEffect: number;
  wcuByOperation: Record<string, number>;
  /** WCU of the unit transactions themselves, per unit (fence + checkpoint + 25 effects). */
  unitWcu: number;
  /** Everything else, per job: acquire, fence raise, renewals, release, index moves of the heartbeat. */
  jobWcu: number;
  /** Per fenced unit / per unsafe batch, ms: whole send(), inside the HTTP handler, and the SDK's share. */
  split: { fenced: Split; unsafe: Split };
}

/** Medians over the sequential rounds, ms. */
export interface Split {
  /** One send(): SDK + HTTP + DynamoDB Local. */
  sendMs: number;
  /** Inside the HTTP handler: the wire and DynamoDB Local. */
  httpMs: number;
  /** sendMs − httpMs: the SDK's own time (marshalling, serialising, signing, middleware, parsing). */
  sdkMs: number;
  /** From one response to the next request: the client's critical path between units. */
  gapMs: number;
}

/** Classifies a logged request by what it does in the protocol (lease ops by their update expression). */
export function protocolStep(tables: TableNames) {
  return (r: LoggedRequest): string => {
    const input = r.input as { TableName?: string; UpdateExpression?: string };
    if (r.operation === 'UpdateItem' && input.TableName === tables.leases) {
      const e = input.UpdateExpression ?? '';
      if (e.includes('REMOVE')) return 'lease.release';
      if (e.includes('#generation =')) return 'lease.acquire';
      return 'lease.renew';
    }
    if (r.operation === 'UpdateItem' && input.TableName === tables.fences) return 'fence.raise';
    if (r.operation === 'GetItem' && input.TableName === tables.jobs) return 'checkpoint.read';
    if (r.operation === 'TransactWriteItems') return 'unit.commit';
    return r.operation;
  };
}

export interface Side {
  dynamo: Dynamo;
  tables: TableNames;
  log: RequestLog;
}

const LEASE_MS = 4_000;

/**
 * The real worker's fenced units on `side`'s tables: effects/s over the unit loops (bench/streams.ts
 * runs it too). An attempt in which a job ends uncertain is thrown away, its requests dropped from
 * the side's log, and the phase runs again with fresh jobs, at most MAX_UNCERTAIN_RETRIES times;
 * `retries` counts them. Any other outcome is a BenchError.
 */
export async function fencedPhase(side: Side, tag: string, jobs: number, units: number): Promise<PhaseResult> {
  for (let retries = 0; ; retries++) {
    const attempt = await fencedAttempt(side, retries === 0 ? tag : `${tag}r${retries}`, jobs, units);
    if (attempt.kind === 'measured') return { effectsPerSec: attempt.effectsPerSec, retries };
    if (retries >= MAX_UNCERTAIN_RETRIES) {
      throw new BenchError(`bench job ended uncertain in ${retries + 1} attempts of phase ${tag} (at most ${MAX_UNCERTAIN_RETRIES} retries): ${describe(attempt.outcome)}`);
    }
    side.log.reset();
  }
}

async function fencedAttempt(side: Side, tag: string, jobs: number, units: number): Promise<{ kind: 'measured'; effectsPerSec: number } | { kind: 'uncertain'; outcome: unknown }> {
  const ids = Array.from({ length: jobs }, (_, j) => `bench-${tag}-${j}`);
  const inputs = ids.map((_, j): BenchInput => ({ tag: `${tag}-${j}`, units }));
  await Promise.all(ids.map((id, j) => createBenchJob(side.dynamo.doc, side.tables, id, inputs[j]!)));
  const starts: number[] = [];
  const ends: number[] = [];
  const deps: WorkerDeps = {
    doc: side.dynamo.doc,
    tables: side.tables,
    clock: systemClock,
    queue: { send: async () => undefined },
    telemetry: silentTelemetry,
    processor: benchProcessor,
    lease: { epoch: 0, durationMs: LEASE_MS, mode: { kind: 'wall-clock', maxClockSkewMs: 0 } },
    hooks: {
      // The unit loop starts after the checkpoint read and ends with the last commit: the window
      // excludes the per-job acquire/raise/read/release, which are counted apart.
      at: async (point, info) => {
        if (point === 'after-checkpoint-read') starts.push(performance.now());
        if (point === 'after-commit' && info.unit === units - 1) ends.push(performance.now());
      },
    },
  };
  const outcomes = await Promise.all(
    ids.map((jobId) => runJob(deps, { message: { jobId }, remainingTimeMs: () => 3_600_000, safetyMarginMs: 0 })),
  );
  const uncertain = outcomes.find((o) => o.kind === 'uncertain');
  if (uncertain !== undefined) return { kind: 'uncertain', outcome: uncertain };
  for (const o of outcomes) {
    if (o.kind !== 'done' || o.units !== units) throw new BenchError(`bench job did not finish cleanly: ${describe(o)}`);
  }
  const ms = Math.max(...ends) - Math.min(...starts);
  return { kind: 'measured', effectsPerSec: (jobs * units * EFFECTS_PER_UNIT) / (ms / 1000) };
}

async function unsafePhase(side: Side, tag: string, jobs: number, units: number): Promise<PhaseResult> {
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: jobs }, async (_, j) => {
      const input: BenchInput = { tag: `${tag}-${j}`, units };
      for (let u = 0; u < units; u++) await writeUnsafeUnit(side.dynamo.client, side.tables, input, `bench-${tag}-${j}`, u);
    }),
  );
  const ms = performance.now() - t0;
  return { effectsPerSec: (jobs * units * EFFECTS_PER_UNIT) / (ms / 1000) };
}

async function barePhase(side: Side, tag: string, jobs: number, units: number): Promise<PhaseResult> {
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: jobs }, async (_, j) => {
      const input: BenchInput = { tag: `${tag}-${j}`, units };
      for (let u = 0; u < units; u++) await writeBareUnit(side.dynamo.client, side.tables, input, `bench-${tag}-${j}`, u);
    }),
  );
  const ms = performance.now() - t0;
  return { effectsPerSec: (jobs * units * EFFECTS_PER_UNIT) / (ms / 1000) };
}

export interface ThroughputOptions {
  rounds: number;
  units: number;
  parallelJobs: number;
  parallelUnits: number;
  onProgress?: (label: string) => void;
  /** Discarded rounds before the measured ones, per mode. Default 1. */
  warmupRounds?: number;
  /** Run after each round (bench/floor.ts measures DynamoDB Local's floor here, on the same server state). */
  between?: (mode: 'sequential' | 'parallel', record: boolean) => Promise<void>;
}

export async function measureThroughput(
  env: BenchEnv,
  opts: ThroughputOptions,
): Promise<{ sequential: ThroughputResult; parallel: ThroughputResult; mix: RequestMix }> {
  const tables = await env.tables('thru');
  // One client per side, each with its own request log.
  const side = (): Side => {
    const dynamo = env.dynamo();
    return { dynamo, tables, log: recordRequests(dynamo.client) };
  };
  const fenced = side();
  const unsafe = side();
  const bare = side();

  // Request mix: only the measured fenced and unsafe runs, job creation excluded (the starter's work).
  const fencedLog: LoggedRequest[] = [];
  const unsafeLog: LoggedRequest[] = [];
  // Time split and critical path: sequential rounds only (one request at a time, no queueing).
  const seqCalls = { fenced: [] as number[], unsafe: [] as number[] };
  const seqHttp = { fenced: [] as number[], unsafe: [] as number[] };
  const seqGaps = { fenced: [] as number[], unsafe: [] as number[] };
  const keep = (side: Side, into: LoggedRequest[], which: 'fenced' | 'unsafe', sequential: boolean) => {
    into.push(...side.log.entries.filter((r) => r.operation !== 'PutItem'));
    const op = which === 'fenced' ? 'TransactWriteItems' : 'BatchWriteItem';
    if (sequential) {
      seqCalls[which].push(...side.log.calls.filter((c) => c.operation === op).map((c) => c.ms));
      seqHttp[which].push(...side.log.exchanges.filter((x) => x.operation === op).map((x) => x.end - x.start));
      seqGaps[which].push(...gapsBetween(side.log.exchanges, op));
    }
    side.log.reset();
  };

  const run = async (mode: 'sequential' | 'parallel', jobs: number, units: number): Promise<ThroughputResult> => {
    const rounds: ThroughputResult['rounds'] = [];
    let uncertainRetries = 0;
    const warmup = opts.warmupRounds ?? 1;
    for (let r = -warmup; r < opts.rounds; r++) {
      const tag = `${mode[0]}${r < 0 ? `w${-r}` : r}`;
      // A warm-up round (r < 0) runs like the others and is thrown away: DynamoDB Local's JIT
      // takes a few seconds to settle on each new code path (the first rounds ran 2x slower).
      const record = r >= 0;
      const after = (side: Side, into: LoggedRequest[], which: 'fenced' | 'unsafe') =>
        record ? keep(side, into, which, mode === 'sequential') : side.log.reset();
      const got: Partial<Record<'fenced' | 'unsafe' | 'bare', PhaseResult>> = {};
      const phases = {
        fenced: async () => {
          got.fenced = await fencedPhase(fenced, `${tag}f`, jobs, units);
          uncertainRetries += got.fenced.retries ?? 0;
          after(fenced, fencedLog, 'fenced');
        },
        unsafe: async () => {
          got.unsafe = await unsafePhase(unsafe, `${tag}u`, jobs, units);
          after(unsafe, unsafeLog, 'unsafe');
        },
        bare: async () => {
          got.bare = await barePhase(bare, `${tag}b`, jobs, units);
          bare.log.reset();
        },
      };
      // Rotate which side goes first: drift in the machine's load hits every side the same.
      const order = (['fenced', 'unsafe', 'bare'] as const).map((_, i, all) => all[(i + r + 3) % 3]!);
      for (const p of order) await phases[p]();
      const [f, u, b] = [got.fenced!, got.unsafe!, got.bare!];
      if (record) rounds.push({ fenced: f, unsafe: u, bare: b, ratio: f.effectsPerSec / u.effectsPerSec, bareRatio: f.effectsPerSec / b.effectsPerSec });
      await opts.between?.(mode, record);
      opts.onProgress?.(record ? `${mode} round ${r + 1}/${opts.rounds}` : `${mode} warm-up`);
    }
    return {
      jobs,
      unitsPerJob: units,
      rounds,
      ratio: median(rounds.map((x) => x.ratio)),
      bareRatio: median(rounds.map((x) => x.bareRatio)),
      fencedEffectsPerSec: median(rounds.map((x) => x.fenced.effectsPerSec)),
      unsafeEffectsPerSec: median(rounds.map((x) => x.unsafe.effectsPerSec)),
      bareEffectsPerSec: median(rounds.map((x) => x.bare.effectsPerSec)),
      uncertainRetries,
    };
  };

  const sequential = await run('sequential', 1, opts.units);
  const parallel = await run('parallel', opts.parallelJobs, opts.parallelUnits);

  // Sizes of the items that updates touched (fence, job, lease): read once after the runs.
  const sizes = new Map<string, number>();
  const keyOf = (table: string, key: Record<string, AttributeValue>) => `${table}\u0000${JSON.stringify(key)}`;
  for (const r of fencedLog) {
    const input = r.input as any;
    const actions = r.operation === 'TransactWriteItems' ? input.TransactItems.map((i: any) => i.Update ?? i.Delete ?? i.ConditionCheck).filter(Boolean) : [input];
    for (const a of actions) {
      if (a.Key === undefined || sizes.has(keyOf(a.TableName, a.Key))) continue;
      const out = await fenced.dynamo.client.send(new GetItemCommand({ TableName: a.TableName, Key: a.Key, ConsistentRead: true }));
      sizes.set(keyOf(a.TableName, a.Key), out.Item ? itemSize(out.Item) : 0);
    }
  }
  const stored = (table: string, key: Record<string, AttributeValue>) => sizes.get(keyOf(table, key)) ?? 0;
  const step = protocolStep(tables);
  const counts: Record<string, number> = {};
  for (const r of fencedLog) counts[step(r)] = (counts[step(r)] ?? 0) + 1;
  const jobsRun = opts.rounds * (1 + opts.parallelJobs);
  const unitsRun = opts.rounds * (opts.units + opts.parallelJobs * opts.parallelUnits);
  const effects = unitsRun * EFFECTS_PER_UNIT;
  const indexKeys = (table: string): string[] => {
    const role = TABLE_ROLES.find((r) => tables[r] === table);
    return role === undefined ? [] : TABLES[role].globalSecondaryIndexes.flatMap((g) => [g.partitionKey.name, ...(g.sortKey ? [g.sortKey.name] : [])]);
  };
  const fencedBill = bill(fencedLog, stored, indexKeys);
  const unsafeBill = bill(unsafeLog, stored, indexKeys);
  const perJob: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts)) if (k !== 'unit.commit' && k !== 'lease.renew') perJob[k] = v / jobsRun;
  const split = (which: 'fenced' | 'unsafe'): Split => {
    const sendMs = median(seqCalls[which]);
    const httpMs = median(seqHttp[which]);
    return { sendMs, httpMs, sdkMs: sendMs - httpMs, gapMs: median(seqGaps[which]) };
  };
  const mix: RequestMix = {
    units: unitsRun,
    effects,
    jobs: jobsRun,
    requestsPerUnit: (counts['unit.commit'] ?? 0) / unitsRun,
    renewalsPerUnit: (counts['lease.renew'] ?? 0) / unitsRun,
    perJob,
    counts,
    wcuPerEffect: fencedBill.wcu / effects,
    unsafeWcuPerEffect: unsafeBill.wcu / effects,
    rcuPerEffect: fencedBill.rcu / effects,
    wcuByOperation: fencedBill.byOperation,
    unitWcu: (fencedBill.byOperation.TransactWriteItems ?? 0) / unitsRun,
    jobWcu: (fencedBill.wcu - (fencedBill.byOperation.TransactWriteItems ?? 0)) / jobsRun,
    split: { fenced: split('fenced'), unsafe: split('unsafe') },
  };
  return { sequential, parallel, mix };
}
