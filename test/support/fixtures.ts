/**
 * Small builders shared by protocol tests: a lease manager and its grants, a job row, a fence
 * reference, a unit of invoice effects, a poll.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  LeaseManager,
  onceOnly,
  scanAll as scanTable,
  upsert,
  type Contended,
  type Effect,
  type FencedUnit,
  type FenceRef,
  type Generation,
  type Lease,
  type LeaseConfig,
  type Result,
} from '../../lib/protocol/index.js';
import type { TestTables } from './tables.js';

/** A lease manager on the Leases table: epoch 0, wall-clock mode without skew, 10 s unless `opts` says otherwise. */
export function manager(t: TestTables, owner: string, opts: Partial<Omit<LeaseConfig, 'owner'>> = {}): LeaseManager {
  return new LeaseManager({
    doc: t.dynamo.doc,
    table: t.names.leases,
    owner,
    epoch: 0,
    durationMs: 10_000,
    mode: { kind: 'wall-clock', maxClockSkewMs: 0 },
    ...opts,
  });
}

/** The grant in a tryAcquire result; throws, naming the holder, if the lease was held. */
export function granted(r: Result<Lease, Contended>): Lease {
  if (!r.ok) throw new Error(`expected a grant, but held by ${JSON.stringify(r.error.holder)}`);
  return r.value;
}

/** tryAcquire that must grant; throws, naming the holder, if the lease was held. */
export async function acquire(m: LeaseManager, key: string): Promise<Lease> {
  const r = await m.tryAcquire(key);
  if (!r.ok) throw new Error(`${m.owner} could not acquire ${key}: held by ${JSON.stringify(r.error.holder)}`);
  return r.value;
}

/** Polls (real time, 2 ms) until a background task has parked itself on a ManualClock or finished. */
export async function until(cond: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

export async function putJob(t: TestTables, jobId: string): Promise<void> {
  await t.dynamo.doc.send(new PutCommand({ TableName: t.names.jobs, Item: { pk: jobId, status: 'RUNNING', cursor: 0, totalUnits: 100, heartbeatAt: 0, requeues: 0 } }));
}

/** The fence protecting a job's invoices. */
export function fenceOf(t: TestTables, jobId: string): FenceRef {
  return { table: t.names.fences, resource: `invoices#${jobId}` };
}

export function invoiceEffects(t: TestTables, period: string, customers: string[], generation: Generation, unit: number, amount = 100): Effect[] {
  return customers.flatMap((c) => [
    upsert(t.names.records, { pk: `invoice#${period}#${c}`, customerId: c, amountCents: amount, currency: 'EUR', generation, unit }),
    onceOnly(t.names.records, { pk: `charge#${period}#${c}`, customerId: c, amountCents: amount, currency: 'EUR', generation, unit }),
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
    fence: fenceOf(t, jobId),
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
