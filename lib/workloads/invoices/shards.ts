/**
 * A period's invoice run as K shard jobs, through the generic run start (lib/workflow
 * start-run.ts): shard i bills the customers shardRange(N, i, K) of the period's N. The run id of
 * a period is the job id of its one-shard run (invoiceJobId).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../../protocol/index.js';
import { shardsOfRun, startRun, type ShardSpec } from '../../workflow/index.js';
import { invoices } from './index.js';
import { invoiceJobId, type InvoiceRunInput } from './invoices.js';

export { assertShardCount, shardRange } from '../../workflow/index.js';
export const invoiceRunId = invoiceJobId;

/** The K shard jobs of a period's run. */
export const invoiceShards = (input: InvoiceRunInput, k: number): ShardSpec[] => shardsOfRun(invoices, invoiceRunId(input.period), input, k);

export const startInvoiceRun = (doc: DynamoDBDocumentClient, jobsTable: string, input: InvoiceRunInput, shards: number, clock: Clock) => startRun(doc, jobsTable, invoices, { runId: invoiceRunId(input.period), input }, shards, clock);
