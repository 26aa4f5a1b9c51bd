/**
 * A loopback HTTP proxy in front of DynamoDB (Local) that injects network faults per request and
 * hears every exchange with the engine: the local runtime's fault injection (DESIGN.md: part of
 * the runtime, not a test-only hack) and the wire the structural FENCE check reads.
 *
 *   const proxy = await startFaultProxy(endpoint);
 *   const { doc } = createDynamo({ endpoint: proxy.endpoint, maxAttempts: 2 });
 *   const f = proxy.drop({ target: 'UpdateItem' });      // one-shot: lose the next UpdateItem's response
 *   ...
 *   expect(f.hits).toBe(1);
 *   await proxy.close();
 *
 * Matching: the rule table of fault-rules.ts (the simulator's in-memory wire uses the same one).
 *
 * Actions:
 * - `delay(ms)`: the request is forwarded at once (DynamoDB applies it at once), the response is
 *   held back for `ms`: a slow network on the way back.
 * - `drop`: the request is forwarded and applied, then the client's socket is destroyed before
 *   any byte of the response is written: a lost response, an ambiguous write.
 * - `blackhole`: never forwarded, never answered; the caller sees only its own timeout.
 * - `respond(body)`: never forwarded; answered at once with `status` and the JSON `body` (a
 *   function of the request): what DynamoDB answers when it refuses a request before applying
 *   it (`error('ThrottlingException')`, a `TransactionConflict` cancellation), or an empty
 *   stream page (GetRecords with no records and a next iterator).
 *
 * Recording: `onExchange` hears of every request that reached the engine, with its answer (also
 * when the answer is then dropped or delayed on the way back): what the structural FENCE check
 * (cli/check/wire-check.ts) reads. Requests the proxy refused itself (`respond`, `blackhole`) never
 * reached the engine and are not heard of.
 *
 * Keep-alive friendly: unaffected requests share kept-alive connections on both sides.
 * `close()` destroys every open connection (including blackholed ones) and every held response.
 */
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createFaultTable, proxiedRequest, type FaultRules } from './fault-rules.js';

export type { Fault, FaultAction, FaultMatch, FaultRules, ProxiedRequest } from './fault-rules.js';

/** A request that reached the engine and the engine's answer, as the proxy saw them. */
export interface WireExchange {
  /** The operation, e.g. `TransactWriteItems`. */
  readonly operation: string;
  /** The request's body as sent (DynamoDB's JSON wire format). */
  readonly body: string;
  /** When the whole request had reached the proxy, before it was forwarded (performance.now(), ms). */
  readonly sentAt: number;
  /** When the engine's whole answer had reached the proxy. */
  readonly answeredAt: number;
  /** The engine's HTTP status: 200 is applied. */
  readonly status: number;
  /** The engine's answer body. */
  readonly answer: string;
}

export interface FaultProxyOptions {
  /** Told of every exchange with the engine, in the order the answers arrive. */
  onExchange?: (exchange: WireExchange) => void;
}

export interface FaultProxy extends FaultRules {
  /** `http://127.0.0.1:<port>`: give it to createDynamo({ endpoint }). */
  readonly endpoint: string;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade', 'te', 'trailer']);

function forwardableHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP_BY_HOP.has(k.toLowerCase())));
}

function readBody(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

/** Starts the proxy on a free 127.0.0.1 port in front of `upstream` (e.g. DynamoDB Local's endpoint). */
export async function startFaultProxy(upstream: string, options: FaultProxyOptions = {}): Promise<FaultProxy> {
  const up = new URL(upstream);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const table = createFaultTable();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  function forward(req: IncomingMessage, body: Buffer): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const out = httpRequest(
        {
          protocol: up.protocol,
          hostname: up.hostname,
          port: up.port,
          method: req.method,
          path: req.url,
          agent,
          headers: { ...forwardableHeaders(req.headers), 'content-length': String(body.length) },
        },
        (res) => {
          readBody(res).then((b) => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: b }), reject);
        },
      );
      out.on('error', reject);
      out.end(body);
    });
  }

  function reply(res: ServerResponse, r: { status: number; headers: IncomingHttpHeaders; body: Buffer }): void {
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(r.status, { ...forwardableHeaders(r.headers), 'content-length': String(r.body.length) });
    res.end(r.body);
  }

  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const request = proxiedRequest(String(req.headers['x-amz-target'] ?? ''), body.toString('utf8'));
      const { operation, body: text } = request;
      const action = closed ? undefined : table.actionFor(request);

      if (action?.kind === 'blackhole') return; // held until the caller gives up or close()
      if (action?.kind === 'respond') {
        const answer = Buffer.from(JSON.stringify(action.body(request)));
        reply(res, { status: action.status, headers: { 'content-type': 'application/x-amz-json-1.0' }, body: answer });
        return;
      }
      let answer;
      const sentAt = performance.now();
      try {
        answer = await forward(req, body);
      } catch {
        res.destroy();
        return;
      }
      options.onExchange?.({ operation, body: text, sentAt, answeredAt: performance.now(), status: answer.status, answer: answer.body.toString('utf8') });
      if (action?.kind === 'drop') {
        // Applied upstream; the caller never learns it.
        req.socket.destroy();
        return;
      }
      if (action?.kind === 'delay') {
        const timer = setTimeout(() => {
          timers.delete(timer);
          reply(res, answer);
        }, action.ms);
        timers.add(timer);
        return;
      }
      reply(res, answer);
    })().catch(() => res.destroy());
  });
  // Longer than any client's idle socket, so a kept-alive client never writes into a socket we just closed.
  server.keepAliveTimeout = 60_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    ...table,
    async close() {
      if (closed) return;
      closed = true;
      table.clear();
      for (const t of timers) clearTimeout(t);
      timers.clear();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      agent.destroy();
      await done;
    },
  };
}
