/**
 * The sweeper: finds unfinished jobs nobody is progressing and requeues them (DESIGN.md).
 * Scheduled, at least once: two sweeps may overlap, and a sweep may repeat.
 *
 * Requeue = a conditional update of the job (`heartbeatAt = :observed`: a live worker's next
 * commit cancels it, and of two overlapping sweeps exactly one wins) THEN a queue send.
 * Duplicate messages are harmless: a worker that finds the lease live acknowledges and drops.
 *
 * - wall-clock mode: stale = heartbeat older than `staleAfterMs` and the lease expired
 *   (compares clocks, under the same skew bound as the lease).
 * - version-watch mode: compares no clocks. Each sweep records what it saw (lease version,
 *   cursor, heartbeat) on the job; a job seen unchanged over enough consecutive sweeps to cover
 *   a lease duration plus margin is requeued, with the lease version in the message so the
 *   worker can claim exactly that version.
 */
import { GetCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError, isConditionalCheckFailed, LEASE_ATTR as L, type Clock, type LeaseMode } from '../protocol/index.js';
import { claimRequeue, jobFromItem, leaseKeyOf, type Job } from './jobs.js';
import { METRIC, type Telemetry, type WorkQueue } from './ports.js';
import { JOB_ATTR as J, UNFINISHED, UNFINISHED_INDEX, type TableNames } from './schema.js';

export interface SweeperDeps {
  doc: DynamoDBDocumentClient;
  tables: TableNames;
  clock: Clock;
  queue: WorkQueue;
  telemetry: Telemetry;
  lease: { mode: LeaseMode; durationMs: number; maxDrift?: number };
  /** wall-clock: a heartbeat older than this is stale. Must exceed the lease duration. */
  staleAfterMs: number;
  /** version-watch: the schedule's period, the only measure of time the sweeper uses. */
  sweepIntervalMs: number;
}

export interface SweepReport {
  unfinished: number;
  requeued: string[];
  live: number;
  watching: number;
  oldestUnfinishedAgeMs: number;
  /**
   * Set when the sweep ran short of time before the end of the index: where the next sweep
   * resumes (counts and the oldest age then cover only what this sweep saw).
   */
  resumeFrom?: Record<string, unknown>;
}

/**
 * How much of the unfinished index one sweep takes. The index is ordered by heartbeat, oldest
 * first, so a sweep that stops early has seen the stalest jobs; the next one goes on from
 * `resumeFrom`, and a sweep that reaches the end leaves none, so the one after starts over.
 */
export interface SweepWindow {
  /** Time left in this invocation (Lambda's getRemainingTimeInMillis). @default unbounded */
  remainingTimeMs?: () => number;
  /** Stop taking jobs when less than this remains (the requeue in flight, the metrics flush). @default 10 s */
  reserveMs?: number;
  /** A previous sweep's `resumeFrom`. */
  resumeFrom?: Record<string, unknown>;
  /** Jobs per index page. @default DynamoDB's (1 MB) */
  pageSize?: number;
}

/** Consecutive unchanged sweeps that cover one lease duration (stretched by drift) plus a sweep of margin. */
export function sweepsToCover(durationMs: number, sweepIntervalMs: number, maxDrift = 0.01): number {
  return Math.ceil((durationMs * (1 + maxDrift)) / sweepIntervalMs) + 1;
}

