/**
 * A chaos schedule, derived from a seed alone: how many workers, how long a lease, which lease
 * mode, which faults where, which refusals and skews. The same seed gives the same schedule
 * (`--runs 1 --seed S` replays it); the exact interleaving still depends on real time, so the
 * history of every failing run is saved.
 */
import type { ProviderFaultPlan } from '../../cli/demo/run-effects.js';
import type { Fault, FaultPoint } from '../../cli/demo/faults.js';
import { invoiceJobId, mulberry32 } from '../../lib/workloads/invoices/invoices.js';

/** The schedule's random source: the same PRNG that makes invoice amounts reproducible. */
export const rng = mulberry32;

export type ChaosLeaseMode = 'wall-clock' | 'version-watch';

export interface Schedule {
  seed: number;
  workers: number;
  leaseMs: number;
  leaseMode: ChaosLeaseMode;
  /** The wall-clock lease's stated bound on clock offset between hosts. */
  maxClockSkewMs: number;
  /** Per worker slot, how far its wall clock is off (ms). Beyond maxClockSkewMs in some runs: leases may overlap. */
  skews: number[];
  /** Per worker slot, how much faster (or, negative, slower) its monotonic clock runs than true time; within the lease's maxDrift (1 %). Absent: none. */
  drifts?: number[];
  unitSize: number;
  jobs: { period: string; customers: number; seed: number }[];
  /** Shard jobs per period's run (default 1: the period's job alone). The faults then name shard jobs. */
  shards?: number;
  faults: Fault[];
  /** Which incident the first fault forces: the successor commits the same unit, or raises the fence and crashes. */
  incident: 'successor-commits' | 'successor-crashes';
  /** Probability that a TransactWriteItems response is lost after the write applied. */
  dropCommitP: number;
  /** Probability that any response is delayed, and by up to how long. */
  delayP: number;
  delayMaxMs: number;
  /** Probability that a renewal's response is delayed by 40 % of a lease (the worker renews at half). */
  renewDelayP: number;
  /** Probabilities that a request is refused before it is applied: ThrottlingException (any), TransactionConflict (TransactWriteItems). */
  throttleP: number;
  conflictP: number;
  /** Offsets (ms) at which a duplicate of a job's message is delivered. */
  duplicates: { atMs: number; job: number }[];
  /** The scheduler fires twice at once (EventBridge is at-least-once). */
  overlappingSweeps: boolean;
  /** Sweeps run back to back per tick (Lambda's async retries, a backlog): 1 is a plain tick. */
  sweepBurst: number;
  /** A requeue message (an operator's manual requeue, a retried sweep) sent the moment the incident's worker stalls, its lease still live. */
  requeueOnPause: boolean;
  /** A disaster-recovery drill: raise the epoch and seal at this offset, while workers hold old-epoch leases. */
  drill?: { atMs: number };
  /**
   * A starter fault: the period of `job` started again at this offset with another customer count
   * (a manual retry with other flags, the schedule's default after a manual start). The run is its
   * stored record: the start must be refused and change nothing.
   */
  restart?: { atMs: number; job: number; customers: number };
  /**
   * The payment provider down past its key retention after its first lost answer (RunEffects
   * retentionOutage): that item outlives the retention, and must end UNKNOWN, never resent.
   */
  retentionOutage?: 'until-forgotten' | 'timed';
  /** The providers misbehaving (cli/demo/run-effects.ts ProviderFaultPlan), drawn from a PRNG of its own so the rest of every seed's schedule stays as it was. */
  providerFaults: ProviderFaultPlan;
}

const CRASH_POINTS: FaultPoint[] = ['after-acquire', 'after-fence-raise', 'before-commit', 'after-commit'];

