/** Counts the DynamoDB requests a client sends, by operation, with SDK middleware (one per HTTP request, retries included). */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

export interface RequestCounter {
  readonly counts: Map<string, number>;
  total(): number;
  reset(): void;
}

export function countRequests(client: DynamoDBClient): RequestCounter {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const op = String(context.commandName ?? 'unknown').replace(/Command$/, '');
      counts.set(op, (counts.get(op) ?? 0) + 1);
      return next(args);
    },
    { step: 'finalizeRequest', name: `requestCounter-${Math.random()}`, priority: 'low' },
  );
  return {
    counts,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    reset: () => counts.clear(),
  };
}

/** Counts the requests a client sends per table (`TableName` of the input; '' when it has none). */
export function countByTable(client: DynamoDBClient): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next) => async (args) => {
      const table = String((args.input as { TableName?: string }).TableName ?? '');
      counts.set(table, (counts.get(table) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: `tableCounter-${Math.random()}` },
  );
  return counts;
}
