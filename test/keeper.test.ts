/**
 * The keeper on DynamoDB Local: background renewal, and the signal that tells protected work to
 * stop. Time is a ManualClock (it only moves when the test says so); network faults come from the
 * fault proxy.
 */
import { describe, expect, it } from 'vitest';
import {
  InvalidInputError,
  leaseDeadline,
  LeaseExpiredError,
  LeaseKeeper,
  LeaseLostError,
  LeaseManager,
  ManualClock,
  skewedClock,
  type Lease,
  type LeaseConfig,
} from '../lib/protocol/index.js';
import { acquire, getItem, until } from './support/fixtures.js';
import { countRequests } from './support/request-counter.js';
import { proxiedTables } from './support/tables.js';

const env = proxiedTables(import.meta.filename);
const dynamo = env.dynamo;

const D = 9_000; // duration; margin 900, drift 1 %: a grant sent at s is usable until s + 8010
const INTERVAL = D / 3;

const mgr = (owner: string, cfg: Partial<Omit<LeaseConfig, 'owner'>> = {}): LeaseManager => env.leases(owner, { durationMs: D, ...cfg });

const lease = (key: string) => getItem(env.t, env.t.names.leases, key);

describe('LeaseKeeper', () => {
  it('renews in the background, moving the deadline forward past the original one; stop() ends renewals', async () => {
    const key = 'job#keeper-renews';
    const clock = new ManualClock();
    const { doc, client } = dynamo();
    const counter = countRequests(client);
    const m = mgr('K', { doc, clock });
    const first = await acquire(m, key);
    const renewed: Lease[] = [];
    const keeper = new LeaseKeeper(m, first, { intervalMs: INTERVAL, onRenewed: (l) => renewed.push(l) });

    for (let i = 1; i <= 4; i++) {
      await clock.advance(INTERVAL);
      await until(() => renewed.length === i, `renewal ${i}`);
      expect(keeper.deadline).toBe(leaseDeadline(i * INTERVAL, m.rule));
      expect(await lease(key)).toMatchObject({ owner: 'K', generation: first.generation, version: keeper.lease.version });
    }
    // 12 000 ms in: far past the first grant's deadline (8010), still held and safe.
    expect(keeper.deadline).toBeGreaterThan(first.deadline + 3 * INTERVAL);
    expect(keeper.signal.aborted).toBe(false);
    expect(m.isSafe(keeper.lease)).toBe(true);

    const last = await keeper.stop();
    const after = await lease(key);
    counter.reset();
    expect(clock.pendingSleepers).toBe(0);
    await clock.advance(5 * D);
    await new Promise((r) => setTimeout(r, 50));
    expect(counter.total()).toBe(0);
    expect(renewed).toHaveLength(4);
    expect(await lease(key)).toEqual(after);
    expect(after).toMatchObject({ version: last.version });
    expect(keeper.signal.aborted).toBe(false); // stop() is not a failure
  });

  it('renews on the real clock too (fractional performance.now() deadlines), keeping the lease safe past its first deadline', async () => {
    const key = 'job#keeper-real-clock';
    const m = mgr('K', { durationMs: 1_500, marginMs: 100 }); // system clock
    const first = await acquire(m, key);
    const renewed: Lease[] = [];
    const keeper = new LeaseKeeper(m, first, { intervalMs: 300, onRenewed: (l) => renewed.push(l) });
    try {
      await until(() => performance.now() > first.deadline + 100 || keeper.signal.aborted, 'past the first deadline', 2_000);
      expect(keeper.signal.aborted).toBe(false);
      expect(renewed.length).toBeGreaterThanOrEqual(3);
      expect(m.isSafe(keeper.lease)).toBe(true);
      expect(await lease(key)).toMatchObject({ owner: 'K', generation: first.generation });
    } finally {
      await keeper.stop();
    }
  });

  it('renewal timing out (blackholed) aborts the signal with LeaseExpiredError exactly when the last confirmed deadline passes, not before', async () => {
    const key = 'job#keeper-blackhole';
    const clock = new ManualClock();
    const { doc } = dynamo({ viaProxy: true, maxAttempts: 1, requestTimeoutMs: 200 });
    const m = mgr('K', { doc, clock }); // the keeper's renewals go through the proxy, 200 ms timeout
    const l = await acquire(mgr('K', { clock }), key); // direct, default timeout: a cold engine can be slow
    const itemBefore = await lease(key);
    const hole = env.proxy.blackhole({ target: 'UpdateItem', when: (r) => r.json?.Key?.pk?.S === key, times: Infinity });
    const keeper = new LeaseKeeper(m, l, { intervalMs: INTERVAL });
    try {
      await clock.advance(INTERVAL);
      await hole.waitForHits(1);
      // The renewal timed out (real 200 ms): uncertain, not lost. The keeper parks to retry.
      await until(() => clock.pendingSleepers === 2, 'keeper retrying after the timeout');
      expect(keeper.signal.aborted).toBe(false);

      await clock.advance(l.deadline - 1 - clock.monotonicNow());
      expect(keeper.signal.aborted).toBe(false);
      await clock.advance(1);
      expect(keeper.signal.aborted).toBe(true);
      expect(keeper.signal.reason).toBeInstanceOf(LeaseExpiredError);
      expect((keeper.signal.reason as LeaseExpiredError).generation).toBe(l.generation);
      await hole.waitForHits(2); // it kept retrying meanwhile
      // Nothing reached the store: the lease is merely uncertain to us, not taken.
      expect(await lease(key)).toEqual(itemBefore);
    } finally {
      await keeper.stop();
      hole.remove();
    }
  });

  it('renewal refused because another owner took the lease aborts the signal with LeaseLostError at once, long before the deadline', async () => {
    const key = 'job#keeper-lost';
    const clock = new ManualClock();
    const m = mgr('A', { clock });
    const l = await acquire(m, key);
    const keeper = new LeaseKeeper(m, l, { intervalMs: INTERVAL });
    // A was seized: B (whose wall clock is an hour ahead) sees the lease as expired and takes it.
    const lb = await acquire(mgr('B', { clock: skewedClock(clock, 3_600_000) }), key);
    const itemB = await lease(key);

    await clock.advance(INTERVAL);
    // Either the keeper fails, or it parks again to retry (2 sleepers): whichever comes first.
    await until(() => keeper.signal.aborted || clock.pendingSleepers === 2, 'the renewal outcome');
    expect(keeper.signal.aborted).toBe(true);
    expect(clock.monotonicNow()).toBeLessThan(l.deadline);
    const reason = keeper.signal.reason as LeaseLostError;
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect(reason.holder).toMatchObject({ owner: 'B', generation: lb.generation });
    expect(await lease(key)).toEqual(itemB);
    await keeper.stop();
    expect(clock.pendingSleepers).toBe(0);
  });

  it('an interval above duration/3 is refused with InvalidInputError before anything is sent or scheduled', async () => {
    const key = 'job#keeper-interval';
    const clock = new ManualClock();
    const { doc, client } = dynamo();
    const m = mgr('K', { doc, clock });
    const l = await acquire(m, key);
    const before = await lease(key);
    const counter = countRequests(client);

    const e = (() => {
      try {
        new LeaseKeeper(m, l, { intervalMs: D / 2 });
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(e).toBeInstanceOf(InvalidInputError);
    expect((e as InvalidInputError).field).toBe('intervalMs');
    expect(clock.pendingSleepers).toBe(0);
    await clock.advance(2 * D);
    await new Promise((r) => setTimeout(r, 20));
    expect(counter.total()).toBe(0);
    expect(await lease(key)).toEqual(before);

    // The boundary itself is allowed.
    const ok = new LeaseKeeper(m, l, { intervalMs: D / 3 });
    await ok.stop();
  });
});
