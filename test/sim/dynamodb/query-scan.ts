import type { Condition, Operand } from './condition.js';
import type { Path } from './paths.js';
/**
 * Query and Scan, on a table or a GSI: a page of at most `Limit` items EVALUATED (before the
 * filter) and at most 1 MB read, with the LastEvaluatedKey to resume from (the table's key, plus
 * the index's key on an index). An index serves what it holds, which with index lag may be
 * behind the table, as a GSI is on AWS.
 */
import { Charge, readUnits, type CapacityMode } from './capacity.js';
import { evaluate } from './condition.js';
import { SimUnsupportedError, validation } from './errors.js';
import { requestExpressions, type RequestExpressions } from './expressions.js';
import { keyRange } from './key-condition.js';
import { resolvePath } from './paths.js';
import { project } from './projection.js';
import { checkFields, oneOf, type Db } from './request.js';
import { keyNames, type KeySpec } from './schema.js';
import { SortedStore, type Entry } from './store.js';
import type { Index, Table } from './table.js';
import { equalValues, itemSize, keyString, normalizeItem, type Item } from './values.js';

const PAGE_BYTES = 1024 * 1024;
const READ_FIELDS = ['TableName', 'IndexName', 'FilterExpression', 'ProjectionExpression', 'ExpressionAttributeNames', 'ExpressionAttributeValues', 'ConsistentRead', 'Limit', 'ExclusiveStartKey', 'Select', 'ReturnConsumedCapacity'];
const SELECTS = ['ALL_ATTRIBUTES', 'ALL_PROJECTED_ATTRIBUTES', 'SPECIFIC_ATTRIBUTES', 'COUNT'] as const;

interface Source {
  readonly table: Table;
  readonly index: Index | undefined;
  readonly store: SortedStore;
  readonly key: KeySpec;
}

function sourceOf(db: Db, op: string, input: Record<string, unknown>): Source {
  const table = db.table(input.TableName);
  if (input.IndexName === undefined) return { table, index: undefined, store: table.store, key: table.spec.key };
  const index = table.index(String(input.IndexName));
  if (input.ConsistentRead === true) throw validation('Consistent reads are not supported on global secondary indexes');
  void op;
  return { table, index, store: index.store, key: index.spec.key };
}

function checkCommon(op: string, input: Record<string, unknown>, src: Source, exprs: RequestExpressions): (typeof SELECTS)[number] {
  const select = oneOf(op, 'Select', input.Select, SELECTS, exprs.projection !== undefined ? 'SPECIFIC_ATTRIBUTES' : src.index === undefined ? 'ALL_ATTRIBUTES' : 'ALL_PROJECTED_ATTRIBUTES');
  if (select === 'SPECIFIC_ATTRIBUTES' && exprs.projection === undefined) throw validation('Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES');
  if (select === 'ALL_PROJECTED_ATTRIBUTES' && src.index === undefined) throw validation(`ALL_PROJECTED_ATTRIBUTES can be used only when ${op === 'Query' ? 'Querying' : 'Scanning'} using an IndexName`);
  if (exprs.projection !== undefined && select === 'COUNT') throw validation('Cannot specify the ProjectionExpression when choosing to get only the Count');
  if (exprs.projection !== undefined && select !== 'SPECIFIC_ATTRIBUTES') throw validation('Cannot specify the AttributesToGet or ProjectionExpression when choosing to get ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES or COUNT');
  if (select === 'ALL_ATTRIBUTES' && src.index !== undefined && src.index.kept !== undefined) {
    throw validation('One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index ' + src.index.spec.name + ' because its projection type is not ALL');
  }
  // An index that keeps some attributes only refuses to be asked for the others, as DynamoDB Local does.
  const kept = src.index?.kept;
  if (src.index !== undefined && kept !== undefined) {
    const heads = (paths: readonly Path[]) => paths.map((p) => String(resolvePath(p, exprs.scope.names)[0]));
    const missing = heads(exprs.projection ?? []).filter((h) => !kept.has(h));
    if (missing.length > 0) throw validation(`One or more parameter values were invalid: Global secondary index ${src.index.spec.name} does not project [${missing.join(', ')}]`);
    const unfiltered = heads(exprs.filter === undefined ? [] : conditionPaths(exprs.filter)).filter((h) => !kept.has(h));
    if (unfiltered.length > 0) throw validation(`One or more parameter values were invalid: Secondary index ${src.index.spec.name} does not project one or more filter attributes: [${unfiltered.join(', ')}]`);
  }
  if (input.Limit !== undefined && (typeof input.Limit !== 'number' || input.Limit < 1)) {
    throw validation('Limit must be greater than or equal to 1');
  }
  return select;
}

/** The ExclusiveStartKey's position: the store's id, partition and sort value of the entry it names. */
function startOf(src: Source, raw: unknown): { id: string; item: Item } | undefined {
  if (raw === undefined) return undefined;
  const item = normalizeItem(raw as Record<string, unknown>);
  const needed = new Set([...src.table.keys, ...keyNames(src.key)]);
  if (Object.keys(item).length !== needed.size || [...needed].some((k) => item[k] === undefined)) throw validation('The provided starting key is invalid: The provided key element does not match the schema');
  return { id: keyString(item, src.table.keys), item };
}

function lastKeyOf(src: Source, item: Item): Item {
  const out: Item = {};
  for (const k of [...src.table.keys, ...keyNames(src.key)]) out[k] = item[k]!;
  return out;
}

