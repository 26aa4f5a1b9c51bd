// tier: quick
/**
 * The keeper on DynamoDB Local: renewal when due (and only then), and the verdict that tells
 * protected work to stop. Nothing runs in the background: the test calls keep() as the worker does
 * between units. Time is a ManualClock (it only moves when the test says so); network faults
 * come from the fault proxy.
 */
import { describe, expect, it } from 'vitest';
import { InvalidInputError, leaseDeadline, LeaseKeeper, LeaseLostError, LeaseManager, ManualClock, skewedClock, type LeaseConfig } from '../lib/protocol/index.js';
import { acquire, getItem, until } from './support/fixtures.js';
import { countRequests } from './support/request-counter.js';
import { proxiedTables } from './support/tables.js';

const env = proxiedTables(import.meta.filename);
const dynamo = env.dynamo;

const D = 9_000; // duration; margin 900, drift 1 %: a grant sent at s is usable until s + 8010

const mgr = (owner: string, cfg: Partial<Omit<LeaseConfig, 'owner'>> = {}): LeaseManager => env.leases(owner, { durationMs: D, ...cfg });

const lease = (key: string) => getItem(env.t, env.t.names.leases, key);

describe('LeaseKeeper', () => {
  it('renews only when less than renewBelowMs remains, moving the deadline past the original one; one request per renewal, none otherwise', async () => {
    const key = 'job#keeper-renews';
    const clock = new ManualClock();
    const { doc, client } = dynamo();
    const counter = countRequests(client);
    const m = mgr('K', { doc, clock });
    const first = await acquire(m, key);
    const keeper = new LeaseKeeper(m, first);
    counter.reset();

    expect(await keeper.keep()).toMatchObject({ kind: 'held', renewed: false });
    await clock.advance(3_000); // 5010 ms left: above D/2
    expect(await keeper.keep()).toMatchObject({ kind: 'held', renewed: false });
    expect(counter.total()).toBe(0);

    await clock.advance(1_000); // 4010 ms left: below D/2
    const kept = await keeper.keep();
    expect(kept).toMatchObject({ kind: 'held', renewed: true });
    expect(counter.total()).toBe(1);
    expect(keeper.lease.deadline).toBe(leaseDeadline(4_000, m.rule));
    expect(keeper.lease.deadline).toBeGreaterThan(first.deadline);
    expect(keeper.lease.generation).toBe(first.generation);
    expect(await lease(key)).toMatchObject({ owner: 'K', version: keeper.lease.version });

    await clock.advance(first.deadline - 4_000 + 1); // past the ORIGINAL deadline
    expect(keeper.isSafe()).toBe(true);
    expect(m.isSafe(first)).toBe(false);
  });

  it('renews on the real clock too (fractional performance.now() deadlines), keeping the lease safe past its first deadline', async () => {
    const key = 'job#keeper-real-clock';
    // Seconds, not hundreds of ms: the renewal's round trip must fit before the deadline on a busy machine.
    const m = env.leases('R', { durationMs: 3_000 });
    const first = await acquire(m, key);
    const keeper = new LeaseKeeper(m, first, { renewBelowMs: 2_000 });
    await new Promise((r) => setTimeout(r, 1_000)); // ~1.7 s left: due
    expect(await keeper.keep()).toMatchObject({ kind: 'held', renewed: true });
    await new Promise((r) => setTimeout(r, first.deadline - performance.now() + 20));
    expect(m.isSafe(first)).toBe(false);
    expect(keeper.isSafe()).toBe(true);
  });

  it('a renewal that hangs (blackholed) is abandoned exactly at the last confirmed deadline: uncertain, not before', async () => {
    const key = 'job#keeper-blackhole';
    const clock = new ManualClock();
    const { doc } = dynamo({ viaProxy: true, maxAttempts: 1, requestTimeoutMs: 60_000 });
    const m = mgr('B', { doc, clock });
    const first = await acquire(m, key);
    const keeper = new LeaseKeeper(m, first);
    await clock.advance(5_000); // due: 3010 ms left
    const hole = env.proxy.blackhole({ target: 'UpdateItem' });
    let settled = false;
    const keeping = keeper.keep().finally(() => (settled = true));
    await hole.waitForHits();
    await until(() => clock.pendingSleepers > 0, 'the deadline watch');
    await clock.advance(3_000);
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false); // 10 ms before the deadline: still waiting for the answer
    await clock.advance(20);
    const r = await keeping;
    expect(r.kind).toBe('uncertain');
    expect(keeper.isSafe()).toBe(false);
    hole.remove();
  });

  it('a renewal refused because another owner took the lease is "lost" at once, long before the deadline', async () => {
    const key = 'job#keeper-lost';
    const clock = new ManualClock();
    const m = mgr('old', { clock });
    const first = await acquire(m, key);
    const keeper = new LeaseKeeper(m, first, { renewBelowMs: D - 1 });
    // A contender whose wall clock runs ahead (beyond any skew bound) takes the lease while the
    // keeper's own deadline is still far off.
    await acquire(mgr('new', { clock: skewedClock(clock, D + 1) }), key);
    const r = await keeper.keep();
    expect(r.kind).toBe('lost');
    expect(r.kind === 'lost' && r.error).toBeInstanceOf(LeaseLostError);
    expect(await lease(key)).toMatchObject({ owner: 'new' });
  });

  it('past the deadline (a paused holder) a renewal is still sent: it succeeds when nobody took the lease, its condition proves it, and the new deadline counts from its send time', async () => {
    const key = 'job#keeper-late';
    const clock = new ManualClock();
    const m = mgr('P', { clock });
    const first = await acquire(m, key);
    const keeper = new LeaseKeeper(m, first);
    await clock.advance(D * 2);
    expect(keeper.isSafe()).toBe(false);
    expect(await keeper.keep()).toMatchObject({ kind: 'held', renewed: true });
    expect(keeper.lease.deadline).toBe(leaseDeadline(D * 2, m.rule));
    expect(keeper.lease.generation).toBe(first.generation);
  });

  it('beforeRenew runs before the renewal request (where fault injection delays a renewal), and only when one is due', async () => {
    const key = 'job#keeper-hook';
    const clock = new ManualClock();
    const m = mgr('H', { clock });
    const calls: number[] = [];
    const keeper = new LeaseKeeper(m, await acquire(m, key), { beforeRenew: async () => void calls.push(clock.monotonicNow()) });
    await keeper.keep();
    await clock.advance(5_000);
    await keeper.keep();
    expect(calls).toEqual([5_000]);
  });

  it('a threshold that is not inside (0, duration) is refused with InvalidInputError before anything is sent', async () => {
    const m = mgr('X', { clock: new ManualClock() });
    const l = await acquire(m, 'job#keeper-bad');
    for (const renewBelowMs of [0, -1, D, D + 1, Number.NaN]) {
      expect(() => new LeaseKeeper(m, l, { renewBelowMs })).toThrow(InvalidInputError);
    }
  });
});
