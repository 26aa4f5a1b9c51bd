/**
 * What an in-memory @smithy HttpHandler shares, for the real SDK clients (S3Client, SESv2Client)
 * to run against the stand-ins with no socket: the request's body as bytes, its path and query as
 * the wire would carry them, and an answer in the shape NodeHttpHandler gives the SDK (lower-case
 * headers, a content-length, the body a node Readable: GetObject's Body is mixed into a stream the
 * adapters call `transformToByteArray` on, and the SDK's body collector reads any other answer
 * from the same stream).
 */
import { Readable } from 'node:stream';
import type { HttpHandlerOptions, HttpRequest, HttpResponse } from '@smithy/types';
import type { Unanswered } from './errors.js';

/** The SDK's HttpHandler contract (as @smithy/core's `HttpHandler`), which clients take as `requestHandler`. */
export interface SimHttpHandler {
  handle(request: HttpRequest, options?: HttpHandlerOptions): Promise<{ response: HttpResponse }>;
  updateHttpClientConfig(key: never, value: never): void;
  httpHandlerConfigs(): Record<string, never>;
  destroy(): void;
}

/** The handler's config hooks: nothing to configure (no sockets, no timeouts of its own). */
export const noConfig = { updateHttpClientConfig: () => undefined, httpHandlerConfigs: () => ({}), destroy: () => undefined };

/** `/path?query` as the request would put it on the wire (a null value is a bare key: `?versions`). */
export function pathAndQuery(request: HttpRequest): string {
  const enc = encodeURIComponent;
  const query = Object.entries(request.query ?? {})
    .flatMap(([k, v]) => (v === null ? [enc(k)] : [v].flat().map((x) => `${enc(k)}=${enc(x)}`)))
    .join('&');
  return query === '' ? request.path : `${request.path}?${query}`;
}

/** Header names lower case, as a server reads them. */
export const lowerHeaders = (request: HttpRequest): Record<string, string> => Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v]));

/** The request body as bytes: whatever the SDK sends (nothing, a string, bytes, a stream); anything else is refused loudly. */
export async function requestBytes(request: HttpRequest, service: string, unanswered: Unanswered): Promise<Buffer> {
  const body: unknown = request.body;
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (body instanceof Readable || (typeof body === 'object' && Symbol.asyncIterator in body)) {
    const chunks: Buffer[] = [];
    for await (const c of body as AsyncIterable<Uint8Array | string>) chunks.push(typeof c === 'string' ? Buffer.from(c) : Buffer.from(c));
    return Buffer.concat(chunks);
  }
  return unanswered.refuse(service, `${request.method} ${request.path}`, `a request body of type ${Object.prototype.toString.call(body)}`);
}

/** The answer as NodeHttpHandler hands it to the SDK; a HEAD, 204 or 304 carries no body. */
export function sdkResponse(method: string, status: number, headers: Readonly<Record<string, string>>, body: Buffer | string | undefined): { response: HttpResponse } {
  const bytes = body === undefined || method === 'HEAD' || status === 204 || status === 304 ? Buffer.alloc(0) : Buffer.from(body);
  const all: Record<string, string> = { ...headers };
  if (all['content-length'] === undefined) all['content-length'] = String(bytes.length);
  return { response: { statusCode: status, headers: all, body: Readable.from(bytes.length === 0 ? [] : [bytes]) } };
}

/** An aborted request is not sent: the SDK's own abort error, as NodeHttpHandler raises it. */
export function throwIfAborted(options: HttpHandlerOptions | undefined): void {
  const signal = options?.abortSignal;
  if (signal?.aborted) throw Object.assign(new DOMException('The operation was aborted', 'AbortError'), { name: 'AbortError' });
}
