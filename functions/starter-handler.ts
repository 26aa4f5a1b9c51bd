/**
 * The starter Lambda: on schedule (monthly), creates the period's invoice run idempotently
 * (one job id per period) and enqueues it. A repeated or overlapping invocation finds the job
 * and at most re-enqueues it, which the worker treats as a duplicate.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../lib/protocol/index.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createJob, type TableNames, type Telemetry, type WorkQueue } from '../lib/workflow/index.js';
import { invoiceJobId, invoiceProcessor, type InvoiceRunInput } from '../lib/workloads/invoices.js';
import { parseStartPayload } from './messages.js';

export interface StarterDeps {
  doc: DynamoDBDocumentClient;
  tables: TableNames;
  clock: Clock;
  queue: WorkQueue;
  telemetry: Telemetry;
  unitSize: number;
  customers: number;
}

export interface StartResult {
  jobId: string;
  created: boolean;
  enqueued: boolean;
  status: string;
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
    const { job, created } = await createJob(
      deps.doc,
      deps.tables.jobs,
      { id: invoiceJobId(period), totalUnits: invoiceProcessor.totalUnits(parsed), input: { ...parsed } },
      deps.clock,
    );
    const unfinished = job.status === 'PENDING' || job.status === 'RUNNING';
    if (unfinished) await deps.queue.send({ jobId: job.id, reason: 'start' });
    deps.telemetry.event('job-started', { jobId: job.id, created, status: job.status, enqueued: unfinished });
    return { jobId: job.id, created, enqueued: unfinished, status: job.status };
  };
}
