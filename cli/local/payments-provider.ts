/**
 * The local payment provider: an HTTP server with a provider's idempotency contract. `POST
 * /charges` with an `Idempotency-Key`: the first request per key is performed (a charge id is
 * issued) and its answer stored; a later request with the same key and the same body gets that
 * stored answer replayed (`Idempotent-Replayed: true`); the same key with another body is
 * refused (400, `idempotency_error`), as payment providers do. A request without a key is
 * refused too: this provider only takes calls it can deduplicate.
 *
 * Key retention (`keyRetentionMs`, scaled locally; Stripe's is 24 h): a key is forgotten that
 * long after the request that stored it, and a request with it after that is performed again as
 * a new one (another charge id), as a provider that dropped the key does. The record keeps what
 * was forgotten: every charge a key performed and when each request came (`at`, this server's clock).
 *
 * `GET /_record` returns what it performed and received, per key (the checker's view).
 * Fault injection: `down(ms)` answers 503 for a while (nothing performed), `downWhile(p)` while
 * p() holds; `loseResponses(n)` performs the next n requests and closes the connection before
 * answering, `onResponseLost` is told of each.
 *
 * The fault plan plays each row of the HTTP model (lib/workflow/adapters/provider-behaviour.ts),
 * checked in this order before anything is performed, so a refused request leaves no record:
 *   fail5xxBefore(n)  503, nothing performed (an outage that answers)
 *   pause(ms)         403 account_inactive, nothing performed (the account disabled: held)
 *   redirect(n)       302 to another location (the endpoint moved) for the next n keys, on every
 *                     request with them, nothing performed; the outbox id kept in `redirected`
 *                     (refused for good: the sender never follows)
 *   throttle(n)       429 with Retry-After, nothing performed (Stripe's rate limiter runs
 *                     before its idempotency layer, so the key is not stored)
 * and after it was performed:
 *   cut2xx(n, how)    the next n 200s (a charge made or replayed) have their body cut: a JSON
 *                     body cut in half (`truncated`), or half of it and a reset connection
 *                     (`reset`). The charge stands; only its answer is spoiled.
 *   fail5xxAfter(n)   the charge is made and answered 500. Saved (Stripe's behaviour, the
 *                     default): the 500 is the key's answer, replayed with `Idempotent-Replayed:
 *                     true` to every later request until the key is forgotten; not saved: a
 *                     later request replays the charge's 200. It fires on a request that
 *                     performs (a new key or a forgotten one): a replay performs nothing.
 * `fired` counts the answers each fault gave (and `replayed-5xx` the saved 500s replayed).
 *
 * The behaviour (keys, replays, retention, the record, the faults) is payments-core.ts, with no
 * transport; this module is its node:http adapter, as the simulator's fetch is another.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeCutAnswer } from './cut-answer.js';
import { PaymentsCore, type PaymentsOptions, type PaymentsStandIn } from './payments-core.js';

export { DECLINED_CARD, PAYMENT_FAULTS, type KeyRecord, type PaymentFault, type PaymentsStandIn } from './payments-core.js';

export interface PaymentsServerOptions extends PaymentsOptions {
  port?: number;
}

export interface PaymentsProvider extends PaymentsStandIn {
  readonly url: string;
  close(): Promise<void>;
}

export async function startPaymentsProvider(opts: PaymentsServerOptions = {}): Promise<PaymentsProvider> {
  const core = new PaymentsCore(opts);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const header = (n: string) => (typeof req.headers[n] === 'string' ? (req.headers[n] as string) : undefined);
      const answer = core.handle({ method: req.method ?? 'GET', path: req.url, header, body: Buffer.concat(chunks) });
      if (answer.lost) {
        // Performed and recorded; the connection is cut before the answer.
        req.socket.destroy();
        return void core.onResponseLost?.(answer.key);
      }
      if (answer.cut !== undefined) return writeCutAnswer(req, res, answer.status, answer.headers, answer.body, answer.cut);
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
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
