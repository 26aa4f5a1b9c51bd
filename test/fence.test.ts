// tier: quick
/**
 * The fence, on DynamoDB Local: the article's claims about where the generation is checked.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { marshall } from '@aws-sdk/util-dynamodb';
import {
  CheckpointMovedError,
  commitFencedUnit,
  decodeCancellation,
  EffectAlreadyExistsError,
  FencedError,
  LeaseLostError,
  makeGeneration,
  ManualClock,
  onceOnly,
  raiseFence,
  StaleGenerationError,
  TransactionConflictError,
  TransactionFailedError,
  upsert,
  type Effect,
  type FenceContext,
  type FencedUnit,
  type FenceRef,
  type Generation,
} from '../lib/protocol/index.js';
import { proxiedTables, type TestTables } from './support/tables.js';
import { fenceOf, getItem, invoiceEffects, manager, putJob, unit } from './support/fixtures.js';
import { countRequests } from './support/request-counter.js';
import { checkThenAct, fenceThenSeparateWrite, type Pause } from './support/unsafe.js';

const env = proxiedTables(import.meta.filename);
let t: TestTables;
beforeAll(() => {
  t = env.t;
});

const g7 = makeGeneration(0, 7);
const g8 = makeGeneration(0, 8);

const invoice = (job: string, customer: string, generation: Generation, amountCents: number): Effect =>
  upsert(t.names.records, { pk: `invoice#${job}#${customer}`, jobId: job, customerId: customer, amountCents, currency: 'EUR', generation, unit: 0 });
const fenceGeneration = async (job: string) => (await getItem(t, t.names.fences, `invoices#${job}`))?.generation;

/**
 * Forces an interleaving: the writer calls `pause` at its dangerous point, the test waits for
 * `reached`, runs the other party, then calls `resume()`. No sleeps.
 */
function stopAt(): { pause: Pause; reached: Promise<void>; resume: () => void } {
  let arrive!: () => void;
  let resume!: () => void;
  const reached = new Promise<void>((r) => (arrive = r));
  const released = new Promise<void>((r) => (resume = r));
  return {
    pause: async () => {
      arrive();
      await released;
    },
    reached,
    resume,
  };
}

