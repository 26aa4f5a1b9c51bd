/**
 * ObjectStore on S3 (@aws-sdk/client-s3). `putNew` sends `If-None-Match: *` with the body's
 * SHA-256 checksum (S3 stores it and verifies it); a 412 PreconditionFailed is resolved by a HEAD
 * with the checksum mode enabled: the same checksum is our own earlier put (a retry after a lost
 * answer), anything else is ObjectExistsError. A 409 ConditionalRequestConflict (a racing write
 * on the key) is retried by the SDK's own retry strategy and then resolved the same way.
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
import { localCredentials, localRegion } from '../../protocol/index.js';
import { ObjectExistsError, type ObjectStore, type StoredObject } from '../effects/object-store.js';

const status = (e: unknown): number | undefined => (e instanceof S3ServiceException ? e.$metadata.httpStatusCode : undefined);

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
  constructor(
    private readonly s3: S3Client,
    readonly bucket: string,
  ) {}

  async putNew(key: string, body: Uint8Array, contentType: string): Promise<{ etag: string }> {
    const sha = createHash('sha256').update(body).digest('base64');
    try {
      const out = await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType, IfNoneMatch: '*', ChecksumSHA256: sha }));
      return { etag: out.ETag ?? '' };
    } catch (e) {
      if (status(e) !== 412 && status(e) !== 409) throw e;
      const head = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key, ChecksumMode: 'ENABLED' }));
      if (head.ChecksumSHA256 === sha && head.ETag !== undefined) return { etag: head.ETag };
      throw new ObjectExistsError(key);
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
    try {
      await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key, IfMatch: etag }));
      return true;
    } catch (e) {
      if (status(e) === 404 || status(e) === 412) return false;
      throw e;
    }
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    let token: string | undefined;
    do {
      const page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ...(token === undefined ? {} : { ContinuationToken: token }) }));
      for (const o of page.Contents ?? []) {
        if (o.Key !== undefined && o.ETag !== undefined) yield { key: o.Key, etag: o.ETag, lastModified: o.LastModified?.getTime() ?? 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }
}
