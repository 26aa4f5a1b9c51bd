/**
 * The engine's own bill: every request a client sends asks for ReturnConsumedCapacity INDEXES and
 * the answer's ConsumedCapacity is kept, per request, split into the table's units and each
 * index's. Test-only (the library never asks for it): how the write and read counts per outbox
 * item in docs/external-effects.md are measured.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

interface Consumed {
  TableName?: string;
  CapacityUnits?: number;
  Table?: { CapacityUnits?: number };
  GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
}

export interface Charge {
  readonly op: string;
  readonly table: string;
  /** The base table's units. */
  readonly units: number;
  /** Each global secondary index's units. */
  readonly indexes: Readonly<Record<string, number>>;
}

export interface CapacityLog {
  readonly charges: Charge[];
  /** The charges on `table` since the last take: write units on the table and on its indexes (all), read units, and the requests. */
  take(table: string): { units: number; index: number; reads: number; charges: Charge[] };
}

const READS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem']);
const ASKS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'GetItem', 'Query', 'Scan', 'TransactWriteItems', 'BatchWriteItem', 'BatchGetItem']);

export function logCapacity(doc: DynamoDBDocumentClient): CapacityLog {
  const charges: Charge[] = [];
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const op = String(context.commandName ?? '').replace(/Command$/, '');
      if (ASKS.has(op)) (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'INDEXES';
      const out = await next(args);
      const consumed = (out.output as { ConsumedCapacity?: Consumed | Consumed[] }).ConsumedCapacity;
      for (const c of consumed === undefined ? [] : Array.isArray(consumed) ? consumed : [consumed]) {
        const indexes = Object.fromEntries(Object.entries(c.GlobalSecondaryIndexes ?? {}).map(([n, v]) => [n, v.CapacityUnits ?? 0]));
        const indexSum = Object.values(indexes).reduce((a, b) => a + b, 0);
        charges.push({ op, table: c.TableName ?? '', units: c.Table?.CapacityUnits ?? (c.CapacityUnits ?? 0) - indexSum, indexes });
      }
      return out;
    },
    { step: 'initialize', name: `consumedCapacity-${Math.random()}` },
  );
  let taken = 0;
  return {
    charges,
    take(table) {
      const mine = charges.slice(taken).filter((c) => c.table === table);
      taken = charges.length;
      const writes = mine.filter((c) => !READS.has(c.op));
      const all = (c: Charge) => c.units + Object.values(c.indexes).reduce((a, b) => a + b, 0);
      return {
        units: writes.reduce((n, c) => n + c.units, 0),
        index: writes.reduce((n, c) => n + all(c) - c.units, 0),
        reads: mine.filter((c) => READS.has(c.op)).reduce((n, c) => n + all(c), 0),
        charges: mine,
      };
    },
  };
}