describe('fenced unit', () => {
  it('after B commits generation 8, A\'s generation 7 unit is rejected and none of its effects exist', async () => {
    const job = 'job-1';
    await putJob(t, job);
    const ctx = { doc: t.dynamo.doc };
    await raiseFence(ctx, fenceOf(t, job), g8);
    await commitFencedUnit(ctx, unit(t, job, g8, 0, invoiceEffects(t, '2026-11', ['c1', 'c2'], g8, 0, 800)));

    const stale = unit(t, job, g7, 1, invoiceEffects(t, '2026-11', ['c1', 'c3'], g7, 1, 700));
    const error = await commitFencedUnit(ctx, stale).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleGenerationError);
    expect((error as StaleGenerationError).current).toBe(g8);
    expect((error as StaleGenerationError).attempted).toBe(g7);

    expect((await getItem(t, t.names.records, 'invoice#2026-11#c1'))?.amountCents).toBe(800);
    expect(await getItem(t, t.names.records, 'invoice#2026-11#c3')).toBeUndefined();
    expect(await getItem(t, t.names.records, 'charge#2026-11#c3')).toBeUndefined();
    expect((await getItem(t, t.names.jobs, job))?.cursor).toBe(1);
  });

  it('equal generations pass: one holder commits several consecutive units with a single generation', async () => {
    const job = 'job-equal';
    await putJob(t, job);
    const ctx = { doc: t.dynamo.doc };
    await raiseFence(ctx, fenceOf(t, job), g8);

    for (let u = 0; u < 3; u++) {
      const outcome = await commitFencedUnit(ctx, unit(t, job, g8, u, invoiceEffects(t, 'eq', [`c${u}`], g8, u, 100 + u)));
      expect(outcome).toEqual({ status: 'committed', attempts: 1 });
    }
    expect(await fenceGeneration(job)).toBe(g8);
    expect(await getItem(t, t.names.jobs, job)).toMatchObject({ cursor: 3, generation: g8 });
    for (let u = 0; u < 3; u++) {
      expect(await getItem(t, t.names.records, `invoice#eq#c${u}`)).toMatchObject({ amountCents: 100 + u, generation: g8, unit: u });
      expect(await getItem(t, t.names.records, `charge#eq#c${u}`)).toMatchObject({ amountCents: 100 + u, generation: g8 });
    }
  });

  it('raiseFence never lowers the fence: a lower generation is refused (carrying the current one), an equal one is confirmed', async () => {
    const job = 'job-raise';
    const ctx = { doc: t.dynamo.doc };
    expect(await raiseFence(ctx, fenceOf(t, job), g7)).toBeUndefined(); // a fresh fence
    expect(await raiseFence(ctx, fenceOf(t, job), g8)).toBe(g7); // returns what it held before
    expect(await raiseFence(ctx, fenceOf(t, job), g8)).toBe(g8); // equal: the same holder again
    const error = await raiseFence(ctx, fenceOf(t, job), g7).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleGenerationError);
    expect(error).toMatchObject({ attempted: g7, current: g8 });
    expect(await fenceGeneration(job)).toBe(g8);
  });

  it('B raises the fence before reading: A, whose lease it still believes valid, then fails to commit and writes nothing', async () => {
    const job = 'job-takeover';
    await putJob(t, job);
    const key = `job#${job}`;

    // A acquires, raises the fence, reads the checkpoint and builds its unit...
    const clockA = new ManualClock();
    const A = manager(t, 'worker-A', { clock: clockA, durationMs: 10_000 });
    const acquiredA = await A.tryAcquire(key);
    if (!acquiredA.ok) throw new Error('A should acquire a free lease');
    const leaseA = acquiredA.value;
    const ctxA: FenceContext = { doc: t.dynamo.doc, clock: clockA };
    await raiseFence(ctxA, fenceOf(t, job), leaseA.generation);
    const cursorA = (await getItem(t, t.names.jobs, job))?.cursor as number;
    const unitA = unit(t, job, leaseA.generation, cursorA, [invoice(job, 'c1', leaseA.generation, 700)]);

    // ...then stops (a GC pause, a frozen VM). A's own clock reading is frozen with it: when it
    // resumes its last safety check still holds. The world's clocks move on past A's expiry.
    const clockB = new ManualClock({ wall: leaseA.expiresAt + 1 });
    const B = manager(t, 'worker-B', { clock: clockB, durationMs: 10_000 });
    const acquiredB = await B.tryAcquire(key);
    if (!acquiredB.ok) throw new Error('B should acquire an expired lease');
    const leaseB = acquiredB.value;
    expect(leaseB.generation).toBeGreaterThan(leaseA.generation);
    const ctxB: FenceContext = { doc: t.dynamo.doc, clock: clockB };
    // B raises the fence FIRST. It has not read anything nor written any invoice yet.
    expect(await raiseFence(ctxB, fenceOf(t, job), leaseB.generation)).toBe(leaseA.generation);

    // A resumes, checks its lease like a careful worker would, and commits.
    expect(A.isSafe(leaseA)).toBe(true);
    const error = await commitFencedUnit(ctxA, unitA).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleGenerationError);
    expect(error).toMatchObject({ attempted: leaseA.generation, current: leaseB.generation });
    expect(await getItem(t, t.names.records, `invoice#${job}#c1`)).toBeUndefined();

    // B now reads the checkpoint: A's unit did not move it. B does the work.
    const cursorB = (await getItem(t, t.names.jobs, job))?.cursor as number;
    expect(cursorB).toBe(0);
    await commitFencedUnit(ctxB, unit(t, job, leaseB.generation, cursorB, [invoice(job, 'c1', leaseB.generation, 800)]));
    expect(await getItem(t, t.names.records, `invoice#${job}#c1`)).toMatchObject({ amountCents: 800, generation: leaseB.generation });
    // The lease layer also learns it, but only at A's next renewal: the fence did the stopping.
    await expect(A.renew(leaseA)).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('a fenced unit is exactly one DynamoDB request (accepted or rejected), and raiseFence is one', async () => {
    const job = 'job-count';
    await putJob(t, job);
    const counted = env.dynamo();
    const requests = countRequests(counted.client);
    const ctx = { doc: counted.doc };

    await raiseFence(ctx, fenceOf(t, job), g8);
    expect(Object.fromEntries(requests.counts)).toEqual({ UpdateItem: 1 });

    requests.reset();
    const effects = invoiceEffects(t, 'count', ['c1', 'c2', 'c3', 'c4', 'c5'], g8, 0, 500);
    expect(effects).toHaveLength(10);
    await commitFencedUnit(ctx, unit(t, job, g8, 0, effects));
    expect(Object.fromEntries(requests.counts)).toEqual({ TransactWriteItems: 1 });

    // A rejection is decoded from the cancellation itself (ALL_OLD), with no extra read.
    requests.reset();
    await expect(commitFencedUnit(ctx, unit(t, job, g7, 1, invoiceEffects(t, 'count', ['c6'], g7, 1)))).rejects.toBeInstanceOf(
      StaleGenerationError,
    );
    expect(Object.fromEntries(requests.counts)).toEqual({ TransactWriteItems: 1 });
  });
});

