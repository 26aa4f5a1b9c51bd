/**
 * Runs: one piece of work split into K shard jobs (a schedule slot's items, by item
 * range). A shard IS a job: its own lease, fence, checkpoint and range; the worker, the sweeper
 * and the fence do not know runs exist. What a run adds is a record of its shards, kept in the
 * Jobs table beside them:
 *
 *   pk `run#<runId>`, kind `run`, shardCount (N), shards (L of job ids), input (M), createdAt (N),
 *   doneAt (N, written once, when a completion check first saw every shard DONE)
 *
 * A run record has neither `status` nor `unfinished`: the sweeper's index never holds it and no
 * worker can mistake it for a job (jobFromItem refuses an item without a status).
 *
 * The run is DONE when every one of its shards is DONE, and that is a QUERY of the shards, not a
 * counter. Each shard's DONE is written once, by the checkpoint advance of its last fenced unit
 * (the checkpoint condition makes it exactly once), and DONE is terminal. A strongly consistent
 * read of all shards issued after a shard's own DONE commit sees every shard that committed
 * before it, so the last shard to commit always sees all of them; a duplicate completion, a
 * redelivered message or a retried check reads the same states again and cannot count anything
 * twice. A counter would be a second copy of that state: incremented outside the unit's
 * transaction it double counts on a duplicate completion and misses a completion whose worker
 * crashed in between; inside it, every shard's last unit would carry one more action and the
 * workflow would know runs. `doneAt` is a record of the first check that saw the run complete,
 * for readers that want one item; the shards remain the truth.
 */
import { BatchGetCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionFailureItem, describeValue, InvalidInputError, isConditionalCheckFailed, type Clock } from '../protocol/index.js';
import { InvalidRunItemError, RunInputMismatchError, UnprocessedKeysError } from './errors.js';
import { assertJobId, createJob, type Job, type JobStatus } from './jobs.js';
import { METRIC, type Telemetry } from './ports.js';
import { JOB_ATTR as J } from './schema.js';

export const RUN_ATTR = {
  key: 'pk',
  kind: 'kind',
  shardCount: 'shardCount',
  shards: 'shards',
  input: 'input',
  createdAt: 'createdAt',
  doneAt: 'doneAt',
} as const;

/** The `kind` of a run record: what tools scanning the Jobs table skip. */
export const RUN_KIND = 'run';
/** The most shards a run may have: its record lists them all in one item, and one event source runs at most 1,000 at once. */
export const MAX_SHARDS = 1_000;

export const runKeyOf = (runId: string): string => `run#${runId}`;
/** Whether a Jobs item is a run record rather than a job. */
export const isRunItem = (item: Record<string, unknown>): boolean => item[RUN_ATTR.kind] === RUN_KIND;

/**
 * The job id of shard `index` of `count`: the run id itself for a run of one shard (the job id of
 * a period's run before runs were sharded), else `<runId>#shard-<index>-of-<count>`.
 */
export function shardJobId(runId: string, index: number, count: number): string {
  if (count === 1) return runId;
  return `${runId}#shard-${String(index).padStart(String(count - 1).length, '0')}-of-${count}`;
}

export interface ShardSpec {
  id: string;
  totalUnits: number;
  input: Record<string, unknown>;
}

export interface RunRecord {
  id: string;
  shardCount: number;
  shards: string[];
  input: Record<string, unknown>;
  createdAt: number;
  doneAt?: number;
}

/** A run record as the contract above describes it, checked: a list that is not `shardCount` distinct job ids is an error. */
export function runFromItem(item: Record<string, unknown>): RunRecord {
  const key = String(item[RUN_ATTR.key]);
  const id = key.startsWith('run#') ? key.slice('run#'.length) : key;
  const count = item[RUN_ATTR.shardCount];
  const shards = item[RUN_ATTR.shards];
  if (!isRunItem(item)) throw new InvalidRunItemError(id, RUN_ATTR.kind, `must be "${RUN_KIND}"`);
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1 || count > MAX_SHARDS) throw new InvalidRunItemError(id, RUN_ATTR.shardCount, `must be an integer in [1, ${MAX_SHARDS}], got ${describeValue(count)}`);
  if (!Array.isArray(shards) || shards.length !== count || shards.some((s) => typeof s !== 'string')) throw new InvalidRunItemError(id, RUN_ATTR.shards, `must list ${count} job ids`);
  if (new Set(shards).size !== shards.length) throw new InvalidRunItemError(id, RUN_ATTR.shards, 'lists a shard more than once');
  const input = item[RUN_ATTR.input] ?? {};
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new InvalidRunItemError(id, RUN_ATTR.input, 'must be a map');
  const run: RunRecord = { id, shardCount: count, shards: shards as string[], input: input as Record<string, unknown>, createdAt: Number(item[RUN_ATTR.createdAt] ?? 0) };
  if (typeof item[RUN_ATTR.doneAt] === 'number') run.doneAt = item[RUN_ATTR.doneAt] as number;
  return run;
}

