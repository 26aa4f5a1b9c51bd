/**
 * The S3 stand-in's behaviour, with no transport: one request in (method, URL path and query,
 * headers, raw body), one answer out (status, headers, body), and the bucket state, the request log
 * and the fault plan it keeps. The node:http endpoint (s3-endpoint.ts) and the simulator's SDK
 * handler (test/sim/effects/) are thin adapters over it, so both answer with exactly the same
 * semantics; the module comment of s3-endpoint.ts says what those are and why.
 *
 * `handle` runs without an await: the check and the write of a conditional request are one step
 * (no two writes interleave), as S3 evaluates them.
 */
import { createHash, randomUUID } from 'node:crypto';

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

type Match = (req: { method: string; key: string }) => boolean;

/** The state and fault plan every S3 stand-in exposes, whatever carries its requests. */
export interface S3StandIn {
  /** Every request handled, in order (the endpoint's request log). */
  readonly requests: S3Request[];
  /** Versions per bucket and key, oldest first (what ListObjectVersions reports). */
  readonly buckets: Map<string, Map<string, StoredVersion[]>>;
  /** Apply the next `times` requests matching `match`, then lose their responses. */
  dropResponses(times: number, match: Match): { readonly hits: number };
  /** Answer the next `times` requests matching `match` with `status` and the S3 error `code`, applying nothing. */
  answerError(times: number, status: number, code: string, match: Match): { readonly hits: number };
  /** On: a GET or HEAD of a missing key answers 403 AccessDenied (S3 to a caller without s3:ListBucket); off: 404 NoSuchKey. */
  denyMissingKeys(on: boolean): void;
}

/** A request as it arrived: `url` is the path and query as sent (`/bucket/key?versionId=...`), header names lower case. */
export interface S3Call {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The body as sent: `aws-chunked` framing is undone here. */
  readonly body: Buffer;
}

/** The answer to write, or `lost`: applied, and the connection is to be cut before any byte of it. */
export interface S3Answer {
  status: number;
  readonly headers: Record<string, string>;
  body?: Buffer | string;
  lost: boolean;
}

