/**
 * The S3 endpoint's "lost put answer" fault, proven from both far sides: the real
 * @aws-sdk/client-s3 saw no answer (it retried: `$metadata.attempts` > 1) and the endpoint's own
 * request log shows the write applied, its answer never written, the resend refused with 412 and
 * the adapter's HEAD that resolved it.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Endpoint, type S3Endpoint } from '../cli/s3-endpoint.js';
import { S3ObjectStore, s3Client } from '../lib/workflow/adapters/index.js';

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
