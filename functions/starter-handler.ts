/**
 * The starter Lambda: on schedule (monthly), creates the period's invoice run idempotently (one
 * run id per period: its record and its `shards` shard jobs, lib/workloads/invoice-shards.ts) and
 * enqueues every unfinished shard. A repeated or overlapping invocation finds the run and its
 * shards and at most re-enqueues them, which the worker treats as duplicates.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../lib/protocol/index.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableNames, Telemetry, WorkQueue } from '../lib/workflow/index.js';
import { invoiceProcessor, type InvoiceRunInput } from '../lib/workloads/invoices.js';
import { startInvoiceRun } from '../lib/workloads/invoice-shards.js';
import { parseStartPayload } from './messages.js';

export interface StarterDeps {
  doc: DynamoDBDocumentClient;
  tables: TableNames;
  clock: Clock;
  queue: WorkQueue;
  telemetry: Telemetry;
  unitSize: number;
  customers: number;
  /** Shard jobs per run (1: one job per period). */
  shards?: number;
}

export interface StartResult {
  runId: string;
  /** The first shard's job (the period's only job when the run has one shard). */
  jobId: string;
  /** Whether this call created the run record. */
  created: boolean;
  /** Whether any shard was enqueued. */
  enqueued: boolean;
  /** The first shard's status. */
  status: string;
  jobs: { jobId: string; created: boolean; enqueued: boolean; status: string }[];
}

/** The period a run started at `time` bills: the previous calendar month (UTC). */
export function previousPeriod(time: Date): string {
  const y = time.getUTCFullYear();
  const m = time.getUTCMonth(); // 0-based: the previous month, 1-based
  return m === 0 ? `${y - 1}-12` : `${y}-${String(m).padStart(2, '0')}`;
}

const seedOf = (period: string): number => createHash('sha256').update(period).digest().readUInt32BE(0) & 0x7fffffff;

/** Accepts EventBridge Scheduler's input (our JSON payload as the event) or an EventBridge ScheduledEvent. */
export type StarterHandler = (event?: unknown) => Promise<StartResult>;

export function createStarterHandler(deps: StarterDeps): StarterHandler {
  return async (event) => {
    // EventBridge Scheduler passes our JSON input as the event; EventBridge rules wrap it in `detail`.
    const e = (typeof event === 'object' && event !== null ? event : {}) as Record<string, unknown>;
    const isScheduledEvent = 'detail-type' in e || 'detail' in e;
    const raw = isScheduledEvent ? (e.detail ?? {}) : e;
    const { time: _time, ...rest } = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    const payload = parseStartPayload(rest);
    const when = typeof e.time === 'string' ? new Date(e.time) : new Date(deps.clock.wallNow());
    const period = payload.period ?? previousPeriod(when);
    const input: InvoiceRunInput = {
      period,
      customers: payload.customers ?? deps.customers,
      seed: payload.seed ?? seedOf(period),
      unitSize: deps.unitSize,
      currency: 'EUR',
    };
    const parsed = invoiceProcessor.parseInput(input);
    const { run, created, shards } = await startInvoiceRun(deps.doc, deps.tables.jobs, parsed, deps.shards ?? 1, deps.clock);
    const jobs = await Promise.all(
      shards.map(async ({ job, created: jobCreated }) => {
        const unfinished = job.status === 'PENDING' || job.status === 'RUNNING';
        if (unfinished) await deps.queue.send({ jobId: job.id, reason: 'start' });
        deps.telemetry.event('job-started', { jobId: job.id, runId: run.id, created: jobCreated, status: job.status, enqueued: unfinished });
        return { jobId: job.id, created: jobCreated, enqueued: unfinished, status: job.status };
      }),
    );
    const first = jobs[0]!;
    return { runId: run.id, jobId: first.jobId, created, enqueued: jobs.some((j) => j.enqueued), status: first.status, jobs };
  };
}
