/**
 * The one thing a fork replaces: what a job does, unit by unit.
 *
 * A processor is pure and deterministic: given the job input and a unit index it returns that
 * unit's effects. The worker wraps each unit in ONE fenced transaction (fence + checkpoint +
 * effects), so a processor never talks to DynamoDB and never sees a lease.
 * Rules for effects (DESIGN.md): upserts are guarded by the fence; anything that must happen
 * once (a charge, a ledger entry, an outbox message) is `onceOnly` with a stable operation key.
 * At most MAX_UNIT_EFFECTS (98) effects per unit: 100 transaction actions minus the fence and the
 * checkpoint, 4 MB in all. A processor that writes k effects per item of a unit (a tenant, an
 * order) can take at most maxUnitSize(k) items per unit.
 */
import { MAX_UNIT_EFFECTS, type Effect, type Generation } from '../protocol/index.js';
import type { DocumentRef } from './effects/collector.js';
import type { DocumentDraft, PublishedDocument } from './effects/documents.js';
import type { TableNames } from './schema.js';

export interface UnitContext {
  jobId: string;
  generation: Generation;
  unit: number;
  tables: TableNames;
  /** Wall-clock ms to stamp on items (the writer's view; informational only). */
  now: number;
  /**
   * The unit's documents as the worker put them (unitDocuments), by ref: what unitEffects
   * writes as pointers. Absent when the workflow has no document store.
   */
  documents?: ReadonlyMap<string, PublishedDocument>;
}

export interface Processor<Input> {
  /** Job type name, e.g. "report-run". */
  readonly name: string;
  /** Validates raw job input; throws InvalidInputError for input that can never succeed (the job ends FAILED). */
  parseInput(raw: unknown): Input;
  totalUnits(input: Input): number;
  unitEffects(input: Input, ctx: UnitContext): Effect[];
  /**
   * The unit's documents (the protected file), rendered: the worker puts them BEFORE the unit's
   * transaction, each under a key that holds the generation, and hands their pointers to
   * unitEffects. Deterministic for (input, generation, unit): never the clock, so a unit drafted
   * again puts the same bytes (a harmless retry) instead of a conflicting object.
   */
  unitDocuments?(input: Input, ctx: UnitContext): DocumentDraft[];
  /** The collector's map from a document key (below the set) to its pointer and writer; with unitDocuments. */
  documents?: { readonly prefix: string; refOf(name: string, tables: TableNames): DocumentRef | undefined };
}

/** The most items a unit can hold when each writes `effectsPerItem` effects: one transaction must hold them all. */
export function maxUnitSize(effectsPerItem: number): number {
  return Math.floor(MAX_UNIT_EFFECTS / effectsPerItem);
}
