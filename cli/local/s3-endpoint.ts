/**
 * A small S3-compatible endpoint for the local runtime: path-style CreateBucket, HeadBucket,
 * PutObject, GetObject, HeadObject, DeleteObject, ListObjectsV2 and ListObjectVersions, with
 * the conditional headers S3 honours (`If-None-Match: *` and `If-Match: <etag>` on PUT,
 * `If-Match` on GET, HEAD and DELETE), evaluated and applied in one synchronous step (Node runs
 * one request handler at a time between awaits: no two writes interleave), answered with S3's
 * status codes and XML error bodies. Every bucket is versioned, as the stack's is: an overwrite
 * or a delete keeps the older versions, so a checker can count how often a key was written.
 *
 * Why hand-written: no S3 emulator installable here honours conditional writes on PutObject
 * (a second `If-None-Match: *` put and a wrong `If-Match` are accepted and overwrite); the
 * protected-file design rests exactly on those refusals. The real @aws-sdk/client-s3
 * (forcePathStyle) is the client; authentication is not checked.
 *
 * Fault injection: `dropResponses(n, match)` applies the next n matching requests and then
 * destroys the connection before any byte of the answer: a lost response, as the fault proxy
 * does for DynamoDB. The answer is built into a response attached to no socket, so not even a
 * status line goes out (ending the real response first, then destroying the socket, would have
 * put a small answer on the wire before the cut: a fault that loses nothing).
 *
 * `answerError(n, status, code, match)` answers the next n matching requests with an S3 error
 * and applies nothing: AWS's 409 ConditionalRequestConflict (a conditional write that raced
 * another write to the key, "retry the request") is one no local race can produce on demand.
 * `denyMissingKeys(true)` answers a GET or HEAD of a missing key 403 AccessDenied instead of 404
 * NoSuchKey, as S3 does to a caller without s3:ListBucket on the bucket.
 *
 * `requests` is the endpoint's own log, one entry per request handled: what a test or a run's
 * report reads to prove from this side that a fault took effect (the write applied, its answer
 * never written, the client's resend, the HEAD that resolved it).
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StoredVersion {
  readonly versionId: string;
  readonly deleteMarker: boolean;
  readonly etag: string;
  readonly body: Buffer;
  readonly contentType: string;
  readonly checksumSha256?: string;
  readonly lastModified: Date;
  readonly metadata: Readonly<Record<string, string>>;
}

/** One request as the endpoint handled it. */
export interface S3Request {
  readonly method: string;
  readonly bucket: string;
  readonly key: string;
  /** The status the endpoint decided on (also for a request whose answer was lost). */
  readonly status: number;
  /** False when the fault cut the connection before any byte of the answer was written. */
  readonly answered: boolean;
}

export interface S3Endpoint {
  readonly url: string;
  /** Every request handled, in order (the endpoint's request log). */
  readonly requests: S3Request[];
  /** Versions per bucket and key, oldest first (what ListObjectVersions reports). */
  readonly buckets: Map<string, Map<string, StoredVersion[]>>;
  /** Apply the next `times` requests matching `match`, then lose their responses. */
  dropResponses(times: number, match: (req: { method: string; key: string }) => boolean): { readonly hits: number };
  /** Answer the next `times` requests matching `match` with `status` and the S3 error `code`, applying nothing. */
  answerError(times: number, status: number, code: string, match: (req: { method: string; key: string }) => boolean): { readonly hits: number };
  /** On: a GET or HEAD of a missing key answers 403 AccessDenied (S3 to a caller without s3:ListBucket); off: 404 NoSuchKey. */
  denyMissingKeys(on: boolean): void;
  close(): Promise<void>;
}

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const MESSAGES: Record<string, string> = {
  NoSuchBucket: 'The specified bucket does not exist',
  NoSuchKey: 'The specified key does not exist.',
  PreconditionFailed: 'At least one of the pre-conditions you specified did not hold',
  BadDigest: 'The x-amz-checksum-sha256 you specified did not match the calculated checksum.',
  NotImplemented: 'A header or query you provided implies functionality that is not implemented.',
  InvalidArgument: 'Invalid Argument',
  ConditionalRequestConflict: 'The conditional request cannot succeed due to a conflicting operation against this resource.',
  AccessDenied: 'Access Denied',
};

