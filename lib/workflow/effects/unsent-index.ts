/**
 * Reading the unsent index (schema.ts OUTBOX_INDEX): its partition key is write-sharded
 * (`open#0..N-1`, and the retired shared `open`), so every read fans out to one Query per key
 * value. Each Query's key condition (`updatedAt <= before`) reads only the entries old enough to
 * matter, oldest first. The entries are keys only (pk, unsent, updatedAt): whoever acts on one
 * reads the item itself, consistently, from the table.
 */
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { OUTBOX_ATTR as O, OUTBOX_INDEX, unsentKeys } from '../schema.js';

/** An index position: the last entry read (the Query's ExclusiveStartKey); its `unsent` names the key it is in. */
export type Position = Record<string, unknown>;

export interface UnsentEntry {
  readonly pk: string;
  readonly unsent: string;
  readonly updatedAt: number;
}

interface Page {
  readonly entries: UnsentEntry[];
  readonly next?: Position;
}

interface PageRequest {
  readonly key: string;
  /** Only entries created by then (the key condition on the sort key). */
  readonly before: number;
  readonly limit?: number;
  readonly start?: Position;
  /** Select COUNT: how many, not which. */
  readonly count?: boolean;
}

async function page(doc: DynamoDBDocumentClient, table: string, r: PageRequest): Promise<Page & { count: number }> {
  const out = await doc.send(
    new QueryCommand({
      TableName: table,
      IndexName: OUTBOX_INDEX,
      KeyConditionExpression: '#u = :key AND #t <= :before',
      ExpressionAttributeNames: { '#u': O.unsent, '#t': O.updatedAt },
      ExpressionAttributeValues: { ':key': r.key, ':before': r.before },
      ...(r.limit === undefined ? {} : { Limit: r.limit }),
      ...(r.count ? { Select: 'COUNT' } : {}),
      ...(r.start === undefined ? {} : { ExclusiveStartKey: r.start }),
    }),
  );
  return { entries: (out.Items ?? []) as UnsentEntry[], count: out.Count ?? 0, ...(out.LastEvaluatedKey === undefined ? {} : { next: out.LastEvaluatedKey }) };
}

/** The oldest entry's `updatedAt` of each key (absent: the key holds none created by `before`): one Limit-1 Query per key, in parallel. */
export async function oldestPerKey(doc: DynamoDBDocumentClient, table: string, before: number, keys: readonly string[] = unsentKeys()): Promise<Map<string, number>> {
  const firsts = await Promise.all(keys.map(async (k) => [k, (await page(doc, table, { key: k, before, limit: 1 })).entries[0]?.updatedAt] as const));
  return new Map(firsts.filter((f): f is readonly [string, number] => f[1] !== undefined));
}

/**
 * Every entry created by `before`, key after key in `keys` order (each oldest first), from `from`
 * (a position inside one of the keys: the keys before it are skipped), with the position just after it.
 */
export async function* entriesBefore(
  doc: DynamoDBDocumentClient,
  table: string,
  before: number,
  opts: { keys: readonly string[]; from?: Position; limit: number; pages: { n: number } },
): AsyncIterable<{ entry: UnsentEntry; after: Position }> {
  const resumeAt = opts.from === undefined ? -1 : opts.keys.indexOf(String(opts.from[O.unsent]));
  for (const [i, key] of opts.keys.entries()) {
    if (i < resumeAt) continue;
    let start = i === resumeAt ? opts.from : undefined;
    do {
      const p = await page(doc, table, { key, before, limit: opts.limit, ...(start === undefined ? {} : { start }) });
      opts.pages.n++;
      for (const e of p.entries) yield { entry: e, after: { pk: e.pk, [O.unsent]: e.unsent, [O.updatedAt]: e.updatedAt } };
      start = p.next;
    } while (start !== undefined);
  }
}

/** Outbox items not yet sent (nor given up): the index holds exactly those. Counted key by key. */
export async function countUnsent(doc: DynamoDBDocumentClient, table: string): Promise<number> {
  const counts = await Promise.all(
    unsentKeys().map(async (key) => {
      let n = 0;
      let start: Position | undefined;
      do {
        const p = await page(doc, table, { key, before: Number.MAX_SAFE_INTEGER, count: true, ...(start === undefined ? {} : { start }) });
        n += p.count;
        start = p.next;
      } while (start !== undefined);
      return n;
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}
