// tier: quick
/**
 * The simulated world's own guarantees: time moves only by its events, everything that draws
 * draws from the seed, and a run that waits on nothing is reported, not waited on.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../lib/protocol/index.js';
import { inWorld, SIM_EPOCH_MS, SimWorldError } from './sim/world.js';

/** A few tasks that sleep drawn times and log what they see. */
async function racers(): Promise<string[]> {
  const log: string[] = [];
  await Promise.all(
    ['a', 'b', 'c'].map(async (name) => {
      for (let i = 0; i < 5; i++) {
        await systemClock.sleep(Math.random() * 1000);
        log.push(`${name}${i}@${Math.round(performance.now())}:${randomUUID().slice(0, 4)}`);
      }
    }),
  );
  return log;
}

describe('the simulated world', () => {
  it('replays: one seed, one order of events, one set of draws; another seed, another', async () => {
    const one = await inWorld(7, racers);
    const again = await inWorld(7, racers);
    const other = await inWorld(8, racers);
    expect(again).toEqual(one);
    expect(other).not.toEqual(one);
  });

  it('moves time by events only: an hour of sleeping takes no real time, and the wall clock starts at the epoch', async () => {
    const realStart = Date.now();
    const seen = await inWorld(1, async () => {
      const before = { wall: Date.now(), date: new Date().getTime(), mono: performance.now() };
      await new Promise((r) => setTimeout(r, 3_600_000));
      return { before, after: { wall: Date.now(), mono: performance.now() } };
    });
    expect(seen.before).toEqual({ wall: SIM_EPOCH_MS, date: SIM_EPOCH_MS, mono: 0 });
    expect(seen.after).toEqual({ wall: SIM_EPOCH_MS + 3_600_000, mono: 3_600_000 });
    expect(Date.now() - realStart).toBeLessThan(5_000);
  });

  it('puts the real clocks back after a run', async () => {
    const random = Math.random;
    await inWorld(1, async () => undefined);
    expect(Math.random).toBe(random);
    expect(Math.abs(Date.now() - new Date().getTime())).toBeLessThan(1_000);
    expect(Date.now()).toBeGreaterThan(SIM_EPOCH_MS + 86_400_000);
  });

  it('clears and repeats timers as Node does', async () => {
    const ticks = await inWorld(1, async () => {
      const seen: number[] = [];
      const cancelled = setTimeout(() => seen.push(-1), 10);
      clearTimeout(cancelled);
      const every = setInterval(() => seen.push(Math.round(performance.now())), 100);
      await new Promise((r) => setTimeout(r, 350));
      clearInterval(every);
      await new Promise((r) => setTimeout(r, 1_000));
      return seen;
    });
    expect(ticks).toEqual([100, 200, 300]);
  });

  it('runs a timer in the async context it was set in, as Node does (the AWS call recorder reads a function\'s mark from it)', async () => {
    const mark = new AsyncLocalStorage<string>();
    const seen = await inWorld(1, async () => {
      const got: (string | undefined)[] = [];
      await mark.run('worker', () => new Promise<void>((done) => setTimeout(() => (got.push(mark.getStore()), done()), 10)));
      await mark.run('sweeper', () => new Promise<void>((done) => setInterval(function tick(this: unknown) {
        got.push(mark.getStore());
        if (got.length === 3) done();
      }, 5)));
      await new Promise<void>((done) => setTimeout(() => (got.push(mark.getStore()), done()), 1));
      return got;
    });
    expect(seen).toEqual(['worker', 'sweeper', 'sweeper', undefined]);
  });

  it('reports a run that waits on nothing (a deadlock) instead of hanging', async () => {
    await expect(inWorld(1, () => new Promise<void>(() => undefined))).rejects.toThrow(SimWorldError);
  });

  it('cuts off a run that never ends at its virtual limit', async () => {
    const forever = async () => {
      for (;;) await systemClock.sleep(1_000);
    };
    await expect(inWorld(1, forever, { maxVirtualMs: 60_000 })).rejects.toThrow(/cut off at 60000 virtual ms/);
  });

  it('refuses a second world in one process', async () => {
    await expect(inWorld(1, () => inWorld(2, async () => undefined))).rejects.toThrow(/already installed/);
  });
});

describe('timers the world did not make', () => {
  it("a real timer cleared while a world is installed is cleared (Node's own fetch clears its parser timeout through the global)", async () => {
    const realSetTimeout = globalThis.setTimeout;
    let fired = 0;
    const timer = realSetTimeout(() => fired++, 20);
    const interval = setInterval(() => fired++, 20);
    await inWorld(1, async () => {
      clearTimeout(timer);
      clearInterval(interval);
    });
    await new Promise((r) => realSetTimeout(r, 80));
    clearInterval(interval);
    expect(fired).toBe(0);
  });
});
