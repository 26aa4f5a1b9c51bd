/**
 * ObjectPages on S3: one ListObjectsV2 request per page, resumed by `StartAfter` (a key, so the
 * resume point can be stored anywhere, unlike a continuation token, which is opaque and
 * short-lived). Kept apart from S3ObjectStore so the collector's listing can be bounded without
 * touching the store's write path.
 */
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { ListedPage, ObjectPages, StoredObject } from '../effects/object-store.js';

export class S3ObjectPages implements ObjectPages {
  constructor(
    private readonly s3: S3Client,
    readonly bucket: string,
  ) {}

  async page(prefix: string, startAfter: string, maxKeys: number): Promise<ListedPage> {
    const out = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, MaxKeys: maxKeys, ...(startAfter === '' ? {} : { StartAfter: startAfter }) }));
    const objects: StoredObject[] = [];
    for (const o of out.Contents ?? []) {
      if (o.Key !== undefined && o.ETag !== undefined) objects.push({ key: o.Key, etag: o.ETag, lastModified: o.LastModified?.getTime() ?? 0 });
    }
    return { objects, more: out.IsTruncated === true };
  }
}
