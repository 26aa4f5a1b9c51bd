/**
 * Jobs: the durable claim and progress of a unit of work (DESIGN.md, Jobs table).
 * PENDING → RUNNING → DONE | FAILED. `cursor` is the checkpoint (next unit), advanced only
 * inside fenced units; `unfinished` exists only while the job is PENDING or RUNNING, so the
 * sweeper's index holds exactly the jobs that may need recovery.
 */
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  conditionFailureItem,
  describeValue,
  FENCE_ATTR,
  InvalidInputError,
  isConditionalCheckFailed,
  itemBytes,
  MAX_ITEM_BYTES,
  StaleGenerationError,
  type Clock,
  type Generation,
} from '../protocol/index.js';
import { JOB_ATTR as J, UNFINISHED } from './schema.js';

export type JobStatus = 'PENDING' | 'RUNNING' | 'DONE' | 'FAILED';

export interface Job {
  id: string;
  status: JobStatus;
  cursor: number;
  totalUnits: number;
  generation?: number;
  heartbeatAt: number;
  requeues: number;
  input: Record<string, unknown>;
  createdAt: number;
  failureReason?: string;
  sweepObservation?: string;
  sweepUnchanged?: number;
}

const JOB_ID = /^[A-Za-z0-9#:._-]{1,200}$/;

export function assertJobId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || !JOB_ID.test(id)) {
    throw new InvalidInputError('jobId', `must match ${JOB_ID}, got ${describeValue(id)}`);
  }
}

export const leaseKeyOf = (jobId: string): string => `job#${jobId}`;
export const fenceKeyOf = (jobId: string): string => `invoices#${jobId}`;

export function jobFromItem(item: Record<string, unknown>): Job {
  const job: Job = {
    id: String(item[J.key]),
    status: item[J.status] as JobStatus,
    cursor: Number(item[J.cursor] ?? 0),
    totalUnits: Number(item[J.totalUnits] ?? 0),
    heartbeatAt: Number(item[J.heartbeatAt] ?? 0),
    requeues: Number(item[J.requeues] ?? 0),
    input: (item[J.input] as Record<string, unknown>) ?? {},
    createdAt: Number(item[J.createdAt] ?? 0),
  };
  if (typeof item[J.generation] === 'number') job.generation = item[J.generation] as number;
  if (typeof item[J.failureReason] === 'string') job.failureReason = item[J.failureReason] as string;
  if (typeof item[J.sweepObservation] === 'string') job.sweepObservation = item[J.sweepObservation] as string;
  if (typeof item[J.sweepUnchanged] === 'number') job.sweepUnchanged = item[J.sweepUnchanged] as number;
  return job;
}

/**
 * Creates the job if it does not exist (one id per billing period makes the starter
 * idempotent). Returns the job as stored and whether this call created it.
 */
export async function createJob(
  doc: DynamoDBDocumentClient,
  table: string,
  spec: { id: string; totalUnits: number; input: Record<string, unknown> },
  clock: Clock,
): Promise<{ job: Job; created: boolean }> {
  assertJobId(spec?.id);
  if (!Number.isSafeInteger(spec.totalUnits) || spec.totalUnits < 0) {
    throw new InvalidInputError('totalUnits', 'must be an integer >= 0');
  }
  if (typeof spec.input !== 'object' || spec.input === null || Array.isArray(spec.input)) throw new InvalidInputError('input', 'must be an object');
  // Refused here, not by the SDK's marshaller or DynamoDB (bare errors): NaN, symbols, cycles, > 400 KB.
  if (itemBytes(spec.input, 'input') > MAX_ITEM_BYTES - 1_024) throw new InvalidInputError('input', "too large for one DynamoDB item (400 KB)");
  const now = clock.wallNow();
  const item = {
    [J.key]: spec.id,
    [J.status]: 'PENDING',
    [J.cursor]: 0,
    [J.totalUnits]: spec.totalUnits,
    [J.heartbeatAt]: now,
    [J.requeues]: 0,
    [J.input]: spec.input,
    [J.createdAt]: now,
    [J.unfinished]: UNFINISHED,
  };
  try {
    await doc.send(
      new PutCommand({
        TableName: table,
        Item: item,
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { job: jobFromItem(item), created: true };
  } catch (e) {
    if (!isConditionalCheckFailed(e)) throw e;
    return { job: jobFromItem(conditionFailureItem(e) ?? item), created: false };
  }
}

/** Strongly consistent: the checkpoint must be read after the fence is raised, and be current. */
export async function readJob(doc: DynamoDBDocumentClient, table: string, id: string): Promise<Job | undefined> {
  const out = await doc.send(new GetCommand({ TableName: table, Key: { [J.key]: id }, ConsistentRead: true }));
  return out.Item === undefined ? undefined : jobFromItem(out.Item);
}

/**
 * Ends a job that can never succeed (bad input): FAILED with the reason, out of the sweeper's
 * index so it is not retried forever. Fenced like any other write: a ConditionCheck on the
 * fence in the same transaction, so an obsolete holder cannot fail a job a newer one runs.
 */
export async function markFailed(
  doc: DynamoDBDocumentClient,
  tables: { jobs: string; fences: string },
  jobId: string,
  generation: Generation,
  reason: string,
  clock: Clock,
): Promise<void> {
  try {
    await doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            ConditionCheck: {
              TableName: tables.fences,
              Key: { [FENCE_ATTR.key]: fenceKeyOf(jobId) },
              ConditionExpression: '#g <= :g',
              ExpressionAttributeNames: { '#g': FENCE_ATTR.generation },
              ExpressionAttributeValues: { ':g': generation },
            },
          },
          {
            Update: {
              TableName: tables.jobs,
              Key: { [J.key]: jobId },
              ConditionExpression: 'attribute_exists(pk)',
              UpdateExpression: 'SET #s = :failed, #r = :reason, #h = :now, #gen = :g REMOVE #u',
              ExpressionAttributeNames: { '#s': J.status, '#r': J.failureReason, '#h': J.heartbeatAt, '#gen': J.generation, '#u': J.unfinished },
              ExpressionAttributeValues: { ':failed': 'FAILED', ':reason': reason.slice(0, 1_000), ':now': clock.wallNow(), ':g': generation },
            },
          },
        ],
      }),
    );
  } catch (e) {
    if (e instanceof Error && e.name === 'TransactionCanceledException') {
      throw new StaleGenerationError(fenceKeyOf(jobId), generation, undefined);
    }
    throw e;
  }
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