describe('negative controls: the article\'s dangerous variants really fail, the fenced unit does not', () => {
  // Each scenario: A held generation 7 and raised the fence to it. A reaches its write, stops;
  // B raises the fence to 8 and commits its invoice; then A resumes.
  async function setup(job: string) {
    await putJob(t, job);
    await raiseFence({ doc: t.dynamo.doc }, fenceOf(t, job), g7);
  }
  async function bTakesOver(job: string) {
    const ctx = { doc: t.dynamo.doc };
    await raiseFence(ctx, fenceOf(t, job), g8);
    await commitFencedUnit(ctx, unit(t, job, g8, 0, [invoice(job, 'c1', g8, 800)]));
    expect(await getItem(t, t.names.records, `invoice#${job}#c1`)).toMatchObject({ generation: g8, amountCents: 800 });
  }
  /** The fenced path for A: whatever it read before, it commits its unit. Its checkpoint
   *  expectation is made to hold (the cursor as it is now), so only the fence can stop it. */
  async function aCommitsFenced(job: string) {
    const cursor = (await getItem(t, t.names.jobs, job))?.cursor as number;
    return commitFencedUnit({ doc: t.dynamo.doc }, unit(t, job, g7, cursor, [invoice(job, 'c1', g7, 700)]));
  }

  it('check-then-act (read the generation, compare in code, write unconditionally) lets A overwrite B\'s invoice', async () => {
    const job = 'job-cta-unsafe';
    await setup(job);
    const a = stopAt();
    const running = checkThenAct(t.dynamo.doc, fenceOf(t, job), g7, [invoice(job, 'c1', g7, 700)], a.pause);
    await a.reached; // A read generation 7 and decided it may write

    await bTakesOver(job);
    a.resume();
    await running; // A reports success

    // The bug, for real: a lower generation replaced a higher one, although the fence is at 8.
    expect(await getItem(t, t.names.records, `invoice#${job}#c1`)).toMatchObject({ generation: g7, amountCents: 700 });
    expect(await fenceGeneration(job)).toBe(g8);
  });

  it('the same check-then-act interleaving through the fenced unit rejects A and keeps B\'s invoice', async () => {
    const job = 'job-cta-fenced';
    await setup(job);
    const a = stopAt();
    const running = (async () => {
      await getItem(t, t.names.fences, `invoices#${job}`); // A reads, as before
      await a.pause('checked');
      return aCommitsFenced(job);
    })();
    await a.reached;

    await bTakesOver(job);
    a.resume();
    const error = await running.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleGenerationError);
    expect(error).toMatchObject({ attempted: g7, current: g8 });
    expect(await getItem(t, t.names.records, `invoice#${job}#c1`)).toMatchObject({ generation: g8, amountCents: 800 });
  });

  it('a fence raised in a separate write from the effect lets A through: its fence write succeeds, B takes over, A\'s effect lands', async () => {
    const job = 'job-split-unsafe';
    await setup(job);
    const a = stopAt();
    const running = fenceThenSeparateWrite(t.dynamo.doc, fenceOf(t, job), g7, [invoice(job, 'c1', g7, 700)], a.pause);
    await a.reached; // A's conditional fence write (7 <= 7) succeeded

    await bTakesOver(job);
    a.resume();
    await running;

    expect(await getItem(t, t.names.records, `invoice#${job}#c1`)).toMatchObject({ generation: g7, amountCents: 700 });
    expect(await fenceGeneration(job)).toBe(g8);
  });

  it('the same split interleaving with the fence check in the effect\'s transaction rejects A and keeps B\'s invoice', async () => {
    const job = 'job-split-fenced';
    await setup(job);
    const a = stopAt();
    const running = (async () => {
      await raiseFence({ doc: t.dynamo.doc }, fenceOf(t, job), g7); // A's fence write succeeds, as before
      await a.pause('fenced');
      return aCommitsFenced(job); // the unit checks the fence again, in the same transaction as the effect
    })();
    await a.reached;

    await bTakesOver(job);
    a.resume();
    const error = await running.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleGenerationError);
    expect(error).toMatchObject({ attempted: g7, current: g8 });
    expect(await getItem(t, t.names.records, `invoice#${job}#c1`)).toMatchObject({ generation: g8, amountCents: 800 });
  });
});

