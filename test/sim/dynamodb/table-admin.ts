/** CreateTable, DescribeTable, DeleteTable, ListTables: tables are ACTIVE as soon as they exist. */
import { notFound, SimAwsError, validation } from './errors.js';
import { checkFields } from './request.js';
import { checkTableName, keySchemaOf, parseTableSpec } from './schema.js';
import { Table, type TableContext } from './table.js';
import type { StreamLog } from './stream-log.js';

export interface Catalog {
  readonly tables: Map<string, Table>;
  /** Every stream ever created, in creation order (a deleted table's stays readable, DISABLED). */
  readonly streams: StreamLog[];
  readonly ctx: TableContext;
}

/** A stream label: the creation time as DynamoDB prints it, unique per table name. */
function streamLabel(c: Catalog, name: string, now: number): string {
  let t = now;
  const taken = new Set(c.streams.filter((s) => s.tableName === name).map((s) => s.label));
  let label: string;
  do label = new Date(t++).toISOString().replace('Z', '');
  while (taken.has(label));
  return label;
}

export function createTable(c: Catalog, input: Record<string, unknown>): Record<string, unknown> {
  const spec = parseTableSpec(input);
  for (const i of spec.indexes) checkTableName(i.name, 'indexName');
  if (c.tables.has(spec.name)) throw new SimAwsError('ResourceInUseException', 'Cannot create preexisting table');
  const now = c.ctx.now();
  const table = new Table(spec, c.ctx, now, streamLabel(c, spec.name, now));
  c.tables.set(spec.name, table);
  if (table.stream !== undefined) c.streams.push(table.stream);
  return { TableDescription: describe(table) };
}

export function describeTable(c: Catalog, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('DescribeTable', input, ['TableName']);
  return { Table: describe(tableOf(c, input.TableName)) };
}

export function deleteTable(c: Catalog, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('DeleteTable', input, ['TableName']);
  const table = tableOf(c, input.TableName);
  c.tables.delete(table.spec.name);
  table.stream?.close();
  return { TableDescription: { ...describe(table), TableStatus: 'DELETING' } };
}

export function listTables(c: Catalog, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('ListTables', input, ['ExclusiveStartTableName', 'Limit']);
  const limit = (input.Limit as number | undefined) ?? 100;
  if (limit < 1 || limit > 100) throw validation(`1 validation error detected: Value '${limit}' at 'limit' failed to satisfy constraint: Member must have value ${limit < 1 ? 'greater than or equal to 1' : 'less than or equal to 100'}`);
  const start = input.ExclusiveStartTableName as string | undefined;
  const names = [...c.tables.keys()].sort().filter((n) => start === undefined || n > start);
  const page = names.slice(0, limit);
  return { TableNames: page, ...(names.length > limit ? { LastEvaluatedTableName: page[page.length - 1] } : {}) };
}

export function tableOf(c: Catalog, name: unknown): Table {
  if (typeof name !== 'string') throw validation("1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null");
  const t = c.tables.get(name);
  if (t === undefined) throw notFound('Cannot do operations on a non-existent table');
  return t;
}

function describe(t: Table): Record<string, unknown> {
  const s = t.stream;
  return {
    AttributeDefinitions: Object.entries(t.spec.types).map(([AttributeName, AttributeType]) => ({ AttributeName, AttributeType })),
    TableName: t.spec.name,
    KeySchema: keySchemaOf(t.spec.key),
    TableStatus: 'ACTIVE',
    CreationDateTime: t.created / 1000,
    ProvisionedThroughput: { NumberOfDecreasesToday: 0, ReadCapacityUnits: 0, WriteCapacityUnits: 0 },
    TableSizeBytes: t.bytes,
    ItemCount: t.store.size,
    TableArn: t.arn,
    BillingModeSummary: { BillingMode: t.spec.billing },
    ...(t.indexes.length === 0
      ? {}
      : {
          GlobalSecondaryIndexes: t.indexes.map((i) => ({
            IndexName: i.spec.name,
            KeySchema: keySchemaOf(i.spec.key),
            Projection: { ProjectionType: i.spec.projection, ...(i.spec.projection === 'INCLUDE' ? { NonKeyAttributes: i.spec.include } : {}) },
            IndexStatus: 'ACTIVE',
            IndexSizeBytes: 0,
            ItemCount: i.store.size,
            IndexArn: `${t.arn}/index/${i.spec.name}`,
          })),
        }),
    ...(s === undefined ? {} : { StreamSpecification: { StreamEnabled: true, StreamViewType: s.viewType }, LatestStreamLabel: s.label, LatestStreamArn: s.arn }),
    DeletionProtectionEnabled: false,
  };
}
