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
 *   throttle(n)       429 with Retry-After, nothing performed (Stripe's rate limiter runs
 *                     before its idempotency layer, so the key is not stored)
 * and after it was performed:
 *   fail5xxAfter(n)   the charge is made and answered 500. Saved (Stripe's behaviour, the
 *                     default): the 500 is the key's answer, replayed with `Idempotent-Replayed:
 *                     true` to every later request until the key is forgotten; not saved: a
 *                     later request replays the charge's 200. It fires on a request that
 *                     performs (a new key or a forgotten one): a replay performs nothing.
 * `fired` counts the answers each fault gave (and `replayed-5xx` the saved 500s replayed).
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Countdown, counters, Window } from './fault-switch.js';

export interface KeyRecord {
  readonly key: string;
  readonly outboxId: string | undefined;
  readonly outboxTable: string | undefined;
  /** The path the key was first POSTed to: a per-recipient destination's own. */
  readonly path?: string;
  bodyHash: string;
  /** The charge the key now replays (the last one performed). */
  chargeId: string;
  /** Every charge performed under this key: more than one only when a request came after the key was forgotten. */
  charges: string[];
  /** When each request with this key came (ms, this server's clock); `at[0]` is the key's first sight. */
  at: number[];
  /** When the remembered entry was stored: it is forgotten keyRetentionMs after. */
  storedAt: number;
  /** Requests received with this key (the first performed, the rest replayed or refused). */
  requests: number;
  refused: number;
  /** The status of an error saved as the key's answer (a 500 after the charge, Stripe-style): replayed instead of the charge. */
  savedError?: number;
}

/** The kinds of answer the fault plan gives, each counted in `fired`. */
export const PAYMENT_FAULTS = ['throttled', '5xx-after', '5xx-before', 'paused', 'replayed-5xx'] as const;
export type PaymentFault = (typeof PAYMENT_FAULTS)[number];

export interface PaymentsOptions {
  port?: number;
  /** Keys are forgotten this long after they were stored. Default: kept for good. */
  keyRetentionMs?: number;
  /** This server's clock (tests drive it). Default Date.now. */
  now?: () => number;
}

export interface PaymentsProvider {
  readonly url: string;
  readonly records: Map<string, KeyRecord>;
  readonly keyRetentionMs: number | undefined;
  /** Answers 503 for `ms` from now (0: up again). */
  down(ms: number): void;
  /** Answers 503 while `p()` holds, whatever down() says (an outage of its own). */
  downWhile(p: () => boolean): void;
  loseResponses(n: number): void;
  /** Called with the key of each request performed whose answer was lost. */
  onResponseLost?: (key: string) => void;
  /** Requests performed whose answer was lost so far (loseResponses that fired). */
  readonly responsesLost: number;
  /** The Idempotency-Keys of those requests, in order: each has its record, its first answer never written. */
  readonly lostKeys: readonly string[];
  /** Requests refused with 503 while down (nothing performed). */
  readonly refused: number;
  /** The next n requests answer 429 with `Retry-After: retryAfterS` (default 1): nothing performed, nothing stored. */
  throttle(n: number, retryAfterS?: number): void;
  /** The next n requests that perform are answered 500 after the charge; `saved` (default true): the 500 is replayed for the key. */
  fail5xxAfter(n: number, opts?: { saved?: boolean }): void;
  /** The next n requests answer 503 without performing (like down, counted). */
  fail5xxBefore(n: number): void;
  /** The account is disabled for `ms` from now (0: enabled again): 403 account_inactive, nothing performed. */
  pause(ms: number): void;
  /** The account is disabled while `p()` holds, whatever pause() says. */
  pausedWhile(p: () => boolean): void;
  /** How many answers of each kind the fault plan gave. */
  readonly fired: Readonly<Record<PaymentFault, number>>;
  close(): Promise<void>;
}

export async function startPaymentsProvider(opts: PaymentsOptions = {}): Promise<PaymentsProvider> {
  const records = new Map<string, KeyRecord>();
  const now = opts.now ?? Date.now;
  const retention = opts.keyRetentionMs ?? Number.POSITIVE_INFINITY;
  let downUntil = 0;
  let downIf: () => boolean = () => false;
  let lose = 0;
  let lost = 0;
  let refused = 0;
  const lostKeys: string[] = [];
  const fired = counters(PAYMENT_FAULTS);
  const throttled = new Countdown();
  let retryAfterS = 1;
  // Each armed 500-after remembers whether it saves its 500, in the order they were armed.
  const after: boolean[] = [];
  const before = new Countdown();
  const paused = new Window(now);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'GET' && req.url === '/_record') return json(200, [...records.values()]);
      // Any POST path: one fixed endpoint (`/charges`) or a recipient's own below it (a tenant's webhook); the record keeps the path.
      if (req.method !== 'POST' || req.url === undefined || !req.url.startsWith('/') || req.url.startsWith('/_')) return json(404, { error: { type: 'invalid_request_error', message: 'unknown route' } });
      if (now() < downUntil || downIf()) return refused++, json(503, { error: { type: 'api_error', message: 'temporarily unavailable' } });
      const key = req.headers['idempotency-key'];
      if (typeof key !== 'string' || key === '') return json(400, { error: { type: 'invalid_request_error', message: 'Idempotency-Key is required' } });
      // Refused before anything is performed: no record, as for a request that never came.
      if (before.take()) return fired['5xx-before']++, json(503, { error: { type: 'api_error', message: 'The server is temporarily unavailable; nothing was performed.' } });
      if (paused.on) return fired.paused++, json(403, { error: { type: 'invalid_request_error', code: 'account_inactive', message: 'This account is inactive: charges are disabled.' } });
      if (throttled.take()) return fired.throttled++, json(429, { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.' } }, { 'retry-after': String(retryAfterS) });
      const bodyHash = createHash('sha256').update(Buffer.concat(chunks)).digest('hex');
      const t = now();
      let r = records.get(key);
      let replayed = true;
      const chargeId = () => `ch_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
      if (r === undefined) {
        replayed = false;
        const header = (n: string) => (typeof req.headers[n] === 'string' ? (req.headers[n] as string) : undefined);
        const id = chargeId();
        r = { key, path: req.url, outboxId: header('x-outbox-id'), outboxTable: header('x-outbox-table'), bodyHash, chargeId: id, charges: [id], at: [], storedAt: t, requests: 0, refused: 0 };
        records.set(key, r);
      } else if (t - r.storedAt >= retention) {
        // Forgotten: a new request like any other, performed again (a saved error forgotten with it).
        replayed = false;
        Object.assign(r, { bodyHash, chargeId: chargeId(), storedAt: t });
        delete r.savedError;
        r.charges.push(r.chargeId);
      }
      r.requests++;
      r.at.push(t);
      if (r.bodyHash !== bodyHash) {
        r.refused++;
        return json(400, { error: { type: 'idempotency_error', message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.' } });
      }
      const failed = !replayed && after.length > 0 ? after.shift() : undefined;
      if (failed !== undefined) {
        // Performed (the charge is in the record), then the 500: what the caller cannot tell from a charge never made.
        fired['5xx-after']++;
        if (failed) r.savedError = 500;
        return json(500, { error: { type: 'api_error', message: 'An error occurred with our connection to the bank.' } });
      }
      if (lose > 0) {
        lose--;
        lost++;
        lostKeys.push(key);
        req.socket.destroy();
        return void provider.onResponseLost?.(key);
      }
      if (r.savedError !== undefined) {
        fired['replayed-5xx']++;
        return json(r.savedError, { error: { type: 'api_error', message: 'An error occurred with our connection to the bank.' } }, { 'idempotent-replayed': 'true' });
      }
      json(200, { id: r.chargeId, object: 'charge' }, replayed ? { 'idempotent-replayed': 'true' } : {});
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const provider: PaymentsProvider = {
    url: `http://127.0.0.1:${port}`,
    records,
    keyRetentionMs: opts.keyRetentionMs,
    down: (ms) => void (downUntil = now() + ms),
    downWhile: (p) => void (downIf = p),
    loseResponses: (n) => void (lose += n),
    get responsesLost() {
      return lost;
    },
    lostKeys,
    get refused() {
      return refused;
    },
    throttle: (n, s = 1) => {
      throttled.arm(n);
      retryAfterS = s;
    },
    fail5xxAfter: (n, o = {}) => void after.push(...Array.from({ length: Math.max(0, Math.floor(n)) }, () => o.saved ?? true)),
    fail5xxBefore: (n) => before.arm(n),
    pause: (ms) => paused.for(ms),
    pausedWhile: (p) => paused.while(p),
    fired,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return provider;
}
