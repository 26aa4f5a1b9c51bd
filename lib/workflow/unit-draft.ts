/**
 * A unit's transaction, drafted: the processor's effects for it, wrapped with the fence and the
 * checkpoint advance (protocol fenced-unit.ts), and marshalled once. Drafting is pure CPU that
 * needs nothing from the previous unit's outcome, so unit n+1 is drafted while unit n is in
 * flight. A draft carries the `now` it was built with (heartbeat, item stamps); one older than
 * `maxAgeMs` when its turn comes (a pause, a slow renewal in between) is drafted again.
 */
import { marshallOptionsOf, prepareFencedUnit, type Effect, type FencedUnit, type PreparedUnit } from '../protocol/index.js';
import type { PublishedDocument } from './effects/documents.js';
import type { Ready } from './job-steps.js';
import { JOB_ATTR } from './schema.js';

export interface Draft {
  readonly now: number;
  /** Whether this unit stamps the job's heartbeat. */
  readonly beat: boolean;
  readonly unit: FencedUnit;
  readonly prepared?: PreparedUnit;
}

export class UnitDrafter {
  readonly maxAgeMs: number;
  private readonly heartbeatEveryMs: number;
  private readonly marshalling: ReturnType<typeof marshallOptionsOf>;

  constructor(private readonly r: Ready) {
    this.maxAgeMs = Math.min(1_000, r.deps.lease.durationMs / 10);
    this.heartbeatEveryMs = r.deps.heartbeatEveryMs ?? r.deps.lease.durationMs / 4;
    this.marshalling = marshallOptionsOf(r.deps.doc);
  }

  /** Whether units publish documents first: their drafts then wait for the puts (no drafting ahead). */
  get publishes(): boolean {
    return this.r.deps.documents !== undefined && this.r.deps.processor.unitDocuments !== undefined;
  }

  /** The fenced unit for unit `at`: fence, checkpoint advance (DONE on the last unit), effects. */
  unitOf(at: number, now: number, beat: boolean, effects: readonly Effect[], variant: string): FencedUnit {
    const last = at + 1 === this.r.totalUnits;
    return {
      fence: this.r.fence,
      generation: this.r.g,
      checkpoint: {
        table: this.r.deps.tables.jobs,
        key: this.r.jobId,
        expected: at,
        next: at + 1,
        set: { ...(beat ? { [JOB_ATTR.heartbeatAt]: now } : {}), [JOB_ATTR.status]: last ? 'DONE' : 'RUNNING' },
        ...(last ? { remove: [JOB_ATTR.unfinished] } : {}),
      },
      effects,
      token: { job: this.r.jobId, unit: at, variant },
    };
  }

  /** Unit `at` at `now`; the last unit, and the first after `heartbeatEveryMs`, stamp the heartbeat. */
  draft(at: number, now: number, lastBeatBefore: number, documents?: ReadonlyMap<string, PublishedDocument>): Draft {
    const beat = at + 1 === this.r.totalUnits || now - lastBeatBefore >= this.heartbeatEveryMs;
    const ctx = { jobId: this.r.jobId, generation: this.r.g, unit: at, tables: this.r.deps.tables, now, ...(documents === undefined ? {} : { documents }) };
    const effects: Effect[] = this.r.deps.processor.unitEffects(this.r.input, ctx);
    const unit = this.unitOf(at, now, beat, effects, '');
    let prepared: PreparedUnit | undefined;
    try {
      prepared = prepareFencedUnit(unit, now, this.marshalling);
    } catch {
      // Invalid: commitUnit builds it again and throws the typed error, at the unit's turn.
    }
    return { now, beat, unit, ...(prepared === undefined ? {} : { prepared }) };
  }
}
