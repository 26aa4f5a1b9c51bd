/**
 * The requests the simulated runs really send, compared: a simulated run's requests as the engine
 * received them (DynamoModelOptions.onRequest), cut to a slice that carries every request shape
 * (shape.ts) of the run, and replayed in order against DynamoDB Local and a fresh model through
 * the real SDK. The random sequences (ops.ts) prove the model's semantics on two small tables; this
 * proves it on the protocol's own expressions, tables and indexes.
 */
import { createHash } from 'node:crypto';
import * as ddb from '@aws-sdk/client-dynamodb';
import { requestShapes } from '../dynamodb/shape.js';
import { atLimit, failureOf, outcomeOf, type Outcome } from './differential.js';
import type { Op } from './ops.js';

export interface TracedRequest {
  readonly operation: string;
  readonly input: Record<string, unknown>;
}

/** Normalisations of the replay beyond the random sequences' (differential.ts NORMALISATIONS). */
export const TRACED_NORMALISATIONS: readonly { what: string; why: string }[] = [
  { what: 'ConsumedCapacity', why: 'DynamoDB Local reports fewer units for a transaction than AWS bills (three Puts in one report 2); the model bills as AWS documents, and the load profile compares the two where it matters (test/profile.test.ts)' },
  { what: 'table administration answers (CreateTable, DescribeTable) beyond success or error and TableStatus', why: 'their ARNs, times, sizes and ids are per engine; the code reads only whether a table is there and ACTIVE' },
];

const ADMIN = new Set(['CreateTable', 'DescribeTable', 'DeleteTable', 'ListTables']);
const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);
/** Earlier writes of a queried table kept before a Query or Scan (enough to give it items to find). */
const QUERY_CONTEXT = 40;

type Item = Record<string, unknown>;

/** Every (table, key) a request touches, by the tables' key schemas. */
function touched(r: TracedRequest, keysOf: ReadonlyMap<string, string[]>): string[] {
  const keyOf = (table: unknown, item: unknown): string => {
    const names = keysOf.get(String(table)) ?? [];
    const i = (item ?? {}) as Item;
    return `${String(table)}\u0000${JSON.stringify(names.map((n) => i[n]))}`;
  };
  const one = (body: Item) => keyOf(body.TableName, body.Key ?? body.Item);
  const i = r.input;
  if (Array.isArray(i.TransactItems)) return (i.TransactItems as Record<string, Item>[]).flatMap((a) => Object.values(a).map(one));
  if (r.operation === 'BatchWriteItem') return Object.entries(i.RequestItems as Record<string, Item[]>).flatMap(([t, rs]) => rs.map((x) => keyOf(t, ((x.PutRequest as Item | undefined)?.Item ?? (x.DeleteRequest as Item | undefined)?.Key))));
  if (r.operation === 'BatchGetItem') return Object.entries(i.RequestItems as Record<string, { Keys: Item[] }>).flatMap(([t, b]) => b.Keys.map((k) => keyOf(t, k)));
  return [one(i)];
}

const tablesOf = (r: TracedRequest): string[] => {
  const i = r.input;
  if (Array.isArray(i.TransactItems)) return (i.TransactItems as Record<string, Item>[]).flatMap((a) => Object.values(a).map((b) => String(b.TableName)));
  if (i.RequestItems !== undefined) return Object.keys(i.RequestItems as object);
  return [String(i.TableName)];
};

/**
 * The requests that carry each shape's first appearance in `trace`, each with the earlier writes to
 * the items it touches (a Query or Scan: the last QUERY_CONTEXT writes to its table), the tables'
 * administration, in the trace's order. Both engines get the same slice: what it proves is that
 * they answer alike, whatever the slice leaves out.
 */
