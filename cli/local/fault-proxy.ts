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
 * Matching: `target` is the `X-Amz-Target` header, either in full (`DynamoDB_20120810.UpdateItem`)
 * or just the operation (`UpdateItem`); `when` is a predicate on the request (its parsed JSON
 * body, e.g. the `:me` value of a conditional write). Rules are tried in the order they were
 * added; the first one that matches and has shots left fires and uses up one shot.
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

export type FaultAction =
  | { kind: 'delay'; ms: number }
  | { kind: 'drop' }
  | { kind: 'blackhole' }
  | { kind: 'respond'; status: number; body: (req: ProxiedRequest) => unknown };

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

/** What a rule's predicate sees of a request. */
export interface ProxiedRequest {
  /** The full `X-Amz-Target` header, e.g. `DynamoDB_20120810.UpdateItem` ('' when absent). */
  readonly target: string;
  /** The operation part of the target, e.g. `UpdateItem`. */
  readonly operation: string;
  readonly body: string;
  /** The body as JSON (DynamoDB's wire format), undefined if it is not JSON. */
  readonly json: any;
}

export interface FaultMatch {
  /** `DynamoDB_20120810.UpdateItem` or `UpdateItem`; absent: any operation. */
  target?: string;
  when?: (req: ProxiedRequest) => boolean;
  /** How many matching requests this rule affects (default 1; `Infinity` for all). */
  times?: number;
}

export interface Fault {
  /** How many requests this rule has affected so far. */
  readonly hits: number;
  /** Resolves once the rule has affected `n` requests (default 1). */
  waitForHits(n?: number): Promise<void>;
  /** Disarms the rule (requests already held stay held). */
  remove(): void;
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: give it to createDynamo({ endpoint }). */
  readonly endpoint: string;
  inject(match: FaultMatch, action: FaultAction): Fault;
  delay(match: FaultMatch, ms: number): Fault;
  drop(match?: FaultMatch): Fault;
  blackhole(match?: FaultMatch): Fault;
  /** Answers without forwarding (nothing is applied). */
  respond(match: FaultMatch, body: (req: ProxiedRequest) => unknown, status?: number): Fault;
  /** Refuses without forwarding, as DynamoDB does: HTTP 400 with `__type` (e.g. `ThrottlingException`) and any extra fields. */
  error(match: FaultMatch, type: string, extra?: Record<string, unknown>): Fault;
  close(): Promise<void>;
}

interface Rule {
  match: FaultMatch;
  action: FaultAction;
  left: number;
  hits: number;
  waiters: { n: number; resolve: () => void }[];
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

function targetMatches(want: string | undefined, target: string, operation: string): boolean {
  return want === undefined || want === target || want === operation;
}

/** Starts the proxy on a free 127.0.0.1 port in front of `upstream` (e.g. DynamoDB Local's endpoint). */
export async function startFaultProxy(upstream: string, options: FaultProxyOptions = {}): Promise<FaultProxy> {
  const up = new URL(upstream);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const rules: Rule[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  function pick(req: ProxiedRequest): Rule | undefined {
    for (const rule of rules) {
      if (rule.left <= 0) continue;
      if (!targetMatches(rule.match.target, req.target, req.operation)) continue;
      if (rule.match.when !== undefined && !rule.match.when(req)) continue;
      rule.left--;
      rule.hits++;
      for (const w of rule.waiters.filter((w) => rule.hits >= w.n)) w.resolve();
      rule.waiters = rule.waiters.filter((w) => rule.hits < w.n);
      return rule;
    }
    return undefined;
  }

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
      const target = String(req.headers['x-amz-target'] ?? '');
      const operation = target.includes('.') ? target.slice(target.lastIndexOf('.') + 1) : target;
      const text = body.toString('utf8');
      let json: unknown;
      try {
        json = text.length > 0 ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      const request = { target, operation, body: text, json };
      const rule = closed ? undefined : pick(request);

      if (rule?.action.kind === 'blackhole') return; // held until the caller gives up or close()
      if (rule?.action.kind === 'respond') {
        const answer = Buffer.from(JSON.stringify(rule.action.body(request)));
        reply(res, { status: rule.action.status, headers: { 'content-type': 'application/x-amz-json-1.0' }, body: answer });
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
      if (rule?.action.kind === 'drop') {
        // Applied upstream; the caller never learns it.
        req.socket.destroy();
        return;
      }
      if (rule?.action.kind === 'delay') {
        const timer = setTimeout(() => {
          timers.delete(timer);
          reply(res, answer);
        }, rule.action.ms);
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

  function inject(match: FaultMatch, action: FaultAction): Fault {
    const rule: Rule = { match, action, left: match.times ?? 1, hits: 0, waiters: [] };
    rules.push(rule);
    return {
      get hits() {
        return rule.hits;
      },
      waitForHits(n = 1) {
        return rule.hits >= n ? Promise.resolve() : new Promise<void>((resolve) => rule.waiters.push({ n, resolve }));
      },
      remove() {
        rule.left = 0;
        const i = rules.indexOf(rule);
        if (i >= 0) rules.splice(i, 1);
      },
    };
  }

  return {
    endpoint: `http://127.0.0.1:${port}`,
    inject,
    delay: (match, ms) => inject(match, { kind: 'delay', ms }),
    drop: (match = {}) => inject(match, { kind: 'drop' }),
    blackhole: (match = {}) => inject(match, { kind: 'blackhole' }),
    respond: (match, body, status = 200) => inject(match, { kind: 'respond', status, body }),
    error: (match, type, extra = {}) =>
      inject(match, { kind: 'respond', status: 400, body: () => ({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message: `injected ${type}`, ...extra }) }),
    async close() {
      if (closed) return;
      closed = true;
      rules.length = 0;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      agent.destroy();
      await done;
    },
  };
}
