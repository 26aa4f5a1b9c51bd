/**
 * The differential runner: one operation sequence against DynamoDB Local and against the
 * in-memory model (test/sim/dynamodb), each on fresh tables, through the real SDK client; every
 * step's answer normalised (NORMALISATIONS, and nothing else) and compared, then both tables'
 * stream records. The first difference is the verdict.
 */
import * as ddb from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand, type DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { TABLES, type Op } from './ops.js';

/** Everything the comparison takes away, and why: the only ways the two answers may differ. */
export const NORMALISATIONS: readonly { what: string; why: string }[] = [
  { what: 'error messages (and DynamoDB Local\'s `Message` against `message`)', why: 'their wording differs between AWS, DynamoDB Local and the model; the code branches on the error type and the cancellation codes, never on a message' },
  { what: 'the response `$metadata` (request id, attempts, status)', why: 'per request, not part of an answer' },
  { what: 'ConsumedCapacity in an answer that did not ask for it', why: 'DynamoDB Local adds it to some answers (a DeleteItem of a missing item) unasked; AWS and the model answer it only with ReturnConsumedCapacity, which the sequences do not send' },
  { what: 'LastEvaluatedKey of a page that stopped exactly at Limit, when one engine leaves it out', why: 'DynamoDB Local leaves it out when the key condition\'s range cannot hold another item; AWS documents that a page stopped by Limit may carry one with nothing after it (the next page is then empty); the code pages until there is none, either way' },
  { what: 'the order of a Scan\'s items (sorted by key before comparing)', why: 'DynamoDB orders a Scan by the hash of the partition key; the model by the key\'s text; the code never relies on Scan order' },
  { what: 'the order of a BatchGetItem\'s items per table (sorted by key)', why: 'AWS documents no order for them ("the order of the returned items is not guaranteed"); the code looks each item up by its key' },
  { what: 'the order among a Query\'s index items whose index keys are equal (each run of equal index keys sorted by item)', why: 'AWS documents no order for index items that share their index key values; DynamoDB Local serves them in its storage\'s order, the model by the base table\'s key; the code reads such runs whole (an index position is the item\'s own key), and a page cut inside one still differs' },
  { what: 'the order of a set\'s elements (SS, NS, BS sorted)', why: 'DynamoDB does not promise an order for set elements' },
  { what: 'not generated: a transaction naming one item twice with a condition that fails', why: 'AWS refuses two actions on one item up front (ValidationException) and so does the model; DynamoDB Local evaluates the conditions first and answers TransactionCanceledException when one fails. Two actions on one item without conditions are generated: both engines refuse them' },
  { what: 'stream records\' SequenceNumber, eventID, ApproximateCreationDateTime, SizeBytes, eventVersion, awsRegion', why: 'per-engine identifiers and clocks; the records\' order, names, keys and images are compared' },
];

export interface Engine {
  client: ddb.DynamoDBClient;
  streams: DynamoDBStreamsClient;
  prefix: string;
}

export type Outcome = { ok: unknown } | { error: string; reasons?: unknown; item?: unknown };

export interface Mismatch {
  step: number;
  op: Op | 'stream';
  local: unknown;
  model: unknown;
}

const COMMANDS: Record<string, new (input: any) => any> = {
  PutItem: ddb.PutItemCommand,
  UpdateItem: ddb.UpdateItemCommand,
  DeleteItem: ddb.DeleteItemCommand,
  GetItem: ddb.GetItemCommand,
  Query: ddb.QueryCommand,
  Scan: ddb.ScanCommand,
  BatchGetItem: ddb.BatchGetItemCommand,
  TransactWriteItems: ddb.TransactWriteItemsCommand,
};

