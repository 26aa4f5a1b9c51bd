/**
 * The benchmark workload: units of exactly 25 effects shaped like the invoice run's items
 * (lib/workloads/invoices/invoices.ts): 13 customers per unit, each with an UPSERTED invoice, and 12 of them with a
 * ONCE-ONLY charge. The fenced side commits them through the real worker (lib/workflow/run-job.ts); the
 * unsafe side writes the very same items with BatchWriteItem and nothing else.
 */
import { BatchWriteItemCommand, TransactWriteItemsCommand, type AttributeValue, type DynamoDBClient, type TransactWriteItem, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { createJob, fenceKeyOf, type Processor, type TableNames, type UnitContext } from '../lib/workflow/index.js';
import {
  asGeneration,
  onceOnly,
  systemClock,
  upsert,
  type Effect,
  type FencedUnit,
  type FenceRef,
  type Generation,
} from '../lib/protocol/index.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { BenchError } from './errors.js';

export const EFFECTS_PER_UNIT = 25;
const CUSTOMERS_PER_UNIT = 13;

export interface BenchInput {
  /** Makes every key of a run unique: once-only effects must be new to succeed. */
  tag: string;
  units: number;
}

export function unitEffects(input: BenchInput, ctx: UnitContext): Effect[] {
  const effects: Effect[] = [];
  for (let i = 0; i < CUSTOMERS_PER_UNIT; i++) {
    const customer = `cust-${String(ctx.unit * CUSTOMERS_PER_UNIT + i).padStart(7, '0')}`;
    const common = {
      jobId: ctx.jobId,
      customerId: customer,
      amountCents: 500 + ((ctx.unit * 7919 + i * 104729) % 50_000),
      currency: 'EUR',
      generation: ctx.generation,
      unit: ctx.unit,
      updatedAt: ctx.now,
    };
    effects.push(upsert(ctx.tables.records, { pk: `invoice#${input.tag}#${customer}`, ...common }));
    if (effects.length < EFFECTS_PER_UNIT) effects.push(onceOnly(ctx.tables.records, { pk: `charge#${input.tag}#${customer}`, ...common }));
  }
  return effects;
}

export const benchProcessor: Processor<BenchInput> = {
  name: 'bench',
  parseInput: (raw) => raw as BenchInput,
  totalUnits: (input) => input.units,
  unitEffects,
};

export async function createBenchJob(doc: DynamoDBDocumentClient, tables: TableNames, jobId: string, input: BenchInput): Promise<void> {
  await createJob(doc, tables.jobs, { id: jobId, totalUnits: input.units, input: { ...input } }, systemClock);
}

/** A bench job's fence: lib's own key for the job (fenceKeyOf), in the fences table. */
export const benchFence = (tables: TableNames, jobId: string): FenceRef => ({ table: tables.fences, resource: fenceKeyOf(jobId) });

/**
 * One mid-job fenced unit of a bench job, shaped as the worker commits one (lib/workflow/run-job.ts): the
 * job's fence, the checkpoint advancing the cursor from `unit` to `unit + 1` with the heartbeat,
 * the unit's 25 effects and the (job, unit) token.
 */
export function fencedBenchUnit(tables: TableNames, input: BenchInput, jobId: string, generation: Generation, unit: number, now: number): FencedUnit {
  return {
    fence: benchFence(tables, jobId),
    generation,
    checkpoint: { table: tables.jobs, key: jobId, expected: unit, next: unit + 1, set: { heartbeatAt: now, status: 'RUNNING' } },
    effects: unitEffects(input, { jobId, generation, unit, tables, now }),
    token: { job: jobId, unit },
  };
}

/**
 * The unsafe baseline's request: the same effects, one BatchWriteItem per unit, no lease, no
 * fence, no checkpoint, no once-only condition (BatchWriteItem has none). Low-level client,
 * pre-marshalled items: the fastest way to write these effects with the SDK, so the baseline is
 * not a straw man.
 */
export function unsafeBatch(tables: TableNames, input: BenchInput, jobId: string, unit: number, now: number): Record<string, WriteRequest[]> {
  const effects = unitEffects(input, { jobId, generation: asGeneration(0), unit, tables, now });
  return { [tables.records]: effects.map((e) => ({ PutRequest: { Item: marshall(e.item) as Record<string, AttributeValue> } })) };
}

/**
 * Writes one unit the unsafe way (unsafeBatch). Building and marshalling the items is inside the
 * measured time, as it is on the fenced side.
 */
export async function writeUnsafeUnit(client: DynamoDBClient, tables: TableNames, input: BenchInput, jobId: string, unit: number): Promise<void> {
  let pending = unsafeBatch(tables, input, jobId, unit, Date.now());
  // DynamoDB may hand back unprocessed items; correct unsafe code resends them.
  for (let attempt = 0; Object.keys(pending).length > 0; attempt++) {
    const out = await client.send(new BatchWriteItemCommand({ RequestItems: pending }));
    pending = out.UnprocessedItems ?? {};
    if (attempt > 10) throw new BenchError('BatchWriteItem left items unprocessed 10 times');
  }
}

/**
 * The cheapest atomic write of the same effects: one TransactWriteItems of the unit's 25 Puts and
 * nothing else (no fence, no checkpoint, no once-only condition, no token), pre-marshalled on the
 * low-level client. What the fence and the checkpoint cost is the fenced unit beside this.
 */
export function bareTransaction(tables: TableNames, input: BenchInput, jobId: string, unit: number, now: number): TransactWriteItem[] {
  const effects = unitEffects(input, { jobId, generation: asGeneration(0), unit, tables, now });
  return effects.map((e) => ({ Put: { TableName: e.table, Item: marshall(e.item) as Record<string, AttributeValue> } }));
}

/** Writes one unit as a bare transaction (bareTransaction); building and marshalling inside the measured time, as on the fenced side. */
export async function writeBareUnit(client: DynamoDBClient, tables: TableNames, input: BenchInput, jobId: string, unit: number): Promise<void> {
  await client.send(new TransactWriteItemsCommand({ TransactItems: bareTransaction(tables, input, jobId, unit, Date.now()) }));
}
