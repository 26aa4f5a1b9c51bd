/**
 * The writes a holder or the sweeper makes to a job outside a fenced unit:
 *   markFailed          the job ends FAILED with its reason (bad input, a unit that cannot succeed)
 *   recordUnitFailure   one more failed attempt at a unit, counted on the job
 *   claimRequeue        the sweeper's conditional requeue claim
 * A holder's writes are fenced like a unit: a ConditionCheck on the job's fence in the same
 * transaction, so an obsolete holder can neither fail nor count against a job a newer one runs.
 */
import { TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  asGeneration,
  conditionFailureItem,
  defaultBackoff,
  FENCE_ATTR,
  fullJitter,
  isConditionalCheckFailed,
  retryableCancellation,
  StaleGenerationError,
  TransactionConflictError,
  TransactionFailedError,
  type Clock,
  type Generation,
} from '../protocol/index.js';
import { JobNotFoundError } from './errors.js';
import { fenceKeyOf, MAX_UNIT_FAILURES, type Job } from './jobs.js';
import { JOB_ATTR as J } from './schema.js';

interface JobUpdate {
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/** The tables of a fenced job update, and the workload's fence key prefix (fenceKeyOf). */
export type FencedTables = { jobs: string; fences: string; fencePrefix?: string | undefined };

/** Attempts of a fenced job update that DynamoDB cancels for a conflict with another transaction. */
const CONFLICT_ATTEMPTS = 5;

/**
 * One transaction: the fence must be at most `generation`, and the job must exist. Cancellation
 * reasons are positional ([0] fence, [1] job) and decoded: StaleGenerationError (with the fence's
 * generation), JobNotFoundError, a conflict retried with backoff, anything else TransactionFailedError.
 */
async function fencedJobUpdate(doc: DynamoDBDocumentClient, tables: FencedTables, jobId: string, generation: Generation, update: JobUpdate, clock: Clock): Promise<void> {
  const command = new TransactWriteCommand({
    TransactItems: [
      {
        ConditionCheck: {
          TableName: tables.fences,
          Key: { [FENCE_ATTR.key]: fenceKeyOf(jobId, tables.fencePrefix) },
          ConditionExpression: '#g <= :g',
          ExpressionAttributeNames: { '#g': FENCE_ATTR.generation },
          ExpressionAttributeValues: { ':g': generation },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      {
        Update: {
          TableName: tables.jobs,
          Key: { [J.key]: jobId },
          ConditionExpression: 'attribute_exists(pk)',
          UpdateExpression: update.expression,
          ExpressionAttributeNames: update.names,
          ExpressionAttributeValues: update.values,
        },
      },
    ],
  });
  for (let attempt = 1; ; attempt++) {
    try {
      await doc.send(command);
      return;
    } catch (e) {
      if (!(e instanceof Error) || e.name !== 'TransactionCanceledException') throw e;
      const reasons = (e as { CancellationReasons?: { Code?: string; Item?: Parameters<typeof conditionFailureItem>[0]['Item'] }[] }).CancellationReasons ?? [];
      const [fence, job] = reasons;
      if (fence?.Code === 'ConditionalCheckFailed') {
        const current = fence.Item === undefined ? undefined : conditionFailureItem(fence)?.[FENCE_ATTR.generation];
        throw new StaleGenerationError(fenceKeyOf(jobId, tables.fencePrefix), generation, typeof current === 'number' ? asGeneration(current) : undefined);
      }
      if (job?.Code === 'ConditionalCheckFailed') throw new JobNotFoundError(jobId);
      if (!retryableCancellation(reasons)) throw new TransactionFailedError(reasons, { cause: e });
      if (attempt >= CONFLICT_ATTEMPTS) throw new TransactionConflictError(attempt, { cause: e });
      await clock.sleep(fullJitter(attempt, defaultBackoff));
    }
  }
}

/**
 * Ends a job that can never succeed: FAILED with the reason, out of the sweeper's index so it is
 * not retried forever. Throws StaleGenerationError if a newer generation owns the job.
 */
export async function markFailed(
  doc: DynamoDBDocumentClient,
  tables: FencedTables,
  jobId: string,
  generation: Generation,
  reason: string,
  clock: Clock,
): Promise<void> {
  await fencedJobUpdate(doc, tables, jobId, generation, {
    expression: 'SET #s = :failed, #r = :reason, #h = :now, #gen = :g REMOVE #u',
    names: { '#s': J.status, '#r': J.failureReason, '#h': J.heartbeatAt, '#gen': J.generation, '#u': J.unfinished },
    values: { ':failed': 'FAILED', ':reason': reason.slice(0, 1_000), ':now': clock.wallNow(), ':g': generation },
  }, clock);
}

/**
 * Counts one more failed attempt at `unit` on the job (a new unit starts the count again) and
 * returns the count; at MAX_UNIT_FAILURES the job ends FAILED with the reason instead. One holder
 * records at most one failure per invocation, and the write is fenced, so the count read with
 * the checkpoint is current.
 */
export async function recordUnitFailure(
  doc: DynamoDBDocumentClient,
  tables: FencedTables,
  job: Pick<Job, 'id' | 'failures' | 'failedUnit'>,
  generation: Generation,
  unit: number,
  error: string,
  clock: Clock,
): Promise<{ failures: number; failed: boolean }> {
  const failures = (job.failedUnit === unit ? (job.failures ?? 0) : 0) + 1;
  const failed = failures >= MAX_UNIT_FAILURES;
  const names: Record<string, string> = { '#f': J.failures, '#fu': J.failedUnit };
  const values: Record<string, unknown> = { ':f': failures, ':u': unit };
  if (!failed) {
    await fencedJobUpdate(doc, tables, job.id, generation, { expression: 'SET #f = :f, #fu = :u', names, values }, clock);
    return { failures, failed };
  }
  await fencedJobUpdate(doc, tables, job.id, generation, {
    expression: 'SET #f = :f, #fu = :u, #s = :failed, #r = :reason, #h = :now, #gen = :g REMOVE #un',
    names: { ...names, '#s': J.status, '#r': J.failureReason, '#h': J.heartbeatAt, '#gen': J.generation, '#un': J.unfinished },
    values: { ...values, ':failed': 'FAILED', ':reason': `unit ${unit} failed ${failures} times: ${error}`.slice(0, 1_000), ':now': clock.wallNow(), ':g': generation },
  }, clock);
  return { failures, failed };
}

/**
 * The sweeper's requeue claim: conditional on the heartbeat it observed, so a live worker's
 * progress cancels it and of two overlapping sweeps only one wins. Moves the heartbeat to now
 * so the requeued worker gets a full staleness window before the next requeue.
 */
export async function claimRequeue(
  doc: DynamoDBDocumentClient,
  table: string,
  job: Job,
  clock: Clock,
  extraCondition?: { expression: string; values: Record<string, unknown>; names: Record<string, string> },
): Promise<boolean> {
  try {
    await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: { [J.key]: job.id },
        // Heartbeat AND cursor: a commit always moves the cursor, even one stamped in the same millisecond.
        ConditionExpression: `#h = :observed AND #c = :cursor AND attribute_exists(#u)` + (extraCondition ? ` AND (${extraCondition.expression})` : ''),
        UpdateExpression: 'SET #h = :now, #q = if_not_exists(#q, :zero) + :one, #su = :zero REMOVE #so',
        ExpressionAttributeNames: {
          '#h': J.heartbeatAt,
          '#c': J.cursor,
          '#u': J.unfinished,
          '#q': J.requeues,
          '#su': J.sweepUnchanged,
          '#so': J.sweepObservation,
          ...extraCondition?.names,
        },
        ExpressionAttributeValues: {
          ':observed': job.heartbeatAt,
          ':cursor': job.cursor,
          ':now': Math.max(clock.wallNow(), job.heartbeatAt + 1),
          ':zero': 0,
          ':one': 1,
          ...extraCondition?.values,
        },
      }),
    );
    return true;
  } catch (e) {
    if (isConditionalCheckFailed(e)) return false;
    throw e;
  }
}
