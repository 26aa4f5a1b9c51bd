/**
 * sharding: K = 1, 2, 4, 8 shards of one invoice run (lib/workloads/invoices/shards.ts), each shard
 * run by the real worker (runJob) at once, then the completion check the worker handler runs after
 * every shard, then the independent checker (cli/check/invariants.ts) over the tables and streams: a
 * shard count is counted only if every invariant holds. One DynamoDB Local process executes the
 * transactions on these tables one at a time, so this shows correctness and what the client adds
 * per shard, NOT AWS's scaling: beside each K, the planner's AWS figures for the same K
 * (lib/workloads/invoices/plan.ts).
 */
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { systemClock } from '../lib/protocol/index.js';
import { checkRunOfJob, runJob, silentTelemetry, type WorkerDeps } from '../lib/workflow/index.js';
import { EFFECTS_PER_CUSTOMER, invoiceProcessor, MAX_UNIT_SIZE, type InvoiceRunInput } from '../lib/workloads/invoices/invoices.js';
import { startInvoiceRun } from '../lib/workloads/invoices/shards.js';
import { invoices } from '../lib/workloads/invoices/index.js';
import { planInvoiceRun } from '../lib/workloads/invoices/plan.js';
import { checkInvariants, type InvariantName } from '../cli/check/invariants.js';
import { streamsClient } from '../cli/local/streams.js';
import type { BenchEnv } from './env.js';
import { median } from './stats.js';
import { BenchError } from './errors.js';

const BENCH_INVARIANTS: readonly InvariantName[] = ['FENCE', 'ONCE', 'PROGRESS', 'TOKENS', 'RUNS'];

export const SHARD_COUNTS = [1, 2, 4, 8] as const;

export interface ShardingRow {
  shards: number;
  effectsPerSec: number;
  /** This K's effects/s ÷ one shard's, median of the rounds. */
  vsOneShard: number;
  /** Every invariant held in every round at this K. */
  invariantsHeld: boolean;
  /** Shards whose run ended uncertain and ran again (as a redelivery would), over the rounds. */
  redeliveries: number;
  /** The planner's AWS wall time for this run size and K, and for the 10-million-customer month at this K. */
  planSeconds: number;
  plan10MSeconds: number;
  plan10MBinding: string;
}

export interface ShardingResult {
  customers: number;
  rounds: number;
  rows: ShardingRow[];
}

async function oneRun(open: () => Promise<BenchEnv>, k: number, tag: string, customers: number): Promise<{ effectsPerSec: number; ok: boolean; redeliveries: number }> {
  // Each run on a DynamoDB Local of its own: every streamed write slows down as the stream records
  // of all its tables pile up (bench/env.ts), so on one instance each run would be slower than the
  // one before, and by the third round a shard's renewals took seconds (it ended uncertain).
  const env = await open();
  const streams = streamsClient(env.endpoint);
  try {
    return await measuredRun(env, streams, k, tag, customers);
  } finally {
    streams.destroy();
    await env.close();
  }
}

async function measuredRun(env: BenchEnv, streams: DynamoDBStreamsClient, k: number, tag: string, customers: number): Promise<{ effectsPerSec: number; ok: boolean; redeliveries: number }> {
  const tables = await env.tables(tag);
  const dynamo = env.dynamo();
  const input: InvoiceRunInput = { period: '2026-11', customers, seed: 11, unitSize: MAX_UNIT_SIZE, currency: 'EUR' };
  const { shards } = await startInvoiceRun(dynamo.doc, tables.jobs, input, k, systemClock);
  const deps: WorkerDeps = {
    doc: dynamo.doc,
    tables,
    clock: systemClock,
    queue: { send: async () => undefined },
    telemetry: silentTelemetry,
    processor: invoiceProcessor,
    // The invoice workload's fence key, as its stack's workers raise it (the checker reads that one).
    fenceKeyPrefix: invoices.fenceKeyPrefix!,
    lease: { epoch: 0, durationMs: 10_000, mode: { kind: 'wall-clock', maxClockSkewMs: 0 } },
  };
  let redeliveries = 0;
  const t0 = performance.now();
  await Promise.all(
    shards.map(async ({ job }) => {
      // As the queue would: an uncertain outcome (a renewal or commit that could not be confirmed on a loaded machine) is redelivered.
      for (let attempt = 1; ; attempt++) {
        const out = await runJob(deps, { message: { jobId: job.id }, remainingTimeMs: () => 3_600_000, safetyMarginMs: 0 });
        if (out.kind === 'done') break;
        if (out.kind !== 'uncertain' || attempt >= 5) throw new BenchError(`sharding bench: shard ${job.id} ended ${out.kind}: ${JSON.stringify(out, (_, v) => (v instanceof Error ? String(v) : v))}`);
        redeliveries++;
      }
      await checkRunOfJob(dynamo.doc, tables.jobs, job.id, systemClock, silentTelemetry);
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const report = await checkInvariants({ client: dynamo.client, doc: dynamo.doc, streams }, tables, {}, undefined, invoices);
  // This bench runs no sender and no bucket (the shards' transactions are what it measures): the
  // outbox items stay PENDING and DELIVERY says so. DOCS and DELIVERY of sharded runs are checked
  // by `npm start -- --shards K` and its test; here every other invariant must hold.
  const held = BENCH_INVARIANTS.every((name) => report.invariants[name].ok);
  return { effectsPerSec: (customers * EFFECTS_PER_CUSTOMER) / seconds, ok: held && report.stats.runs.completeRuns === 1, redeliveries };
}

/** `open`: a fresh environment per run (a DynamoDB Local of its own, or the --endpoint given). */
export async function measureSharding(
  open: () => Promise<BenchEnv>,
  opts: { rounds: number; customers: number; shardCounts?: readonly number[]; /** One discarded run first (default true). */ warmup?: boolean; onProgress?: (label: string) => void },
): Promise<ShardingResult> {
  const counts = opts.shardCounts ?? SHARD_COUNTS;
  const rates = new Map<number, number[]>(counts.map((k) => [k, []]));
  const held = new Map<number, boolean>(counts.map((k) => [k, true]));
  const again = new Map<number, number>(counts.map((k) => [k, 0]));
  if (opts.warmup ?? true) await oneRun(open, 2, 'sh-warm', opts.customers);
  for (let r = 0; r < opts.rounds; r++) {
    const order = counts.map((_, i) => counts[(i + r) % counts.length]!);
    for (const k of order) {
      const { effectsPerSec, ok, redeliveries } = await oneRun(open, k, `sh${k}r${r}`, opts.customers);
      rates.get(k)!.push(effectsPerSec);
      again.set(k, again.get(k)! + redeliveries);
      if (!ok) held.set(k, false);
    }
    opts.onProgress?.(`sharding round ${r + 1}/${opts.rounds}`);
  }
  const one = rates.get(1)!;
  const rows = counts.map((k) => {
    const plan = planInvoiceRun({ customers: opts.customers, shards: k });
    const month = planInvoiceRun({ customers: 10_000_000, shards: k });
    return {
      shards: k,
      effectsPerSec: median(rates.get(k)!),
      vsOneShard: median(rates.get(k)!.map((x, i) => x / one[i]!)),
      invariantsHeld: held.get(k)!,
      redeliveries: again.get(k)!,
      planSeconds: plan.wallSeconds,
      plan10MSeconds: month.wallSeconds,
      plan10MBinding: month.binding.name,
    };
  });
  return { customers: opts.customers, rounds: opts.rounds, rows };
}
