// tier: quick
/** The simulator's shapes keep what each schedule means: a small shape is small, and its restart is still another input. */
import { describe, expect, it } from 'vitest';
import { CONTROLS } from './chaos/controls.js';
import { simSchedule } from './sim/run.js';
import { SMALL_UNITS } from './sim/shapes.js';

const SEEDS = Array.from({ length: 2_000 }, (_, i) => 1 + i);

describe('the simulator\'s shapes', () => {
  it('cut every seed to 2–4 workers and at most SMALL_UNITS units, each fault on a job that exists', () => {
    for (const seed of SEEDS) {
      for (const shape of ['small', 'sharded'] as const) {
        const s = simSchedule(seed, 'fenced', shape);
        expect(s.workers).toBeGreaterThanOrEqual(2);
        expect(s.workers).toBeLessThanOrEqual(4);
        expect(s.skews).toHaveLength(s.workers);
        const units = s.jobs.reduce((n, j) => n + Math.ceil(j.customers / s.unitSize), 0);
        expect(units).toBeLessThanOrEqual(SMALL_UNITS);
        const prefixes = s.jobs.map((j) => `invoice-run#${j.period}`);
        for (const f of s.faults) expect(prefixes.some((p) => f.jobId.startsWith(p))).toBe(true);
      }
    }
  });

  it('keep a restart another input: a second start with the stored count would be a plain duplicate (seeds 994 and 1352 were)', () => {
    for (const seed of SEEDS) {
      for (const shape of ['small', 'sharded', 'chaos'] as const) {
        for (const variant of ['fenced', CONTROLS[0]] as const) {
          const s = simSchedule(seed, variant, shape);
          if (s.restart === undefined) continue;
          expect({ seed, shape, customers: s.restart.customers }).not.toEqual({ seed, shape, customers: s.jobs[s.restart.job]!.customers });
        }
      }
    }
  });
});
