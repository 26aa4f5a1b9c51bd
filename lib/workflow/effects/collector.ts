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
 *
 * Work per run is bounded by its time, not by the bucket: a run lists one page at a time from a
 * durable cursor (collector-cursor.ts), reads the page's pointers in batches, stops before a
 * page once its time is spent, and the next run goes on from there; a run that reaches the end
 * of the prefix goes on from the first key up to where it began, so each run looks at every
 * object at most once and every object is reached within one pass of runs.
 */
import { BatchGetCommand, GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../../protocol/index.js';
import { UnprocessedKeysError } from '../errors.js';
import { fenceKeyOf } from '../jobs.js';
import { readRun } from '../runs.js';
import { METRIC, type Telemetry } from '../ports.js';
import { RECORD_ATTR, JOB_ATTR, type TableNames } from '../schema.js';
import { readCursor, saveCursor } from './collector-cursor.js';
import type { ObjectPages, ObjectStore, StoredObject } from './object-store.js';

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
  /** Deletes (`If-Match`). */
  readonly store: ObjectStore;
  /** Lists, one page at a time, from the cursor. */
  readonly pages: ObjectPages;
  /** The folder to sweep, e.g. the workload's `reports/` (with the set's `<set>/` before it locally). */
  readonly prefix: string;
  /** Parses a key under `prefix`; undefined for a key the workload does not own (left alone). */
  readonly refOf: (key: string) => DocumentRef | undefined;
  readonly clock: Clock;
  readonly telemetry: Telemetry;
  readonly minAgeMs: number;
  /** The workload's fence key prefix (Workload.fenceKeyPrefix). @default 'fence#' */
  readonly fenceKeyPrefix?: string;
}

/** How much one run may do (Lambda's context gives the time). */
export interface CollectWindow {
  /** Time left in this invocation (Lambda's getRemainingTimeInMillis). @default unbounded */
  readonly remainingTimeMs?: () => number;
  /** No page is started with less than this left: one page's work, the cursor write, the metrics flush. @default 10 s */
  readonly reserveMs?: number;
  /** Keys per listed page (ListObjectsV2 allows at most 1,000). @default 1,000 */
  readonly pageSize?: number;
}

export interface CollectReport {
  readonly scanned: number;
  readonly referenced: number;
  /** Unreferenced, but young or still publishable by a live generation. */
  readonly kept: number;
  readonly deleted: number;
  /** Pages listed by this run. */
  readonly pages: number;
  /** The key this run began after, and the key the next one begins after ('' = the first key). */
  readonly from: string;
  readonly resumeAfter: string;
  /** This run reached the end of the prefix (and went on from the first key). */
  readonly wrapped: boolean;
  /** It stopped because its time was spent, before it had looked at every object once. */
  readonly outOfTime: boolean;
}

type Item = Record<string, unknown>;
type Counts = { scanned: number; referenced: number; kept: number; deleted: number };
/** What one run learns once: the shards of each run, and the (writers, generation) pairs that can never commit again (obsolete stays obsolete: fences only rise, DONE is terminal). */
type RunMemo = { runs: Map<string, readonly string[]>; obsolete: Set<string> };

async function get(doc: DynamoDBDocumentClient, table: string, pk: string): Promise<Item | undefined> {
  return (await doc.send(new GetCommand({ TableName: table, Key: { pk }, ConsistentRead: true }))).Item;
}

const publishes = (pointer: Item | undefined, key: string): boolean => pointer?.[RECORD_ATTR.documentKey] === key;
const pointerId = (ref: DocumentRef): string => `${ref.pointer.table}\u0000${ref.pointer.pk}`;
const BATCH_GET_MAX = 100;

/** The pointers of `refs`, read consistently in batches (a page's worth of single reads is what made the collector cost 5.5 ms an object). */
async function readPointers(doc: DynamoDBDocumentClient, refs: readonly DocumentRef[]): Promise<Map<string, Item>> {
  const byTable = new Map<string, Set<string>>();
  for (const r of refs) byTable.set(r.pointer.table, (byTable.get(r.pointer.table) ?? new Set()).add(r.pointer.pk));
  const found = new Map<string, Item>();
  const batches: { table: string; pks: string[] }[] = [];
  for (const [table, pks] of byTable) {
    const all = [...pks];
    for (let i = 0; i < all.length; i += BATCH_GET_MAX) batches.push({ table, pks: all.slice(i, i + BATCH_GET_MAX) });
  }
  await Promise.all(
    batches.map(async ({ table, pks }) => {
      let keys: Item[] | undefined = pks.map((pk) => ({ pk }));
      for (let attempt = 0; keys !== undefined && keys.length > 0; attempt++) {
        if (attempt > 10) throw new UnprocessedKeysError(table, keys.length, 10);
        const out = await doc.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }));
        for (const it of out.Responses?.[table] ?? []) found.set(`${table}\u0000${String(it.pk)}`, it);
        keys = out.UnprocessedKeys?.[table]?.Keys as Item[] | undefined;
      }
    }),
  );
  return found;
}

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
  const named = pointer?.[RECORD_ATTR.jobId];
  if (typeof named !== 'string') return shards;
  return shards.includes(named) ? [named] : [...shards, named];
}

