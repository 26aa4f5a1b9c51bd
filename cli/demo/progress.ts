/**
 * The invoice run's progress, in stages: the units, then the delivery of the outbox items they
 * created. A live bar per stage on a terminal (stderr), a line per 10 % elsewhere, nothing with
 * --json; each with an estimate of the time left from the stage's rate so far, and, when the
 * count stands still, what it waits for (a stalled bar that says nothing looks like a hang).
 */
export type Stage = 'units' | 'delivering';

export interface ProgressUpdate {
  stage: Stage;
  done: number;
  total: number;
  /** What a count that stands still waits for (see unitsWaitingFor, deliveryWaitingFor). */
  waiting?: string;
}

export interface Progress {
  update: (p: ProgressUpdate) => void;
  stop: () => void;
}

/** "about 2 min 10 s left" from the rate so far; "estimating the time left" until a unit is done. */
export function timeLeft(done: number, total: number, elapsedMs: number): string {
  if (done >= total) return 'done';
  if (done <= 0 || elapsedMs <= 0) return 'estimating the time left';
  const s = Math.ceil(((total - done) * elapsedMs) / done / 1000);
  if (s < 60) return `about ${s} s left`;
  const m = Math.floor(s / 60);
  if (m < 60) return `about ${m} min ${s % 60} s left`;
  return `about ${Math.floor(m / 60)} h ${m % 60} min left`;
}

/** Each stage's name on its line and what it counts. */
const STAGES: Record<Stage, { label: string; noun: string }> = {
  units: { label: 'progress', noun: 'units' },
  delivering: { label: 'delivering', noun: 'outbox items sent' },
};

/** The line printed (without a terminal) at each 10 % step of a stage, and when what it waits for changes. */
export function progressLine(done: number, total: number, elapsedMs: number, stage: Stage = 'units', waiting?: string, base = 0): string {
  const pct = Math.floor((done / Math.max(1, total)) * 100);
  const { label, noun } = STAGES[stage];
  const left = done >= total ? 'done' : timeLeft(done - base, total - base, elapsedMs);
  return `   ${label}: ${done}/${total} ${noun} (${pct}%), ${left}${waiting === undefined ? '' : `; ${waiting}`}`;
}

/** What the unit count waits for when it has not moved for more than a lease, from what the run can observe. */
export function unitsWaitingFor(s: { sinceMoveMs: number; leaseMs: number; pausedWorkers: number; crashedJobsUnfinished: number }): string | undefined {
  if (s.sinceMoveMs <= s.leaseMs) return undefined;
  // A paused holder keeps its lease until it lapses; a crashed one never releases it.
  if (s.pausedWorkers > 0) return "waiting for a paused worker's lease to lapse";
  if (s.crashedJobsUnfinished > 0) return "waiting for a crashed worker's lease to lapse";
  return `no unit committed for ${Math.round(s.sinceMoveMs / 1000)} s`;
}

/** What the delivery waits for when the sent count has not moved for more than a lease. */
export function deliveryWaitingFor(s: { sinceMoveMs: number; leaseMs: number; streamBacklog: number; unsent: number }): string | undefined {
  if (s.sinceMoveMs <= s.leaseMs || s.unsent === 0) return undefined;
  // The stream's own retries come first; what they gave up on (or a claim left by a killed
  // sender) is the reconciler's, which waits for the item to be old enough to be its own.
  if (s.streamBacklog > 0) return `waiting for the sender's retries (${s.streamBacklog} stream records)`;
  return `waiting for the reconciler (${s.unsent} unsent)`;
}

interface Shown {
  stage: Stage;
  started: number;
  /** The count when the stage began: the outbox's sender starts during the units, and its rate is from the stage's own start. */
  base: number;
  step: number;
  waiting: string | undefined;
}

export async function progressReporter(opts: { json: boolean; tty: boolean; out: (line: string) => void; now?: () => number }): Promise<Progress> {
  const now = opts.now ?? (() => performance.now());
  if (opts.json) return { update: () => undefined, stop: () => undefined };
  if (opts.tty) return barReporter(now);
  let shown: Shown | undefined;
  return {
    update: ({ stage, done, total, waiting }) => {
      // Each stage's estimate is from its own rate: the delivery's, not the units'.
      if (shown?.stage !== stage) shown = { stage, started: now(), base: done, step: -1, waiting: undefined };
      const step = Math.floor((done / Math.max(1, total)) * 10);
      if (step !== shown.step || (waiting !== shown.waiting && waiting !== undefined)) opts.out(progressLine(done, total, now() - shown.started, stage, waiting, shown.base));
      [shown.step, shown.waiting] = [step, waiting];
    },
    stop: () => undefined,
  };
}

/** A bar per stage on stderr: the finished stage's bar stays, the next one starts below it. */
async function barReporter(now: () => number): Promise<Progress> {
  const { SingleBar, Presets } = await import('cli-progress');
  let bar: InstanceType<typeof SingleBar> | undefined;
  let shown: { stage: Stage; started: number; base: number } | undefined;
  return {
    update: ({ stage, done, total, waiting }) => {
      if (shown?.stage !== stage) {
        bar?.stop();
        const { label, noun } = STAGES[stage];
        bar = new SingleBar({ format: `   ${label.padEnd(10)} {bar} {value}/{total} ${noun} | {left}`, stream: process.stderr, clearOnComplete: false, hideCursor: true }, Presets.shades_classic);
        bar.start(Math.max(1, total), 0, { left: 'estimating the time left' });
        shown = { stage, started: now(), base: done };
      }
      const left = done >= total ? 'done' : timeLeft(done - shown.base, total - shown.base, now() - shown.started);
      bar!.setTotal(Math.max(1, total));
      bar!.update(done, { left: waiting === undefined ? left : `${left}; ${waiting}` });
    },
    stop: () => bar?.stop(),
  };
}
