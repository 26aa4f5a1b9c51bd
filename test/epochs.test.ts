// tier: quick
/**
 * Epochs after a restore: raising the epoch puts every new token above every old one, and
 * sealing raises every fence and lease counter to the new epoch's floor so old tokens are
 * rejected at once, before any new holder arrives.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commitFencedUnit,
  createDynamo,
  EPOCH_RECORD_KEY,
  EpochBehindError,
  epochFloor,
  epochOf,
  InvalidInputError,
  LeaseLostError,
  makeGeneration,
  ManualClock,
  raiseEpoch,
  raiseFence,
  readEpoch,
  seal,
  StaleGenerationError,
  upsert,
  type Generation,
  type Lease,
} from '../lib/protocol/index.js';
import { fencesOfLease } from '../lib/workflow/index.js';
import { makeTables, perTestTables, type TestTables } from './support/tables.js';
import { countRequests } from './support/request-counter.js';
import { acquire, fenceOf, getItem, manager, putJob, scanAll, unit } from './support/fixtures.js';
import { FENCE_PREFIX } from './support/workflow.js';

const { tables } = perTestTables(import.meta.filename);

/** The workflow's convention with the invoice workload's prefix (fixtures' fenceOf): `job#J` protects `invoices#J`. */
const SEAL = { fencesOf: (leaseKey: string) => fencesOfLease(leaseKey, FENCE_PREFIX) };

describe('raiseEpoch', () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await makeTables(import.meta.filename);
  });
  afterAll(() => {
    t?.dynamo.client.destroy();
  });

  it('records the epoch, is idempotent, and refuses to go backward with a typed error', async () => {
    expect(await readEpoch(t.dynamo.doc, t.names.leases)).toBeUndefined();
    expect(await raiseEpoch(t.dynamo.doc, t.names.leases, 1)).toEqual({ previous: undefined });
    expect(await raiseEpoch(t.dynamo.doc, t.names.leases, 1)).toEqual({ previous: 1 }); // again: no-op
    expect(await raiseEpoch(t.dynamo.doc, t.names.leases, 3)).toEqual({ previous: 1 });

    const error = await raiseEpoch(t.dynamo.doc, t.names.leases, 2).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).field).toBe('epoch');
    expect(await readEpoch(t.dynamo.doc, t.names.leases)).toBe(3);
    expect(await getItem(t, t.names.leases, EPOCH_RECORD_KEY)).toEqual({ pk: EPOCH_RECORD_KEY, epoch: 3 });
  });
});

