/**
 * The collector (scheduled): removes documents nobody points to and nobody ever can, and never
 * a referenced one. An object is deleted only when all of these hold:
 *   - it is older than `minAgeMs` (the longest lease plus a margin: the operator's bound);
 *   - no unit of its generation can still commit: the job's fence is above that generation, or
 *     the job is DONE (no unit commits after the last one);
 *   - its pointer (read consistently, after the check above) names another key, or none.
 * The last condition is what makes it safe rather than likely: age alone is a timing bet that a
 * paused holder loses (a holder whose lease lapsed can still commit while nobody has raised the
 * fence), and its commit would then publish a pointer to a deleted object. The delete itself is
 * conditional on the listed ETag (`If-Match`).
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../../protocol/index.js';
import { fenceKeyOf } from '../jobs.js';
import { METRIC, type Telemetry } from '../ports.js';
import { INVOICE_ATTR, JOB_ATTR, type TableNames } from '../schema.js';
import type { ObjectStore } from './object-store.js';

/** How a workload's document keys map to their pointer and their writer (the processor's documentRef). */
export interface DocumentRef {
  readonly jobId: string;
  readonly generation: number;
  /** The item whose `documentKey` publishes it. */
  readonly pointer: { readonly table: string; readonly pk: string };
}

export interface CollectorDeps {
  readonly doc: DynamoDBDocumentClient;
  readonly tables: TableNames;
  readonly store: ObjectStore;
  /** The folder to sweep, e.g. `invoices/` (with the set's `<set>/` before it locally). */
  readonly prefix: string;
  /** Parses a key under `prefix`; undefined for a key the workload does not own (left alone). */
  readonly refOf: (key: string) => DocumentRef | undefined;
  readonly clock: Clock;
  readonly telemetry: Telemetry;
  readonly minAgeMs: number;
}

export interface CollectReport {
  readonly scanned: number;
  readonly referenced: number;
  /** Unreferenced, but young or still publishable by a live generation. */
  readonly kept: number;
  readonly deleted: number;
}

async function get(doc: DynamoDBDocumentClient, table: string, pk: string): Promise<Record<string, unknown> | undefined> {
  return (await doc.send(new GetCommand({ TableName: table, Key: { pk }, ConsistentRead: true }))).Item;
}

const publishes = async (deps: CollectorDeps, ref: DocumentRef, key: string): Promise<boolean> =>
  (await get(deps.doc, ref.pointer.table, ref.pointer.pk))?.[INVOICE_ATTR.documentKey] === key;

/** Can no unit of `ref.generation` ever commit again? */
async function obsolete(deps: CollectorDeps, ref: DocumentRef): Promise<boolean> {
  const fence = await get(deps.doc, deps.tables.fences, fenceKeyOf(ref.jobId));
  if (typeof fence?.generation === 'number' && fence.generation > ref.generation) return true;
  const job = await get(deps.doc, deps.tables.jobs, ref.jobId);
  return job?.[JOB_ATTR.status] === 'DONE';
}

export async function collect(deps: CollectorDeps): Promise<CollectReport> {
  const now = deps.clock.wallNow();
  let scanned = 0;
  let referenced = 0;
  let kept = 0;
  let deleted = 0;
  for await (const o of deps.store.list(deps.prefix)) {
    const ref = deps.refOf(o.key);
    if (ref === undefined) continue;
    scanned++;
    if (await publishes(deps, ref, o.key)) {
      referenced++;
      continue;
    }
    if (now - o.lastModified < deps.minAgeMs || !(await obsolete(deps, ref))) {
      kept++;
      continue;
    }
    // Read the pointer again, AFTER the object was found obsolete: its writer may have committed
    // between the first read and the check (its last unit: the pointer set and the job DONE). From
    // the check on no unit of that generation can commit, so this read is final (model/effects.pml,
    // the collectPointerFirst variant, is the counterexample without it).
    if (await publishes(deps, ref, o.key)) {
      referenced++;
      continue;
    }
    if (await deps.store.deleteIfMatch(o.key, o.etag)) {
      deleted++;
      deps.telemetry.event('document-collected', { key: o.key, generation: ref.generation });
    }
  }
  if (deleted > 0) deps.telemetry.count(METRIC.documentsCollected, deleted);
  const report = { scanned, referenced, kept, deleted };
  deps.telemetry.event('collect-done', { prefix: deps.prefix, ...report });
  return report;
}
