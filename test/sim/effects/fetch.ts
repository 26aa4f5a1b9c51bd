/**
 * A WHATWG `fetch` over the payment provider stand-in's core (cli/local/payments-core.ts) in
 * memory, for FetchHttpProvider's `fetchFn`: the same code the node:http provider runs, a real
 * `Response` back. A lost answer (loseResponses) is performed and then fails as a cut connection
 * (SimNetworkError ECONNRESET: maybe taken, resent with its key); a cut 2xx (cut2xx) is a
 * `Response` whose body is cut the same two ways the node:http provider cuts it. Only the
 * provider's origin is served: any other URL is refused loudly (Unanswered).
 */
import { cutHalf } from '../../../cli/local/fault-switch.js';
import type { PaymentsCore } from '../../../cli/local/payments-core.js';
import type { ShortCutComparison } from '../short-cut.js';
import { SimNetworkError, type Unanswered } from './errors.js';

export const SIM_PAYMENTS_URL = 'http://payments.sim';

/** The request as the core reads it, with what the fetch was asked to go to and its signal. */
interface Call {
  method: string;
  url: URL;
  headers: (name: string) => string | undefined;
  body: Buffer;
  signal: AbortSignal | undefined;
  /** The headers the core may read, as text (what compare mode holds the two readings to). */
  seen(): string;
}

/**
 * The short-cut (test/sim/short-cut.ts's idea for fetch): the form FetchHttpProvider sends (a URL
 * string; headers a plain object of strings, each name once in any case, no value with outer
 * spaces; a string body) read directly; any other goes through a Request, which normalizes every
 * form fetch takes. With `compare`, every short reading is also made the Request's way and the two
 * must agree.
 */
export interface FetchShortCut {
  compare?: ShortCutComparison;
  /** A deliberately broken short reading, for the proof test: rewrites the body it reads. */
  breakBody?: (body: string) => string;
}

export function simFetch(core: PaymentsCore, unanswered: Unanswered, origin = SIM_PAYMENTS_URL, shortCut: 'none' | FetchShortCut = {}): typeof fetch {
  const served = new URL(origin).origin;
  return async (input, init) => {
    const short = shortCut === 'none' ? undefined : shortCall(input, init, shortCut.breakBody);
    const call = short ?? (await requestCall(new Request(input, init)));
    if (short !== undefined && shortCut !== 'none' && shortCut.compare !== undefined) compareCalls(short, await requestCall(new Request(input, init)), shortCut.compare);
    const url = call.url;
    const what = `${call.method} ${url.href}`;
    if (url.origin !== served) return unanswered.refuse('payments', what, `only ${served} is served`);
    if (call.signal?.aborted) throw call.signal.reason;
    const body = call.body;
    const answer = core.handle({ method: call.method, path: `${url.pathname}${url.search}`, header: call.headers, body });
    if (answer.lost) {
      core.onResponseLost?.(answer.key);
      throw new SimNetworkError('ECONNRESET', 'payments', what);
    }
    const head = { status: answer.status, headers: answer.headers };
    if (answer.cut === undefined) return new Response(answer.body, head);
    // A cut body (cut2xx): its first half as the whole answer, or its first half and then the connection reset.
    const half = cutHalf(answer.body);
    if (answer.cut === 'truncated') return new Response(half, head);
    const reset = new SimNetworkError('ECONNRESET', 'payments', what);
    return new Response(new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode(half)), c.error(reset)) }), head);
  };
}

/** The call as a Request reads it: every form fetch takes. */
async function requestCall(req: Request): Promise<Call> {
  const body = Buffer.from(await req.arrayBuffer());
  return { method: req.method, url: new URL(req.url), headers: (n) => req.headers.get(n) ?? undefined, body, signal: req.signal, seen: () => JSON.stringify([...req.headers].sort()) };
}

/** The call read directly, when it has the one form that needs no normalizing; undefined otherwise. */
function shortCall(input: unknown, init: RequestInit | undefined, breakBody: FetchShortCut['breakBody']): Call | undefined {
  if (typeof input !== 'string' || init === undefined || typeof init.body !== 'string' || !plain(init.headers)) return undefined;
  const method = (init.method ?? 'GET').toUpperCase();
  if (method !== 'POST' && method !== 'GET') return undefined;
  const headers = new Map<string, string>();
  for (const [k, v] of Object.entries(init.headers as Record<string, unknown>)) {
    const name = k.toLowerCase();
    if (typeof v !== 'string' || v !== v.trim() || headers.has(name) || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k)) return undefined;
    headers.set(name, v);
  }
  // A Request adds the content type of a string body when none is given.
  if (!headers.has('content-type')) headers.set('content-type', 'text/plain;charset=UTF-8');
  const body = Buffer.from(breakBody === undefined ? init.body : breakBody(init.body), 'utf8');
  return { method, url: new URL(input), headers: (n) => headers.get(n.toLowerCase()), body, signal: init.signal ?? undefined, seen: () => JSON.stringify([...headers].sort()) };
}

const plain = (h: unknown): boolean => h !== null && typeof h === 'object' && Object.getPrototypeOf(h) === Object.prototype;

function compareCalls(short: Call, full: Call, c: ShortCutComparison): void {
  c.compared++;
  c.operations.fetch = (c.operations.fetch ?? 0) + 1;
  const a = `${full.method} ${full.url.href} ${full.seen()} ${full.body.toString('base64')}`;
  const b = `${short.method} ${short.url.href} ${short.seen()} ${short.body.toString('base64')}`;
  if (a !== b) c.differences.push(`fetch: the calls differ\n  request:   ${a}\n  short-cut: ${b}`);
}