describe('ambiguous commit: a retried unit is applied at most once', () => {
  it('a unit whose response was lost, retried with the same token, returns committed (ClientRequestToken) and later duplicates change nothing', async () => {
    const job = 'job-ambiguous';
    await putJob(t, job);
    // No SDK retries: the caller sees the ambiguous failure itself.
    const flaky = env.dynamo({ viaProxy: true, maxAttempts: 1 });
    const clock = new ManualClock();
    const ctx: FenceContext = { doc: flaky.doc, clock };
    await raiseFence(ctx, fenceOf(t, job), g8);

    const unit0 = unit(t, job, g8, 0, invoiceEffects(t, job, ['c1', 'c2'], g8, 0, 800));
    const lost = env.proxy.drop({ target: 'TransactWriteItems' });
    const ambiguous = await commitFencedUnit(ctx, unit0).catch((e: unknown) => e);
    expect(lost.hits).toBe(1);
    expect(ambiguous).toBeInstanceOf(Error);
    expect(ambiguous).not.toBeInstanceOf(FencedError); // the caller cannot know: it was applied
    expect((await getItem(t, t.names.jobs, job))?.cursor).toBe(1);

    // The retry is the same request: same token, same parameters (same unit, same clock reading).
    expect(await commitFencedUnit(ctx, unit0)).toEqual({ status: 'committed', attempts: 1 });
    expect((await getItem(t, t.names.jobs, job))?.cursor).toBe(1);

    // The holder moves on: unit 1 corrects c1's invoice.
    const unit1 = unit(t, job, g8, 1, [upsert(t.names.records, { pk: `invoice#${job}#c1`, customerId: 'c1', amountCents: 900, currency: 'EUR', generation: g8, unit: 1 })]);
    await commitFencedUnit(ctx, unit1);

    // A stray duplicate of unit 0 (a duplicated delivery) now: had it been applied again it
    // would revert the cursor to 1 and c1's invoice to 800.
    expect(await commitFencedUnit(ctx, unit0)).toEqual({ status: 'committed', attempts: 1 });
    const expectUnchanged = async () => {
      expect(await getItem(t, t.names.jobs, job)).toMatchObject({ cursor: 2, generation: g8 });
      expect(await getItem(t, t.names.records, `invoice#${job}#c1`)).toMatchObject({ amountCents: 900, unit: 1 });
      expect(await getItem(t, t.names.records, `charge#${job}#c1`)).toMatchObject({ amountCents: 800, unit: 0 });
      expect(await getItem(t, t.names.records, `charge#${job}#c2`)).toMatchObject({ amountCents: 800, unit: 0 });
    };
    await expectUnchanged();
  });

  it('a retry whose parameters differ under the same token (the clock moved) is recognised from the checkpoint: already-committed', async () => {
    const job = 'job-ambiguous-later';
    await putJob(t, job);
    const clock = new ManualClock();
    const ctx: FenceContext = { doc: t.dynamo.doc, clock };
    await raiseFence(ctx, fenceOf(t, job), g8);
    const unit0 = unit(t, job, g8, 0, invoiceEffects(t, job, ['c1'], g8, 0, 800));
    expect(await commitFencedUnit(ctx, unit0)).toMatchObject({ status: 'committed' });
    await commitFencedUnit(ctx, unit(t, job, g8, 1, [upsert(t.names.records, { pk: `invoice#${job}#c1`, amountCents: 900, generation: g8, unit: 1 })]));

    // Same token, but the fence's `updatedAt` (the clock) differs: DynamoDB would refuse the
    // request as an IdempotentParameterMismatch; the unit must still be seen as done.
    await clock.advance(60_000);
    expect(await commitFencedUnit(ctx, unit0)).toMatchObject({ status: 'already-committed' });
    // A rebuilt unit (fresh heartbeat in its checkpoint) is the same case.
    const rebuilt: FencedUnit = { ...unit0, checkpoint: { ...unit0.checkpoint, set: { heartbeatAt: clock.wallNow() } } };
    expect(await commitFencedUnit(ctx, rebuilt)).toMatchObject({ status: 'already-committed' });

    // Past DynamoDB's 10-minute token window (modelled by another token): the checkpoint decides.
    const afterWindow: FencedUnit = { ...unit0, token: { ...unit0.token, variant: 'after-the-window' } };
    expect(await commitFencedUnit(ctx, afterWindow)).toMatchObject({ status: 'already-committed' });

    expect(await getItem(t, t.names.jobs, job)).toMatchObject({ cursor: 2, generation: g8 });
    expect(await getItem(t, t.names.records, `invoice#${job}#c1`)).toMatchObject({ amountCents: 900, unit: 1 });
    expect(await getItem(t, t.names.records, `charge#${job}#c1`)).toMatchObject({ amountCents: 800, unit: 0 });
  });

  it('a unit whose cursor range another generation already committed gets CheckpointMovedError, not already-committed', async () => {
    const job = 'job-ambiguous-other';
    await putJob(t, job);
    const ctx = { doc: t.dynamo.doc };
    await raiseFence(ctx, fenceOf(t, job), g7);
    await commitFencedUnit(ctx, unit(t, job, g7, 0, [invoice(job, 'c1', g7, 700)]));
    // Same cursor range, same fence generation accepted, but the checkpoint shows generation 7
    // moved it; a generation-8 unit for [0,1) did not commit: it is told the checkpoint moved.
    const error = await commitFencedUnit(ctx, unit(t, job, g8, 0, [invoice(job, 'c1', g8, 800)])).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointMovedError);
    expect(error).toMatchObject({ expected: 0, actual: 1 });
  });
});

