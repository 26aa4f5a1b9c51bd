/**
 * The fence, on DynamoDB Local: the article's claims about where the generation is checked.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { commitFencedUnit, raiseFence } from '../lib/fence.js';
import { EffectAlreadyExistsError, StaleGenerationError } from '../lib/errors.js';
import { onceOnly, upsert } from '../lib/idempotency.js';
import { makeGeneration } from '../lib/generation.js';
import { makeTables, type TestTables } from './support/tables.js';
import { getItem, invoiceEffects, putJob, unit } from './support/fixtures.js';

let t: TestTables;
beforeAll(async () => {
  t = await makeTables(import.meta.filename);
});

const g7 = makeGeneration(0, 7);
const g8 = makeGeneration(0, 8);

describe('fenced unit', () => {
  it('after B commits generation 8, A\'s generation 7 unit is rejected and none of its effects exist', async () => {
    const job = 'job-1';
    await putJob(t, job);
    const ctx = { doc: t.dynamo.doc };
    await raiseFence(ctx, { table: t.names.fences, resource: `invoices#${job}` }, g8);
    await commitFencedUnit(ctx, unit(t, job, g8, 0, invoiceEffects(t, '2026-11', ['c1', 'c2'], g8, 0, 800)));

    const stale = unit(t, job, g7, 1, invoiceEffects(t, '2026-11', ['c1', 'c3'], g7, 1, 700));
    const error = await commitFencedUnit(ctx, stale).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleGenerationError);
    expect((error as StaleGenerationError).current).toBe(g8);
    expect((error as StaleGenerationError).attempted).toBe(g7);

    expect((await getItem(t, t.names.invoices, 'invoice#2026-11#c1'))?.amountCents).toBe(800);
    expect(await getItem(t, t.names.invoices, 'invoice#2026-11#c3')).toBeUndefined();
    expect(await getItem(t, t.names.invoices, 'charge#2026-11#c3')).toBeUndefined();
    expect((await getItem(t, t.names.jobs, job))?.cursor).toBe(1);
  });
});