/**
 * Creates the run record and its shard jobs, each only if it does not exist: the starter can run
 * twice, overlap itself or crash half way, and a later call completes what an earlier one began.
 * A run is defined by its STORED record: the missing shards are built from the stored input and
 * the stored shard count (`shardsOf` gets both), never from this call's. A later call with another
 * count (the setting was changed) builds the stored run's shards; a later call with another input
 * (another item count, a manual retry with other flags) is refused with RunInputMismatchError
 * before it writes anything: shards built from it would leave a gap or an overlap beside the
 * shards the first call made, and shard ids do not encode ranges, so nothing else would notice.
 */
export async function createRun(
  doc: DynamoDBDocumentClient,
  table: string,
  spec: { id: string; shardCount: number; input: Record<string, unknown>; shardsOf: (input: Record<string, unknown>, count: number) => ShardSpec[] },
  clock: Clock,
): Promise<{ run: RunRecord; created: boolean; shards: { job: Job; created: boolean }[] }> {
  assertJobId(spec?.id);
  if (!Number.isSafeInteger(spec.shardCount) || spec.shardCount < 1 || spec.shardCount > MAX_SHARDS) {
    throw new InvalidInputError('shards', `must be an integer in [1, ${MAX_SHARDS}], got ${describeValue(spec.shardCount)}`);
  }
  const wanted = spec.shardsOf(spec.input, spec.shardCount);
  const item = {
    [RUN_ATTR.key]: runKeyOf(spec.id),
    [RUN_ATTR.kind]: RUN_KIND,
    [RUN_ATTR.shardCount]: spec.shardCount,
    [RUN_ATTR.shards]: wanted.map((s) => s.id),
    [RUN_ATTR.input]: spec.input,
    [RUN_ATTR.createdAt]: clock.wallNow(),
  };
  const run = runFromItem(item); // the record this call would write, checked before anything is
  let stored = run;
  let created = true;
  try {
    await doc.send(new PutCommand({ TableName: table, Item: item, ConditionExpression: 'attribute_not_exists(pk)', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }));
  } catch (e) {
    if (!isConditionalCheckFailed(e)) throw e;
    stored = runFromItem(conditionFailureItem(e) ?? item);
    created = false;
  }
  if (!sameValue(stored.input, spec.input)) throw new RunInputMismatchError(stored.id, stored.input, spec.input);
  const shards = created ? wanted : spec.shardsOf(stored.input, stored.shardCount);
  if (shards.some((s, i) => s.id !== stored.shards[i])) throw new InvalidRunItemError(stored.id, RUN_ATTR.shards, 'are not the shards this code builds for the stored count');
  const jobs = await Promise.all(shards.map((s) => createJob(doc, table, s, clock)));
  return { run: stored, created, shards: jobs };
}

/**
 * Equal as DynamoDB stores them: maps compared key by key in any order (a map read back need not
 * keep the order it was written in), lists in order, numbers and strings by value.
 */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** A run as its shards say it is: DONE when every shard is DONE (the query above). */
export interface RunStatus {
  run: RunRecord;
  status: 'DONE' | 'FAILED' | 'RUNNING' | 'INCOMPLETE';
  shards: { id: string; status: JobStatus | 'MISSING'; cursor: number; totalUnits: number }[];
}

export async function readRun(doc: DynamoDBDocumentClient, table: string, runId: string): Promise<RunRecord | undefined> {
  const out = await doc.send(new GetCommand({ TableName: table, Key: { [RUN_ATTR.key]: runKeyOf(runId) }, ConsistentRead: true }));
  return out.Item === undefined ? undefined : runFromItem(out.Item);
}

