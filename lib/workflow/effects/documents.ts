/**
 * The protected file (DESIGN.md, Documents): a unit's documents are written BEFORE its fenced
 * transaction, each as a new immutable object whose key holds the writer's generation
 * (`If-None-Match: *`: never replaced, a retry harmless), and published by the pointer the
 * transaction writes (the record's `documentKey` + `documentEtag`). A stale holder's objects are
 * orphans nobody points to; the collector (collector.ts) removes them once no unit can ever
 * publish them. The processor renders (pure); the worker puts.
 */
import type { ObjectStore } from './object-store.js';

/** A document a processor renders for a unit: `name` is its key below the set, e.g. `reports/2026-10-01/tenant-1/7.json`. */
export interface DocumentDraft {
  /** What the processor calls it when it writes the pointer (an item's id). */
  readonly ref: string;
  readonly name: string;
  /** Deterministic for (input, generation, unit): a redrafted unit puts the very same bytes. */
  readonly body: string;
  readonly contentType: string;
}

export interface PublishedDocument {
  readonly key: string;
  readonly etag: string;
}

/** Where a workflow's documents go: the store, the leading `<set>/` folder (a local table set; none in AWS), a put concurrency. */
export interface DocumentTarget {
  readonly store: ObjectStore;
  readonly set?: string;
  /** Puts in flight at once per unit. Default 8. */
  readonly concurrency?: number;
}

/** The object key of a document: `[<set>/]<name>`. */
export const documentKey = (set: string | undefined, name: string): string => (set === undefined || set === '' ? name : `${set}/${name}`);

/** Puts every draft (at most `concurrency` at once) and returns the pointers by ref. Throws on the first failure. */
export async function publishDocuments(target: DocumentTarget, drafts: readonly DocumentDraft[]): Promise<Map<string, PublishedDocument>> {
  const out = new Map<string, PublishedDocument>();
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < drafts.length; i = next++) {
      const d = drafts[i]!;
      const key = documentKey(target.set, d.name);
      const { etag } = await target.store.putNew(key, Buffer.from(d.body, 'utf8'), d.contentType);
      out.set(d.ref, { key, etag });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(target.concurrency ?? 8, drafts.length)) }, lane));
  return out;
}
