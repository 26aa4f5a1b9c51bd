/**
 * The local payment provider: an HTTP server with a provider's idempotency contract. `POST
 * /charges` with an `Idempotency-Key`: the first request per key is performed (a charge id is
 * issued) and its answer stored; a later request with the same key and the same body gets that
 * stored answer replayed (`Idempotent-Replayed: true`); the same key with another body is
 * refused (400, `idempotency_error`), as payment providers do. A request without a key is
 * refused too: this provider only takes calls it can deduplicate.
 *
 * `GET /_record` returns what it performed and received, per key (the checker's view).
 * Fault injection: `down(ms)` answers 503 for a while (nothing performed); `loseResponses(n)`
 * performs the next n requests and closes the connection before answering.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface KeyRecord {
  readonly key: string;
  readonly outboxId: string | undefined;
  readonly outboxTable: string | undefined;
  readonly bodyHash: string;
  readonly chargeId: string;
  /** Requests received with this key (the first performed, the rest replayed or refused). */
  requests: number;
  refused: number;
}

export interface PaymentsProvider {
  readonly url: string;
  readonly records: Map<string, KeyRecord>;
  down(ms: number): void;
  loseResponses(n: number): void;
  /** Requests performed whose answer was lost so far (loseResponses that fired). */
  readonly responsesLost: number;
  /** The Idempotency-Keys of those requests, in order: each has its record, its first answer never written. */
  readonly lostKeys: readonly string[];
  /** Requests refused with 503 while down (nothing performed). */
  readonly refused: number;
  close(): Promise<void>;
}

export async function startPaymentsProvider(opts: { port?: number } = {}): Promise<PaymentsProvider> {
  const records = new Map<string, KeyRecord>();
  let downUntil = 0;
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
      if (Date.now() < downUntil) return refused++, json(503, { error: { type: 'api_error', message: 'temporarily unavailable' } });
      const key = req.headers['idempotency-key'];
      if (typeof key !== 'string' || key === '') return json(400, { error: { type: 'invalid_request_error', message: 'Idempotency-Key is required' } });
      const bodyHash = createHash('sha256').update(Buffer.concat(chunks)).digest('hex');
      let r = records.get(key);
      let replayed = true;
      if (r === undefined) {
        replayed = false;
        const header = (n: string) => (typeof req.headers[n] === 'string' ? (req.headers[n] as string) : undefined);
        r = { key, outboxId: header('x-outbox-id'), outboxTable: header('x-outbox-table'), bodyHash, chargeId: `ch_${randomUUID().replace(/-/g, '').slice(0, 20)}`, requests: 0, refused: 0 };
        records.set(key, r);
      }
      r.requests++;
      if (r.bodyHash !== bodyHash) {
        r.refused++;
        return json(400, { error: { type: 'idempotency_error', message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.' } });
      }
      if (lose > 0) {
        lose--;
        lost++;
        lostKeys.push(key);
        return void req.socket.destroy();
      }
      json(200, { id: r.chargeId, object: 'charge' }, replayed ? { 'idempotent-replayed': 'true' } : {});
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    records,
    down: (ms) => void (downUntil = Date.now() + ms),
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
}
