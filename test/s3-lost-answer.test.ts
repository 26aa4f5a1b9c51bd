// tier: quick
/**
 * S3's answers as AWS gives them, forced on the local endpoint. A 409 ConditionalRequestConflict
 * (a conditional write raced another write on the key; the SDK does not retry it) is retried by
 * the adapter with backoff, for a put and for a delete, up to a bound and then a typed error. A
 * HEAD answered 403 for a missing key (S3 to a role without s3:ListBucket) is neither "exists"
 * nor "missing": a typed error; with the grant (404) the key is free and the put lands.
 *
 * The S3 endpoint's "lost put answer" fault, proven from both far sides: the real
 * @aws-sdk/client-s3 saw no answer (it retried: `$metadata.attempts` > 1) and the endpoint's own
 * request log shows the write applied, its answer never written, the resend refused with 412 and
 * the adapter's HEAD that resolved it.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Endpoint, type S3Endpoint } from '../cli/local/s3-endpoint.js';
import { S3ObjectStore, s3Client } from '../lib/workflow/adapters/index.js';
import { ObjectStateUnknownError, ObjectWriteConflictError } from '../lib/workflow/index.js';

let s3: S3Endpoint;
beforeAll(async () => {
  s3 = await startS3Endpoint();
  await s3Client({ endpoint: s3.url }).send(new CreateBucketCommand({ Bucket: 'docs' }));
});
afterAll(async () => s3.close());

describe('a lost S3 put answer', () => {
  it('the put is applied and no byte of its answer reaches the client: the SDK resends, the resend meets 412, one version is stored', async () => {
    const c = s3Client({ endpoint: s3.url });
    const lost = s3.dropResponses(1, (r) => r.method === 'PUT' && r.key === 'lost/1.json');
    const e = await c.send(new PutObjectCommand({ Bucket: 'docs', Key: 'lost/1.json', Body: 'one', IfNoneMatch: '*' })).then(
      (out) => out,
      (err: unknown) => err,
    );
    expect(lost.hits).toBe(1);
    // The first answer was lost: the SDK sent again, and its resend met our own applied put.
    expect(e).toMatchObject({ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412, attempts: 2 } });
    expect(s3.buckets.get('docs')!.get('lost/1.json')!.map((v) => v.body.toString())).toEqual(['one']);
    c.destroy();
  });

  it('the adapter resolves it by a HEAD: the endpoint logs the applied put unanswered, the refused resend and the HEAD', async () => {
    const c = s3Client({ endpoint: s3.url });
    const store = new S3ObjectStore(c, 'docs');
    const from = s3.requests.length;
    const lost = s3.dropResponses(1, (r) => r.method === 'PUT' && r.key === 'lost/2.json');
    const { etag } = await store.putNew('lost/2.json', Buffer.from('{"generation":2}'), 'application/json');
    expect(lost.hits).toBe(1);
    expect(s3.requests.slice(from).map((r) => [r.method, r.key, r.status, r.answered])).toEqual([
      ['PUT', 'lost/2.json', 200, false],
      ['PUT', 'lost/2.json', 412, true],
      ['HEAD', 'lost/2.json', 200, true],
    ]);
    expect(etag).toBe(s3.buckets.get('docs')!.get('lost/2.json')![0]!.etag);
    c.destroy();
  });
});

const quick = { conflictAttempts: 4, backoff: { baseMs: 1, capMs: 4 } };
const logOf = (from: number, key: string) => s3.requests.slice(from).filter((r) => r.key === key).map((r) => [r.method, r.status]);
const stored = (key: string) => (s3.buckets.get('docs')!.get(key) ?? []).map((v) => (v.deleteMarker ? 'deleted' : v.body.toString()));

describe('S3 answers as AWS gives them', () => {
  it('a put whose first attempt gets 409 ConditionalRequestConflict is retried and lands once', async () => {
    const c = s3Client({ endpoint: s3.url });
    const store = new S3ObjectStore(c, 'docs', quick);
    const from = s3.requests.length;
    const conflict = s3.answerError(1, 409, 'ConditionalRequestConflict', (r) => r.method === 'PUT' && r.key === 'race/1.json');
    const { etag } = await store.putNew('race/1.json', Buffer.from('one'), 'application/json');
    expect(conflict.hits).toBe(1);
    expect(logOf(from, 'race/1.json')).toEqual([
      ['PUT', 409],
      ['PUT', 200],
    ]);
    expect(stored('race/1.json')).toEqual(['one']);
    expect(etag).toBe(s3.buckets.get('docs')!.get('race/1.json')![0]!.etag);
    c.destroy();
  });

  it('a put that keeps getting 409 ends in ObjectWriteConflictError after the bound, and wrote nothing', async () => {
    const c = s3Client({ endpoint: s3.url });
    const store = new S3ObjectStore(c, 'docs', quick);
    const from = s3.requests.length;
    s3.answerError(100, 409, 'ConditionalRequestConflict', (r) => r.method === 'PUT' && r.key === 'race/2.json');
    const e = await store.putNew('race/2.json', Buffer.from('two'), 'application/json').catch((err: unknown) => err);
    expect(e).toBeInstanceOf(ObjectWriteConflictError);
    expect(e).toMatchObject({ code: 'OBJECT_WRITE_CONFLICT', operation: 'put', key: 'race/2.json', attempts: 4 });
    // One PUT per adapter attempt: the SDK itself never retried a 409.
    expect(logOf(from, 'race/2.json')).toEqual(Array.from({ length: 4 }, () => ['PUT', 409]));
    expect(stored('race/2.json')).toEqual([]);
    c.destroy();
  });

  it('a 412 whose HEAD answers 403 for a missing key (no s3:ListBucket) is ObjectStateUnknownError: neither "exists" nor a blind re-put', async () => {
    const c = s3Client({ endpoint: s3.url });
    const store = new S3ObjectStore(c, 'docs', quick);
    const from = s3.requests.length;
    // The refusing object is gone by the HEAD (the collector deleted it): the key is missing.
    s3.answerError(1, 412, 'PreconditionFailed', (r) => r.method === 'PUT' && r.key === 'denied/1.json');
    s3.denyMissingKeys(true);
    try {
      const e = await store.putNew('denied/1.json', Buffer.from('d'), 'application/json').catch((err: unknown) => err);
      expect(e).toBeInstanceOf(ObjectStateUnknownError);
      expect(e).toMatchObject({ code: 'OBJECT_STATE_UNKNOWN', key: 'denied/1.json', status: 403 });
    } finally {
      s3.denyMissingKeys(false);
    }
    expect(logOf(from, 'denied/1.json')).toEqual([
      ['PUT', 412],
      ['HEAD', 403],
    ]);
    expect(stored('denied/1.json')).toEqual([]);
    c.destroy();
  });

  it('with s3:ListBucket the same HEAD answers 404: the key is free again, and the conditional put is retried and lands', async () => {
    const c = s3Client({ endpoint: s3.url });
    const store = new S3ObjectStore(c, 'docs', quick);
    const from = s3.requests.length;
    s3.answerError(1, 412, 'PreconditionFailed', (r) => r.method === 'PUT' && r.key === 'denied/2.json');
    await store.putNew('denied/2.json', Buffer.from('d2'), 'application/json');
    expect(logOf(from, 'denied/2.json')).toEqual([
      ['PUT', 412],
      ['HEAD', 404],
      ['PUT', 200],
    ]);
    expect(stored('denied/2.json')).toEqual(['d2']);
    c.destroy();
  });

  it('a conditional delete whose first attempt gets 409 is retried (a conflict is "try again", not an abort)', async () => {
    const c = s3Client({ endpoint: s3.url });
    const store = new S3ObjectStore(c, 'docs', quick);
    const { etag } = await store.putNew('race/3.json', Buffer.from('three'), 'application/json');
    const from = s3.requests.length;
    s3.answerError(1, 409, 'ConditionalRequestConflict', (r) => r.method === 'DELETE' && r.key === 'race/3.json');
    expect(await store.deleteIfMatch('race/3.json', etag)).toBe(true);
    expect(logOf(from, 'race/3.json')).toEqual([
      ['DELETE', 409],
      ['DELETE', 204],
    ]);
    expect(stored('race/3.json')).toEqual(['three', 'deleted']);
    c.destroy();
  });

  it('a delete that keeps getting 409 ends in ObjectWriteConflictError after the bound; the object stays', async () => {
    const c = s3Client({ endpoint: s3.url });
    const store = new S3ObjectStore(c, 'docs', quick);
    const { etag } = await store.putNew('race/4.json', Buffer.from('four'), 'application/json');
    s3.answerError(100, 409, 'ConditionalRequestConflict', (r) => r.method === 'DELETE' && r.key === 'race/4.json');
    const e = await store.deleteIfMatch('race/4.json', etag).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(ObjectWriteConflictError);
    expect(e).toMatchObject({ operation: 'delete', key: 'race/4.json', attempts: 4 });
    expect(stored('race/4.json')).toEqual(['four']);
    c.destroy();
  });
});
