/**
 * ObjectStore on S3 (@aws-sdk/client-s3). `putNew` sends `If-None-Match: *` with the body's
 * SHA-256 checksum (S3 stores it and verifies it); a 412 PreconditionFailed is resolved by a HEAD
 * with the checksum mode enabled: the same checksum is our own earlier put (a retry after a lost
 * answer), another is ObjectExistsError, a 404 means the refusing object is gone (the collector
 * deleted it) and the conditional put is tried again, a 403 is ObjectStateUnknownError.
 *
 * A 409 ConditionalRequestConflict (a conditional write that raced another write on the key) is
 * retried here, with full-jitter backoff, up to `conflictAttempts`, then ObjectWriteConflictError:
 * the SDK's retry strategy does not count 409 as transient, and S3 documents it as "retry the
 * request". The same holds for the collector's conditional DELETE: a conflict is "try again".
 *
 * Why a 403 is not guessed: S3 answers a HEAD of a missing key 403 to a role without
 * s3:ListBucket. The stack grants s3:ListBucket on the documents prefix to the worker and the
 * collector (infra/constructs/external-effects.ts), so a missing key reads 404 there; a 403 that
 * still comes means the grant is absent or the object unreadable, and the put is failed, typed.
 */
import { createHash } from 'node:crypto';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { fullJitter, localCredentials, localRegion, type BackoffPolicy } from '../../protocol/index.js';
import { ObjectExistsError, type ListedPage, type ObjectStore, type StoredObject } from '../effects/object-store.js';
import { ObjectStateUnknownError, ObjectWriteConflictError } from '../errors.js';

const status = (e: unknown): number | undefined => (e instanceof S3ServiceException ? e.$metadata.httpStatusCode : undefined);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface S3ObjectStoreOptions {
  /** Attempts of one conditional write that S3 answers 409 ConditionalRequestConflict (default 5). */
  readonly conflictAttempts?: number;
  /** The backoff between them (default 50 ms doubling to 1 s: a racing write on one key is short). */
  readonly backoff?: BackoffPolicy;
}

/** What one put attempt concluded: landed (or found our own), or the key is free again. */
type PutOutcome = { etag: string } | 'retry';

/** An S3 client for a bucket; `endpoint` (path-style) for an S3-compatible server such as the local one. */
export function s3Client(opts: { endpoint?: string; region?: string } = {}): S3Client {
  const config: S3ClientConfig = {
    ...(opts.region === undefined ? {} : { region: opts.region }),
    // The checksum the adapter sends is the one it compares: no second, SDK-chosen one.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
  if (opts.endpoint !== undefined) {
    Object.assign(config, {
      endpoint: opts.endpoint,
      forcePathStyle: true,
      region: opts.region ?? localRegion(),
      ...localCredentials(),
    });
  }
  return new S3Client(config);
}

export class S3ObjectStore implements ObjectStore {
  private readonly attempts: number;
  private readonly backoff: BackoffPolicy;

  constructor(
    private readonly s3: S3Client,
    readonly bucket: string,
    opts: S3ObjectStoreOptions = {},
  ) {
    this.attempts = Math.max(1, opts.conflictAttempts ?? 5);
    this.backoff = opts.backoff ?? { baseMs: 50, capMs: 1_000 };
  }

  async putNew(key: string, body: Uint8Array, contentType: string): Promise<{ etag: string }> {
    const sha = createHash('sha256').update(body).digest('base64');
    // Each round is one conditional put; a 409 or a refusing object since deleted starts another.
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      if (attempt > 0) await sleep(fullJitter(attempt - 1, this.backoff));
      const outcome = await this.putOnce(key, body, contentType, sha);
      if (outcome !== 'retry') return outcome;
    }
    throw new ObjectWriteConflictError('put', key, this.attempts);
  }

  private async putOnce(key: string, body: Uint8Array, contentType: string, sha: string): Promise<PutOutcome> {
    try {
      const out = await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType, IfNoneMatch: '*', ChecksumSHA256: sha }));
      return { etag: out.ETag ?? '' };
    } catch (e) {
      // A 409 is a refusal before the write (nothing of ours landed): put again.
      if (status(e) === 409) return 'retry';
      if (status(e) !== 412) throw e;
    }
    return this.resolveRefusal(key, sha);
  }

  /** After a 412: whose object holds the key? Ours (same checksum), another's, or none any more. */
  private async resolveRefusal(key: string, sha: string): Promise<PutOutcome> {
    try {
      const head = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key, ChecksumMode: 'ENABLED' }));
      if (head.ChecksumSHA256 === sha && head.ETag !== undefined) return { etag: head.ETag };
      throw new ObjectExistsError(key);
    } catch (e) {
      // Gone since the 412 (the collector removed an orphan): the conditional put decides again.
      if (status(e) === 404) return 'retry';
      // "Missing, or not yours to read": neither answer is guessed (see the module comment).
      if (status(e) === 403) throw new ObjectStateUnknownError(key, 403);
      throw e;
    }
  }

  async getIfMatch(key: string, etag: string): Promise<Uint8Array | undefined> {
    try {
      const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, IfMatch: etag }));
      return await out.Body!.transformToByteArray();
    } catch (e) {
      if (status(e) === 404 || status(e) === 412) return undefined;
      throw e;
    }
  }

  async deleteIfMatch(key: string, etag: string): Promise<boolean> {
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      if (attempt > 0) await sleep(fullJitter(attempt - 1, this.backoff));
      try {
        await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key, IfMatch: etag }));
        return true;
      } catch (e) {
        if (status(e) === 404 || status(e) === 412) return false;
        // A racing write on the key refused this delete before it applied: "try again", not an abort.
        if (status(e) !== 409) throw e;
      }
    }
    throw new ObjectWriteConflictError('delete', key, this.attempts);
  }

  /**
   * One ListObjectsV2 request per page, resumed by `StartAfter`: a key, so the resume point can
   * be stored anywhere (a continuation token is opaque and short-lived), and a bounded run never
   * has to list from the first key again.
   */
  async page(prefix: string, startAfter: string, maxKeys: number): Promise<ListedPage> {
    const out = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, MaxKeys: maxKeys, ...(startAfter === '' ? {} : { StartAfter: startAfter }) }));
    const objects: StoredObject[] = [];
    for (const o of out.Contents ?? []) {
      if (o.Key !== undefined && o.ETag !== undefined) objects.push({ key: o.Key, etag: o.ETag, lastModified: o.LastModified?.getTime() ?? 0 });
    }
    return { objects, more: out.IsTruncated === true };
  }
}
