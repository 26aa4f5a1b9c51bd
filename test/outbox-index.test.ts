// tier: full
/**
 * The unsent index (schema.ts OUTBOX_INDEX) on DynamoDB Local: its write-sharded key spreads the
 * items, its key set only grows, and a reconciler pass reads only what is due: measured from the
 * engine's bill (support/consumed-capacity.ts) against the alternative design, a sparse index
 * keyed by the item's own pk read by a Scan. docs/external-effects.md, "The unsent index".
 */
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDynamo, ManualClock, type Dynamo } from '../lib/protocol/index.js';
import {
  createTableInput,
  OUTBOX_ATTR,
  OUTBOX_INDEX,
  outboxEmail,
  reconcile,
  silentTelemetry,
  UNSENT_RETIRED_KEYS,
  UNSENT_SHARDS,
  unsentKeyOf,
  unsentKeys,
  type EmailProvider,
} from '../lib/workflow/index.js';
import { logCapacity, type CapacityLog } from './support/consumed-capacity.js';
import { makeTables, type TestTables } from './support/tables.js';

let t: TestTables;
let measured: Dynamo;
let bill: CapacityLog;
const T0 = Date.UTC(2026, 7, 1);
/** The alternative: the same items in a sparse KEYS_ONLY index whose partition key is the item's own pk (no shared key at all). */
const ALT_INDEX = 'unsent-by-item';
const altTable = () => `${t.prefix}alt-outbox`;

beforeAll(async () => {
  t = await makeTables(import.meta.filename);
  measured = createDynamo({ endpoint: t.endpoint });
  bill = logCapacity(measured.doc);
  await t.dynamo.client.send(
    new CreateTableCommand(createTableInput({ role: 'outbox', partitionKey: { name: 'pk', type: 'S' }, globalSecondaryIndexes: [{ indexName: ALT_INDEX, partitionKey: { name: 'unsentItem', type: 'S' }, projection: 'KEYS_ONLY' }], permanent: false }, altTable())),
  );
});
afterAll(() => {
  measured.client.destroy();
  t.dynamo.client.destroy();
});

async function putAll(table: string, items: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < items.length; i += 25) {
    let batch: unknown[] | undefined = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    while (batch !== undefined && batch.length > 0) {
      const out: { UnprocessedItems?: Record<string, unknown[]> } = await t.dynamo.doc.send(new BatchWriteCommand({ RequestItems: { [table]: batch as never } }));
      batch = out.UnprocessedItems?.[table];
    }
  }
}

/** An item as the unit creates it (outboxEmail, the tie stamped), created at `at`. */
const created = (pk: string, at: number): Record<string, unknown> & { pk: string; updatedAt: number } => ({ ...outboxEmail(t.names.outbox, pk, { jobId: 'j', unit: 0 }, { to: 'c@customers.example', subject: 's', body: 'b' }).item, generation: 1, updatedAt: at });

async function countKey(key: string): Promise<number> {
  let n = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const p = await t.dynamo.doc.send(new QueryCommand({ TableName: t.names.outbox, IndexName: OUTBOX_INDEX, KeyConditionExpression: '#u = :k', ExpressionAttributeNames: { '#u': OUTBOX_ATTR.unsent }, ExpressionAttributeValues: { ':k': key }, Select: 'COUNT', ExclusiveStartKey: start }));
    n += p.Count ?? 0;
    start = p.LastEvaluatedKey;
  } while (start !== undefined);
  return n;
}

/** The alternative's pass: the whole sparse index, every page (it has no order and no key condition to skip what is not due). */
async function scanAlternative(): Promise<number> {
  let entries = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const p = await measured.doc.send(new ScanCommand({ TableName: altTable(), IndexName: ALT_INDEX, ExclusiveStartKey: start }));
    entries += p.Count ?? 0;
    start = p.LastEvaluatedKey;
  } while (start !== undefined);
  return entries;
}

const YOUNG = 2_000;
const DUE = 200;
const reconciler = (sends: { n: number }) => ({
  doc: measured.doc,
  table: t.names.outbox,
  clock: new ManualClock({ wall: T0 }),
  telemetry: silentTelemetry,
  email: { name: 'counting', send: async () => (sends.n++, { kind: 'rejected', permanent: false, reason: 'not in this test' }) } as EmailProvider,
  from: 'billing@fenced-workflow.example',
  pendingAfterMs: 60_000,
  claimTimeoutMs: 60_000,
  recordLagMs: 60_000,
});