export interface S3CoreOptions {
  /** The wall clock objects are stamped with (default Date.now). */
  now?: () => number;
  /** Where version and request ids come from (default randomUUID): a simulator passes a deterministic source. */
  ids?: () => string;
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

/** Undoes the SDK's `aws-chunked` framing (it streams a body with trailing checksums that way). */
export function decodeBody(raw: Buffer, contentEncoding: string | undefined): Buffer {
  if (!String(contentEncoding ?? '').includes('aws-chunked')) return raw;
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

/** The answer being built: what a ServerResponse would be told (status, headers, one body). */
class Reply implements S3Answer {
  status = 200;
  readonly headers: Record<string, string> = {};
  body?: Buffer | string;
  lost = false;
  set(name: string, value: string): void {
    this.headers[name] = value;
  }
  end(body?: Buffer | string): void {
    if (body !== undefined) this.body = body;
  }
}

export class S3Core implements S3StandIn {
  readonly buckets = new Map<string, Map<string, StoredVersion[]>>();
  readonly requests: S3Request[] = [];
  private readonly drops: { left: number; hits: number; match: Match }[] = [];
  private readonly refusals: { left: number; hits: number; status: number; code: string; match: Match }[] = [];
  private missingKeyStatus = 404;
  private readonly now: () => number;
  private readonly ids: () => string;

  constructor(opts: S3CoreOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.ids = opts.ids ?? randomUUID;
  }

  readonly dropResponses = (times: number, match: Match) => {
    const d = { left: times, hits: 0, match };
    this.drops.push(d);
    return d;
  };

  readonly answerError = (times: number, status: number, code: string, match: Match) => {
    const r = { left: times, hits: 0, status, code, match };
    this.refusals.push(r);
    return r;
  };

  readonly denyMissingKeys = (on: boolean) => {
    this.missingKeyStatus = on ? 403 : 404;
  };

  /** Answers one request (a malformed one 500 InternalError, as the endpoint's catch-all did) and logs it. */
  handle(call: S3Call): S3Answer {
    try {
      return this.answer(call);
    } catch (e) {
      return this.internalError(call.method, e);
    }
  }

  /** S3's 500 InternalError, for a request the endpoint failed to read. */
  internalError(method: string, e: unknown): S3Answer {
    const res = new Reply();
    this.error(res, method, 500, 'InternalError', String(e));
    return res;
  }

  private answer(call: S3Call): S3Answer {
    const url = new URL(call.url, 'http://local');
    const { method } = call;
    const [, bucketName = '', ...rest] = url.pathname.split('/');
    const key = decodeURIComponent(rest.join('/'));
    const body = decodeBody(call.body, call.headers['content-encoding']);
    const drop = this.drops.find((d) => d.left > 0 && d.match({ method, key }));
    if (drop !== undefined) {
      drop.left--;
      drop.hits++;
    }
    const res = new Reply();
    const bucket = this.buckets.get(bucketName);
    const refusal = this.refusals.find((r) => r.left > 0 && r.match({ method, key }));
    if (refusal !== undefined) {
      refusal.left--;
      refusal.hits++;
      this.error(res, method, refusal.status, refusal.code, `/${bucketName}/${key}`);
    } else if (key === '') this.bucketRequest(res, method, url, bucketName);
    else if (bucket === undefined) this.error(res, method, 404, 'NoSuchBucket', `/${bucketName}`);
    else this.objectRequest(call, res, url, bucket, key, body, `/${bucketName}/${key}`);
    // A lost answer: the request was applied; the adapter cuts the connection before any byte of it.
    res.lost = drop !== undefined;
    this.requests.push({ method, bucket: bucketName, key, status: res.status, answered: !res.lost });
    return res;
  }

  private error(res: Reply, method: string, status: number, code: string, resource: string, extra = ''): void {
    res.status = status;
    res.set('x-amz-request-id', this.ids());
    // HEAD answers carry no body: the SDK reads the code from the status alone.
    if (method === 'HEAD') return;
    res.set('content-type', 'application/xml');
    res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${xmlEscape(MESSAGES[code] ?? code)}</Message>${extra}<Resource>${xmlEscape(resource)}</Resource><RequestId>${this.ids()}</RequestId></Error>`);
  }

  private bucketRequest(res: Reply, method: string, url: URL, name: string): void {
    const bucket = this.buckets.get(name);
    if (method === 'PUT') {
      // CreateBucket (us-east-1 answers 200 for a bucket the caller owns already); PutBucketVersioning: always on.
      if (bucket === undefined && !url.searchParams.has('versioning')) this.buckets.set(name, new Map());
      return res.set('location', `/${name}`);
    }
    if (bucket === undefined) return this.error(res, method, 404, 'NoSuchBucket', `/${name}`);
    if (method === 'HEAD') return;
    if (method !== 'GET') return this.error(res, method, 501, 'NotImplemented', `/${name}`);
    res.set('content-type', 'application/xml');
    if (url.searchParams.has('versioning')) return res.end('<?xml version="1.0" encoding="UTF-8"?>\n<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>');
    const prefix = url.searchParams.get('prefix') ?? '';
    const max = Math.min(1000, Number(url.searchParams.get('max-keys') ?? 1000));
    const keys = [...bucket.keys()].filter((k) => k.startsWith(prefix)).sort();
    if (url.searchParams.has('versions')) return res.end(listVersions(name, bucket, keys, prefix, max, url.searchParams.get('key-marker') ?? ''));
    res.end(listObjects(name, bucket, keys, prefix, max, url.searchParams.get('continuation-token') ?? url.searchParams.get('start-after') ?? ''));
  }

  private objectRequest(call: S3Call, res: Reply, url: URL, bucket: Map<string, StoredVersion[]>, key: string, body: Buffer, resource: string): void {
    const { method, headers } = call;
    const versions = bucket.get(key) ?? [];
    const live = current(versions);
    const ifMatch = headers['if-match'];
    const ifNoneMatch = headers['if-none-match'];
    const failed = (condition: string) => this.error(res, method, 412, 'PreconditionFailed', resource, `<Condition>${condition}</Condition>`);
    if (method === 'PUT') {
      if (headers['x-amz-copy-source'] !== undefined) return this.error(res, method, 501, 'NotImplemented', resource);
      // S3: If-None-Match takes only `*`; If-Match on a missing key is 404 NoSuchKey.
      if (ifNoneMatch !== undefined && ifNoneMatch.trim() !== '*') return this.error(res, method, 501, 'NotImplemented', resource);
      if (ifNoneMatch !== undefined && live !== undefined) return failed('If-None-Match');
      if (ifMatch !== undefined && live === undefined) return this.error(res, method, 404, 'NoSuchKey', resource);
      if (ifMatch !== undefined && !matches(ifMatch, live?.etag)) return failed('If-Match');
      return this.putObject(call, res, bucket, key, versions, body, resource);
    }
    if (method === 'DELETE') return this.deleteObject(res, method, url, bucket, key, versions, live, ifMatch, resource);
    if (method !== 'GET' && method !== 'HEAD') return this.error(res, method, 405, 'MethodNotAllowed', resource);
    const wanted = url.searchParams.get('versionId');
    const v = wanted === null ? live : versions.find((x) => x.versionId === wanted && !x.deleteMarker);
    if (v === undefined) return this.missingKeyStatus === 403 ? this.error(res, method, 403, 'AccessDenied', resource) : this.error(res, method, 404, 'NoSuchKey', resource);
    if (ifMatch !== undefined && !matches(ifMatch, v.etag)) return failed('If-Match');
    if (ifNoneMatch !== undefined && matches(ifNoneMatch, v.etag)) {
      res.status = 304;
      return res.set('etag', v.etag);
    }
    objectHeaders(res, v, headers);
    res.end(method === 'HEAD' ? undefined : v.body);
  }

  private putObject(call: S3Call, res: Reply, bucket: Map<string, StoredVersion[]>, key: string, versions: StoredVersion[], body: Buffer, resource: string): void {
    const { headers } = call;
    const sha = createHash('sha256').update(body).digest('base64');
    const claimed = headers['x-amz-checksum-sha256'];
    if (typeof claimed === 'string' && claimed !== sha) return this.error(res, call.method, 400, 'BadDigest', resource);
    const metadata = Object.fromEntries(Object.entries(headers).filter(([k]) => k.startsWith('x-amz-meta-')).map(([k, v]) => [k.slice(11), String(v)]));
    const v: StoredVersion = {
      versionId: this.ids().replace(/-/g, ''),
      deleteMarker: false,
      etag: `"${createHash('md5').update(body).digest('hex')}"`,
      body,
      contentType: String(headers['content-type'] ?? 'binary/octet-stream'),
      checksumSha256: sha,
      lastModified: new Date(this.now()),
      metadata,
    };
    bucket.set(key, [...versions, v]);
    res.set('etag', v.etag);
    res.set('x-amz-version-id', v.versionId);
    if (headers['x-amz-checksum-sha256'] !== undefined) res.set('x-amz-checksum-sha256', sha);
  }

  private deleteObject(res: Reply, method: string, url: URL, bucket: Map<string, StoredVersion[]>, key: string, versions: StoredVersion[], live: StoredVersion | undefined, ifMatch: string | undefined, resource: string): void {
    const versionId = url.searchParams.get('versionId');
    if (versionId !== null) {
      // A permanent delete of one version (the lifecycle rule's job for noncurrent versions).
      bucket.set(key, versions.filter((v) => v.versionId !== versionId));
      res.status = 204;
      return res.set('x-amz-version-id', versionId);
    }
    // Conditional deletes evaluate the current version: absent with If-Match is 404, another ETag 412.
    if (ifMatch !== undefined && live === undefined) return this.error(res, method, 404, 'NoSuchKey', resource);
    if (ifMatch !== undefined && !matches(ifMatch, live?.etag)) return this.error(res, method, 412, 'PreconditionFailed', resource, '<Condition>If-Match</Condition>');
    const marker: StoredVersion = { versionId: this.ids().replace(/-/g, ''), deleteMarker: true, etag: '', body: Buffer.alloc(0), contentType: '', lastModified: new Date(this.now()), metadata: {} };
    bucket.set(key, [...versions, marker]);
    res.status = 204;
    res.set('x-amz-delete-marker', 'true');
    res.set('x-amz-version-id', marker.versionId);
  }
}

function objectHeaders(res: Reply, v: StoredVersion, headers: S3Call['headers']): void {
  res.set('etag', v.etag);
  res.set('last-modified', v.lastModified.toUTCString());
  res.set('content-type', v.contentType);
  res.set('content-length', String(v.body.length));
  res.set('x-amz-version-id', v.versionId);
  for (const [k, val] of Object.entries(v.metadata)) res.set(`x-amz-meta-${k}`, val);
  if (v.checksumSha256 !== undefined && headers['x-amz-checksum-mode'] === 'ENABLED') res.set('x-amz-checksum-sha256', v.checksumSha256);
}

/** ListObjectsV2: the live keys after `after`, one page. */
function listObjects(name: string, bucket: Map<string, StoredVersion[]>, keys: string[], prefix: string, max: number, after: string): string {
  const live = keys.filter((k) => k > after && current(bucket.get(k)) !== undefined);
  const page = live.slice(0, max);
  const truncated = live.length > page.length;
  const contents = page
    .map((k) => {
      const v = current(bucket.get(k))!;
      return `<Contents><Key>${xmlEscape(k)}</Key><LastModified>${v.lastModified.toISOString()}</LastModified><ETag>${xmlEscape(v.etag)}</ETag><Size>${v.body.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`;
    })
    .join('');
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult><Name>${xmlEscape(name)}</Name><Prefix>${xmlEscape(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${max}</MaxKeys><IsTruncated>${truncated}</IsTruncated>` +
    (truncated ? `<NextContinuationToken>${xmlEscape(page[page.length - 1]!)}</NextContinuationToken>` : '') +
    `${contents}</ListBucketResult>`
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
