/** The invoice run's progress tells how long is left, from the rate so far, from its first line on. */
import { describe, expect, it } from 'vitest';
import { progressLine, progressReporter, timeLeft } from '../cli/progress.js';

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
      p.update(done, 20);
    }
    p.stop();
    expect(lines).toHaveLength(11);
    expect(lines[0]).toBe('   progress: 0/20 units (0%), estimating the time left');
    expect(lines[1]).toBe('   progress: 2/20 units (10%), about 9 s left');
    expect(lines[10]).toBe(progressLine(20, 20, 10_000));
    expect(lines[10]).toBe('   progress: 20/20 units (100%), done');
  });
});
