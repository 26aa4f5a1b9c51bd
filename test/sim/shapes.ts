/**
 * The shapes the simulator runs: a chaos schedule (test/chaos/schedule.ts) as drawn, or cut down
 * to a small shape. Shaping happens after the draw, so a seed's chaos schedule on DynamoDB Local
 * stays the one it always was, and a simulated seed of shape `chaos` is that same schedule.
 */
import { invoiceJobId } from '../../lib/workloads/invoices/invoices.js';
import { shardJobId } from '../../lib/workflow/index.js';
import { InvalidInputError } from '../../lib/protocol/index.js';
import { rng, type Schedule } from '../chaos/schedule.js';

export const SHAPES = ['tiny', 'small', 'sharded', 'chaos', 'protocol'] as const;
export type Shape = (typeof SHAPES)[number];

/** At most this many units in a small shape (the "≤ 10 units"). */
export const SMALL_UNITS = 10;

/** At most this many units in a tiny shape: enough for a unit before the incident's and one after. */
export const TINY_UNITS = 4;

export function shapeNamed(name: string): Shape {
  if ((SHAPES as readonly string[]).includes(name)) return name as Shape;
  throw new InvalidInputError('--shape', `must be one of ${SHAPES.join(', ')}, got "${name}"`);
}

/** The shaping function for chaosRun's scheduleOf: identity for `chaos`. */
export function shaper(shape: Shape): ((s: Schedule) => Schedule) | undefined {
  if (shape === 'chaos') return undefined;
  // `protocol`: the small shape's schedule, run on the protocol-only workload (run.ts).
  return shape === 'tiny' ? tiny : shape === 'sharded' ? sharded : small;
}

/**
 * 2–4 workers, one or two periods, at most SMALL_UNITS units in all; every fault, duplicate and
 * restart kept, moved onto a job that still exists (the incident stays the first fault).
 */
function small(s: Schedule): Schedule {
  const r = rng(s.seed ^ 0x51a11);
  const jobs = s.jobs.slice(0, r() < 0.5 ? 1 : 2);
  const perJob = Math.floor(SMALL_UNITS / jobs.length) * s.unitSize;
  const kept = jobs.map((j) => ({ ...j, customers: Math.min(j.customers, perJob) }));
  const workers = 2 + Math.floor(r() * 3);
  // Oscillator drift within the lease's stated bound (maxDrift 1 %): a host that counts its lease fast or slow.
  const drifts = Array.from({ length: workers }, () => Math.round((r() * 2 - 1) * 0.01 * 10_000) / 10_000);
  // One skew per slot: the draw made one per drawn worker, which may be fewer.
  const skews = Array.from({ length: workers }, (_, i) => s.skews[i] ?? 0);
  return onJobs({ ...s, workers, skews, drifts }, kept, 1);
}

/**
 * What the races need and nothing else: one period of at most TINY_UNITS units, two workers, the
 * incident (its pause, and the successor's crash when drawn), one duplicate delivery, lost commit
 * answers; no other fault, no throttling, conflicts or delays, no restart, drill or outage past the
 * key retention. The providers' own trouble stays as drawn (it costs the run no request).
 */
function tiny(s: Schedule): Schedule {
  const r = rng(s.seed ^ 0x7197);
  const job = s.jobs[0]!;
  const kept = [{ ...job, customers: Math.min(job.customers, TINY_UNITS * s.unitSize) }];
  const incident = s.faults.slice(0, s.incident === 'successor-crashes' ? 2 : 1).map((f) => ({ ...f, jobId: invoiceJobId(job.period) }));
  const duplicate = s.duplicates[0] ?? { atMs: Math.round(s.leaseMs * (1 + r() * 6)), job: 0 };
  const drifts = [0, 1].map(() => Math.round((r() * 2 - 1) * 0.01 * 10_000) / 10_000);
  const { restart: _restart, drill: _drill, retentionOutage: _outage, ...rest } = s;
  const cut: Schedule = { ...rest, workers: 2, skews: [s.skews[0] ?? 0, s.skews[1] ?? 0], drifts, faults: incident, duplicates: [{ ...duplicate, job: 0 }], dropCommitP: Math.max(s.dropCommitP, 0.05), throttleP: 0, conflictP: 0, delayP: 0, renewDelayP: 0 };
  return onJobs(cut, kept, 1);
}

/** Small, with each period's run cut into 2 or 3 shard jobs (the faults hit shard jobs). */
function sharded(s: Schedule): Schedule {
  const base = small(s);
  const shards = 2 + Math.floor(rng(s.seed ^ 0x5a4d)() * 2);
  return onJobs(base, base.jobs, shards);
}

const unitsOf = (customers: number, unitSize: number, shards: number) => Math.max(1, Math.ceil(customers / shards / unitSize));

/** The schedule on `jobs` (a prefix of its own) and `shards`: faults, duplicates and the restart re-aimed at jobs that exist. */
function onJobs(s: Schedule, jobs: Schedule['jobs'], shards: number): Schedule {
  const ids = s.jobs.map((j) => invoiceJobId(j.period));
  const target = (jobId: string) => {
    const i = Math.max(0, ids.indexOf(jobId)) % jobs.length;
    return { jobId: shardJobId(invoiceJobId(jobs[i]!.period), 0, shards), units: unitsOf(jobs[i]!.customers, s.unitSize, shards) };
  };
  const faults = s.faults.map((f, k) => {
    const t = target(f.jobId);
    // The incident's unit must not be a job's last (a pause there leaves no unit for a successor to take over).
    const top = k === 0 ? Math.max(0, t.units - 2) : t.units - 1;
    return { ...f, jobId: t.jobId, ...(f.unit === undefined ? {} : { unit: Math.min(f.unit, top) }) };
  });
  const { restart, ...rest } = s;
  return {
    ...rest,
    jobs,
    ...(shards > 1 ? { shards } : {}),
    faults,
    duplicates: s.duplicates.map((d) => ({ ...d, job: d.job % (jobs.length * shards) })),
    ...(restart === undefined ? {} : { restart: otherInput(s, restart, jobs) }),
  };
}

/**
 * The restart re-aimed at a kept period, still with ANOTHER input: as many customers more than the
 * kept period's as the drawn restart had more than its own. (Re-aimed with its drawn count, it
 * could equal the kept period's, a plain duplicate start the starter rightly accepts: seeds 994
 * and 1352 of the first long run.)
 */
function otherInput(s: Schedule, restart: NonNullable<Schedule['restart']>, jobs: Schedule['jobs']): NonNullable<Schedule['restart']> {
  const job = restart.job % jobs.length;
  const more = Math.max(1, restart.customers - s.jobs[restart.job]!.customers);
  return { ...restart, job, customers: jobs[job]!.customers + more };
}
