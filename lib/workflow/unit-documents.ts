/**
 * Step 4a of a unit, when the processor renders documents: put them (new objects, keys holding
 * the generation) BEFORE the unit's transaction; the transaction then publishes their pointers.
 * A holder that stops between the two (a pause the fence then refuses, a crash) leaves orphans
 * nobody points to, never a replaced file.
 */
import { ObjectExistsError } from './effects/object-store.js';
import type { PublishedDocument } from './effects/documents.js';
import { release, type Ready } from './job-steps.js';
import { METRIC } from './ports.js';
import type { WorkOutcome } from './worker.js';

export async function publishUnit(r: Ready, cursor: number): Promise<{ documents: ReadonlyMap<string, PublishedDocument> | undefined } | { end: WorkOutcome }> {
  const target = r.deps.documents;
  const render = r.deps.processor.unitDocuments;
  if (target === undefined || render === undefined) return { documents: undefined };
  const { jobId, owner, g } = r;
  const drafts = render.call(r.deps.processor, r.input, { jobId, generation: g, unit: cursor, tables: r.deps.tables, now: r.deps.clock.wallNow() });
  try {
    const documents = await r.ops.publish(target, drafts);
    r.t.count(METRIC.documentsPublished, drafts.length);
    r.t.event('documents-published', { jobId, owner, generation: g, unit: cursor, documents: drafts.length });
    return { documents };
  } catch (e) {
    // Another body under a key of OUR generation: the processor is not deterministic. Nothing
    // was published; the job cannot go on safely with this processor.
    if (e instanceof ObjectExistsError) throw e;
    // The store did not answer or refused: stop protected work (the message is retried).
    r.t.event('documents-failed', { jobId, owner, generation: g, unit: cursor, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
    await release(r);
    return { end: { kind: 'uncertain', jobId, units: r.units, generation: g, cause: e } };
  }
}