/** Can no unit of `generation` of job `jobId` ever commit again? */
async function obsoleteIn(deps: CollectorDeps, jobId: string, generation: number): Promise<boolean> {
  const fence = await get(deps.doc, deps.tables.fences, fenceKeyOf(jobId, deps.fenceKeyPrefix));
  if (typeof fence?.generation === 'number' && fence.generation > generation) return true;
  const job = await get(deps.doc, deps.tables.jobs, jobId);
  return job?.[JOB_ATTR.status] === 'DONE';
}

/** Can no writer of `ref` ever publish it again? A yes is remembered for the run; a no is asked again. */
async function obsolete(deps: CollectorDeps, ref: DocumentRef, pointer: Item | undefined, memo: RunMemo): Promise<boolean> {
  const writers = await writersOf(deps, ref, pointer, memo.runs);
  const id = `${writers.join('\u0000')}\u0001${ref.generation}`;
  if (memo.obsolete.has(id)) return true;
  for (const jobId of writers) if (!(await obsoleteIn(deps, jobId, ref.generation))) return false;
  memo.obsolete.add(id);
  return true;
}

const DELETE_CONCURRENCY = 8;

/** One listed page: the pointers in batches, the checks, the second pointer read, the deletes. */
async function collectPage(deps: CollectorDeps, objects: readonly StoredObject[], now: number, memo: RunMemo, c: Counts): Promise<void> {
  const owned: { o: StoredObject; ref: DocumentRef }[] = [];
  for (const o of objects) {
    const ref = deps.refOf(o.key);
    if (ref !== undefined) owned.push({ o, ref });
  }
  c.scanned += owned.length;
  const pointers = await readPointers(deps.doc, owned.map((x) => x.ref));
  const candidates: typeof owned = [];
  for (const x of owned) {
    const pointer = pointers.get(pointerId(x.ref));
    if (publishes(pointer, x.o.key)) c.referenced++;
    else if (now - x.o.lastModified < deps.minAgeMs || !(await obsolete(deps, x.ref, pointer, memo))) c.kept++;
    else candidates.push(x);
  }
  if (candidates.length === 0) return;
  // Read the pointers again, AFTER each object was found obsolete: its writer may have committed
  // between the first read and the check (its last unit: the pointer set and the job DONE). From
  // the check on no unit of that generation can commit, so this read is final (model/effects.pml,
  // the collectPointerFirst variant, is the counterexample without it).
  const again = await readPointers(deps.doc, candidates.map((x) => x.ref));
  for (let i = 0; i < candidates.length; i += DELETE_CONCURRENCY) {
    await Promise.all(
      candidates.slice(i, i + DELETE_CONCURRENCY).map(async ({ o, ref }) => {
        if (publishes(again.get(pointerId(ref)), o.key)) return void c.referenced++;
        if (!(await deps.store.deleteIfMatch(o.key, o.etag))) return;
        c.deleted++;
        deps.telemetry.event('document-collected', { key: o.key, generation: ref.generation });
      }),
    );
  }
}

export async function collect(deps: CollectorDeps, window: CollectWindow = {}): Promise<CollectReport> {
  const now = deps.clock.wallNow();
  const start = await readCursor(deps.doc, deps.tables.jobs, deps.prefix);
  const reserveMs = window.reserveMs ?? 10_000;
  const spent = () => window.remainingTimeMs !== undefined && window.remainingTimeMs() < reserveMs;
  const c: Counts = { scanned: 0, referenced: 0, kept: 0, deleted: 0 };
  const memo: RunMemo = { runs: new Map(), obsolete: new Set() };
  let { after, passes } = start;
  let pages = 0;
  let wrapped = false;
  let complete = false;
  let outOfTime = false;
  while (!complete) {
    // At least one page per run, so even a run whose time was spent before it began moves on.
    if (pages > 0 && spent()) {
      outOfTime = true;
      break;
    }
    const page = await deps.pages.page(deps.prefix, after, window.pageSize ?? 1_000);
    pages++;
    // Past the end, the run goes on from the first key only up to where it began.
    const objects = wrapped ? page.objects.filter((o) => o.key <= start.after) : page.objects;
    await collectPage(deps, objects, now, memo, c);
    if (wrapped) {
      complete = objects.length < page.objects.length || !page.more;
      after = complete ? start.after : objects.at(-1)!.key;
    } else if (page.more) after = page.objects.at(-1)!.key;
    else {
      [after, passes, wrapped, complete] = ['', passes + 1, true, start.after === ''];
    }
    await saveCursor(deps.doc, deps.tables.jobs, deps.prefix, { after, passes }, deps.clock.wallNow());
  }
  if (c.deleted > 0) deps.telemetry.count(METRIC.documentsCollected, c.deleted);
  const report: CollectReport = { ...c, pages, from: start.after, resumeAfter: after, wrapped, outOfTime };
  deps.telemetry.event('collect-done', { prefix: deps.prefix, ...report });
  return report;
}
