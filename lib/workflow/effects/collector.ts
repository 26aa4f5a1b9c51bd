/**
 * The collector (scheduled): removes documents nobody points to and nobody ever can, and never
 * a referenced one. An object is deleted only when all of these hold:
 *   - it is older than `minAgeMs` (the longest lease plus a margin: the operator's bound);
 *   - no unit of its generation can still commit: the writer job's fence is above that
 *     generation, or the job is DONE (no unit commits after the last one). The writer of a
 *     sharded run's document is one of the run's shards (`ref.jobId` names the run): the shard
 *     its pointer names when the pointer exists (a run's shards bill disjoint work, so each
 *     pointer has one writer job), else every shard of the run must pass that check;
 *   - its pointer (read consistently, after the check above) names another key, or none.
 * The last condition is what makes it safe rather than likely: age alone is a timing bet that a
 * paused holder loses (a holder whose lease lapsed can still commit while nobody has raised the
 * fence), and its commit would then publish a pointer to a deleted object. The delete itself is
 * conditional on the listed ETag (`If-Match`).
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../../protocol/index.js';
import { fenceKeyOf } from '../jobs.js';
import { readRun } from '../runs.js';
import { METRIC, type Telemetry } from '../ports.js';
import { INVOICE_ATTR, JOB_ATTR, type TableNames } from '../schema.js';
import type { ObjectStore } from './object-store.js';

/** How a workload's document keys map to their pointer and their writer (the processor's documentRef). */
export interface DocumentRef {
  /** The job that wrote it, or the run whose shards did (the collector reads the run record). */
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

type Item = Record<string, unknown>;
const publishes = (pointer: Item | undefined, key: string): boolean => pointer?.[INVOICE_ATTR.documentKey] === key;
const pointerOf = (deps: CollectorDeps, ref: DocumentRef): Promise<Item | undefined> => get(deps.doc, ref.pointer.table, ref.pointer.pk);

/**
 * The jobs that may have written a document of `ref`: the shards of the run `ref.jobId` names
 * (that job alone when it names no run), narrowed to the pointer's writer when the pointer names
 * one of them; a pointer naming a job outside the run adds it (one more job that must be done).
 */
async function writersOf(deps: CollectorDeps, ref: DocumentRef, pointer: Item | undefined, runs: Map<string, readonly string[]>): Promise<readonly string[]> {
  let shards = runs.get(ref.jobId);
  if (shards === undefined) {
    shards = (await readRun(deps.doc, deps.tables.jobs, ref.jobId))?.shards ?? [ref.jobId];
    runs.set(ref.jobId, shards);
  }
  const named = pointer?.[INVOICE_ATTR.jobId];
  if (typeof named !== 'string') return shards;
  return shards.includes(named) ? [named] : [...shards, named];
}

/** Can no unit of `generation` of job `jobId` ever commit again? */
async function obsoleteIn(deps: CollectorDeps, jobId: string, generation: number): Promise<boolean> {
  const fence = await get(deps.doc, deps.tables.fences, fenceKeyOf(jobId));
  if (typeof fence?.generation === 'number' && fence.generation > generation) return true;
  const job = await get(deps.doc, deps.tables.jobs, jobId);
  return job?.[JOB_ATTR.status] === 'DONE';
}

/** Can no writer of `ref` ever publish it again? */
async function obsolete(deps: CollectorDeps, writers: readonly string[], ref: DocumentRef): Promise<boolean> {
  for (const jobId of writers) if (!(await obsoleteIn(deps, jobId, ref.generation))) return false;
  return true;
}

export async function collect(deps: CollectorDeps): Promise<CollectReport> {
  const now = deps.clock.wallNow();
  let scanned = 0;
  let referenced = 0;
  let kept = 0;
  let deleted = 0;
  const runs = new Map<string, readonly string[]>();
  for await (const o of deps.store.list(deps.prefix)) {
    const ref = deps.refOf(o.key);
    if (ref === undefined) continue;
    scanned++;
    const pointer = await pointerOf(deps, ref);
    if (publishes(pointer, o.key)) {
      referenced++;
      continue;
    }
    if (now - o.lastModified < deps.minAgeMs || !(await obsolete(deps, await writersOf(deps, ref, pointer, runs), ref))) {
      kept++;
      continue;
    }
    // Read the pointer again, AFTER the object was found obsolete: its writer may have committed
    // between the first read and the check (its last unit: the pointer set and the job DONE). From
    // the check on no unit of that generation can commit, so this read is final (model/effects.pml,
    // the collectPointerFirst variant, is the counterexample without it).
    if (publishes(await pointerOf(deps, ref), o.key)) {
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
