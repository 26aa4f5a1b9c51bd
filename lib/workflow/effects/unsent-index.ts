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
  /** And, when set, none created before this (the key condition's lower bound). */
  readonly from?: number;
  readonly limit?: number;
  readonly start?: Position;
  /** Select COUNT: how many, not which. */
  readonly count?: boolean;
  /** Newest first. */
  readonly newestFirst?: boolean;
}

async function page(doc: DynamoDBDocumentClient, table: string, r: PageRequest): Promise<Page & { count: number }> {
  const out = await doc.send(
    new QueryCommand({
      TableName: table,
      IndexName: OUTBOX_INDEX,
      KeyConditionExpression: r.from === undefined ? '#u = :key AND #t <= :before' : '#u = :key AND #t BETWEEN :from AND :before',
      ExpressionAttributeNames: { '#u': O.unsent, '#t': O.updatedAt },
      ExpressionAttributeValues: { ':key': r.key, ':before': r.before, ...(r.from === undefined ? {} : { ':from': r.from }) },
      ...(r.limit === undefined ? {} : { Limit: r.limit }),
      ...(r.count ? { Select: 'COUNT' } : {}),
      ...(r.newestFirst ? { ScanIndexForward: false } : {}),
      ...(r.start === undefined ? {} : { ExclusiveStartKey: r.start }),
    }),
  );
  return { entries: (out.Items ?? []) as UnsentEntry[], count: out.Count ?? 0, ...(out.LastEvaluatedKey === undefined ? {} : { next: out.LastEvaluatedKey }) };
}

/** The oldest (or newest) entry's `updatedAt` of each key (absent: the key holds none created by `before`): one Limit-1 Query per key, in parallel. */
export async function oldestPerKey(doc: DynamoDBDocumentClient, table: string, before: number, keys: readonly string[] = unsentKeys(), newest = false): Promise<Map<string, number>> {
  const firsts = await Promise.all(keys.map(async (k) => [k, (await page(doc, table, { key: k, before, limit: 1, newestFirst: newest })).entries[0]?.updatedAt] as const));
  return new Map(firsts.filter((f): f is readonly [string, number] => f[1] !== undefined));
}

/** Where a run reads one key: its entries from `from` on (to the due bound) first, then those older, from `oldest`. */
export interface KeyStart {
  readonly key: string;
  readonly oldest: number;
  readonly from: number;
}

/** Every entry of one key in `[from, before]`, page by page, oldest first. */
async function* entriesBetween(doc: DynamoDBDocumentClient, table: string, r: PageRequest & { limit: number }, pages: { n: number }): AsyncIterable<UnsentEntry> {
  let start: Position | undefined;
  do {
    const p = await page(doc, table, { ...r, ...(start === undefined ? {} : { start }) });
    pages.n++;
    yield* p.entries;
    start = p.next;
  } while (start !== undefined);
}

/**
 * Every entry created by `before`, key after key in `starts` order: each key from its start time
 * on, then the key's entries older than that (so a run need not begin with the same oldest entries).
 */
export async function* entriesBefore(doc: DynamoDBDocumentClient, table: string, before: number, opts: { starts: readonly KeyStart[]; limit: number; pages: { n: number } }): AsyncIterable<UnsentEntry> {
  for (const { key, oldest, from } of opts.starts) {
    yield* entriesBetween(doc, table, from <= oldest ? { key, before, limit: opts.limit } : { key, from, before, limit: opts.limit }, opts.pages);
    if (from > oldest) yield* entriesBetween(doc, table, { key, before: from - 1, limit: opts.limit }, opts.pages);
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