describe('retries of a refused unit', () => {
  it('conflicts are retried with backoff, but not past the local deadline: stillSafe false stops the resends, nothing written', async () => {
    const job = 'job-conflict-deadline';
    await putJob(t, job);
    const { doc } = env.dynamo({ viaProxy: true, maxAttempts: 1 });
    const ctx: FenceContext = { doc, backoff: { baseMs: 1, capMs: 1 } };
    await raiseFence(ctx, fenceOf(t, job), g8);
    const refuse = () =>
      env.proxy.error({ target: 'TransactWriteItems', times: Infinity }, 'TransactionCanceledException', {
        CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }],
      });
    let refused = refuse();
    const unit0 = unit(t, job, g8, 0, invoiceEffects(t, job, ['c1'], g8, 0));
    await expect(commitFencedUnit(ctx, unit0)).rejects.toBeInstanceOf(TransactionConflictError);
    expect(refused.hits).toBe(5); // maxConflictAttempts
    refused.remove();
    refused = refuse();
    let asked = 0;
    await expect(commitFencedUnit(ctx, unit0, { stillSafe: () => ++asked < 2 })).rejects.toBeInstanceOf(TransactionConflictError);
    expect(refused.hits).toBe(2); // the second "no" stopped it
    refused.remove();
    expect((await getItem(t, t.names.jobs, job))?.cursor).toBe(0);
  });
});

