// tier: quick
/**
 * Fencing is not duplicate suppression: within one generation the fence accepts every unit
 * (equal generations pass), so a repeated once-only effect is stopped by its operation key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commitFencedUnit,
  createDynamo,
  EffectAlreadyExistsError,
  makeGeneration,
  onceOnly,
  putOnce,
  raiseFence,
  upsert,
} from '../lib/protocol/index.js';
import { makeTables, type TestTables } from './support/tables.js';
import { fenceOf, getItem, putJob, scanAll, unit } from './support/fixtures.js';
import { startFaultProxy } from '../cli/local/fault-proxy.js';

let t: TestTables;
beforeAll(async () => {
  t = await makeTables(import.meta.filename);
});
afterAll(() => {
  t?.dynamo.client.destroy();
});

const g8 = makeGeneration(0, 8);

describe('fencing is not dedupe', () => {
  it('the same once-only charge twice within generation 8 is rejected by its operation key, and nothing of the second unit is written', async () => {
    const job = 'job-dup';
    await putJob(t, job);
    const ctx = { doc: t.dynamo.doc };
    await raiseFence(ctx, fenceOf(t, job), g8);
    const charge = (customer: string, amountCents: number, u: number) =>
      onceOnly(t.names.records, { pk: `charge#2026-11#${customer}`, customerId: customer, amountCents, currency: 'EUR', generation: g8, unit: u });
    const invoice = (customer: string, amountCents: number, u: number) =>
      upsert(t.names.records, { pk: `invoice#2026-11#${customer}`, customerId: customer, amountCents, currency: 'EUR', generation: g8, unit: u });

    await commitFencedUnit(ctx, unit(t, job, g8, 0, [invoice('c1', 800, 0), charge('c1', 800, 0), charge('c2', 500, 0)]));

    // Unit 1, same generation, repeats both charges (a redelivered message, a rebuilt batch).
    const second = unit(t, job, g8, 1, [invoice('c1', 999, 1), charge('c1', 999, 1), invoice('c3', 300, 1), charge('c2', 999, 1), charge('c3', 300, 1)]);
    const error = await commitFencedUnit(ctx, second).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EffectAlreadyExistsError);
    expect(error).toMatchObject({
      table: t.names.records,
      key: 'charge#2026-11#c1',
      duplicates: [
        { table: t.names.records, key: 'charge#2026-11#c1' },
        { table: t.names.records, key: 'charge#2026-11#c2' },
      ],
    });

    // Nothing of unit 1: not its invoice upserts, not its new charge, not its checkpoint advance.
    expect(await getItem(t, t.names.records, 'invoice#2026-11#c1')).toMatchObject({ amountCents: 800, unit: 0 });
    expect(await getItem(t, t.names.records, 'charge#2026-11#c1')).toMatchObject({ amountCents: 800, unit: 0 });
    expect(await getItem(t, t.names.records, 'charge#2026-11#c2')).toMatchObject({ amountCents: 500, unit: 0 });
    expect(await getItem(t, t.names.records, 'invoice#2026-11#c3')).toBeUndefined();
    expect(await getItem(t, t.names.records, 'charge#2026-11#c3')).toBeUndefined();
    expect(await getItem(t, t.names.jobs, job)).toMatchObject({ cursor: 1, generation: g8 });

    // The fence alone would have let it through: it is at 8 and accepts 8 again, and the same
    // unit without the repeated charges commits at generation 8.
    expect((await getItem(t, t.names.fences, `invoices#${job}`))?.generation).toBe(g8);
    expect(await raiseFence(ctx, fenceOf(t, job), g8)).toBe(g8);
    const withoutRepeats = { ...second, effects: second.effects.filter((e) => e.kind !== 'once' || e.item.pk === 'charge#2026-11#c3') };
    expect(await commitFencedUnit(ctx, withoutRepeats)).toMatchObject({ status: 'committed' });
    expect(await getItem(t, t.names.records, 'invoice#2026-11#c1')).toMatchObject({ amountCents: 999, unit: 1 });
    expect(await getItem(t, t.names.records, 'charge#2026-11#c1')).toMatchObject({ amountCents: 800, unit: 0 });
    expect(await getItem(t, t.names.records, 'charge#2026-11#c3')).toMatchObject({ amountCents: 300, unit: 1 });
  });

  it('an upsert repeated within the generation is accepted: only once-only effects carry an operation key', async () => {
    const job = 'job-upsert';
    await putJob(t, job);
    const ctx = { doc: t.dynamo.doc };
    await raiseFence(ctx, fenceOf(t, job), g8);
    const inv = (amountCents: number, u: number) => upsert(t.names.records, { pk: 'invoice#upsert#c1', amountCents, generation: g8, unit: u });
    await commitFencedUnit(ctx, unit(t, job, g8, 0, [inv(100, 0)]));
    await commitFencedUnit(ctx, unit(t, job, g8, 1, [inv(200, 1)]));
    expect(await getItem(t, t.names.records, 'invoice#upsert#c1')).toMatchObject({ amountCents: 200, unit: 1 });
  });

  it('putOnce creates the effect once; the repeat is an EffectAlreadyExistsError carrying the existing record, which is unchanged', async () => {
    const item = { pk: 'charge#putonce#c1', customerId: 'c1', amountCents: 800, generation: g8 };
    const first = await putOnce(t.dynamo.doc, t.names.records, item);
    expect(first.ok).toBe(true);

    const repeat = await putOnce(t.dynamo.doc, t.names.records, { ...item, amountCents: 999 });
    expect(repeat.ok).toBe(false);
    if (repeat.ok) return;
    expect(repeat.error).toBeInstanceOf(EffectAlreadyExistsError);
    expect(repeat.error).toMatchObject({ table: t.names.records, key: 'charge#putonce#c1', duplicates: [{ table: t.names.records, key: 'charge#putonce#c1' }] });
    expect(repeat.error.existing).toEqual(item);
    expect(await getItem(t, t.names.records, 'charge#putonce#c1')).toEqual(item);
    expect((await scanAll(t, t.names.records)).filter((i) => i.pk === 'charge#putonce#c1')).toHaveLength(1);
  });
});

describe('unique creation on its own (putOnce): the key stops a repeat, it orders nothing', () => {
  it('of eight concurrent creators of one key exactly one creates it; the seven others get the winner\'s record back', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => putOnce(t.dynamo.doc, t.names.records, { pk: 'charge#race#c1', amountCents: 100 + i, by: `w${i}` })),
    );
    const winners = results.flatMap((r, i) => (r.ok ? [i] : []));
    expect(winners).toHaveLength(1);
    const stored = await getItem(t, t.names.records, 'charge#race#c1');
    expect(stored).toMatchObject({ by: `w${winners[0]}` });
    for (const r of results) if (!r.ok) expect(r.error.existing).toEqual(stored);
  });

  it('the race it loses: an obsolete holder (7) that creates the record first wins, and the current holder (8) is refused; a stale writer needs the fence', async () => {
    const g7 = makeGeneration(0, 7);
    const stale = await putOnce(t.dynamo.doc, t.names.records, { pk: 'charge#first#c1', amountCents: 700, generation: g7 });
    const current = await putOnce(t.dynamo.doc, t.names.records, { pk: 'charge#first#c1', amountCents: 800, generation: g8 });
    expect(stale.ok).toBe(true);
    expect(current.ok).toBe(false);
    expect(await getItem(t, t.names.records, 'charge#first#c1')).toMatchObject({ amountCents: 700, generation: g7 });
  });

  it('a creation whose response was lost is refused on the SDK\'s resend: only `existing` (equal to what it wrote) tells the caller the record is its own', async () => {
    const proxy = await startFaultProxy(t.endpoint);
    const { doc, client } = createDynamo({ endpoint: proxy.endpoint, maxAttempts: 3 });
    try {
      const item = { pk: 'charge#ambiguous#c1', amountCents: 800, generation: g8, op: 'op-42' };
      const lost = proxy.drop({ target: 'PutItem', when: (q) => q.json?.Item?.pk?.S === item.pk });
      const r = await putOnce(doc, t.names.records, item);
      expect(lost.hits).toBe(1);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.error).toBeInstanceOf(EffectAlreadyExistsError);
      expect(r.error.existing).toEqual(item);
    } finally {
      client.destroy();
      await proxy.close();
    }
  });
});
