/**
 * Jobs: the durable claim and progress of a unit of work (DESIGN.md, Jobs table).
 * PENDING → RUNNING → DONE | FAILED. `cursor` is the checkpoint (next unit), advanced only
 * inside fenced units; `unfinished` exists only while the job is PENDING or RUNNING, so the
 * sweeper's index holds exactly the jobs that may need recovery.
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionFailureItem, describeValue, InvalidInputError, isConditionalCheckFailed, itemBytes, MAX_ITEM_BYTES, type Clock } from '../protocol/index.js';
import { InvalidJobItemError } from './errors.js';
import { JOB_ATTR as J, UNFINISHED } from './schema.js';

export type JobStatus = 'PENDING' | 'RUNNING' | 'DONE' | 'FAILED';

/** Attempts at one unit that fail with an error no retry can fix, before the job ends FAILED. */
export const MAX_UNIT_FAILURES = 3;

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
  /** Failed attempts at `failedUnit` with an error no retry can fix. */
  failures?: number;
  failedUnit?: number;
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
/**
 * The fence of a job's effects: `<prefix><jobId>`. The prefix is the workload's (Workload.fenceKeyPrefix,
 * through the deps of the worker and the collector), and a deployed stack never changes it: a
 * worker of the previous version, still running through a deploy, checks the fence it knows.
 */
export const DEFAULT_FENCE_PREFIX = 'fence#';
export const fenceKeyOf = (jobId: string, prefix: string = DEFAULT_FENCE_PREFIX): string => `${prefix}${jobId}`;
/** The fences a lease key protects, for the seal (protocol epochs.ts): `job#J` protects `<prefix>J`. */
export const fencesOfLease = (leaseKey: string, prefix: string = DEFAULT_FENCE_PREFIX): string[] => (leaseKey.startsWith('job#') ? [fenceKeyOf(leaseKey.slice('job#'.length), prefix)] : []);
/** The job a fence key guards, or undefined for a key of another prefix. */
export const jobOfFence = (fenceKey: string, prefix: string = DEFAULT_FENCE_PREFIX): string | undefined => (fenceKey.startsWith(prefix) ? fenceKey.slice(prefix.length) : undefined);

const STATUSES: readonly JobStatus[] = ['PENDING', 'RUNNING', 'DONE', 'FAILED'];

/**
 * A job as the Jobs contract describes it, checked: an item with an unknown status or a cursor
 * that is not a count is an error, never a job to run (a typo'd status would otherwise be run
 * as if unfinished).
 */
export function jobFromItem(item: Record<string, unknown>): Job {
  const id = String(item[J.key]);
  const count = (attr: string, fallback: number | undefined): number => {
    const v = item[attr] ?? fallback;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new InvalidJobItemError(id, attr, `must be an integer >= 0, got ${describeValue(v)}`);
    return v;
  };
  const status = item[J.status];
  if (!STATUSES.includes(status as JobStatus)) throw new InvalidJobItemError(id, J.status, `must be one of ${STATUSES.join(', ')}, got ${describeValue(status)}`);
  const input = item[J.input] ?? {};
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new InvalidJobItemError(id, J.input, 'must be a map');
  const job: Job = {
    id,
    status: status as JobStatus,
    cursor: count(J.cursor, 0),
    totalUnits: count(J.totalUnits, undefined),
    heartbeatAt: Number(item[J.heartbeatAt] ?? 0),
    requeues: Number(item[J.requeues] ?? 0),
    input: input as Record<string, unknown>,
    createdAt: Number(item[J.createdAt] ?? 0),
  };
  if (typeof item[J.generation] === 'number') job.generation = item[J.generation] as number;
  if (typeof item[J.failureReason] === 'string') job.failureReason = item[J.failureReason] as string;
  if (typeof item[J.failures] === 'number') job.failures = item[J.failures] as number;
  if (typeof item[J.failedUnit] === 'number') job.failedUnit = item[J.failedUnit] as number;
  if (typeof item[J.sweepObservation] === 'string') job.sweepObservation = item[J.sweepObservation] as string;
  if (typeof item[J.sweepUnchanged] === 'number') job.sweepUnchanged = item[J.sweepUnchanged] as number;
  return job;
}

/**
 * Creates the job if it does not exist (one id per schedule slot makes the starter
 * idempotent). Returns the job as stored and whether this call created it.
 */
export async function createJob(
  doc: DynamoDBDocumentClient,
  table: string,
  spec: { id: string; totalUnits: number; input: Record<string, unknown> },
  clock: Clock,
): Promise<{ job: Job; created: boolean }> {
  assertJobId(spec?.id);
  // A job with no units would never commit the unit that marks it DONE.
  if (!Number.isSafeInteger(spec.totalUnits) || spec.totalUnits < 1) {
    throw new InvalidInputError('totalUnits', `must be an integer >= 1, got ${describeValue(spec.totalUnits)}`);
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
