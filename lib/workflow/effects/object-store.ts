/**
 * The protected file's store, as a port: what the worker and the collector need of S3, and no
 * more. S3 can refuse to overwrite (`If-None-Match: *`) and compare an ETag (`If-Match`) but
 * cannot compare a generation, so documents are written as new immutable objects whose key
 * holds the generation and published by a pointer in the fenced transaction (documents.ts).
 * The S3 adapter is lib/workflow/adapters/s3-store.ts; the local runtime's endpoint speaks the
 * same protocol (cli/local/s3-endpoint.ts).
 */
import { FencedError } from '../../protocol/index.js';

export interface StoredObject {
  readonly key: string;
  readonly etag: string;
  readonly lastModified: number;
}

export interface ObjectStore extends ObjectPages {
  /**
   * Creates `key` with `body` if no object has that key (`If-None-Match: *`). A refusal whose
   * existing object has this very body (same SHA-256 checksum) is our own earlier put whose
   * answer was lost: its ETag is returned. Any other refusal is ObjectExistsError. A store
   * that cannot tell whether the key exists throws ObjectStateUnknownError, and one whose
   * conditional writes keep conflicting ObjectWriteConflictError (lib/workflow/errors.ts).
   */
  putNew(key: string, body: Uint8Array, contentType: string): Promise<{ etag: string }>;
  /** The object at `key` if its ETag is `etag` (`If-Match`); undefined if absent or replaced. */
  getIfMatch(key: string, etag: string): Promise<Uint8Array | undefined>;
  /** Deletes `key` if its ETag is still `etag` (`If-Match`); false if absent or replaced. */
  deleteIfMatch(key: string, etag: string): Promise<boolean>;
}

/** One page of a listing, in key order. */
export interface ListedPage {
  readonly objects: readonly StoredObject[];
  /** More keys follow the page's last one. */
  readonly more: boolean;
}

/**
 * A listing that resumes after any key (ListObjectsV2 `StartAfter`): what lets the collector stop
 * when its time is spent and the next run go on from there, never from the first key again.
 */
export interface ObjectPages {
  /** At most `maxKeys` live objects under `prefix` whose keys sort after `startAfter` ('' for the first). */
  page(prefix: string, startAfter: string, maxKeys: number): Promise<ListedPage>;
}

/** `putNew` found another object at the key (another body): never overwritten. */
export class ObjectExistsError extends FencedError {
  readonly code = 'OBJECT_EXISTS';
  constructor(readonly key: string) {
    super(`object ${key} exists with other content; objects are never replaced`);
  }
}