describe('seal', () => {
  it('after seal(epoch 1), an old epoch-0 token is rejected at once by the fence and the old holder\'s renew fails', async () => {
    const t = await tables();
    const job = 'job-e1';
    await putJob(t, job);
    const clock = new ManualClock();
    const old = manager(t, 'old-worker', { epoch: 0, clock });
    const lease = await acquire(old, `job#${job}`);
    expect(epochOf(lease.generation)).toBe(0);
    const ctx = { doc: t.dynamo.doc, clock };
    await raiseFence(ctx, fenceOf(t, job), lease.generation);
    const inv = (g: Generation, u: number) => upsert(t.names.records, { pk: `invoice#${job}#c1`, amountCents: 100 + u, generation: g, unit: u });
    await commitFencedUnit(ctx, unit(t, job, lease.generation, 0, [inv(lease.generation, 0)]));

    // The restore happened; the operator seals. No new holder has arrived yet.
    await raiseEpoch(t.dynamo.doc, t.names.leases, 1);
    await seal(t.dynamo.doc, t.names, 1, SEAL);

    expect(old.isSafe(lease)).toBe(true); // the old holder's local deadline has not passed
    const error = await commitFencedUnit(ctx, unit(t, job, lease.generation, 1, [inv(lease.generation, 1)])).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleGenerationError);
    expect(error).toMatchObject({ attempted: lease.generation, current: epochFloor(1) });
    expect(await getItem(t, t.names.records, `invoice#${job}#c1`)).toMatchObject({ unit: 0 });
    await expect(raiseFence(ctx, fenceOf(t, job), lease.generation)).rejects.toBeInstanceOf(StaleGenerationError);

    const lost = await old.renew(lease).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect((lost as LeaseLostError).holder?.generation).toBe(epochFloor(1));
  });

  it('every token issued by a LeaseManager configured with epoch 1 is greater than every epoch-0 token', async () => {
    const t = await tables();
    const clock = new ManualClock();
    const old = manager(t, 'old-worker', { epoch: 0, clock, durationMs: 10_000 });
    const oldTokens: number[] = [];
    for (let i = 0; i < 3; i++) {
      const l = await acquire(old, 'job#released');
      oldTokens.push(l.generation);
      await old.release(l);
    }
    const held = await acquire(old, 'job#held'); // still held when the seal runs
    oldTokens.push(held.generation);
    await raiseFence({ doc: t.dynamo.doc }, fenceOf(t, 'held'), held.generation);

    await raiseEpoch(t.dynamo.doc, t.names.leases, 1);
    await seal(t.dynamo.doc, t.names, 1, SEAL);

    // A process still configured with epoch 0 cannot issue from a sealed counter...
    await expect(old.tryAcquire('job#released')).rejects.toBeInstanceOf(EpochBehindError);
    // ...but it can still create a counter the seal never saw: its tokens are epoch 0 too.
    const late = await acquire(old, 'job#created-after-seal');
    oldTokens.push(late.generation);
    await old.release(late);

    await clock.advance(10_001); // past the held lease's expiry
    const renewed = manager(t, 'new-worker', { epoch: 1, clock });
    const newTokens: number[] = [];
    for (const key of ['job#released', 'job#held', 'job#created-after-seal', 'job#brand-new']) {
      const l = await acquire(renewed, key);
      newTokens.push(l.generation);
      await renewed.release(l);
      newTokens.push((await acquire(renewed, key)).generation);
    }
    expect(newTokens.every((g) => epochOf(g as Generation) === 1)).toBe(true);
    expect(Math.min(...newTokens)).toBeGreaterThan(Math.max(...oldTokens));
    expect(Math.min(...newTokens)).toBe(epochFloor(1) + 1);
    // The new holder of the held key passes the sealed fence.
    await expect(raiseFence({ doc: t.dynamo.doc }, fenceOf(t, 'held'), newTokens[3] as Generation)).resolves.toBe(epochFloor(1));
  });

  it('seal is idempotent and restartable: an interrupted run completes on rerun, a further rerun raises nothing, nothing above the floor is lowered', async () => {
    const t = await tables();
    const doc = t.dynamo.doc;
    const ctx = { doc };
    await raiseFence(ctx, fenceOf(t, 'a'), makeGeneration(0, 5));
    await raiseFence(ctx, fenceOf(t, 'b'), makeGeneration(0, 9));
    const newer = makeGeneration(1, 7); // a fence a new-epoch holder already raised
    await raiseFence(ctx, fenceOf(t, 'c'), newer);
    const clock = new ManualClock();
    await acquire(manager(t, 'old', { epoch: 0, clock }), 'job#old');
    const newLease = await acquire(manager(t, 'new', { epoch: 1, clock }), 'job#new');
    await raiseEpoch(doc, t.names.leases, 1);

    // The operator's seal dies after the leases table, before the fences table.
    const crashed = seal(doc, t.names, 1, {
      ...SEAL,
      onProgress: (r) => {
        if (r.table === t.names.leases) throw new Error('seal interrupted');
      },
    });
    await expect(crashed).rejects.toThrow('seal interrupted');
    expect((await getItem(t, t.names.leases, 'job#old'))?.generation).toBe(epochFloor(1));
    expect((await getItem(t, t.names.fences, 'invoices#a'))?.generation).toBe(makeGeneration(0, 5));

    const rerun = await seal(doc, t.names, 1, SEAL);
    expect(rerun).toEqual([
      { table: t.names.leases, scanned: 3, raised: 0 }, // job#old done before the crash; job#new is above; @epoch is skipped
      // invoices#old and invoices#new: created by the crashed run; invoices#a and #b raised now; #c is above
      { table: t.names.fences, scanned: 5, raised: 2, created: 0 },
    ]);
    // A further rerun writes nothing at all: it only scans.
    const counted = createDynamo({ endpoint: t.endpoint });
    const requests = countRequests(counted.client);
    const again = await seal(counted.doc, t.names, 1, SEAL);
    expect(again.map((r) => [r.raised, r.created ?? 0])).toEqual([
      [0, 0],
      [0, 0],
    ]);
    // The epoch record, two scans, and the (conditional, refused) raise of each lease key's fence.
    expect(Object.fromEntries(requests.counts)).toEqual({ GetItem: 1, Scan: 2, UpdateItem: 2 });
    counted.client.destroy();
    // Sealing any other epoch than the recorded one is refused, and writes nothing.
    for (const other of [0, 2]) await expect(seal(doc, t.names, other, SEAL)).rejects.toMatchObject({ field: 'epoch' });

    const fences = Object.fromEntries((await scanAll(t, t.names.fences)).map((i) => [i.pk, i.generation]));
    expect(fences).toEqual({ 'invoices#a': epochFloor(1), 'invoices#b': epochFloor(1), 'invoices#c': newer, 'invoices#old': epochFloor(1), 'invoices#new': epochFloor(1) });
    const leases = Object.fromEntries((await scanAll(t, t.names.leases)).map((i) => [i.pk, i.generation]));
    expect(leases).toEqual({ 'job#old': epochFloor(1), 'job#new': newLease.generation, [EPOCH_RECORD_KEY]: undefined });
    expect(newLease.generation).toBe(epochFloor(1) + 1);
  });

  it('a counter a new holder raises while the seal runs (between its scan and its write) is never moved backward', async () => {
    const t = await tables();
    const clock = new ManualClock();
    const old = manager(t, 'old', { epoch: 0, clock });
    await old.release(await acquire(old, 'job#race'));
    await raiseFence({ doc: t.dynamo.doc }, fenceOf(t, 'race'), makeGeneration(0, 1));

    // The seal scans the leases, sees generation 0:1, and before it writes (the counter, then the
    // fence that key protects), a new-epoch holder acquires the lease (floor + 1) and raises the fence to it.
    const fresh = manager(t, 'new', { epoch: 1, clock });
    let lease: Lease | undefined;
    const sealer = createDynamo({ endpoint: t.endpoint });
    const interleaved = new Set<string>();
    sealer.client.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        const table = (args.input as { TableName?: string }).TableName ?? '';
        if (context.commandName === 'ScanCommand' && !interleaved.has(table)) {
          interleaved.add(table);
          if (table === t.names.leases) {
            lease = await acquire(fresh, 'job#race');
            await raiseFence({ doc: t.dynamo.doc }, fenceOf(t, 'race'), lease.generation);
          }
        }
        return out;
      },
      { step: 'initialize', name: 'interleaveAfterScan' },
    );
    await raiseEpoch(t.dynamo.doc, t.names.leases, 1);
    const reports = await seal(sealer.doc, t.names, 1, SEAL);
    sealer.client.destroy();
    expect(interleaved.size).toBe(2);
    expect(reports.map((r) => [r.raised, r.created ?? 0])).toEqual([
      [0, 0],
      [0, 0],
    ]);

    expect(lease?.generation).toBe(epochFloor(1) + 1);
    expect((await getItem(t, t.names.fences, 'invoices#race'))?.generation).toBe(epochFloor(1) + 1);
    expect((await getItem(t, t.names.leases, 'job#race'))?.generation).toBe(epochFloor(1) + 1);
    // The holder keeps its lease, and the next token is new, not a repeat of floor + 1.
    await fresh.release(await fresh.renew(lease!));
    expect((await acquire(fresh, 'job#race')).generation).toBe(epochFloor(1) + 2);
  });
});
