/**
 * A period's invoice run as K shard jobs (lib/workflow/runs.ts): shard i bills the customers
 * [floor(i*N/K), floor((i+1)*N/K)) of the period's N, so the K ranges tile [0, N) with no gap and
 * no overlap, and sizes differ by at most one customer. Each shard is a job of the invoice
 * processor with its range in its input; the run record keeps the period's whole input.
 */
import { describeValue, InvalidInputError, type Clock } from '../protocol/index.js';
import { createRun, MAX_SHARDS, readJob, shardJobId, type ShardSpec } from '../workflow/index.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { invoiceJobId, invoiceProcessor, parseInvoiceInput, type InvoiceRunInput } from './invoices.js';

/** The run id of a period: the job id of its one-shard run (invoiceJobId), so a run of one shard is the job a period always had. */
export const invoiceRunId = invoiceJobId;

/** Shard i of k over n customers: [from, to). */
export function shardRange(n: number, i: number, k: number): { from: number; to: number } {
  return { from: Math.floor((i * n) / k), to: Math.floor(((i + 1) * n) / k) };
}

/** A shard count the period can take: 1..MAX_SHARDS, and no more shards than customers (an empty shard bills nobody). */
export function assertShardCount(shards: number, customers: number): void {
  const max = Math.min(MAX_SHARDS, Math.max(1, customers));
  if (!Number.isSafeInteger(shards) || shards < 1 || shards > max) {
    throw new InvalidInputError('shards', `must be an integer in [1, ${max}] for ${customers} customers (at most ${MAX_SHARDS}, at most one per customer), got ${describeValue(shards)}`);
  }
}

/** The K shard jobs of a period's run. */
export function invoiceShards(input: InvoiceRunInput, k: number): ShardSpec[] {
  const runId = invoiceRunId(input.period);
  return Array.from({ length: k }, (_, i) => {
    const shard: InvoiceRunInput = { ...input, ...shardRange(input.customers, i, k) };
    return { id: shardJobId(runId, i, k), totalUnits: invoiceProcessor.totalUnits(shard), input: { ...shard } };
  });
}

/**
 * Creates (idempotently) the period's run record and its shards. A period whose job was created
 * before runs existed (an unsharded job under the run's id, no run record) is adopted as a run of
 * one shard whatever `shards` says: shards beside it would bill its customers a second time.
 * A period whose run exists with another input (another customer count: a manual start, then the
 * schedule's default) is refused (RunInputMismatchError): its missing shards come from the stored
 * input only.
 */
export async function startInvoiceRun(doc: DynamoDBDocumentClient, jobsTable: string, input: InvoiceRunInput, shards: number, clock: Clock) {
  assertShardCount(shards, input.customers);
  const runId = invoiceRunId(input.period);
  const legacy = shards > 1 ? await readJob(doc, jobsTable, runId) : undefined;
  const count = legacy === undefined ? shards : 1;
  return createRun(doc, jobsTable, { id: runId, shardCount: count, input: { ...input }, shardsOf: (stored, k) => invoiceShards(parseInvoiceInput(stored), k) }, clock);
}
