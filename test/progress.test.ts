// tier: quick
/**
 * The invoice run's progress tells how long is left, from the rate so far, from its first line on;
 * the units and the outbox's delivery are stages of their own, and a count that stands still says
 * what it waits for.
 */
import { describe, expect, it } from 'vitest';
import { deliveryWaitingFor, progressLine, progressReporter, timeLeft, unitsWaitingFor } from '../cli/demo/progress.js';

describe('progress with an estimate of the time left', () => {
  it('estimates from the rate so far, in s, min or h', () => {
    expect(timeLeft(0, 300_000, 5_000)).toBe('estimating the time left');
    expect(timeLeft(10, 40, 5_000)).toBe('about 15 s left');
    expect(timeLeft(100, 30_000, 10_000)).toBe('about 49 min 50 s left');
    expect(timeLeft(100, 300_000, 10_000)).toBe('about 8 h 19 min left');
    expect(timeLeft(40, 40, 9_000)).toBe('done');
  });

  it('prints a line per 10 % without a terminal, each with the estimate', async () => {
    const lines: string[] = [];
    let now = 0;
    const p = await progressReporter({ json: false, tty: false, out: (l) => lines.push(l), now: () => now });
    for (let done = 0; done <= 20; done++) {
      now = done * 500;
      p.update({ stage: 'units', done, total: 20 });
    }
    p.stop();
    expect(lines).toHaveLength(11);
    expect(lines[0]).toBe('   progress: 0/20 units (0%), estimating the time left');
    expect(lines[1]).toBe('   progress: 2/20 units (10%), about 9 s left');
    expect(lines[10]).toBe(progressLine(20, 20, 10_000));
    expect(lines[10]).toBe('   progress: 20/20 units (100%), done');
  });

  it('shows the delivery as its own stage after the units, with its own estimate, and says what a stalled count waits for', async () => {
    const lines: string[] = [];
    let now = 0;
    const p = await progressReporter({ json: false, tty: false, out: (l) => lines.push(l), now: () => now });
    p.update({ stage: 'units', done: 0, total: 10 });
    now = 1_000;
    p.update({ stage: 'units', done: 5, total: 10 });
    now = 3_000;
    p.update({ stage: 'units', done: 5, total: 10, waiting: "waiting for a crashed worker's lease to lapse" });
    now = 3_100; // the same reason again: no new line
    p.update({ stage: 'units', done: 5, total: 10, waiting: "waiting for a crashed worker's lease to lapse" });
    now = 4_000;
    p.update({ stage: 'units', done: 10, total: 10 });
    // The delivery's clock starts with its stage, not with the run.
    // 20 items were sent during the units: the delivery's rate counts the 80 of its own first second.
    now = 10_000;
    p.update({ stage: 'delivering', done: 20, total: 200 });
    now = 11_000;
    p.update({ stage: 'delivering', done: 100, total: 200 });
    now = 20_000;
    p.update({ stage: 'delivering', done: 100, total: 200, waiting: 'waiting for the reconciler (100 unsent)' });
    now = 21_000;
    p.update({ stage: 'delivering', done: 200, total: 200 });
    p.stop();
    expect(lines).toEqual([
      '   progress: 0/10 units (0%), estimating the time left',
      '   progress: 5/10 units (50%), about 1 s left',
      "   progress: 5/10 units (50%), about 3 s left; waiting for a crashed worker's lease to lapse",
      '   progress: 10/10 units (100%), done',
      '   delivering: 20/200 outbox items sent (10%), estimating the time left',
      '   delivering: 100/200 outbox items sent (50%), about 2 s left',
      '   delivering: 100/200 outbox items sent (50%), about 13 s left; waiting for the reconciler (100 unsent)',
      '   delivering: 200/200 outbox items sent (100%), done',
    ]);
  });

  it('prints nothing with --json', async () => {
    const lines: string[] = [];
    const p = await progressReporter({ json: true, tty: false, out: (l) => lines.push(l) });
    p.update({ stage: 'units', done: 1, total: 2 });
    p.update({ stage: 'delivering', done: 1, total: 2, waiting: 'waiting for the reconciler (1 unsent)' });
    p.stop();
    expect(lines).toEqual([]);
  });
});

describe('what a stalled count waits for, from what the run observes', () => {
  const units = { leaseMs: 1_500, pausedWorkers: 0, crashedJobsUnfinished: 0 };
  it('units: nothing within a lease; past it, a paused holder, a crashed one, or just the time', () => {
    expect(unitsWaitingFor({ ...units, sinceMoveMs: 1_500, crashedJobsUnfinished: 1 })).toBeUndefined();
    expect(unitsWaitingFor({ ...units, sinceMoveMs: 1_600, crashedJobsUnfinished: 1 })).toBe("waiting for a crashed worker's lease to lapse");
    expect(unitsWaitingFor({ ...units, sinceMoveMs: 1_600, pausedWorkers: 1, crashedJobsUnfinished: 1 })).toBe("waiting for a paused worker's lease to lapse");
    expect(unitsWaitingFor({ ...units, sinceMoveMs: 7_400 })).toBe('no unit committed for 7 s');
  });

  it('delivery: the stream sender while it has records, then the reconciler; nothing once all are sent', () => {
    const d = { leaseMs: 1_500, sinceMoveMs: 2_000 };
    expect(deliveryWaitingFor({ ...d, sinceMoveMs: 1_000, streamBacklog: 0, unsent: 5 })).toBeUndefined();
    expect(deliveryWaitingFor({ ...d, streamBacklog: 3, unsent: 5 })).toBe("waiting for the sender's retries (3 stream records)");
    expect(deliveryWaitingFor({ ...d, streamBacklog: 0, unsent: 5 })).toBe('waiting for the reconciler (5 unsent)');
    expect(deliveryWaitingFor({ ...d, streamBacklog: 0, unsent: 0 })).toBeUndefined();
  });
});

describe("the run's report line", () => {
  it('gives the units\' time and the delivery\'s apart, and says what the delivery left', async () => {
    const { stageTimes } = await import('../cli/demo/demo.js');
    expect(stageTimes({ units: 120, unitsMs: 11_200, delivery: { items: 2400, unsent: 0, ms: 61_000 }, elapsedMs: 72_508 })).toBe(
      '120 units committed in 11.2 s; then 2400 outbox items delivered in 61.0 s (the run took 72.5 s)',
    );
    expect(stageTimes({ units: 120, unitsMs: 11_200, delivery: { items: 2400, unsent: 7, ms: 61_000 }, elapsedMs: 72_508 })).toBe(
      '120 units committed in 11.2 s; then 2393/2400 outbox items delivered in 61.0 s, 7 left unsent (the run took 72.5 s)',
    );
  });
});