function sendError(res: ServerResponse, method: string, status: number, code: string, resource: string, extra = ''): void {
  res.statusCode = status;
  res.setHeader('x-amz-request-id', randomUUID());
  // HEAD answers carry no body: the SDK reads the code from the status alone.
  if (method === 'HEAD') return void res.end();
  res.setHeader('content-type', 'application/xml');
  res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${xmlEscape(MESSAGES[code] ?? code)}</Message>${extra}<Resource>${xmlEscape(resource)}</Resource><RequestId>${randomUUID()}</RequestId></Error>`);
}

/** Reads the request body, undoing the SDK's `aws-chunked` framing when it streams with trailing checksums. */
async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks);
  if (!String(req.headers['content-encoding'] ?? '').includes('aws-chunked')) return raw;
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = raw.indexOf('\r\n', at);
    if (eol < 0) break;
    const size = parseInt(raw.subarray(at, eol).toString('latin1').split(';')[0]!, 16);
    if (!Number.isFinite(size) || size === 0) break;
    out.push(raw.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}

const current = (versions: StoredVersion[] | undefined): StoredVersion | undefined => {
  const last = versions?.[versions.length - 1];
  return last === undefined || last.deleteMarker ? undefined : last;
};

const unquote = (etag: string) => etag.trim().replace(/^W\//, '').replace(/^"|"$/g, '');
/** An `If-Match` / `If-None-Match` list matches `etag` (or `*` any object). */
const matches = (header: string, etag: string | undefined) =>
  etag !== undefined && header.split(',').some((h) => h.trim() === '*' || unquote(h) === unquote(etag));

function objectHeaders(res: ServerResponse, v: StoredVersion, req: IncomingMessage): void {
  res.setHeader('etag', v.etag);
  res.setHeader('last-modified', v.lastModified.toUTCString());
  res.setHeader('content-type', v.contentType);
  res.setHeader('content-length', String(v.body.length));
  res.setHeader('x-amz-version-id', v.versionId);
  for (const [k, val] of Object.entries(v.metadata)) res.setHeader(`x-amz-meta-${k}`, val);
  if (v.checksumSha256 !== undefined && req.headers['x-amz-checksum-mode'] === 'ENABLED') res.setHeader('x-amz-checksum-sha256', v.checksumSha256);
}

export async function startS3Endpoint(opts: { port?: number; host?: string } = {}): Promise<S3Endpoint> {
  const buckets = new Map<string, Map<string, StoredVersion[]>>();
  const drops: { left: number; hits: number; match: (r: { method: string; key: string }) => boolean }[] = [];
  const requests: S3Request[] = [];
  const refusals: { left: number; hits: number; status: number; code: string; match: (r: { method: string; key: string }) => boolean }[] = [];
  const behaviour = { missingKeyStatus: 404 };

  const handle = async (req: IncomingMessage, wire: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://local');
    const method = req.method ?? 'GET';
    const [, bucketName = '', ...rest] = url.pathname.split('/');
    const key = decodeURIComponent(rest.join('/'));
    const body = await readBody(req);
    // Everything below runs without an await: the check and the write are one step.
    const drop = drops.find((d) => d.left > 0 && d.match({ method, key }));
    if (drop !== undefined) {
      drop.left--;
      drop.hits++;
    }
    // A lost answer: the request is applied against a response attached to no socket (it buffers
    // and sends nothing), then the connection is cut before any byte of the answer.
    const res = drop === undefined ? wire : new ServerResponse(req);
    const bucket = buckets.get(bucketName);
    const refusal = refusals.find((r) => r.left > 0 && r.match({ method, key }));
    if (refusal !== undefined) {
      refusal.left--;
      refusal.hits++;
      sendError(res, method, refusal.status, refusal.code, `/${bucketName}/${key}`);
    } else if (key === '') bucketRequest(req, res, method, url, bucketName, buckets);
    else if (bucket === undefined) sendError(res, method, 404, 'NoSuchBucket', `/${bucketName}`);
    else objectRequest(req, res, method, url, bucket, key, body, `/${bucketName}/${key}`, behaviour.missingKeyStatus);
    requests.push({ method, bucket: bucketName, key, status: res.statusCode, answered: drop === undefined });
    if (drop !== undefined) req.socket.destroy();
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) sendError(res, req.method ?? 'GET', 500, 'InternalError', String(e));
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    buckets,
    requests,
    dropResponses(times, match) {
      const d = { left: times, hits: 0, match };
      drops.push(d);
      return d;
    },
    answerError(times, status, code, match) {
      const r = { left: times, hits: 0, status, code, match };
      refusals.push(r);
      return r;
    },
    denyMissingKeys(on) {
      behaviour.missingKeyStatus = on ? 403 : 404;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function bucketRequest(req: IncomingMessage, res: ServerResponse, method: string, url: URL, name: string, buckets: Map<string, Map<string, StoredVersion[]>>): void {
  const bucket = buckets.get(name);
  if (method === 'PUT') {
    // CreateBucket (us-east-1 answers 200 for a bucket the caller owns already); PutBucketVersioning: always on.
    if (bucket === undefined && !url.searchParams.has('versioning')) buckets.set(name, new Map());
    res.setHeader('location', `/${name}`);
    return void res.end();
  }
  if (bucket === undefined) return sendError(res, method, 404, 'NoSuchBucket', `/${name}`);
  if (method === 'HEAD') return void res.end();
  if (method !== 'GET') return sendError(res, method, 501, 'NotImplemented', `/${name}`);
  res.setHeader('content-type', 'application/xml');
  if (url.searchParams.has('versioning')) return void res.end('<?xml version="1.0" encoding="UTF-8"?>\n<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>');
  const prefix = url.searchParams.get('prefix') ?? '';
  const max = Math.min(1000, Number(url.searchParams.get('max-keys') ?? 1000));
  const keys = [...bucket.keys()].filter((k) => k.startsWith(prefix)).sort();
  if (url.searchParams.has('versions')) return void res.end(listVersions(name, bucket, keys, prefix, max, url.searchParams.get('key-marker') ?? ''));
  const after = url.searchParams.get('continuation-token') ?? url.searchParams.get('start-after') ?? '';
  const live = keys.filter((k) => k > after && current(bucket.get(k)) !== undefined);
  const page = live.slice(0, max);
  const truncated = live.length > page.length;
  const contents = page
    .map((k) => {
      const v = current(bucket.get(k))!;
      return `<Contents><Key>${xmlEscape(k)}</Key><LastModified>${v.lastModified.toISOString()}</LastModified><ETag>${xmlEscape(v.etag)}</ETag><Size>${v.body.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`;
    })
    .join('');
  res.end(
    `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult><Name>${xmlEscape(name)}</Name><Prefix>${xmlEscape(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${max}</MaxKeys><IsTruncated>${truncated}</IsTruncated>` +
      (truncated ? `<NextContinuationToken>${xmlEscape(page[page.length - 1]!)}</NextContinuationToken>` : '') +
      `${contents}</ListBucketResult>`,
  );
}

/** ListObjectVersions: every version and delete marker, newest first per key, paged by key. */
function listVersions(name: string, bucket: Map<string, StoredVersion[]>, keys: string[], prefix: string, max: number, marker: string): string {
  const page = keys.filter((k) => k > marker).slice(0, max);
  const truncated = keys.filter((k) => k > marker).length > page.length;
  const entries = page
    .flatMap((k) => {
      const versions = bucket.get(k) ?? [];
      return [...versions].reverse().map((v, i) => {
        const common = `<Key>${xmlEscape(k)}</Key><VersionId>${v.versionId}</VersionId><IsLatest>${i === 0}</IsLatest><LastModified>${v.lastModified.toISOString()}</LastModified>`;
        return v.deleteMarker ? `<DeleteMarker>${common}</DeleteMarker>` : `<Version>${common}<ETag>${xmlEscape(v.etag)}</ETag><Size>${v.body.length}</Size><StorageClass>STANDARD</StorageClass></Version>`;
      });
    })
    .join('');
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<ListVersionsResult><Name>${xmlEscape(name)}</Name><Prefix>${xmlEscape(prefix)}</Prefix><KeyMarker>${xmlEscape(marker)}</KeyMarker><MaxKeys>${max}</MaxKeys><IsTruncated>${truncated}</IsTruncated>` +
    (truncated ? `<NextKeyMarker>${xmlEscape(page[page.length - 1]!)}</NextKeyMarker>` : '') +
    `${entries}</ListVersionsResult>`
  );
}

function objectRequest(req: IncomingMessage, res: ServerResponse, method: string, url: URL, bucket: Map<string, StoredVersion[]>, key: string, body: Buffer, resource: string, missingKeyStatus: number): void {
  const versions = bucket.get(key) ?? [];
  const live = current(versions);
  const ifMatch = req.headers['if-match'];
  const ifNoneMatch = req.headers['if-none-match'];
  const failed = (condition: string) => sendError(res, method, 412, 'PreconditionFailed', resource, `<Condition>${condition}</Condition>`);
  if (method === 'PUT') {
    if (req.headers['x-amz-copy-source'] !== undefined) return sendError(res, method, 501, 'NotImplemented', resource);
    // S3: If-None-Match takes only `*`; If-Match on a missing key is 404 NoSuchKey.
    if (ifNoneMatch !== undefined && ifNoneMatch.trim() !== '*') return sendError(res, method, 501, 'NotImplemented', resource);
    if (ifNoneMatch !== undefined && live !== undefined) return failed('If-None-Match');
    if (ifMatch !== undefined && live === undefined) return sendError(res, method, 404, 'NoSuchKey', resource);
    if (ifMatch !== undefined && !matches(ifMatch, live?.etag)) return failed('If-Match');
    const sha = createHash('sha256').update(body).digest('base64');
    const claimed = req.headers['x-amz-checksum-sha256'];
    if (typeof claimed === 'string' && claimed !== sha) return sendError(res, method, 400, 'BadDigest', resource);
    const metadata = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k.startsWith('x-amz-meta-')).map(([k, v]) => [k.slice(11), String(v)]));
    const v: StoredVersion = {
      versionId: randomUUID().replace(/-/g, ''),
      deleteMarker: false,
      etag: `"${createHash('md5').update(body).digest('hex')}"`,
      body,
      contentType: String(req.headers['content-type'] ?? 'binary/octet-stream'),
      checksumSha256: sha,
      lastModified: new Date(),
      metadata,
    };
    bucket.set(key, [...versions, v]);
    res.setHeader('etag', v.etag);
    res.setHeader('x-amz-version-id', v.versionId);
    if (req.headers['x-amz-checksum-sha256'] !== undefined) res.setHeader('x-amz-checksum-sha256', sha);
    return void res.end();
  }
  if (method === 'DELETE') return deleteObject(res, method, url, bucket, key, versions, live, ifMatch, resource);
  if (method !== 'GET' && method !== 'HEAD') return sendError(res, method, 405, 'MethodNotAllowed', resource);
  const wanted = url.searchParams.get('versionId');
  const v = wanted === null ? live : versions.find((x) => x.versionId === wanted && !x.deleteMarker);
  if (v === undefined) return missingKeyStatus === 403 ? sendError(res, method, 403, 'AccessDenied', resource) : sendError(res, method, 404, 'NoSuchKey', resource);
  if (ifMatch !== undefined && !matches(ifMatch, v.etag)) return failed('If-Match');
  if (ifNoneMatch !== undefined && matches(ifNoneMatch, v.etag)) {
    res.statusCode = 304;
    res.setHeader('etag', v.etag);
    return void res.end();
  }
  objectHeaders(res, v, req);
  res.end(method === 'HEAD' ? undefined : v.body);
}

