/**
 * A table's definition as CreateTable gives it, checked as DynamoDB checks it, and described back
 * as DescribeTable answers it.
 */
import { SimUnsupportedError, validation } from './errors.js';

export type KeyType = 'S' | 'N' | 'B';
export interface KeySpec {
  readonly hash: string;
  readonly range?: string;
}
export interface IndexSpec {
  readonly name: string;
  readonly key: KeySpec;
  readonly projection: 'ALL' | 'KEYS_ONLY' | 'INCLUDE';
  readonly include: readonly string[];
}
export interface TableSpec {
  readonly name: string;
  readonly key: KeySpec;
  readonly types: Readonly<Record<string, KeyType>>;
  readonly indexes: readonly IndexSpec[];
  readonly billing: 'PAY_PER_REQUEST' | 'PROVISIONED';
  readonly streamViewType?: 'KEYS_ONLY' | 'NEW_IMAGE' | 'OLD_IMAGE' | 'NEW_AND_OLD_IMAGES';
  readonly raw: Record<string, unknown>;
}

const CREATE_FIELDS = new Set(['TableName', 'AttributeDefinitions', 'KeySchema', 'GlobalSecondaryIndexes', 'BillingMode', 'StreamSpecification', 'ProvisionedThroughput', 'Tags', 'DeletionProtectionEnabled', 'TableClass', 'SSESpecification']);
export const TABLE_NAME = /^[a-zA-Z0-9_.-]{3,255}$/;

export function checkTableName(name: unknown, field = 'tableName'): string {
  if (typeof name !== 'string' || !TABLE_NAME.test(name)) {
    throw validation(`1 validation error detected: Value '${String(name)}' at '${field}' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+`);
  }
  return name;
}

export function parseTableSpec(input: Record<string, unknown>): TableSpec {
  for (const k of Object.keys(input)) if (!CREATE_FIELDS.has(k)) throw new SimUnsupportedError(`CreateTable.${k}`);
  if (input.SSESpecification !== undefined || input.TableClass !== undefined) throw new SimUnsupportedError('CreateTable SSESpecification/TableClass');
  const name = checkTableName(input.TableName);
  const defs = (input.AttributeDefinitions ?? []) as { AttributeName: string; AttributeType: KeyType }[];
  const types: Record<string, KeyType> = {};
  for (const d of defs) {
    if (!['S', 'N', 'B'].includes(d.AttributeType)) throw validation(`1 validation error detected: Value '${d.AttributeType}' at 'attributeDefinitions.member.attributeType' failed to satisfy constraint: Member must satisfy enum value set: [B, N, S]`);
    types[d.AttributeName] = d.AttributeType;
  }
  const key = keySpec(input.KeySchema, types, 'table');
  const gsis = (input.GlobalSecondaryIndexes ?? []) as Record<string, unknown>[];
  const indexes = gsis.map((g) => indexSpec(g, types));
  if (new Set(indexes.map((i) => i.name)).size !== indexes.length) throw validation('One or more parameter values were invalid: Duplicate index name');
  const used = new Set([key.hash, key.range, ...indexes.flatMap((i) => [i.key.hash, i.key.range])].filter((x): x is string => x !== undefined));
  if (Object.keys(types).some((a) => !used.has(a)) || used.size !== Object.keys(types).length) {
    throw validation('The number of attributes in key schema must match the number of attributes defined in attribute definitions.');
  }
  const billing = (input.BillingMode ?? 'PROVISIONED') as TableSpec['billing'];
  if (billing === 'PROVISIONED' && input.ProvisionedThroughput === undefined) throw validation('One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED');
  const stream = input.StreamSpecification as { StreamEnabled?: boolean; StreamViewType?: TableSpec['streamViewType'] } | undefined;
  if (stream?.StreamEnabled === true && stream.StreamViewType === undefined) throw validation('Stream ViewType must be specified when StreamEnabled is true');
  return { name, key, types, indexes, billing, ...(stream?.StreamEnabled ? { streamViewType: stream.StreamViewType! } : {}), raw: input };
}

function keySpec(raw: unknown, types: Record<string, KeyType>, where: string): KeySpec {
  const ks = (raw ?? []) as { AttributeName: string; KeyType: 'HASH' | 'RANGE' }[];
  const hash = ks.find((k) => k.KeyType === 'HASH');
  const range = ks.find((k) => k.KeyType === 'RANGE');
  if (hash === undefined || ks.length > 2 || (ks.length === 2 && range === undefined) || ks[0] !== hash) throw validation(`Invalid KeySchema: The first KeySchemaElement is not a HASH key type`);
  for (const k of ks) {
    if (types[k.AttributeName] === undefined) throw validation(`One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [${ks.map((x) => x.AttributeName).join(', ')}], AttributeDefinitions: [${Object.keys(types).join(', ')}]`);
  }
  void where;
  return range === undefined ? { hash: hash.AttributeName } : { hash: hash.AttributeName, range: range.AttributeName };
}

function indexSpec(g: Record<string, unknown>, types: Record<string, KeyType>): IndexSpec {
  const p = (g.Projection ?? {}) as { ProjectionType?: IndexSpec['projection']; NonKeyAttributes?: string[] };
  const projection = p.ProjectionType ?? 'ALL';
  if (!['ALL', 'KEYS_ONLY', 'INCLUDE'].includes(projection)) throw validation(`Unknown ProjectionType: ${projection}`);
  return { name: String(g.IndexName), key: keySpec(g.KeySchema, types, 'index'), projection, include: projection === 'INCLUDE' ? (p.NonKeyAttributes ?? []) : [] };
}

export const keyNames = (k: KeySpec): string[] => (k.range === undefined ? [k.hash] : [k.hash, k.range]);

export const keySchemaOf = (k: KeySpec): { AttributeName: string; KeyType: string }[] => [
  { AttributeName: k.hash, KeyType: 'HASH' },
  ...(k.range === undefined ? [] : [{ AttributeName: k.range, KeyType: 'RANGE' }]),
];
