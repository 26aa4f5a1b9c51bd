/**
 * GetItem and BatchGetItem. An eventually consistent read (ConsistentRead absent or false) reads
 * the latest state here: the model has one copy of each item, so it never serves a stale one
 * (AWS may, for about a second; a caller that needs the latest asks for a consistent read).
 */
import { Charge, readUnits, type CapacityMode } from './capacity.js';
import { validation } from './errors.js';
import { requestExpressions } from './expressions.js';
import { resolvePath } from './paths.js';
import { project } from './projection.js';
import { checkFields, oneOf, type Db } from './request.js';
import { itemSize, normalizeItem, type Item } from './values.js';

const GET_FIELDS = ['TableName', 'Key', 'ProjectionExpression', 'ExpressionAttributeNames', 'ConsistentRead', 'ReturnConsumedCapacity'];

interface Read {
  readonly item: Item | undefined;
  readonly charge: Charge;
}

function readOne(db: Db, tableName: unknown, rawKey: unknown, spec: Record<string, unknown>, charge?: Charge): Read {
  const table = db.table(tableName);
  const exprs = requestExpressions(spec, ['ProjectionExpression']);
  const { id } = table.keyOf(normalizeItem((rawKey ?? {}) as Record<string, unknown>));
  const stored = table.get(id);
  const c = charge ?? new Charge(table.spec.name);
  c.table += readUnits(stored === undefined ? 0 : itemSize(stored), spec.ConsistentRead === true);
  const item = stored === undefined || exprs.projection === undefined ? stored : project(stored, exprs.projection.map((p) => resolvePath(p, exprs.scope.names)));
  return { item, charge: c };
}

export function getItem(db: Db, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('GetItem', input, GET_FIELDS);
  const capacity = oneOf('GetItem', 'ReturnConsumedCapacity', input.ReturnConsumedCapacity, ['NONE', 'TOTAL', 'INDEXES'] as CapacityMode[], 'NONE');
  const { item, charge } = readOne(db, input.TableName, input.Key, input);
  const consumed = charge.answer(capacity);
  return { ...(item === undefined ? {} : { Item: item }), ...(consumed === undefined ? {} : { ConsumedCapacity: consumed }) };
}

const BATCH_TABLE_FIELDS = ['Keys', 'ConsistentRead', 'ProjectionExpression', 'ExpressionAttributeNames'];

/** Every key is processed: the model never throttles, so UnprocessedKeys is always empty. */
export function batchGetItem(db: Db, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('BatchGetItem', input, ['RequestItems', 'ReturnConsumedCapacity']);
  const capacity = oneOf('BatchGetItem', 'ReturnConsumedCapacity', input.ReturnConsumedCapacity, ['NONE', 'TOTAL', 'INDEXES'] as CapacityMode[], 'NONE');
  const request = (input.RequestItems ?? {}) as Record<string, Record<string, unknown>>;
  const total = Object.values(request).reduce((n, t) => n + ((t.Keys as unknown[] | undefined)?.length ?? 0), 0);
  if (total > 100) throw validation('Too many items requested for the BatchGetItem call');
  if (Object.keys(request).length === 0) throw validation("1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must not be null");
  const responses: Record<string, Item[]> = {};
  const charges: Record<string, unknown>[] = [];
  for (const [name, spec] of Object.entries(request)) {
    checkFields('BatchGetItem.RequestItems', spec, BATCH_TABLE_FIELDS);
    const keys = (spec.Keys ?? []) as unknown[];
    if (keys.length === 0) throw validation("1 validation error detected: Value '[]' at 'requestItems." + name + ".member.keys' failed to satisfy constraint: Member must have length greater than or equal to 1");
    const table = db.table(name);
    const ids = keys.map((k) => table.keyOf(normalizeItem(k as Record<string, unknown>)).id);
    if (new Set(ids).size !== ids.length) throw validation('Provided list of item keys contains duplicates');
    const charge = new Charge(name);
    responses[name] = [];
    for (const k of keys) {
      const r = readOne(db, name, k, { ...spec, Keys: undefined }, charge);
      if (r.item !== undefined) responses[name].push(r.item);
    }
    const c = charge.answer(capacity);
    if (c !== undefined) charges.push(c);
  }
  return { Responses: responses, UnprocessedKeys: {}, ...(charges.length === 0 ? {} : { ConsumedCapacity: charges }) };
}
