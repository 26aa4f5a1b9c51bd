// tier: quick
/**
 * Time and contention rules (pure, no DynamoDB): the local deadline counts from the send time
 * with drift and margin; the manual clock wakes sleepers in order and honours AbortSignal;
 * backoff is full jitter under a cap, and a contender that knows the expiry sleeps until then.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  defaultBackoff,
  fullJitter,
  InvalidInputError,
  leaseDeadline,
  ManualClock,
  skewedClock,
  systemClock,
  untilExpiry,
  validateDeadlineRule,
} from '../lib/protocol/index.js';

describe('leaseDeadline', () => {
  it('is sendTime + duration * (1 - maxDrift) - margin', () => {
    expect(leaseDeadline(1_000, { durationMs: 10_000, maxDrift: 0.01, marginMs: 500 })).toBe(1_000 + 9_900 - 500);
    expect(leaseDeadline(0, { durationMs: 10_000, maxDrift: 0, marginMs: 0 })).toBe(10_000);
  });

  it('never exceeds the authority\'s own lease measured from the send time, and shrinks with drift and margin', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        fc.integer({ min: 1, max: 3_600_000 }),
        fc.double({ min: 0, max: 0.5, noNaN: true }),
        fc.integer({ min: 0, max: 10_000 }),
        (send, durationMs, maxDrift, marginMs) => {
          const d = leaseDeadline(send, { durationMs, maxDrift, marginMs });
          return (
            d <= send + durationMs &&
            d <= leaseDeadline(send, { durationMs, maxDrift: 0, marginMs }) &&
            d <= leaseDeadline(send, { durationMs, maxDrift, marginMs: 0 })
          );
        },
      ),
    );
  });

  it('validateDeadlineRule refuses a rule that leaves no usable time', () => {
    expect(() => validateDeadlineRule({ durationMs: 10_000, maxDrift: 0.01, marginMs: 1_000 })).not.toThrow();
    const e = (() => {
      try {
        validateDeadlineRule({ durationMs: 1_000, maxDrift: 0.5, marginMs: 500 });
      } catch (error) {
        return error;
      }
    })();
    expect(e).toBeInstanceOf(InvalidInputError);
    expect((e as InvalidInputError).field).toBe('marginMs');
  });
});

describe('ManualClock', () => {
  it('wakes sleepers in deadline order, not registration order, each at its own instant', async () => {
    const clock = new ManualClock({ monotonic: 0, wall: 1_000_000 });
    const woke: { label: string; mono: number; wall: number }[] = [];
    const sleeper = (label: string, ms: number) =>
      clock.sleep(ms).then(() => woke.push({ label, mono: clock.monotonicNow(), wall: clock.wallNow() }));
    const all = Promise.all([sleeper('c', 300), sleeper('a', 100), sleeper('b', 200), sleeper('a2', 100)]);
    expect(clock.pendingSleepers).toBe(4);

    await clock.advance(150);
    expect(woke.map((w) => w.label)).toEqual(['a', 'a2']);
    expect(clock.pendingSleepers).toBe(2);
    expect(clock.monotonicNow()).toBe(150);

    await clock.advance(1_000);
    await all;
    expect(woke).toEqual([
      { label: 'a', mono: 100, wall: 1_000_100 },
      { label: 'a2', mono: 100, wall: 1_000_100 },
      { label: 'b', mono: 200, wall: 1_000_200 },
      { label: 'c', mono: 300, wall: 1_000_300 },
    ]);
    expect(clock.monotonicNow()).toBe(1_150);
    expect(clock.wallNow()).toBe(1_001_150);
  });

  it('a sleeper woken by advance runs before the next one wakes (a chained sleep lands in order)', async () => {
    const clock = new ManualClock();
    const order: string[] = [];
    const chain = clock.sleep(100).then(async () => {
      order.push('first@100');
      await clock.sleep(50); // due at 150: before the other sleeper at 200
      order.push('chained@150');
    });
    const other = clock.sleep(200).then(() => order.push('other@200'));
    await clock.advance(500);
    await Promise.all([chain, other]);
    expect(order).toEqual(['first@100', 'chained@150', 'other@200']);
  });

  it('honours AbortSignal: an aborted sleeper rejects with the reason, leaves the queue and never wakes', async () => {
    const clock = new ManualClock();
    const pre = new AbortController();
    pre.abort(new Error('already stopped'));
    await expect(clock.sleep(100, pre.signal)).rejects.toThrow('already stopped');
    expect(clock.pendingSleepers).toBe(0);

    const ctl = new AbortController();
    let wokeAborted = false;
    const aborted = clock.sleep(100, ctl.signal).then(() => (wokeAborted = true));
    const kept = clock.sleep(100);
    expect(clock.pendingSleepers).toBe(2);
    ctl.abort(new Error('stop'));
    await expect(aborted).rejects.toThrow('stop');
    expect(clock.pendingSleepers).toBe(1);
    await clock.advance(100);
    await expect(kept).resolves.toBeUndefined();
    expect(wokeAborted).toBe(false);

    // Aborting after the wake changes nothing.
    const late = new AbortController();
    const done = clock.sleep(10, late.signal);
    await clock.advance(10);
    late.abort();
    await expect(done).resolves.toBeUndefined();
  });

  it('does not wake a sleeper before its time; sleep(0) and negative durations wake on the next advance', async () => {
    const clock = new ManualClock();
    let woke = false;
    const s = clock.sleep(100).then(() => (woke = true));
    await clock.advance(99);
    expect(woke).toBe(false);
    await clock.advance(1);
    await s;
    expect(woke).toBe(true);

    const zero = clock.sleep(0);
    const negative = clock.sleep(-50);
    await clock.advance(0);
    await expect(Promise.all([zero, negative])).resolves.toEqual([undefined, undefined]);
  });
});

describe('skewedClock', () => {
  it('offsets only the wall clock; monotonic time and sleeping are the base clock\'s', async () => {
    const base = new ManualClock({ monotonic: 50, wall: 1_000_000 });
    const ahead = skewedClock(base, 5_000);
    const behind = skewedClock(base, -5_000);
    expect(ahead.wallNow()).toBe(1_005_000);
    expect(behind.wallNow()).toBe(995_000);
    expect(ahead.monotonicNow()).toBe(50);

    let woke = false;
    const s = ahead.sleep(100).then(() => (woke = true));
    await base.advance(100);
    await s;
    expect(woke).toBe(true);
    expect(ahead.wallNow()).toBe(1_005_100);
    expect(ahead.monotonicNow()).toBe(150);
  });
});

describe('systemClock', () => {
  it('sleep rejects at once on abort, with the signal\'s reason', async () => {
    const ctl = new AbortController();
    const s = systemClock.sleep(60_000, ctl.signal);
    ctl.abort(new Error('shutdown'));
    await expect(s).rejects.toThrow('shutdown');
    const pre = new AbortController();
    pre.abort();
    await expect(systemClock.sleep(60_000, pre.signal)).rejects.toBeDefined();
  });
});

describe('fullJitter', () => {
  const policy = { baseMs: 25, capMs: 2_000 };
  const justBelowOne = () => 1 - Number.EPSILON;

  it('is uniform in [0, min(cap, base * 2^attempt)): the random number scales the ceiling', () => {
    expect(fullJitter(0, policy, () => 0)).toBe(0);
    expect(fullJitter(0, policy, () => 0.5)).toBe(12.5);
    expect(fullJitter(3, policy, () => 0.5)).toBe(100);
    expect(fullJitter(0, policy, justBelowOne)).toBeLessThan(25);
    expect(fullJitter(0, policy, justBelowOne)).toBeGreaterThan(24.99);
  });

  it('is capped, even for huge attempt counts (no Infinity, no NaN)', () => {
    expect(fullJitter(7, policy, () => 0.5)).toBe(1_000); // 25 * 128 = 3200 > cap
    expect(fullJitter(10_000, policy, () => 0.5)).toBe(1_000);
    expect(fullJitter(10_000, policy, justBelowOne)).toBeLessThan(2_000);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100_000 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const v = fullJitter(attempt, policy, () => r);
        // `<=`: random() < 1, but r * ceiling may round up to the ceiling in floating point.
        return v >= 0 && v <= Math.min(policy.capMs, policy.baseMs * 2 ** attempt);
      }),
    );
  });

  it('uses the default policy and Math.random when none are injected', () => {
    for (let i = 0; i < 100; i++) {
      const v = fullJitter(20);
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThan(defaultBackoff.capMs);
    }
  });
});

describe('untilExpiry', () => {
  const opts = { maxClockSkewMs: 500, jitterMs: 100 };

  it('sleeps until the holder\'s expiry plus the allowed skew, plus jitter', () => {
    expect(untilExpiry(10_000, 4_000, opts, () => 0)).toBe(6_500);
    expect(untilExpiry(10_000, 4_000, opts, () => 0.5)).toBe(6_550);
  });

  it('an already expired lease costs only the jitter, never a negative wait', () => {
    expect(untilExpiry(10_000, 20_000, opts, () => 0)).toBe(0);
    expect(untilExpiry(10_000, 20_000, opts, () => 0.5)).toBe(50);
    fc.assert(
      fc.property(fc.integer(), fc.integer(), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (exp, now, r) => {
        const v = untilExpiry(exp, now, opts, () => r);
        return v >= 0 && v <= Math.max(0, exp + opts.maxClockSkewMs - now) + opts.jitterMs; // `<=`: float rounding
      }),
    );
  });
});
