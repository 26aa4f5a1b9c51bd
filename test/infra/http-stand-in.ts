/**
 * A local stand-in for any http target a workload's outbox names (the invoice run's payment
 * provider, the reports' tenant webhooks): it takes a JSON POST on any path, answers 200 with an
 * id, and keeps what it received. Idempotent by `Idempotency-Key`, as the providers the sender is
 * written for are: a second request with a key it has seen is answered with the first one's id
 * and counted, not performed again. cli/payments-provider.ts is the payment provider's full
 * contract (faults, key retention) on its one path, POST /charges; this one only needs to show
 * where each item went and how often.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandInRequest {
  readonly path: string;
  readonly idempotencyKey: string | undefined;
  /** The outbox identity headers the sender adds (X-Outbox-Id). */
  readonly outboxId: string | undefined;
  readonly body: unknown;
}

export interface HttpStandIn {
  readonly url: string;
  /** Every POST, in arrival order (a replay too). */
  readonly requests: StandInRequest[];
  /** How many requests each key came with: more than one is a resend the key deduplicated. */
  readonly performed: Map<string, { id: string; requests: number; path: string }>;
  close(): Promise<void>;
}

/** A request the stand-in cannot take (not a POST, no JSON): answered 400, and named here rather than dropped. */
export class StandInRequestError extends Error {
  override name = 'StandInRequestError';
}

export async function startHttpStandIn(): Promise<HttpStandIn> {
  const requests: StandInRequest[] = [];
  const performed = new Map<string, { id: string; requests: number; path: string }>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      let body: unknown;
      try {
        if (req.method !== 'POST') throw new StandInRequestError(`${req.method} ${req.url}: only POST is taken`);
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch (e) {
        answer(400, { error: e instanceof Error ? e.message : String(e) });
        return;
      }
      const key = req.headers['idempotency-key'] as string | undefined;
      const path = req.url ?? '/';
      requests.push({ path, idempotencyKey: key, outboxId: req.headers['x-outbox-id'] as string | undefined, body });
      if (key === undefined) return answer(400, { error: 'Idempotency-Key is required' });
      const seen = performed.get(key);
      if (seen !== undefined) {
        seen.requests++;
        res.setHeader('idempotent-replayed', 'true');
        return answer(200, { id: seen.id });
      }
      const id = `req_${performed.size + 1}`;
      performed.set(key, { id, requests: 1, path });
      answer(200, { id });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    performed,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
