/** Small builders shared by protocol tests: a lease manager, a job row, a unit of invoice effects. */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { scanAll as scanTable } from '../../lib/scan.js';
import type { Clock } from '../../lib/clock.js';
import type { Generation } from '../../lib/generation.js';
import { onceOnly, upsert, type Effect } from '../../lib/idempotency.js';
import { LeaseManager, type LeaseMode } from '../../lib/lease.js';
import type { FencedUnit } from '../../lib/fence.js';
import type { TestTables } from './tables.js';

export function manager(
  t: TestTables,
  owner: string,
  opts: { durationMs?: number; epoch?: number; mode?: LeaseMode; clock?: Clock; marginMs?: number; maxDrift?: number } = {},
): LeaseManager {
  return new LeaseManager({
    doc: t.dynamo.doc,
    table: t.names.leases,
    owner,
    epoch: opts.epoch ?? 0,
    durationMs: opts.durationMs ?? 10_000,
    mode: opts.mode ?? { kind: 'wall-clock', maxClockSkewMs: 0 },
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.marginMs !== undefined ? { marginMs: opts.marginMs } : {}),
    ...(opts.maxDrift !== undefined ? { maxDrift: opts.maxDrift } : {}),
  });
}

export async function putJob(t: TestTables, jobId: string, cursor = 0): Promise<void> {
  await t.dynamo.doc.send(new PutCommand({ TableName: t.names.jobs, Item: { pk: jobId, status: 'RUNNING', cursor, totalUnits: 100, heartbeatAt: 0, requeues: 0 } }));
}

export function invoiceEffects(t: TestTables, period: string, customers: string[], generation: Generation, unit: number, amount = 100): Effect[] {
  return customers.flatMap((c) => [
    upsert(t.names.invoices, { pk: `invoice#${period}#${c}`, customerId: c, amountCents: amount, currency: 'EUR', generation, unit }),
    onceOnly(t.names.invoices, { pk: `charge#${period}#${c}`, customerId: c, amountCents: amount, currency: 'EUR', generation, unit }),
  ]);
}

export function unit(
  t: TestTables,
  jobId: string,
  generation: Generation,
  cursor: number,
  effects: Effect[],
): FencedUnit {
  return {
    fence: { table: t.names.fences, resource: `invoices#${jobId}` },
    generation,
    checkpoint: { table: t.names.jobs, key: jobId, expected: cursor, next: cursor + 1, set: { heartbeatAt: Date.now() } },
    effects,
    token: { job: jobId, unit: cursor },
  };
}

export async function getItem(t: TestTables, table: string, pk: string): Promise<Record<string, unknown> | undefined> {
  return (await t.dynamo.doc.send(new GetCommand({ TableName: table, Key: { pk }, ConsistentRead: true }))).Item;
}

export async function scanAll(t: TestTables, table: string): Promise<Record<string, unknown>[]> {
  return scanTable(t.dynamo.doc, table);
}