export function slice(trace: readonly TracedRequest[]): TracedRequest[] {
  const keysOf = new Map<string, string[]>();
  for (const r of trace) {
    if (r.operation === 'CreateTable') keysOf.set(String(r.input.TableName), (r.input.KeySchema as { AttributeName: string }[]).map((k) => k.AttributeName));
  }
  const keep = new Set<number>();
  const seen = new Set<string>();
  trace.forEach((r, at) => {
    if (ADMIN.has(r.operation)) keep.add(at);
    const fresh = requestShapes(r.operation, r.input).filter((x) => !seen.has(x));
    if (fresh.length === 0) return;
    for (const x of fresh) seen.add(x);
    keep.add(at);
    const reads = r.operation === 'Query' || r.operation === 'Scan';
    const mine = new Set(reads ? [] : touched(r, keysOf));
    const tables = new Set(tablesOf(r));
    let context = 0;
    for (let k = at - 1; k >= 0; k--) {
      const w = trace[k]!;
      if (!WRITES.has(w.operation)) continue;
      if (reads ? tablesOf(w).some((t) => tables.has(t)) && context++ < QUERY_CONTEXT : touched(w, keysOf).some((x) => mine.has(x))) keep.add(k);
    }
  });
  return trace.filter((_, at) => keep.has(at));
}

/** The request with every table name and client token given `prefix` (the traces of two runs may share names). */
function renamed(r: TracedRequest, prefix: string): Item {
  const out: Item = { ...r.input };
  if (typeof out.TableName === 'string') out.TableName = `${prefix}${out.TableName}`;
  // A token is at most 36 characters: the run's own, made the replay's by a digest with the prefix.
  if (typeof out.ClientRequestToken === 'string') out.ClientRequestToken = createHash('sha256').update(`${prefix}${out.ClientRequestToken}`).digest('hex').slice(0, 36);
  if (out.RequestItems !== undefined) out.RequestItems = Object.fromEntries(Object.entries(out.RequestItems as object).map(([t, v]) => [`${prefix}${t}`, v]));
  if (Array.isArray(out.TransactItems)) out.TransactItems = (out.TransactItems as Record<string, Item>[]).map((a) => Object.fromEntries(Object.entries(a).map(([k, v]) => [k, { ...v, TableName: `${prefix}${String(v.TableName)}` }])));
  return out;
}

/** One traced request's outcome on `client`, normalised as listed. */
export async function replayStep(client: ddb.DynamoDBClient, r: TracedRequest, prefix: string): Promise<Outcome> {
  const Command = (ddb as unknown as Record<string, new (input: Item) => Parameters<ddb.DynamoDBClient['send']>[0]>)[`${r.operation}Command`];
  try {
    const out = (await client.send(new Command!(renamed(r, prefix)))) as unknown as Item;
    const { ConsumedCapacity: _c, ...rest } = out;
    if (ADMIN.has(r.operation)) return { ok: { TableStatus: ((rest.TableDescription ?? rest.Table) as Item | undefined)?.TableStatus } };
    // Both engines get the same prefix: the random sequences' normalisations apply as they are.
    return outcomeOf({ op: r.operation, input: r.input } as Op, rest);
  } catch (e) {
    return failureOf(e);
  }
}

export interface TracedMismatch {
  step: number;
  request: TracedRequest;
  local: Outcome;
  model: Outcome;
}

/** Replays `requests` on both clients, in order; the first difference, and the shapes compared up to it. */
export async function replay(local: ddb.DynamoDBClient, model: ddb.DynamoDBClient, requests: readonly TracedRequest[], prefix: string): Promise<{ mismatch?: TracedMismatch; shapes: Set<string> }> {
  const shapes = new Set<string>();
  for (const [step, r] of requests.entries()) {
    const [a, b] = atLimit({ op: r.operation, input: r.input } as Op, await replayStep(local, r, prefix), await replayStep(model, r, prefix));
    if (JSON.stringify(a) !== JSON.stringify(b)) return { mismatch: { step, request: r, local: a, model: b }, shapes };
    for (const x of requestShapes(r.operation, r.input)) shapes.add(x);
  }
  return { shapes };
}
