/**
 * HttpProvider over fetch: a JSON POST with `Idempotency-Key` (how payment providers
 * deduplicate: the first answer per key is replayed, the same key with other parameters is
 * refused), the outbox identity headers, and the target's API key when it has one.
 *
 * The answer's verdict is the providers' behaviour model's (provider-behaviour.ts, HTTP_MODEL):
 * 2xx accepted (a body cut on the way: maybe taken); 429 throttled (Retry-After honoured); 409
 * not taken now; 401/403 held; another 4xx refused for good; a 5xx or no answer maybe taken (a resend with the key is harmless),
 * and a 5xx the provider replays as its saved answer for the key final (UNKNOWN).
 */
import type { DeclineRule, HttpProvider, OutboundCall, SendResult } from '../effects/providers.js';
import { classifyHttp2xx, classifyHttpStatus, classifyNoAnswer } from './provider-behaviour.js';
import { InvalidInputError } from '../../protocol/index.js';
import type { Credential } from './secret-credential.js';

/**
 * JSON with every object's keys in order: the same request on every send. A provider compares a
 * replayed key's parameters with the first request's and refuses a difference as a reused key
 * (Stripe's idempotency_error), while the sender and the reconciler read one item from different
 * places (a stream image, a GetItem), whose maps come back in different key orders.
 */
export function canonicalJson(v: unknown): string {
  return JSON.stringify(v, (_, x: unknown) =>
    x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x,
  );
}

/**
 * The URL of a call: the endpoint itself, or the item's path below the endpoint's own path. The
 * host is always the endpoint's: a path from the item's data cannot name another host.
 */
export function destinationUrl(endpoint: string, path?: string): string {
  if (path === undefined) return endpoint;
  const base = new URL(endpoint);
  const url = new URL(`${base.pathname.replace(/\/+$/, '')}${path}`, base);
  if (url.origin !== base.origin) throw new InvalidInputError('outbox path', `${path} leaves the endpoint's host`);
  return url.toString();
}

export class FetchHttpProvider implements HttpProvider {
  readonly name: string;
  /** The target's declared key retention (HttpProvider.keyRetentionMs): Stripe's is 24 h. */
  readonly keyRetentionMs?: number;
  private readonly declines: DeclineRule | undefined;
  private readonly credential: Credential | undefined;
  constructor(
    private readonly url: string,
    private readonly timeoutMs = 10_000,
    /**
     * `declines`: how this target says a refusal in a 2xx body (HttpTargetSpec.declines).
     * `credential`: the provider's API key, sent as `Authorization: Bearer` on every call.
     */
    opts: { keyRetentionMs?: number | undefined; declines?: DeclineRule | undefined; credential?: Credential | undefined } = {},
    /** How the request goes out (a simulator passes an in-memory one); default the global `fetch`, looked up at each call. */
    private readonly fetchFn: typeof fetch = (input, init) => fetch(input, init),
  ) {
    this.name = `http ${url}`;
    if (opts.keyRetentionMs !== undefined) this.keyRetentionMs = opts.keyRetentionMs;
    this.declines = opts.declines;
    this.credential = opts.credential;
  }

  async post(call: OutboundCall): Promise<SendResult> {
    let auth: Record<string, string> = {};
    try {
      if (this.credential !== undefined) auth = { authorization: `Bearer ${await this.credential.value()}` };
    } catch (e) {
      // Nothing was sent: the item waits, held and alarmed, until the key can be read.
      return { kind: 'held', reason: `the target's credential could not be read: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`.slice(0, 500) };
    }
    let res: Response;
    try {
      res = await this.fetchFn(destinationUrl(this.url, call.path), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': call.idempotencyKey, ...call.headers, ...auth },
        body: canonicalJson(call.body),
        // Never followed: fetch would re-send the POST as a GET without its body, and read the
        // GET's 200 as the effect taken.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      return classifyNoAnswer(e, this.url);
    }
    const text = await res.text().catch(() => undefined);
    if (res.ok) return classifyHttp2xx(res.status, text, { json: /\bjson\b/i.test(res.headers.get('content-type') ?? ''), requestId: res.headers.get('request-id'), declines: this.declines });
    return classifyHttpStatus(res.status, text ?? '', { replayed: res.headers.get('idempotent-replayed') === 'true', retryAfter: res.headers.get('retry-after'), location: res.headers.get('location'), now: Date.now() });
  }
}
