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
 * does for DynamoDB. The answer is decided and never written, so not even a status line goes out
 * (ending the real response first, then destroying the socket, would have put a small answer on
 * the wire before the cut: a fault that loses nothing).
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
 *
 * The behaviour (buckets, conditions, the request log, the faults) is s3-core.ts, with no
 * transport; this module is its node:http adapter, as the simulator's SDK handler is another.
 */
import { createServer, type IncomingMessage, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { S3Core, type S3Answer, type S3StandIn } from './s3-core.js';

export type { S3Request, StoredVersion, S3StandIn } from './s3-core.js';

export interface S3Endpoint extends S3StandIn {
  readonly url: string;
  close(): Promise<void>;
}

async function readRaw(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Node's header values, one string each (only set-cookie comes as a list, and no S3 request carries one). */
const flat = (h: IncomingHttpHeaders): Record<string, string | undefined> => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]));

function write(res: ServerResponse, a: S3Answer): void {
  res.statusCode = a.status;
  for (const [k, v] of Object.entries(a.headers)) res.setHeader(k, v);
  res.end(a.body);
}

export async function startS3Endpoint(opts: { port?: number; host?: string } = {}): Promise<S3Endpoint> {
  const core = new S3Core();
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readRaw(req);
    const answer = core.handle({ method: req.method ?? 'GET', url: req.url ?? '/', headers: flat(req.headers), body });
    // A lost answer: applied, and the connection is cut before any byte of the answer.
    if (answer.lost) return void req.socket.destroy();
    write(res, answer);
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) write(res, core.internalError(req.method ?? 'GET', e));
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(core, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
