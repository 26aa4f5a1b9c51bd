/**
 * The verdict of a short real-time run on a machine of unknown speed (`npm run chaos --
 * --stalls-allowed`, which `.ci/run` runs after `npm test`): safety is judged on every run, a
 * stalled one's partial state included; liveness only on the runs that finished. A run the stall
 * watchdog cut short is a stall (the machine was too slow for its scaled leases), not a failure,
 * but at least one run must finish: a protocol that never ends is not "slow".
 */
import type { RunRecord } from './harness.js';

/** What a run cut short leaves undone without anything being wrong: the work it did not reach. */
const UNFINISHED: readonly { invariant: string; pattern: RegExp }[] = [
  // An item the sender or the reconciler had not reached yet (a stalled run stops them).
  { invariant: 'DELIVERY', pattern: /: ends (PENDING|SENDING), not delivered$/ },
  // The run's completion check had not run after its last shard.
  { invariant: 'RUNS', pattern: /: every shard is DONE but the run was never marked done$/ },
];

export interface StallVerdict {
  /** Seeds of the runs that finished (every job ended before the watchdog's window). */
  finished: number[];
  /** Seeds of the runs cut short, safe so far. */
  stalled: number[];
  /** Each broken promise: `seed N: INVARIANT first violation`. */
  failures: string[];
}

/** Whether the stall watchdog cut the run short. */
export const cutShort = (r: RunRecord): boolean => r.history.some((h) => h.startsWith('DEADLINE '));

/** The violations a run shows of safety: every invariant but PROGRESS, and two holders of one lease. */
export function safetyViolations(r: RunRecord, stalled: boolean): string[] {
  const out: string[] = [];
  for (const [name, inv] of Object.entries(r.report.invariants)) {
    if (name === 'PROGRESS') continue;
    const kept = inv.violations.filter((v) => !(stalled && UNFINISHED.some((u) => u.invariant === name && u.pattern.test(v))));
    if (kept.length > 0) out.push(`${name} ${kept[0]}${kept.length > 1 ? ` (and ${kept.length - 1} more)` : ''}`);
  }
  if (r.leaseViolation) out.push(`LEASE ${r.overlaps} takeover(s) before the holder's expiry with every clock in bound`);
  return out;
}

export function stallVerdict(runs: readonly RunRecord[]): StallVerdict {
  const v: StallVerdict = { finished: [], stalled: [], failures: [] };
  for (const r of runs) {
    const stalled = cutShort(r);
    for (const f of safetyViolations(r, stalled)) v.failures.push(`seed ${r.seed}: ${f}`);
    if (r.error !== undefined) v.failures.push(`seed ${r.seed}: RUN ${r.error}`);
    if (stalled) v.stalled.push(r.seed);
    else {
      v.finished.push(r.seed);
      for (const p of r.report.invariants.PROGRESS.violations.slice(0, 1)) v.failures.push(`seed ${r.seed}: PROGRESS ${p} (the run was not cut short)`);
    }
  }
  if (runs.length > 0 && v.finished.length === 0) v.failures.push(`no run finished: ${v.stalled.length} of ${runs.length} were cut short by the stall watchdog`);
  return v;
}