/** Strongly consistent reads of the listed shards (BatchGetItem, 100 keys a request, unprocessed keys resent). */
async function readShards(doc: DynamoDBDocumentClient, table: string, ids: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
  const found = new Map<string, Record<string, unknown>>();
  for (let i = 0; i < ids.length; i += 100) {
    let keys: Record<string, unknown>[] | undefined = ids.slice(i, i + 100).map((id) => ({ [J.key]: id }));
    for (let attempt = 0; keys !== undefined && keys.length > 0; attempt++) {
      if (attempt > 10) throw new UnprocessedKeysError(table, keys.length, 10);
      const out = await doc.send(
        new BatchGetCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true, ProjectionExpression: '#pk, #s, #c, #t', ExpressionAttributeNames: { '#pk': J.key, '#s': J.status, '#c': J.cursor, '#t': J.totalUnits } } } }),
      );
      for (const it of out.Responses?.[table] ?? []) found.set(String(it[J.key]), it);
      keys = out.UnprocessedKeys?.[table]?.Keys as Record<string, unknown>[] | undefined;
    }
  }
  return found;
}

export async function runStatus(doc: DynamoDBDocumentClient, table: string, run: RunRecord): Promise<RunStatus> {
  const items = await readShards(doc, table, run.shards);
  const shards = run.shards.map((id) => {
    const it = items.get(id);
    return { id, status: (it?.[J.status] ?? 'MISSING') as JobStatus | 'MISSING', cursor: Number(it?.[J.cursor] ?? 0), totalUnits: Number(it?.[J.totalUnits] ?? 0) };
  });
  const status = shards.some((s) => s.status === 'MISSING')
    ? 'INCOMPLETE'
    : shards.some((s) => s.status === 'FAILED')
      ? 'FAILED'
      : shards.every((s) => s.status === 'DONE')
        ? 'DONE'
        : 'RUNNING';
  return { run, status, shards };
}

/**
 * The completion check: reads every shard (runStatus) and, when all are DONE, records `doneAt`
 * once (conditional: of two checks that both saw the run complete, one writes it). `marked` says
 * whether this call wrote it. Called after a shard's DONE commit (and again on every redelivery
 * of a DONE shard's message): the last shard's check sees the run complete.
 */
export async function completeRun(doc: DynamoDBDocumentClient, table: string, runId: string, clock: Clock): Promise<{ status: RunStatus | undefined; marked: boolean }> {
  const run = await readRun(doc, table, runId);
  if (run === undefined) return { status: undefined, marked: false };
  const status = await runStatus(doc, table, run);
  if (status.status !== 'DONE' || run.doneAt !== undefined) return { status, marked: false };
  try {
    await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: { [RUN_ATTR.key]: runKeyOf(runId) },
        ConditionExpression: 'attribute_exists(#pk) AND attribute_not_exists(#d)',
        UpdateExpression: 'SET #d = :now',
        ExpressionAttributeNames: { '#pk': RUN_ATTR.key, '#d': RUN_ATTR.doneAt },
        ExpressionAttributeValues: { ':now': clock.wallNow() },
      }),
    );
    return { status, marked: true };
  } catch (e) {
    if (!isConditionalCheckFailed(e)) throw e;
    return { status, marked: false };
  }
}

/** The run a job id names as one of its shards (shardJobId read backwards); a job of no run names itself. */
export function runIdOfJob(jobId: string): string {
  return /^(.*)#shard-\d+-of-\d+$/.exec(jobId)?.[1] ?? jobId;
}

/**
 * After a job ended DONE (a worker finished it, or a redelivered message found it DONE): the
 * completion check of the run it is a shard of. A job of no run (no record, or a record that
 * does not list it) costs one read and nothing else.
 */
export async function checkRunOfJob(doc: DynamoDBDocumentClient, table: string, jobId: string, clock: Clock, telemetry: Telemetry): Promise<void> {
  const runId = runIdOfJob(jobId);
  const run = await readRun(doc, table, runId);
  if (run === undefined || !run.shards.includes(jobId)) return;
  const { status, marked } = await completeRun(doc, table, runId, clock);
  if (!marked) return;
  telemetry.count(METRIC.runsCompleted);
  telemetry.event('run-done', { runId, shards: run.shardCount, status: status?.status });
}
