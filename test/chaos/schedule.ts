/**
 * A chaos schedule, derived from a seed alone: how many workers, how long a lease, which
 * faults where. The same seed gives the same schedule (`--runs 1 --seed S` replays it); the
 * exact interleaving still depends on real time, so the history of every failing run is saved.
 */
import type { Fault, FaultPoint } from '../../cli/faults.js';
import { invoiceJobId, mulberry32 } from '../../lib/workloads/invoices.js';

/** The schedule's random source: the same PRNG that makes invoice amounts reproducible. */
export const rng = mulberry32;

export interface Schedule {
  seed: number;
  workers: number;
  leaseMs: number;
  unitSize: number;
  jobs: { period: string; customers: number; seed: number }[];
  faults: Fault[];
  /** Probability that a TransactWriteItems response is lost after the write applied. */
  dropCommitP: number;
  /** Probability that any response is delayed, and by up to how long. */
  delayP: number;
  delayMaxMs: number;
  /** Probability that a renewal's response is delayed by 40 % of a lease (the worker renews at half). */
  renewDelayP: number;
  /** Offsets (ms) at which a duplicate of a job's message is delivered. */
  duplicates: { atMs: number; job: number }[];
  overlappingSweeps: boolean;
}

const CRASH_POINTS: FaultPoint[] = ['after-acquire', 'after-fence-raise', 'before-commit', 'after-commit'];

export function makeSchedule(seed: number): Schedule {
  const r = rng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  // Short enough for hundreds of runs, long enough that a loaded 2-core machine (DynamoDB
  // Local round trips of 100+ ms) still lets a holder renew before its deadline.
  const leaseMs = int(400, 650);
  const unitSize = int(3, 6);
  const jobs = Array.from({ length: int(1, 3) }, (_, i) => ({ period: `2025-${String(i + 1).padStart(2, '0')}`, customers: int(12, 36), seed: int(0, 1_000_000) }));
  const ids = jobs.map((j) => invoiceJobId(j.period));
  const unitsOf = (i: number) => Math.ceil(jobs[i]!.customers / unitSize);

  // Always the article's incident: a worker paused inside a unit while its lease expires, the
  // sweeper requeues, and a successor takes over and commits the same unit.
  const victim = int(0, jobs.length - 1);
  const faults: Fault[] = [
    {
      name: 'paused between read and write',
      point: 'before-commit',
      jobId: ids[victim]!,
      unit: int(0, Math.max(0, unitsOf(victim) - 2)),
      // Until a successor has committed this unit (the incident's interleaving), at most 40 leases.
      action: { kind: 'pause', ms: leaseMs * 40, untilSuccessorCommits: true },
    },
  ];
  // Random extras: more pauses (inside units), and crashes at chosen points.
  for (let i = int(0, 2); i > 0; i--) {
    const j = int(0, jobs.length - 1);
    faults.push({ name: 'GC pause', point: pick(['after-commit', 'before-renew', 'after-checkpoint-read'] as const), jobId: ids[j]!, unit: int(0, unitsOf(j) - 1), action: { kind: 'pause', ms: Math.round(leaseMs * r() * 3) } });
  }
  for (let i = int(0, 2); i > 0; i--) {
    const j = int(0, jobs.length - 1);
    const point = pick(CRASH_POINTS);
    faults.push({ name: `crash at ${point}`, point, jobId: ids[j]!, ...(point === 'before-commit' || point === 'after-commit' ? { unit: int(0, unitsOf(j) - 1) } : {}), action: { kind: 'crash' } });
  }
  return {
    seed,
    workers: int(2, 8),
    leaseMs,
    unitSize,
    jobs,
    faults,
    dropCommitP: pick([0, 0.05, 0.15]),
    delayP: pick([0, 0.05, 0.2]),
    delayMaxMs: Math.round(leaseMs / 2),
    renewDelayP: pick([0, 0.1, 0.3]),
    duplicates: Array.from({ length: int(0, 3) }, () => ({ atMs: int(0, leaseMs * 6), job: int(0, jobs.length - 1) })),
    overlappingSweeps: r() < 0.5,
  };
}

/**
 * A control's schedule must reach the code its mistake lives in: for check-then-act and the
 * separate fence write the incident's pause sits inside the broken commit (between the check and
 * the write); for the counter reset no crash may take away every release (the broken release is
 * what deletes the counter). The three write-side controls keep every commit response: the
 * stale holder's late transaction first fails on a once-only charge the successor already made,
 * and it is the worker's resend without that charge that overwrites the successor's invoices. A
 * lost response there (seed 5003: "socket hang up", the worker gives up as uncertain) ends the
 * stale holder before its mistake shows. The real protocol keeps its lost responses.
 */
export function forControl(s: Schedule, variant: string): Schedule {
  const [first, ...rest] = s.faults;
  if (first === undefined) return s;
  if (variant === 'checkThenAct' || variant === 'separateFenceWrite') return { ...s, dropCommitP: 0, faults: [{ ...first, point: 'inside-commit' }, ...rest] };
  if (variant === 'leaseOnly') return { ...s, dropCommitP: 0 };
  if (variant === 'counterReset') return { ...s, faults: s.faults.filter((f) => f.action.kind !== 'crash') };
  return s;
}
