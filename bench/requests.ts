/**
 * What a client sent: SDK middleware at the finalizeRequest step (once per HTTP attempt,
 * retries included), the same place test/support/request-counter.ts counts. The input there is
 * already marshalled (the document client marshals before serializing), which is what item
 * sizes are computed from. Also times each call: the whole send() (SDK + HTTP + DynamoDB), and
 * each HTTP exchange inside the request handler, for the time split and the client's critical
 * path between units.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

export interface LoggedRequest {
  operation: string;
  input: unknown;
}

export interface Exchange {
  operation: string;
  /** performance.now() when the request handler was called and when it returned the response. */
  start: number;
  end: number;
}

export interface RequestLog {
  readonly entries: LoggedRequest[];
  /** Each send(): operation and its duration in ms (SDK + HTTP + DynamoDB). */
  readonly calls: { operation: string; ms: number }[];
  /** Every HTTP exchange, in order. */
  readonly exchanges: Exchange[];
  reset(): void;
}

/**
 * The client's critical path between two consecutive requests of one kind: from the response of
 * one to the request of the next, when nothing else was sent in between (one job, sequential).
 * What the worker does between units: SDK deserialisation, bookkeeping, building the next unit,
 * SDK serialisation and signing.
 */
export function gapsBetween(exchanges: readonly Exchange[], operation: string): number[] {
  const gaps: number[] = [];
  for (let i = 1; i < exchanges.length; i++) {
    const a = exchanges[i - 1]!;
    const b = exchanges[i]!;
    if (a.operation === operation && b.operation === operation) gaps.push(b.start - a.end);
  }
  return gaps;
}

export function recordRequests(client: DynamoDBClient): RequestLog {
  let entries: LoggedRequest[] = [];
  let calls: { operation: string; ms: number }[] = [];
  let exchanges: Exchange[] = [];
  const opOf = (context: { commandName?: string }) => String(context.commandName ?? 'unknown').replace(/Command$/, '');
  client.middlewareStack.add(
    (next, context) => async (args) => {
      entries.push({ operation: opOf(context), input: args.input });
      return next(args);
    },
    { step: 'finalizeRequest', name: `benchRecorder-${Math.random()}`, priority: 'low' },
  );
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const t0 = performance.now();
      try {
        return await next(args);
      } finally {
        calls.push({ operation: opOf(context), ms: performance.now() - t0 });
      }
    },
    { step: 'initialize', name: `benchTimer-${Math.random()}`, priority: 'high' },
  );
  // The HTTP handler: request written, response headers in (DynamoDB Local's time plus the wire).
  const handler = client.config.requestHandler as { handle: (req: any, opts?: any) => Promise<any> };
  const original = handler.handle.bind(handler);
  handler.handle = async (req: any, opts?: any) => {
    const start = performance.now();
    try {
      return await original(req, opts);
    } finally {
      const operation = String(req?.headers?.['x-amz-target'] ?? '').split('.').pop() ?? 'unknown';
      exchanges.push({ operation, start, end: performance.now() });
    }
  };
  return {
    get entries() {
      return entries;
    },
    get calls() {
      return calls;
    },
    get exchanges() {
      return exchanges;
    },
    reset() {
      entries = [];
      calls = [];
      exchanges = [];
    },
  };
}
