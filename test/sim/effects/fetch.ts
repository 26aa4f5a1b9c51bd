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
import { SimNetworkError, type Unanswered } from './errors.js';

export const SIM_PAYMENTS_URL = 'http://payments.sim';

export function simFetch(core: PaymentsCore, unanswered: Unanswered, origin = SIM_PAYMENTS_URL): typeof fetch {
  const served = new URL(origin).origin;
  return async (input, init) => {
    // The Request normalizes every form fetch takes (a URL, a string, a Request; headers in any shape).
    const req = new Request(input, init);
    const url = new URL(req.url);
    const what = `${req.method} ${req.url}`;
    if (url.origin !== served) return unanswered.refuse('payments', what, `only ${served} is served`);
    if (req.signal.aborted) throw req.signal.reason;
    const body = Buffer.from(await req.arrayBuffer());
    const answer = core.handle({ method: req.method, path: `${url.pathname}${url.search}`, header: (n) => req.headers.get(n) ?? undefined, body });
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
