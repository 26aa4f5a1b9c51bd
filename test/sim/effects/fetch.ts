/**
 * A WHATWG `fetch` over the payment provider stand-in's core (cli/local/payments-core.ts) in
 * memory, for FetchHttpProvider's `fetchFn`: the same code the node:http provider runs, a real
 * `Response` back. A lost answer (loseResponses) is performed and then fails as a cut connection
 * (SimNetworkError ECONNRESET: maybe taken, resent with its key). Only the provider's origin is
 * served: any other URL is refused loudly (Unanswered).
 */
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
    return new Response(answer.body, { status: answer.status, headers: answer.headers });
  };
}