/** The sequence's table names and client tokens with the engine's prefix. */
function named(input: Record<string, unknown>, prefix: string): Record<string, unknown> {
  const rename = (t: unknown) => (t === TABLES.sorted || t === TABLES.plain ? `${prefix}${t}` : t);
  const out: Record<string, unknown> = { ...input };
  if ('TableName' in out) out.TableName = rename(out.TableName);
  // Tokens are the account's, not a table's: a sequence's own, or an earlier sequence's would answer.
  if (typeof out.ClientRequestToken === 'string') out.ClientRequestToken = `${prefix}${out.ClientRequestToken}`;
  if (out.RequestItems) out.RequestItems = Object.fromEntries(Object.entries(out.RequestItems as object).map(([t, v]) => [rename(t), v]));
  if (Array.isArray(out.TransactItems)) out.TransactItems = out.TransactItems.map((a: Record<string, Record<string, unknown>>) => Object.fromEntries(Object.entries(a).map(([k, v]) => [k, { ...v, TableName: rename(v.TableName) }])));
  return out;
}

export async function createTables(e: Engine): Promise<void> {
  await e.client.send(
    new ddb.CreateTableCommand({
      TableName: `${e.prefix}${TABLES.sorted}`,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }, { AttributeName: 'sk', KeyType: 'RANGE' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }, { AttributeName: 'sk', AttributeType: 'N' }, { AttributeName: 'gk', AttributeType: 'S' }, { AttributeName: 'n', AttributeType: 'N' }],
      GlobalSecondaryIndexes: [{ IndexName: 'byGroup', KeySchema: [{ AttributeName: 'gk', KeyType: 'HASH' }, { AttributeName: 'n', KeyType: 'RANGE' }], Projection: { ProjectionType: 'ALL' } }],
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    }),
  );
  await e.client.send(new ddb.CreateTableCommand({ TableName: `${e.prefix}${TABLES.plain}`, BillingMode: 'PAY_PER_REQUEST', KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }], AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }] }));
}

/** Sets sorted, recursively; everything else as it is. */
export function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v === null || typeof v !== 'object') return v;
  const o = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o).sort()) {
    const x = o[k];
    if ((k === 'SS' || k === 'NS') && Array.isArray(x)) out[k] = [...x].map(String).sort();
    else if (k === 'BS' && Array.isArray(x)) out[k] = x.map((b) => Buffer.from(b as Uint8Array).toString('base64')).sort();
    else if (x instanceof Uint8Array) out[k] = Buffer.from(x).toString('base64');
    else out[k] = canonical(x);
  }
  return out;
}

const byKey = (items: unknown[]) => [...items].sort((a, b) => (JSON.stringify(canonical(key(a))) < JSON.stringify(canonical(key(b))) ? -1 : 1));
const key = (item: unknown) => {
  const i = item as Record<string, unknown>;
  return { pk: i.pk, sk: i.sk };
};