export function makeSchedule(seed: number, opts: { leaseMode?: ChaosLeaseMode } = {}): Schedule {
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

  // Always an incident of the article: a worker paused inside a unit while its lease expires, the
  // sweeper requeues, and a successor either commits the same unit, or raises the fence and
  // crashes before any unit ("suppose B raises the fence and crashes before producing any invoice").
  const victim = int(0, jobs.length - 1);
  const incident = r() < 1 / 3 ? 'successor-crashes' : 'successor-commits';
  const faults: Fault[] = [incidentPause(ids[victim]!, int(0, Math.max(0, unitsOf(victim) - 2)), leaseMs, incident)];
  if (incident === 'successor-crashes') faults.push({ name: 'successor crashes after its fence raise', point: 'after-fence-raise', jobId: ids[victim]!, after: 'paused between read and write', action: { kind: 'crash' } });
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
  const workers = int(2, 8);
  // Drawn for every seed, so that forcing a mode (--lease-mode) changes nothing else of the schedule.
  const drawnMode: ChaosLeaseMode = r() < 1 / 3 ? 'version-watch' : 'wall-clock';
  const leaseMode = opts.leaseMode ?? drawnMode;
  const skewed = r() < 0.25;
  const skewDraws = Array.from({ length: workers }, () => Math.round((r() * 2 - 1) * leaseMs));
  return {
    seed,
    workers,
    leaseMs,
    leaseMode,
    maxClockSkewMs: 20,
    // Clock skew matters only where clocks are compared: wall-clock mode.
    skews: skewed && leaseMode === 'wall-clock' ? skewDraws : skewDraws.map(() => 0),
    unitSize,
    jobs,
    faults,
    incident,
    dropCommitP: pick([0, 0.05, 0.15]),
    delayP: pick([0, 0.05, 0.2]),
    delayMaxMs: Math.round(leaseMs / 2),
    renewDelayP: pick([0, 0.1, 0.3]),
    throttleP: pick([0, 0, 0.02, 0.05]),
    conflictP: pick([0, 0, 0.03, 0.08]),
    duplicates: Array.from({ length: int(0, 3) }, () => ({ atMs: int(0, leaseMs * 6), job: int(0, jobs.length - 1) })),
    overlappingSweeps: r() < 0.5,
    sweepBurst: pick([1, 1, 2, 4]),
    requeueOnPause: r() < 0.3,
    ...(r() < 0.15 ? { drill: { atMs: int(leaseMs, leaseMs * 6) } } : {}),
    // Drawn last, so that every seed keeps the schedule it had before this fault existed.
    ...restartOf(r, jobs),
    // After the restart's draws: the same reason. A fifth of the runs (each some 20 leases longer).
    ...(r() < 0.2 ? { retentionOutage: 'timed' as const } : {}),
    providerFaults: providerFaultsOf(seed, leaseMs),
  };
}

/** The providers' misbehaviour of one seed: throttles, 5xx after and before taking, a paused account, the sandbox, bounces and complaints, a cut 200, a redirect, a late record after a throttled resend. */
function providerFaultsOf(seed: number, leaseMs: number): ProviderFaultPlan {
  const r = rng(seed ^ 0x27d4eb2f);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const pause = r() < 0.5 ? (['email', 'payments', 'both'] as const)[int(0, 2)]! : undefined;
  return {
    throttleEmails: int(0, 3),
    throttlePayments: int(0, 3),
    fail5xxAfter: int(0, 2),
    saved5xx: r() < 0.5,
    fail5xxBefore: int(0, 2),
    ...(pause === undefined ? {} : { pause: { who: pause, atMs: int(0, leaseMs * 4), ms: leaseMs * int(2, 4) } }),
    ...(r() < 0.3 ? { sandbox: { atMs: int(0, leaseMs * 4), ms: leaseMs * 2 } } : {}),
    bounceEvery: int(6, 12),
    complaintEvery: int(10, 20),
    // Drawn after the others, so each seed's earlier draws stay as they were.
    cut2xxPayments: int(0, 2),
    cutHow: r() < 0.5 ? 'truncated' : 'reset',
    redirectPayments: r() < 0.25 ? 1 : 0,
    lateRecord: r() < 0.5,
  };
}