describe('the unsent index: write-sharded, read by a fan-out of due-only queries', () => {
  it(`spreads ${YOUNG} items over its ${UNSENT_SHARDS} key values, none over twice its share, and writes none under the retired shared key`, async () => {
    const items = Array.from({ length: YOUNG }, (_, i) => created(`email#2026-08#cust-${String(i).padStart(7, '0')}`, T0 - 1_000));
    await putAll(t.names.outbox, items);
    await putAll(altTable(), items.map((i) => ({ pk: i.pk, unsentItem: i.pk, updatedAt: i.updatedAt })));
    const counts = await Promise.all(unsentKeys().map(async (k) => [k, await countKey(k)] as const));
    const share = YOUNG / UNSENT_SHARDS;
    console.log(`per key: ${counts.map(([k, n]) => `${k}=${n}`).join(' ')}`);
    expect(counts.filter(([k]) => UNSENT_RETIRED_KEYS.includes(k)).map(([, n]) => n)).toEqual([0]);
    const sharded = counts.filter(([k]) => !UNSENT_RETIRED_KEYS.includes(k)).map(([, n]) => n);
    expect(sharded).toHaveLength(UNSENT_SHARDS);
    expect(sharded.reduce((a, b) => a + b, 0)).toBe(YOUNG);
    expect(Math.max(...sharded)).toBeLessThanOrEqual(2 * share);
    expect(Math.min(...sharded)).toBeGreaterThan(0);
  });

  it('can only grow: every key an item was ever given under N shards is read under any larger N, and N is not below the 32 already deployed', () => {
    // Lowering it strands every item written under a dropped shard: the reconciler would never read it again.
    expect(UNSENT_SHARDS).toBeGreaterThanOrEqual(32);
    const grown = new Set(unsentKeys(2 * UNSENT_SHARDS));
    for (let i = 0; i < 500; i++) expect(grown.has(unsentKeyOf(`payment#2026-08#cust-${i}`, UNSENT_SHARDS))).toBe(true);
    expect(unsentKeys()).toEqual(expect.arrayContaining([...UNSENT_RETIRED_KEYS]));
  });

  it(`a reconciler pass reads one Limit-1 query per key when nothing is due (whatever the ${YOUNG} young entries), and only the due entries and their items with a backlog; the alternative's Scan reads every entry`, async () => {
    const sends = { n: 0 };
    bill.take(t.names.outbox);
    const idle = await reconcile(reconciler(sends));
    const idleBill = bill.take(t.names.outbox);
    const idleScan = (await scanAlternative(), bill.take(altTable()));
    expect(idle).toMatchObject({ examined: 0, pages: 0, oldestUnsentAgeMs: 1_000 });
    expect(idleBill.charges.filter((c) => c.op === 'Query')).toHaveLength(unsentKeys().length);
    expect(idleBill.charges.filter((c) => c.op !== 'Query')).toHaveLength(0);

    // A backlog: DUE items whose sender died after SES accepted (the record is there), an hour old.
    const stuck = Array.from({ length: DUE }, (_, i) => ({ ...created(`email#2026-07#stuck-${i}`, T0 - 3_600_000 + i), status: 'SENDING', claimToken: 'dead', claimedAt: T0 - 3_600_000, attempts: 1, providerEvents: new Set([`SEND:m-${i}`]) }));
    await putAll(t.names.outbox, stuck);
    await putAll(altTable(), stuck.map((i) => ({ pk: i.pk, unsentItem: i.pk, updatedAt: i.updatedAt })));
    const busy = await reconcile(reconciler(sends));
    const busyBill = bill.take(t.names.outbox);
    const busyScan = (await scanAlternative(), bill.take(altTable()));
    expect(busy).toMatchObject({ examined: DUE, fromRecord: DUE });
    expect(sends.n).toBe(0);
    const gets = busyBill.charges.filter((c) => c.op === 'GetItem');
    expect(gets).toHaveLength(DUE);
    const queryReads = (b: typeof busyBill) => b.charges.filter((c) => c.op === 'Query').reduce((n, c) => n + c.units + Object.values(c.indexes).reduce((x, y) => x + y, 0), 0);
    console.log(
      `reconciler pass, nothing due (${YOUNG} young entries): ${idleBill.charges.length} queries, ${idleBill.reads} read units; alternative Scan: ${idleScan.charges.length} pages, ${idleScan.reads} read units\n` +
        `reconciler pass, ${DUE} due: ${busyBill.charges.filter((c) => c.op === 'Query').length} queries (${busy.pages} pages of due entries), ${queryReads(busyBill)} index read units, ${gets.length} GetItems (${gets.reduce((n, c) => n + c.units, 0)} units); alternative Scan: ${busyScan.charges.length} pages, ${busyScan.reads} read units (then the same GetItems)`,
    );
    // What decided it: the fan-out's index reads are at most half a unit per query (each page under
    // 4 KB) whatever the young entries, the Scan reads every entry (a unit per ~100 of them here).
    expect(queryReads(idleBill)).toBeLessThanOrEqual(unsentKeys().length / 2);
    expect(idleScan.reads).toBeGreaterThanOrEqual(YOUNG / 100);
    expect(queryReads(busyBill)).toBeLessThanOrEqual(busyBill.charges.filter((c) => c.op === 'Query').length / 2);
  });
});
