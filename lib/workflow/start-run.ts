/**
 * Starting a workload's run: its record and its shard jobs (runs.ts), idempotent by the run's id.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../protocol/index.js';
import { readJob } from './jobs.js';
import { createRun } from './runs.js';
import { assertShardCount, shardsOfRun, type RunStart, type Workload } from './workload.js';

/**
 * Creates (idempotently) the run record and its shards. A run whose job was created before runs
 * existed (an unsharded job under the run's id, no run record) is adopted as a run of one shard
 * whatever `shards` says: shards beside it would do its items a second time. A run that exists
 * with another input is refused (RunInputMismatchError): its missing shards come from the stored
 * input only.
 */
export async function startRun<Input>(doc: DynamoDBDocumentClient, jobsTable: string, w: Workload<Input>, start: RunStart<Input>, shards: number, clock: Clock) {
  assertShardCount(shards, w.start.itemsOf(start.input));
  const legacy = shards > 1 ? await readJob(doc, jobsTable, start.runId) : undefined;
  const count = legacy === undefined ? shards : 1;
  const input = { ...(start.input as Record<string, unknown>) };
  return createRun(doc, jobsTable, { id: start.runId, shardCount: count, input, shardsOf: (stored, k) => shardsOfRun(w, start.runId, w.processor.parseInput(stored), k) }, clock);
}