function restartOf(r: () => number, jobs: Schedule['jobs']): { restart?: Schedule['restart'] } {
  if (r() >= 0.3) return {};
  const job = Math.floor(r() * jobs.length);
  const atMs = Math.floor(r() * 2_000);
  return { restart: { atMs, job, customers: jobs[job]!.customers + 1 + Math.floor(r() * 20) } };
}

/** The incident's pause: until the successor has committed the paused unit, or has raised the fence (and then crashed). */
function incidentPause(jobId: string, unit: number, leaseMs: number, incident: Schedule['incident']): Fault {
  return {
    name: 'paused between read and write',
    point: 'before-commit',
    jobId,
    unit,
    // At most 40 leases: the event normally comes long before.
    action: { kind: 'pause', ms: leaseMs * 40, until: incident === 'successor-crashes' ? 'successor-fences' : 'successor-commits' },
  };
}

/** The fault that makes a worker's invocation run short (withInvocationRunningShort). */
export const RUNS_SHORT = 'invocation runs short';

/**
 * The schedule with one worker's invocation running short: a stall of 7.5 leases after a unit's
 * commit (an invocation lasts 8), so at its next unit the worker has less than its safety margin
 * left, releases the lease and sends the job on to a next invocation (SQS SendMessage). On a slow
 * machine's real-time run that happens by itself; in virtual time it is forced here.
 */
export function withInvocationRunningShort(s: Schedule, unit = 2): Schedule {
  const jobId = s.faults[0]!.jobId;
  return { ...s, faults: [...s.faults, { name: RUNS_SHORT, point: 'after-commit', jobId, unit, action: { kind: 'pause', ms: Math.round(s.leaseMs * 7.5) } }] };
}

/** Whether a negative control's run forces the incident's interleaving (even seeds) or leaves it to timing (odd seeds). */
export const forcedFor = (seed: number): boolean => seed % 2 === 0;

/**
 * A control's schedule must reach the code its mistake lives in: for check-then-act and the
 * separate fence write the incident's pause sits inside the broken commit (between the check and
 * the write); for the counter reset no crash may take away every release (the broken release is
 * what deletes the counter); for the fence bypass the successor raises the fence and crashes;
 * for the sweeper-count claim the lease is watched in version-watch mode with back-to-back
 * sweeps and a requeue sent while the incident's worker is stalled (its lease still live). The three write-side controls keep every commit response: the stale holder's late
 * transaction first fails on a once-only charge the successor already made, and it is the
 * worker's resend without that charge that overwrites the successor's invoices. A lost response
 * there (seed 5003: "socket hang up", the worker gives up as uncertain) ends the stale holder
 * before its mistake shows. The real protocol keeps its lost responses.
 *
 * `forced: false` turns the incident's pause into a plain timed pause (16 leases): the
 * checker must catch the mistake without the interleaving being forced (reported separately).
 */