interface Page {
  Items?: Item[];
  Count: number;
  ScannedCount: number;
  LastEvaluatedKey?: Item;
  ConsumedCapacity?: Record<string, unknown>;
}

/** Reads entries into a page: Limit and 1 MB count every entry read, the filter only decides what is returned. */
function readPage(src: Source, entries: Iterable<Entry>, input: Record<string, unknown>, exprs: RequestExpressions, select: string): Page {
  const limit = (input.Limit as number | undefined) ?? Infinity;
  const paths = exprs.projection?.map((p) => resolvePath(p, exprs.scope.names));
  const items: Item[] = [];
  let scanned = 0;
  let bytes = 0;
  let last: Item | undefined;
  for (const e of entries) {
    scanned++;
    bytes += itemSize(e.item);
    if (exprs.filter === undefined || evaluate(exprs.filter, e.item, exprs.scope)) items.push(paths === undefined ? e.item : project(e.item, paths));
    if (scanned >= limit || bytes >= PAGE_BYTES) {
      last = e.item;
      break;
    }
  }
  const charge = new Charge(src.table.spec.name);
  const units = readUnits(bytes, input.ConsistentRead === true);
  if (src.index === undefined) charge.table = units;
  else charge.addIndex(src.index.spec.name, units);
  const consumed = charge.answer(input.ReturnConsumedCapacity as CapacityMode | undefined);
  return {
    ...(select === 'COUNT' ? {} : { Items: items }),
    Count: items.length,
    ScannedCount: scanned,
    ...(last === undefined ? {} : { LastEvaluatedKey: lastKeyOf(src, last) }),
    ...(consumed === undefined ? {} : { ConsumedCapacity: consumed }),
  };
}

/** Every path a condition names (size() and function arguments included). */
function conditionPaths(c: Condition): Path[] {
  const ofOperand = (o: Operand): Path[] => ('path' in o ? [o.path] : 'size' in o ? [o.size] : []);
  switch (c.op) {
    case 'and':
    case 'or':
      return [...conditionPaths(c.left), ...conditionPaths(c.right)];
    case 'not':
      return conditionPaths(c.inner);
    case 'cmp':
      return [...ofOperand(c.left), ...ofOperand(c.right)];
    case 'between':
      return [c.subject, c.low, c.high].flatMap(ofOperand);
    case 'in':
      return [c.subject, ...c.list].flatMap(ofOperand);
    case 'fn':
      return [c.path, ...(c.arg === undefined ? [] : ofOperand(c.arg))];
  }
}

export function query(db: Db, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('Query', input, [...READ_FIELDS, 'KeyConditionExpression', 'ScanIndexForward']);
  oneOf('Query', 'ReturnConsumedCapacity', input.ReturnConsumedCapacity, ['NONE', 'TOTAL', 'INDEXES'], 'NONE');
  const src = sourceOf(db, 'Query', input);
  if (input.KeyConditionExpression === undefined) throw validation('Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.');
  const exprs = requestExpressions(input, ['KeyConditionExpression', 'FilterExpression', 'ProjectionExpression']);
  const select = checkCommon('Query', input, src, exprs);
  // A Query's filter may not name the key attributes of what it reads (its key condition does that).
  const keyAttrs = keyNames(src.key);
  for (const p of exprs.filter === undefined ? [] : conditionPaths(exprs.filter)) {
    const head = String(resolvePath(p, exprs.scope.names)[0]);
    if (keyAttrs.includes(head)) throw validation(`Filter Expression can only contain non-primary key attributes: Primary key attribute: ${head}`);
  }
  const range = keyRange(exprs.keyCondition!, exprs.scope, src.key, src.table.spec.types);
  const list = src.store.partition(range.hash, src.key.hash);
  const start = startOf(src, input.ExclusiveStartKey);
  const rangeOf = (item: Item) => (src.key.range === undefined ? undefined : item[src.key.range]);
  if (start !== undefined && (!equalValues(start.item[src.key.hash]!, range.hash) || !range.inRange(rangeOf(start.item)))) {
    throw validation('The provided starting key does not match the range key predicate');
  }
  const forward = input.ScanIndexForward !== false;
  function* entries(): Generator<Entry> {
    let i = forward ? 0 : list.length - 1;
    if (start !== undefined) {
      const after = SortedStore.after(list, rangeOf(start.item), start.id);
      i = forward ? after : after - (list[after - 1]?.id === start.id ? 2 : 1);
    }
    for (; forward ? i < list.length : i >= 0; i += forward ? 1 : -1) if (range.inRange(list[i]!.range)) yield list[i]!;
  }
  return { ...readPage(src, entries(), input, exprs, select) };
}

export function scan(db: Db, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('Scan', input, [...READ_FIELDS, 'Segment', 'TotalSegments']);
  if (input.Segment !== undefined || input.TotalSegments !== undefined) throw new SimUnsupportedError('Scan.Segment/TotalSegments (parallel scan)');
  oneOf('Scan', 'ReturnConsumedCapacity', input.ReturnConsumedCapacity, ['NONE', 'TOTAL', 'INDEXES'], 'NONE');
  const src = sourceOf(db, 'Scan', input);
  const exprs = requestExpressions(input, ['FilterExpression', 'ProjectionExpression']);
  const select = checkCommon('Scan', input, src, exprs);
  const start = startOf(src, input.ExclusiveStartKey);
  const entries =
    start === undefined
      ? src.store.scan()
      : src.store.scan(keyString(start.item, [src.key.hash]), src.key.range === undefined ? undefined : start.item[src.key.range], start.id);
  return { ...readPage(src, entries, input, exprs, select) };
}
