/**
 * Fault injection for the local runtime: the worker's hooks (lib/workflow/run-job.ts WorkerHooks) let a
 * plan pause a worker (a GC pause: resolve later) or crash it (never resolve: nothing after it
 * runs and nothing is released, exactly like a process that died). Each fault fires once.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Clock, Dynamo } from '../../lib/protocol/index.js';
import { fenceKeyOf, readJob, type TableNames, type WorkerHooks, type WorkerPoint } from '../../lib/workflow/index.js';
import { outsideFunctions } from '../local/aws-calls.js';
import { laneOf } from '../local/telemetry.js';
import type { Timeline } from '../shared/timeline.js';

/** A worker point, or a point a test-only protocol variant awaits itself (e.g. between its check and its write). */
export type FaultPoint = WorkerPoint | 'inside-commit';

export interface Fault {
  name: string;
  point: FaultPoint;
  jobId: string;
  /** Fire at this unit (for unit-level points); any unit when absent. */
  unit?: number;
  /** Armed only once the fault of this name has fired (e.g. the successor of a paused worker). */
  after?: string;
  /**
   * pause: a GC-like stall of `ms`. With `until`, the stall ends as soon as the event happened
   * (or after `ms` at most): an interleaving forced by an event instead of hoped for by timing.
   *   successor-commits   another worker has committed this very unit (the article's incident)
   *   successor-fences    a newer generation has raised this job's fence (then, e.g., crashed)
   */
  action: { kind: 'pause'; ms: number; until?: 'successor-commits' | 'successor-fences' } | { kind: 'crash' };
}

/** A fault's name without the word its label already starts with: "CRASH mid-run", not "CRASH crash mid-run". */
const bare = (name: string, word: string): string => name.replace(new RegExp(`^${word}\\s+`, 'i'), '');

/** What a forced pause waits for, read from the tables (not from the worker). */
export interface PauseProbes {
  /** Has someone committed `unit` of `jobId` (the checkpoint moved past it)? */
  unitCommitted(jobId: string, unit: number): Promise<boolean>;
  /** Is `jobId`'s fence above `generation`? */
  fencedAbove(jobId: string, generation: number): Promise<boolean>;
}

/**
 * The pauses' events, read from the tables with the run's own client (`direct`: not through the
 * handlers' wire, not from the worker). The pause runs inside the worker's invocation, but these
 * reads are the run's, no function's: a recorder of AWS calls leaves them out.
 */
export function tableProbes(direct: Dynamo, tables: TableNames, fencePrefix?: string): PauseProbes {
  return {
    unitCommitted: (jobId, unit) => outsideFunctions(async () => ((await readJob(direct.doc, tables.jobs, jobId))?.cursor ?? 0) > unit),
    fencedAbove: (jobId, generation) =>
      outsideFunctions(async () => {
        const fence = (await direct.doc.send(new GetCommand({ TableName: tables.fences, Key: { pk: fenceKeyOf(jobId, fencePrefix) }, ConsistentRead: true }))).Item;
        return typeof fence?.generation === 'number' && fence.generation > generation;
      }),
  };
}

/** What a forced pause waits for, in its timeline label. */
const UNTIL_TEXT = { 'successor-commits': 'until a successor commits its unit', 'successor-fences': 'until a successor raises the fence' } as const;

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
    private readonly probes?: PauseProbes,
    /** Told when a pause begins (e.g. to send a manual requeue while its worker is stalled). */
    private readonly onPause?: (fault: Fault, info: { jobId: string; owner: string }) => void,
  ) {
    this.pending = [...faults];
  }

  /** More faults, for jobs known only once the run has started (its shards). */
  add(faults: readonly Fault[]): void {
    this.pending.push(...faults);
  }

  async at(point: FaultPoint, info: { jobId: string; owner: string; generation?: number; unit?: number }): Promise<void> {
    const armed = (f: Fault) => f.after === undefined || this.fired.some((x) => x.name === f.after);
    const i = this.pending.findIndex(
      (f) => f.point === point && f.jobId === info.jobId && (f.unit === undefined || f.unit === info.unit) && armed(f),
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
    const until = fault.action.until === undefined || this.probes === undefined ? `${fault.action.ms} ms` : UNTIL_TEXT[fault.action.until];
    this.timeline?.add(lane, 'pause', `PAUSE ${until} ${bare(fault.name, 'paused')}`);
    this.activePauses++;
    this.onPause?.(fault, info);
    try {
      const end = this.clock.monotonicNow() + fault.action.ms;
      const happened = this.event(fault.action.until, info);
      if (happened === undefined) await this.clock.sleep(fault.action.ms);
      else while (this.clock.monotonicNow() < end && !(await happened())) await this.clock.sleep(25);
    } finally {
      this.activePauses--;
    }
    this.timeline?.add(lane, 'resume', `resumed after ${fault.name}`);
  }

  /** The probe a forced pause polls, or undefined for a plain timed pause. */
  private event(until: 'successor-commits' | 'successor-fences' | undefined, info: { jobId: string; generation?: number; unit?: number }): (() => Promise<boolean>) | undefined {
    const probes = this.probes;
    if (probes === undefined || until === undefined) return undefined;
    if (until === 'successor-commits') return info.unit === undefined ? undefined : () => probes.unitCommitted(info.jobId, info.unit!);
    return info.generation === undefined ? undefined : () => probes.fencedAbove(info.jobId, info.generation!);
  }
}