export function forControl(s: Schedule, variant: string, forced = true): Schedule {
  const incident = variant === 'fenceBypass' ? 'successor-crashes' : s.incident;
  const [head, ...others] = s.faults.filter((f) => f.name !== 'successor crashes after its fence raise');
  if (head === undefined) return s;
  const pause = incidentPause(head.jobId, head.unit ?? 0, s.leaseMs, incident);
  // Timed: a plain stall of 16 leases, ample for the sweeper's staleness window and a takeover.
  const first: Fault = forced ? pause : { ...pause, action: { kind: 'pause', ms: s.leaseMs * 16 } };
  const crash: Fault[] = incident === 'successor-crashes' ? [{ name: 'successor crashes after its fence raise', point: 'after-fence-raise', jobId: head.jobId, after: 'paused between read and write', action: { kind: 'crash' } }] : [];
  const base: Schedule = { ...s, incident, faults: [first, ...crash, ...others] };
  switch (variant) {
    case 'checkThenAct':
    case 'separateFenceWrite':
      return { ...base, dropCommitP: 0, faults: [{ ...first, point: 'inside-commit' }, ...crash, ...others] };
    case 'leaseOnly':
    case 'fenceBypass':
      return { ...base, dropCommitP: 0 };
    // The effect controls keep the incident as it is: the paused holder's late unit is where they show.
    case 'sendFromWorker':
    case 'documentInPlace':
      return base;
    // The meaning controls are wrong in every unit, the incident's or not: any finished run shows them.
    case 'amountDoubled':
    case 'wrongDestination':
    case 'extraCall':
      return base;
    // The chain controls, and wrongRecipient where a step creates the emails (a receipt), need parents
    // that settle: no provider outage past the key retention (every payment after its start would end
    // UNKNOWN, which no step follows).
    case 'wrongRecipient':
    case 'receiptOnDecline':
    case 'followUpTwice':
    case 'followUpBeforeSettle': {
      const { retentionOutage: _outage, ...settling } = base;
      return settling;
    }
    // A complaint on the emails a bounced step follows: forced, from every recipient that does not
    // bounce; timed, from one in three. No outage past the key retention (the receipts must exist).
    case 'bounceOnComplaint': {
      const { retentionOutage: _outage, ...settling } = base;
      return { ...settling, providerFaults: { ...base.providerFaults, complaintEvery: forced ? 1 : 3 } };
    }
    case 'counterReset':
      return { ...base, faults: base.faults.filter((f) => f.action.kind !== 'crash') };
    // An http item must outlive its key retention: forced, the outage lasts until the provider has
    // forgotten the lost answer's key (its own record says so); timed, a fixed 1.25 retentions.
    case 'resendPastRetention':
      return { ...base, retentionOutage: forced ? 'until-forgotten' : 'timed' };
    // A paused account in every run: forced, until the provider refused a send for it (and 4 leases
    // more); timed, a fixed window of 240 leases from the start, over the stream's first sends on a
    // slow machine. With 60 leases (seed 103: 28 s) the control went uncaught twice, in CI and in a
    // full run on a machine at half speed, both runs of about 100 s (240 leases: 113 s).
    case 'heldAsFailed':
      return { ...base, providerFaults: { ...base.providerFaults, pause: { who: 'both', atMs: 0, ms: base.leaseMs * (forced ? 4 : 240), ...(forced ? { untilRefused: true } : {}) } } };
    case 'claimOnSweeperCount': {
      // The mistake shows only if the claim on the sweeper's count lands while the stalled holder's
      // lease is live, so nothing may eat into that lease before the claimant's three round trips
      // (read, contended try, claim): the stall comes right after the acquire (a full lease left,
      // not the half a unit boundary leaves), no proxy latency, throttling or renewal delay, every
      // slot a host, and a lease three times the usual. Before this (the stall before a commit,
      // the proxy's delays kept) a loaded machine let the lease lapse first in 11 runs of 100.
      const stall: Fault = { name: first.name, point: 'after-acquire', jobId: first.jobId, action: forced ? { kind: 'pause', ms: s.leaseMs * 40, until: 'successor-fences' } : first.action };
      const quiet = { dropCommitP: 0, delayP: 0, renewDelayP: 0, throttleP: 0, conflictP: 0 };
      // No DR drill either: a seal between the stall and the claim moves the lease to the next
      // epoch, and the premature claim then fails on the epoch instead of taking the live lease
      // (seed 15: its only miss in this schedule's first 35 runs).
      const { drill: _drill, ...undrilled } = base;
      return { ...undrilled, ...quiet, faults: [stall, ...crash, ...others], leaseMs: s.leaseMs * 3, leaseMode: 'version-watch', skews: [0, 0, 0, 0, 0, 0, 0, 0], workers: 8, sweepBurst: 8, requeueOnPause: true };
    }
    default:
      return base;
  }
}