describe('decodeCancellation (pure: synthetic CancellationReasons)', () => {
  const fence: FenceRef = { table: 'x-fences', resource: 'invoices#j' };
  const pureUnit: FencedUnit = {
    fence,
    generation: g8,
    checkpoint: { table: 'x-jobs', key: 'j', expected: 3, next: 4 },
    effects: [
      upsert('x-invoices', { pk: 'invoice#p#c1' }),
      onceOnly('x-invoices', { pk: 'charge#p#c1' }),
      onceOnly('x-invoices', { pk: 'charge#p#c2' }),
    ],
    token: { job: 'j', unit: 3 },
  };
  const none = { Code: 'None' };
  const failed = (item?: Record<string, unknown>) => ({
    Code: 'ConditionalCheckFailed',
    Message: 'The conditional request failed',
    ...(item ? { Item: marshall(item) } : {}),
  });
  const cause = new Error('TransactionCanceledException');

  it('fence failed: StaleGenerationError carrying the current generation, whatever else failed', () => {
    const r = decodeCancellation(pureUnit, [failed({ pk: fence.resource, generation: makeGeneration(0, 9) }), failed({ pk: 'j', cursor: 9 }), none, failed(), none], cause);
    expect(r).toBeInstanceOf(StaleGenerationError);
    expect(r).toMatchObject({ resource: fence.resource, attempted: g8, current: makeGeneration(0, 9) });
    // Without ALL_OLD the current generation is unknown, but the verdict is the same.
    expect(decodeCancellation(pureUnit, [failed(), none, none, none, none], cause)).toMatchObject({ current: undefined });
  });

  it('checkpoint failed, moved by someone else: CheckpointMovedError carrying the actual cursor', () => {
    const r = decodeCancellation(pureUnit, [none, failed({ pk: 'j', cursor: 5, generation: makeGeneration(0, 9) }), none, none, none], cause);
    expect(r).toBeInstanceOf(CheckpointMovedError);
    expect(r).toMatchObject({ key: 'j', expected: 3, actual: 5 });
    // Our generation but the cursor is not past this unit: moved, not committed by us.
    expect(decodeCancellation(pureUnit, [none, failed({ pk: 'j', cursor: 2, generation: g8 }), none, none, none], cause)).toMatchObject({
      actual: 2,
    });
    // Past this unit but by another generation: moved.
    expect(decodeCancellation(pureUnit, [none, failed({ pk: 'j', cursor: 4, generation: g7 }), none, none, none], cause)).toBeInstanceOf(
      CheckpointMovedError,
    );
    // The job item is missing: moved, actual unknown.
    expect(decodeCancellation(pureUnit, [none, failed(), none, none, none], cause)).toMatchObject({ actual: undefined });
  });

  it('checkpoint at or past next under our own generation: already-committed (even if the once-only effects now exist)', () => {
    expect(decodeCancellation(pureUnit, [none, failed({ pk: 'j', cursor: 4, generation: g8 }), none, failed(), failed()], cause)).toBe(
      'already-committed',
    );
    expect(decodeCancellation(pureUnit, [none, failed({ pk: 'j', cursor: 7, generation: g8 }), none, none, none], cause)).toBe(
      'already-committed',
    );
  });

  it('once-only effects failed: EffectAlreadyExistsError listing every duplicate', () => {
    const r = decodeCancellation(pureUnit, [none, none, none, failed(), failed()], cause);
    expect(r).toBeInstanceOf(EffectAlreadyExistsError);
    expect(r).toMatchObject({
      table: 'x-invoices',
      key: 'charge#p#c1',
      duplicates: [
        { table: 'x-invoices', key: 'charge#p#c1' },
        { table: 'x-invoices', key: 'charge#p#c2' },
      ],
    });
    expect(decodeCancellation(pureUnit, [none, none, none, none, failed()], cause)).toMatchObject({
      key: 'charge#p#c2',
      duplicates: [{ table: 'x-invoices', key: 'charge#p#c2' }],
    });
  });

  it('TransactionConflict: conflict (retryable)', () => {
    expect(decodeCancellation(pureUnit, [none, { Code: 'TransactionConflict' }, none, none, none], cause)).toBe('conflict');
    expect(decodeCancellation(pureUnit, [{ Code: 'TransactionConflict' }, none, none, none, none], cause)).toBe('conflict');
  });

  it('anything else: TransactionFailedError carrying the reasons and the cause', () => {
    const reasons = [none, none, { Code: 'ValidationError', Message: 'Item size has exceeded the maximum allowed size' }, none, none];
    const r = decodeCancellation(pureUnit, reasons, cause);
    expect(r).toBeInstanceOf(TransactionFailedError);
    expect((r as TransactionFailedError).reasons).toEqual(reasons);
    expect((r as TransactionFailedError).cause).toBe(cause);
    expect(decodeCancellation(pureUnit, [], cause)).toBeInstanceOf(TransactionFailedError);
  });

  it('a cancellation for throttling (an on-demand table or GSI under a burst) is retried like a conflict, not a failure', () => {
    for (const Code of ['ThrottlingError', 'ProvisionedThroughputExceeded', 'RequestLimitExceeded']) {
      expect(decodeCancellation(pureUnit, [none, none, { Code }], cause)).toBe('conflict');
    }
  });
});
