/**
 * Fault injection for the local runtime: the worker's hooks (lib/workflow/run-job.ts WorkerHooks) let a
 * plan pause a worker (a GC pause: resolve later) or crash it (never resolve: nothing after it
 * runs and nothing is released, exactly like a process that died). Each fault fires once.
 */
import type { Clock } from '../lib/protocol/index.js';
import type { WorkerHooks, WorkerPoint } from '../lib/workflow/index.js';
import { laneOf } from './telemetry.js';
import type { Timeline } from './timeline.js';

/** A worker point, or a point a test-only protocol variant awaits itself (e.g. between its check and its write). */
export type FaultPoint = WorkerPoint | 'inside-commit';

export interface Fault {
  name: string;
  point: FaultPoint;
  jobId: string;
  /** Fire at this unit (for unit-level points); any unit when absent. */
  unit?: number;
  /**
   * pause: a GC-like stall of `ms`. With `untilSuccessorCommits`, the stall ends as soon as
   * another worker has committed this very unit (or after `ms` at most): the incident's
   * interleaving forced by an event instead of hoped for by timing.
   */
  action: { kind: 'pause'; ms: number; untilSuccessorCommits?: boolean } | { kind: 'crash' };
}

/** A fault's name without the word its label already starts with: "CRASH mid-run", not "CRASH crash mid-run". */
const bare = (name: string, word: string): string => name.replace(new RegExp(`^${word}\\s+`, 'i'), '');

/** Has someone committed `unit` of `jobId` (the checkpoint moved past it)? */
export type UnitCommitted = (jobId: string, unit: number) => Promise<boolean>;

export class FaultPlan implements WorkerHooks {
  readonly fired: { name: string; owner: string; at: number }[] = [];
  /** Pauses still sleeping: their workers will wake and try to write. */
  activePauses = 0;
  private readonly pending: Fault[];

  constructor(
    faults: readonly Fault[],
    private readonly clock: Clock,
    private readonly timeline?: Timeline,
    /** Told when a crash fires, with the owner id: the runtime ends that invocation. */
    private readonly onCrash?: (owner: string) => void,
    private readonly unitCommitted?: UnitCommitted,
  ) {
    this.pending = [...faults];
  }

  async at(point: FaultPoint, info: { jobId: string; owner: string; unit?: number }): Promise<void> {
    const i = this.pending.findIndex(
      (f) => f.point === point && f.jobId === info.jobId && (f.unit === undefined || f.unit === info.unit),
    );
    if (i < 0) return;
    const [fault] = this.pending.splice(i, 1);
    if (fault === undefined) return;
    this.fired.push({ name: fault.name, owner: info.owner, at: this.clock.monotonicNow() });
    const lane = laneOf(info.owner);
    if (fault.action.kind === 'crash') {
      this.timeline?.add(lane, 'crash', `CRASH ${bare(fault.name, 'crash')}`);
      this.onCrash?.(info.owner);
      return new Promise<void>(() => undefined);
    }
    this.timeline?.add(lane, 'pause', `PAUSE ${fault.action.ms} ms ${bare(fault.name, 'paused')}`);
    this.activePauses++;
    try {
      const until = this.clock.monotonicNow() + fault.action.ms;
      if (fault.action.untilSuccessorCommits && this.unitCommitted && info.unit !== undefined) {
        while (this.clock.monotonicNow() < until && !(await this.unitCommitted(info.jobId, info.unit))) await this.clock.sleep(25);
      } else {
        await this.clock.sleep(fault.action.ms);
      }
    } finally {
      this.activePauses--;
    }
    this.timeline?.add(lane, 'resume', `resumed after ${fault.name}`);
  }
}