function deleteObject(res: ServerResponse, method: string, url: URL, bucket: Map<string, StoredVersion[]>, key: string, versions: StoredVersion[], live: StoredVersion | undefined, ifMatch: string | undefined, resource: string): void {
  const versionId = url.searchParams.get('versionId');
  if (versionId !== null) {
    // A permanent delete of one version (the lifecycle rule's job for noncurrent versions).
    bucket.set(key, versions.filter((v) => v.versionId !== versionId));
    res.statusCode = 204;
    res.setHeader('x-amz-version-id', versionId);
    return void res.end();
  }
  // Conditional deletes evaluate the current version: absent with If-Match is 404, another ETag 412.
  if (ifMatch !== undefined && live === undefined) return sendError(res, method, 404, 'NoSuchKey', resource);
  if (ifMatch !== undefined && !matches(ifMatch, live?.etag)) return sendError(res, method, 412, 'PreconditionFailed', resource, '<Condition>If-Match</Condition>');
  const marker: StoredVersion = { versionId: randomUUID().replace(/-/g, ''), deleteMarker: true, etag: '', body: Buffer.alloc(0), contentType: '', lastModified: new Date(), metadata: {} };
  bucket.set(key, [...versions, marker]);
  res.statusCode = 204;
  res.setHeader('x-amz-delete-marker', 'true');
  res.setHeader('x-amz-version-id', marker.versionId);
  res.end();
}