/** The attribute names a Query's key condition reads (its index's keys). */
function keyConditionNames(input: Record<string, unknown>): string[] {
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  return [...String(input.KeyConditionExpression ?? '').matchAll(/#\w+/g)].map((m) => names[m[0]] ?? m[0]);
}

/** Items in their order, except that each run of items equal on `keys` is sorted (canonically). */
function tiesSorted(items: unknown[], keys: string[]): unknown[] {
  const of = (i: unknown) => JSON.stringify(canonical(keys.map((k) => (i as Record<string, unknown>)[k])));
  const out: unknown[] = [];
  for (let a = 0; a < items.length; ) {
    let b = a + 1;
    while (b < items.length && of(items[b]) === of(items[a])) b++;
    out.push(...items.slice(a, b).map((i) => [JSON.stringify(canonical(i)), i] as const).sort((x, y) => (x[0] < y[0] ? -1 : 1)).map(([, i]) => i));
    a = b;
  }
  return out;
}

export function outcomeOf(op: Op, out: Record<string, unknown>): Outcome {
  const { $metadata: _m, ...rest } = out;
  if (op.input.ReturnConsumedCapacity === undefined) delete rest.ConsumedCapacity;
  if (op.op === 'Scan' && Array.isArray(rest.Items)) rest.Items = byKey(rest.Items);
  if (op.op === 'Query' && op.input.IndexName !== undefined && rest.LastEvaluatedKey === undefined && Array.isArray(rest.Items)) rest.Items = tiesSorted(rest.Items, keyConditionNames(op.input));
  if (op.op === 'BatchGetItem' && rest.Responses) rest.Responses = Object.fromEntries(Object.entries(rest.Responses as Record<string, unknown[]>).map(([t, items]) => [t, byKey(items)]));
  return { ok: canonical(rest) };
}

export function failureOf(e: unknown): Outcome {
  const err = e as { name?: string; CancellationReasons?: { Code?: string; Item?: unknown }[]; Item?: unknown };
  return {
    error: err.name ?? 'unknown',
    ...(err.CancellationReasons ? { reasons: err.CancellationReasons.map((r) => canonical({ Code: r.Code, ...(r.Item ? { Item: r.Item } : {}) })) } : {}),
    ...(err.Item ? { item: canonical(err.Item) } : {}),
  };
}

export async function step(e: Engine, op: Op): Promise<Outcome> {
  const Command = COMMANDS[op.op]!;
  try {
    return outcomeOf(op, (await e.client.send(new Command(named(op.input, e.prefix)))) as unknown as Record<string, unknown>);
  } catch (err) {
    return failureOf(err);
  }
}

/** The sorted table's stream records, in order, without their per-engine identifiers. */
export async function streamOf(e: Engine): Promise<unknown[]> {
  const arn = (await e.client.send(new ddb.DescribeTableCommand({ TableName: `${e.prefix}${TABLES.sorted}` }))).Table?.LatestStreamArn;
  const shards = (await e.streams.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription?.Shards ?? [];
  const out: unknown[] = [];
  for (const s of shards) {
    let it = (await e.streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: s.ShardId, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
    for (let empty = 0; it !== undefined && empty < 3; ) {
      const page = await e.streams.send(new GetRecordsCommand({ ShardIterator: it }));
      for (const r of page.Records ?? []) out.push(canonical({ eventName: r.eventName, Keys: r.dynamodb?.Keys, NewImage: r.dynamodb?.NewImage, OldImage: r.dynamodb?.OldImage, StreamViewType: r.dynamodb?.StreamViewType }));
      empty = (page.Records ?? []).length === 0 ? empty + 1 : 0;
      it = page.NextShardIterator;
    }
  }
  return out;
}

/**
 * A page that stopped exactly at Limit: one engine may know nothing can follow (DynamoDB Local, when the
 * key condition's range ends at the last item read) and leave out LastEvaluatedKey, the other not (AWS
 * documents that a page stopped by Limit may carry one with nothing after it). Compared only when both agree.
 */
export function atLimit(op: Op, a: Outcome, b: Outcome): [Outcome, Outcome] {
  const limit = op.input.Limit;
  if (typeof limit !== 'number' || !('ok' in a) || !('ok' in b)) return [a, b];
  const [x, y] = [a.ok as Record<string, unknown>, b.ok as Record<string, unknown>];
  if (x.ScannedCount !== limit || y.ScannedCount !== limit || (x.LastEvaluatedKey === undefined) === (y.LastEvaluatedKey === undefined)) return [a, b];
  const { LastEvaluatedKey: _x, ...xa } = x;
  const { LastEvaluatedKey: _y, ...yb } = y;
  return [{ ok: xa }, { ok: yb }];
}

/** Runs `ops` on both engines (fresh tables each) and returns the first difference, if any. */
export async function differential(local: Engine, model: Engine, ops: readonly Op[], tally?: (o: Outcome) => void): Promise<Mismatch | undefined> {
  await Promise.all([createTables(local), createTables(model)]);
  for (const [i, op] of ops.entries()) {
    const [a, b] = atLimit(op, await step(local, op), await step(model, op));
    tally?.(a);
    if (JSON.stringify(a) !== JSON.stringify(b)) return { step: i, op, local: a, model: b };
  }
  const [sa, sb] = [await streamOf(local), await streamOf(model)];
  if (JSON.stringify(sa) !== JSON.stringify(sb)) return { step: ops.length, op: 'stream', local: sa, model: sb };
  return undefined;
}
