// tier: quick
/** The simulator's shapes keep what each schedule means: a small shape is small, and its restart is still another input. */
import { describe, expect, it } from 'vitest';
import { CONTROLS } from './chaos/controls.js';
import { simSchedule } from './sim/run.js';
import { SMALL_UNITS, TINY_UNITS } from './sim/shapes.js';

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

  it('cut every seed to a tiny shape: one period, at most TINY_UNITS units, two workers, the incident, one duplicate, lost commit answers, nothing else', () => {
    for (const seed of SEEDS) {
      const drawn = simSchedule(seed, 'fenced', 'chaos');
      const s = simSchedule(seed, 'fenced', 'tiny');
      expect(s.jobs).toHaveLength(1);
      expect(Math.ceil(s.jobs[0]!.customers / s.unitSize)).toBeLessThanOrEqual(TINY_UNITS);
      expect([s.workers, s.skews.length, s.drifts?.length]).toEqual([2, 2, 2]);
      // The incident as drawn (its pause, and the successor's crash when drawn), on the kept period's job, at a unit that is not its last.
      expect(s.faults.map((f) => f.name)).toEqual(drawn.faults.slice(0, drawn.incident === 'successor-crashes' ? 2 : 1).map((f) => f.name));
      expect(s.faults[0]!.unit ?? 0).toBeLessThanOrEqual(Math.max(0, Math.ceil(s.jobs[0]!.customers / s.unitSize) - 2));
      expect(s.duplicates).toHaveLength(1);
      expect(s.dropCommitP).toBeGreaterThan(0);
      expect({ throttle: s.throttleP, conflict: s.conflictP, delay: s.delayP, renewDelay: s.renewDelayP, restart: s.restart, drill: s.drill, outage: s.retentionOutage }).toEqual({ throttle: 0, conflict: 0, delay: 0, renewDelay: 0, restart: undefined, drill: undefined, outage: undefined });
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
