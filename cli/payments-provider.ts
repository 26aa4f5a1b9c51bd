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
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface KeyRecord {
  readonly key: string;
  readonly outboxId: string | undefined;
  readonly outboxTable: string | undefined;
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
}

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
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'GET' && req.url === '/_record') return json(200, [...records.values()]);
      if (req.method !== 'POST' || req.url !== '/charges') return json(404, { error: { type: 'invalid_request_error', message: 'unknown route' } });
      if (now() < downUntil || downIf()) return refused++, json(503, { error: { type: 'api_error', message: 'temporarily unavailable' } });
      const key = req.headers['idempotency-key'];
      if (typeof key !== 'string' || key === '') return json(400, { error: { type: 'invalid_request_error', message: 'Idempotency-Key is required' } });
      const bodyHash = createHash('sha256').update(Buffer.concat(chunks)).digest('hex');
      const t = now();
      let r = records.get(key);
      let replayed = true;
      const chargeId = () => `ch_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
      if (r === undefined) {
        replayed = false;
        const header = (n: string) => (typeof req.headers[n] === 'string' ? (req.headers[n] as string) : undefined);
        const id = chargeId();
        r = { key, outboxId: header('x-outbox-id'), outboxTable: header('x-outbox-table'), bodyHash, chargeId: id, charges: [id], at: [], storedAt: t, requests: 0, refused: 0 };
        records.set(key, r);
      } else if (t - r.storedAt >= retention) {
        // Forgotten: a new request like any other, performed again.
        replayed = false;
        Object.assign(r, { bodyHash, chargeId: chargeId(), storedAt: t });
        r.charges.push(r.chargeId);
      }
      r.requests++;
      r.at.push(t);
      if (r.bodyHash !== bodyHash) {
        r.refused++;
        return json(400, { error: { type: 'idempotency_error', message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.' } });
      }
      if (lose > 0) {
        lose--;
        lost++;
        lostKeys.push(key);
        req.socket.destroy();
        return void provider.onResponseLost?.(key);
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
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return provider;
}