/** Each unfinished job with its index position (the ExclusiveStartKey that resumes just after it). */
async function* unfinishedJobs(
  doc: DynamoDBDocumentClient,
  table: string,
  from: Record<string, unknown> | undefined,
  pageSize: number | undefined,
): AsyncGenerator<{ job: Job; after: Record<string, unknown> }> {
  let start = from;
  do {
    // The index is eventually consistent: a job may appear a moment late or linger a moment
    // after finishing. Every requeue is re-checked by its conditional update.
    const page = await doc.send(
      new QueryCommand({
        TableName: table,
        IndexName: UNFINISHED_INDEX,
        KeyConditionExpression: '#u = :open',
        ExpressionAttributeNames: { '#u': J.unfinished },
        ExpressionAttributeValues: { ':open': UNFINISHED },
        ExclusiveStartKey: start,
        ...(pageSize === undefined ? {} : { Limit: pageSize }),
      }),
    );
    for (const item of page.Items ?? []) {
      yield { job: jobFromItem(item), after: { [J.key]: item[J.key], [J.unfinished]: item[J.unfinished], [J.heartbeatAt]: item[J.heartbeatAt] } };
    }
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
}

export async function sweep(deps: SweeperDeps, window: SweepWindow = {}): Promise<SweepReport> {
  if (deps.lease.mode.kind === 'wall-clock' && !(deps.staleAfterMs > deps.lease.durationMs)) {
    throw new InvalidInputError('staleAfterMs', 'must exceed the lease duration');
  }
  if (!(deps.sweepIntervalMs > 0)) throw new InvalidInputError('sweepIntervalMs', 'must be > 0');
  const report: SweepReport = { unfinished: 0, requeued: [], live: 0, watching: 0, oldestUnfinishedAgeMs: 0 };
  const now = deps.clock.wallNow();
  const reserveMs = window.reserveMs ?? 10_000;
  let position: Record<string, unknown> | undefined;
  for await (const { job, after } of unfinishedJobs(deps.doc, deps.tables.jobs, window.resumeFrom, window.pageSize)) {
    // Out of time: the next sweep starts with this job. At least one job per sweep, so even a
    // budget spent before the first one makes progress.
    if (position !== undefined && window.remainingTimeMs !== undefined && window.remainingTimeMs() < reserveMs) {
      report.resumeFrom = position;
      break;
    }
    position = after;
    report.unfinished++;
    report.oldestUnfinishedAgeMs = Math.max(report.oldestUnfinishedAgeMs, now - job.createdAt);
    const lease = (
      await deps.doc.send(new GetCommand({ TableName: deps.tables.leases, Key: { [L.key]: leaseKeyOf(job.id) }, ConsistentRead: true }))
    ).Item;
    const requeue =
      deps.lease.mode.kind === 'wall-clock'
        ? wallClockVerdict(deps, job, lease, now, deps.lease.mode.maxClockSkewMs, report)
        : await versionWatchVerdict(deps, job, lease, report);
    if (requeue === false) continue;
    if (!(await claimRequeue(deps.doc, deps.tables.jobs, job, deps.clock))) continue;
    await deps.queue.send({ jobId: job.id, reason: 'requeue', ...(requeue.observedVersion ? { observedVersion: requeue.observedVersion } : {}) });
    report.requeued.push(job.id);
    deps.telemetry.count(METRIC.jobsRequeued);
    deps.telemetry.event('job-requeued', { jobId: job.id, cursor: job.cursor, requeues: job.requeues + 1 });
  }
  deps.telemetry.gauge(METRIC.oldestUnfinishedJobAgeMs, report.oldestUnfinishedAgeMs);
  return report;
}

type Verdict = false | { observedVersion?: string };

function wallClockVerdict(
  deps: SweeperDeps,
  job: Job,
  lease: Record<string, unknown> | undefined,
  now: number,
  maxSkew: number,
  report: SweepReport,
): Verdict {
  if (job.heartbeatAt >= now - deps.staleAfterMs) return false;
  const expiresAt = lease?.[L.expiresAt];
  if (lease?.[L.owner] !== undefined && typeof expiresAt === 'number' && expiresAt >= now - maxSkew) {
    report.live++;
    return false;
  }
  return {};
}

async function versionWatchVerdict(
  deps: SweeperDeps,
  job: Job,
  lease: Record<string, unknown> | undefined,
  report: SweepReport,
): Promise<Verdict> {
  const version = typeof lease?.[L.version] === 'string' ? (lease[L.version] as string) : 'none';
  const observation = `${version}|${job.cursor}|${job.heartbeatAt}`;
  const unchanged = job.sweepObservation === observation ? (job.sweepUnchanged ?? 0) + 1 : 0;
  const needed = sweepsToCover(deps.lease.durationMs, deps.sweepIntervalMs, deps.lease.maxDrift);
  if (unchanged >= needed) {
    return lease?.[L.owner] === undefined ? {} : { observedVersion: version };
  }
  report.watching++;
  try {
    // Conditional on what this sweep read: of two overlapping sweeps only one counts.
    await deps.doc.send(
      new UpdateCommand({
        TableName: deps.tables.jobs,
        Key: { [J.key]: job.id },
        ConditionExpression:
          '#h = :h AND attribute_exists(#u) AND ' +
          (job.sweepObservation === undefined ? 'attribute_not_exists(#so)' : '#so = :prevObs AND #su = :prevUnchanged'),
        UpdateExpression: 'SET #so = :obs, #su = :unchanged',
        ExpressionAttributeNames: { '#h': J.heartbeatAt, '#u': J.unfinished, '#so': J.sweepObservation, '#su': J.sweepUnchanged },
        ExpressionAttributeValues: {
          ':h': job.heartbeatAt,
          ':obs': observation,
          ':unchanged': unchanged,
          ...(job.sweepObservation === undefined ? {} : { ':prevObs': job.sweepObservation, ':prevUnchanged': job.sweepUnchanged ?? 0 }),
        },
      }),
    );
  } catch (e) {
    if (!isConditionalCheckFailed(e)) throw e;
  }
  return false;
}
