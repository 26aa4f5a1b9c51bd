// tier: quick
/**
 * Bad input is refused before anything is sent: a specific InvalidInputError naming the
 * field, zero DynamoDB requests, and nothing in any table afterwards.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  commitFencedUnit,
  createDynamo,
  InvalidInputError,
  makeGeneration,
  MAX_EPOCH,
  onceOnly,
  parseGeneration,
  putOnce,
  raiseEpoch,
  raiseFence,
  seal,
  upsert,
  type Dynamo,
  type Effect,
  type FencedUnit,
  type Generation,
} from '../lib/protocol/index.js';
import { TABLE_ROLES } from '../lib/workflow/index.js';
import { makeTables, type TestTables } from './support/tables.js';
import { getItem, manager, putJob } from './support/fixtures.js';
import { countRequests, type RequestCounter } from './support/request-counter.js';

const g8 = makeGeneration(0, 8);
const KB = 1024;

/** Expects `run` to throw an InvalidInputError for `field` (synchronously or not). */
async function rejectsField(run: () => unknown, field: string): Promise<InvalidInputError> {
  let error: unknown;
  try {
    await run();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(InvalidInputError);
  expect((error as InvalidInputError).field).toBe(field);
  return error as InvalidInputError;
}

describe('bad input: a specific InvalidInputError and nothing written', () => {
  let t: TestTables;
  let observer: Dynamo;
  let requests: RequestCounter;
  beforeAll(async () => {
    t = await makeTables(import.meta.filename);
    requests = countRequests(t.dynamo.client);
    observer = createDynamo({ endpoint: t.endpoint });
  });
  beforeEach(() => requests.reset());
  afterAll(() => {
    observer?.client.destroy();
    t?.dynamo.client.destroy();
  });

  /** Nothing was sent through the library's client, and every table is still empty. */
  async function expectNothingWritten(): Promise<void> {
    expect(Object.fromEntries(requests.counts)).toEqual({});
    for (const role of TABLE_ROLES) {
      const out = await observer.doc.send(new ScanCommand({ TableName: t.names[role], ConsistentRead: true }));
      expect(out.Items, `${role} table`).toEqual([]);
    }
  }

  const job = 'job-bad';
  const goodUnit = (effects: Effect[], over: Partial<FencedUnit> = {}): FencedUnit => ({
    fence: { table: t.names.fences, resource: `invoices#${job}` },
    generation: g8,
    checkpoint: { table: t.names.jobs, key: job, expected: 0, next: 1 },
    effects,
    token: { job, unit: 0 },
    ...over,
  });
  const inv = (customer: string, extra: Record<string, unknown> = {}) =>
    upsert(t.names.records, { pk: `invoice#p#${customer}`, customerId: customer, amountCents: 100, generation: g8, ...extra });
  const commit = (u: FencedUnit) => () => commitFencedUnit({ doc: t.dynamo.doc }, u);

  it('an empty lease key', async () => {
    const m = manager(t, 'worker');
    await rejectsField(() => m.tryAcquire(''), 'key');
    await rejectsField(() => m.acquire(''), 'key');
    await expectNothingWritten();
  });

  it('a non-positive lease duration', async () => {
    await rejectsField(() => manager(t, 'worker', { durationMs: 0 }), 'durationMs');
    await rejectsField(() => manager(t, 'worker', { durationMs: -5_000 }), 'durationMs');
    await rejectsField(() => manager(t, 'worker', { durationMs: Number.NaN }), 'durationMs');
    await expectNothingWritten();
  });

  it('a margin that leaves no usable time', async () => {
    // 10 s * (1 - 0.01) - 9.9 s = 0: no time to work.
    await rejectsField(() => manager(t, 'worker', { durationMs: 10_000, maxDrift: 0.01, marginMs: 9_900 }), 'marginMs');
    await rejectsField(() => manager(t, 'worker', { durationMs: 10_000, maxDrift: 0, marginMs: 20_000 }), 'marginMs');
    await rejectsField(() => manager(t, 'worker', { durationMs: 10_000, marginMs: -1 }), 'marginMs');
    await rejectsField(() => manager(t, 'worker', { durationMs: 10_000, maxDrift: 1 }), 'maxDrift');
    await expectNothingWritten();
  });

  it('more than 100 actions: 99 effects + fence + checkpoint', async () => {
    const effects = Array.from({ length: 99 }, (_, i) => inv(`c${i}`));
    const e = await rejectsField(commit(goodUnit(effects)), 'effects');
    expect(e.message).toContain('101');
    await expectNothingWritten();
  });

  it('two actions on one item: the same effect key twice, an effect on the checkpoint item, an effect on the fence item', async () => {
    await rejectsField(commit(goodUnit([inv('c1'), onceOnly(t.names.records, { pk: 'invoice#p#c1' })])), 'effects[1]');
    await rejectsField(commit(goodUnit([upsert(t.names.jobs, { pk: job, cursor: 5 })])), 'effects[0]');
    await rejectsField(commit(goodUnit([inv('c1'), upsert(t.names.fences, { pk: `invoices#${job}`, generation: 99 })])), 'effects[1]');
    // The same key in another table is another item: that is fine (validated, not sent here).
    await expectNothingWritten();
  });

  it('an oversize unit: more than 4 MB in total, or one item over 400 KB', async () => {
    const big = (i: number) => inv(`c${i}`, { blob: 'x'.repeat(390 * KB) });
    await rejectsField(commit(goodUnit(Array.from({ length: 11 }, (_, i) => big(i)))), 'effects');
    await rejectsField(commit(goodUnit([inv('c0'), inv('c1', { blob: 'x'.repeat(401 * KB) })])), 'effects[1].item');
    // Sizes count every attribute type, sets included.
    const set = new Set(Array.from({ length: 50 }, (_, i) => `${i}-${'y'.repeat(10 * KB)}`));
    await rejectsField(commit(goodUnit([inv('c0', { tags: set })])), 'effects[0].item');
    await expectNothingWritten();
  });

  it('a checkpoint that does not advance (next <= expected)', async () => {
    await rejectsField(commit(goodUnit([inv('c1')], { checkpoint: { table: t.names.jobs, key: job, expected: 3, next: 3 } })), 'checkpoint.next');
    await rejectsField(commit(goodUnit([inv('c1')], { checkpoint: { table: t.names.jobs, key: job, expected: 3, next: 2 } })), 'checkpoint.next');
    await rejectsField(commit(goodUnit([inv('c1')], { checkpoint: { table: t.names.jobs, key: job, expected: -1, next: 0 } })), 'checkpoint.expected');
    await rejectsField(commit(goodUnit([inv('c1')], { checkpoint: { table: t.names.jobs, key: job, expected: 0, next: 1, set: { cursor: 7 } } })), 'checkpoint.set.cursor');
    await expectNothingWritten();
  });

  it('a malformed effect: missing or empty pk, unknown kind, no table', async () => {
    const noPk = { kind: 'upsert', table: t.names.records, item: { amountCents: 1 } } as unknown as Effect;
    await rejectsField(commit(goodUnit([inv('c1'), noPk])), 'effects[1].item.pk');
    await rejectsField(commit(goodUnit([upsert(t.names.records, { pk: '' })])), 'effects[0].item.pk');
    const unknownKind = { kind: 'delete', table: t.names.records, item: { pk: 'invoice#p#c1' } } as unknown as Effect;
    await rejectsField(commit(goodUnit([unknownKind])), 'effects[0].kind');
    await rejectsField(commit(goodUnit([null as unknown as Effect])), 'effects[0].kind');
    await rejectsField(commit(goodUnit([upsert('', { pk: 'invoice#p#c1' })])), 'effects[0].table');
    await rejectsField(() => putOnce(t.dynamo.doc, t.names.records, { amountCents: 1 } as never), 'effect.item.pk');
    await expectNothingWritten();
  });

  it('a bad generation or fence reference in a unit or a fence raise', async () => {
    await rejectsField(commit(goodUnit([inv('c1')], { generation: -1 as Generation })), 'generation');
    await rejectsField(commit(goodUnit([inv('c1')], { generation: 1.5 as Generation })), 'generation');
    await rejectsField(commit(goodUnit([inv('c1')], { fence: { table: t.names.fences, resource: '' } })), 'fence.resource');
    await rejectsField(() => raiseFence({ doc: t.dynamo.doc }, { table: t.names.fences, resource: '' }, g8), 'fence.resource');
    await expectNothingWritten();
  });

  it('a bad epoch: negative, above MAX_EPOCH, not an integer', async () => {
    for (const epoch of [-1, MAX_EPOCH + 1, 1.5, Number.NaN]) {
      await rejectsField(() => raiseEpoch(t.dynamo.doc, t.names.leases, epoch), 'epoch');
      await rejectsField(() => seal(t.dynamo.doc, t.names, epoch, { fencesOf: () => [] }), 'epoch');
      await rejectsField(() => manager(t, 'worker', { epoch }), 'epoch');
      await rejectsField(() => makeGeneration(epoch, 1), 'epoch');
    }
    await expectNothingWritten();
  });

  it('bad generation strings for parseGeneration', async () => {
    for (const text of ['', '3', '3:', ':17', '-1:2', '3:-1', '3:17:1', 'a:b', '3.5:1', '3:1e3', '0x3:1', '3 : 17', '３:17']) {
      await rejectsField(() => parseGeneration(text), 'generation');
    }
    for (const notText of [undefined, null, 317, {}]) {
      await rejectsField(() => parseGeneration(notText as unknown as string), 'generation');
    }
    await rejectsField(() => parseGeneration('3:4294967296'), 'sequence');
    await rejectsField(() => parseGeneration(`${MAX_EPOCH + 1}:0`), 'epoch');
    await rejectsField(() => parseGeneration('99999999999999999999:0'), 'epoch');
  });
});

describe('the limits are DynamoDB\'s, not stricter', () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await makeTables(import.meta.filename);
  });
  afterAll(() => {
    t?.dynamo.client.destroy();
  });

  it('a unit of exactly 100 actions (98 effects), an item just under 400 KB, a 300 KB binary, a unit just under 4 MB all commit', async () => {
    const job = 'job-limits';
    await putJob(t, job);
    const effects = Array.from({ length: 98 }, (_, i) =>
      upsert(t.names.records, { pk: `invoice#limits#c${i}`, amountCents: i, generation: g8 }),
    );
    const ctx = { doc: t.dynamo.doc };
    const u = (cursor: number, fx: Effect[]): FencedUnit => ({
      fence: { table: t.names.fences, resource: `invoices#${job}` },
      generation: g8,
      checkpoint: { table: t.names.jobs, key: job, expected: cursor, next: cursor + 1 },
      effects: fx,
      token: { job, unit: cursor },
    });
    expect(await commitFencedUnit(ctx, u(0, effects))).toMatchObject({ status: 'committed' });
    expect(await getItem(t, t.names.records, 'invoice#limits#c97')).toMatchObject({ amountCents: 97 });

    const large = upsert(t.names.records, { pk: 'invoice#limits#large', blob: 'x'.repeat(390 * KB) });
    expect(await commitFencedUnit(ctx, u(1, [large]))).toMatchObject({ status: 'committed' });
    expect(((await getItem(t, t.names.records, 'invoice#limits#large'))?.blob as string).length).toBe(390 * KB);

    // Binary counts by its bytes (its JSON form would be several times larger).
    const binary = upsert(t.names.records, { pk: 'invoice#limits#binary', pdf: new Uint8Array(300 * KB).fill(7) });
    expect(await commitFencedUnit(ctx, u(2, [binary]))).toMatchObject({ status: 'committed' });
    expect(((await getItem(t, t.names.records, 'invoice#limits#binary'))?.pdf as Uint8Array).byteLength).toBe(300 * KB);

    // Just under 4 MB in one transaction.
    const nearly4MB = Array.from({ length: 10 }, (_, i) => upsert(t.names.records, { pk: `invoice#limits#big${i}`, blob: 'x'.repeat(395 * KB) }));
    expect(await commitFencedUnit(ctx, u(3, nearly4MB))).toMatchObject({ status: 'committed' });
  });
});
