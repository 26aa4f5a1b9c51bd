/**
 * PutItem, UpdateItem, DeleteItem: each is planned (validated, its condition evaluated, the new
 * item computed) and then applied. TransactWriteItems plans all its actions before applying any.
 */
import { Charge, chargeWrite, type CapacityMode } from './capacity.js';
import { evaluate } from './condition.js';
import { SimAwsError, validation } from './errors.js';
import { requestExpressions, type RequestExpressions } from './expressions.js';
import { resolvePath } from './paths.js';
import { project } from './projection.js';
import { checkFields, conditionFailed, oneOf, type Db } from './request.js';
import type { Table } from './table.js';
import { applyUpdate, updatedPaths } from './update.js';
import { normalizeItem, type Item } from './values.js';

export interface WritePlan {
  readonly table: Table;
  readonly id: string;
  readonly key: Item;
  readonly old: Item | undefined;
  /** undefined: the item is deleted (or stays absent). */
  readonly next: Item | undefined;
  /** Whether the action's condition held (a plan that failed is never applied). */
  readonly passed: boolean;
  /** In a transaction: the item it would write is refused (an index key of the wrong type); the transaction is cancelled with ValidationError for it. */
  readonly invalid?: string;
  /** For UPDATED_OLD / UPDATED_NEW. */
  readonly paths?: readonly (string | number)[][];
  /**
   * For UPDATED_OLD and UPDATED_NEW: the top-level attribute of each path SET, ADD or DELETE wrote, and each
   * REMOVEd path itself, before or after the update (DynamoDB Local: REMOVE m.a returns
   * nothing of m after, REMOVE l[0] the element then at l[0]).
   */
  readonly newPaths?: readonly (string | number)[][];
  readonly exprs: RequestExpressions;
}

const COMMON = ['TableName', 'ConditionExpression', 'ExpressionAttributeNames', 'ExpressionAttributeValues', 'ReturnValuesOnConditionCheckFailure'];
const SINGLE = [...COMMON, 'ReturnValues', 'ReturnConsumedCapacity', 'ReturnItemCollectionMetrics'];
export const PUT_FIELDS = [...SINGLE, 'Item'];
export const UPDATE_FIELDS = [...SINGLE, 'Key', 'UpdateExpression'];
export const DELETE_FIELDS = [...SINGLE, 'Key'];
export const CHECK_FIELDS = [...COMMON, 'Key'];

function passes(exprs: RequestExpressions, old: Item | undefined): boolean {
  return exprs.condition === undefined || evaluate(exprs.condition, old ?? {}, exprs.scope);
}

export function planPut(db: Db, input: Record<string, unknown>): WritePlan {
  const table = db.table(input.TableName);
  if (input.Item === undefined) throw validation('1 validation error detected: Value null at \'item\' failed to satisfy constraint: Member must not be null');
  const exprs = requestExpressions(input, ['ConditionExpression']);
  const next = normalizeItem(input.Item as Record<string, unknown>);
  const id = table.checkItem(next);
  const key: Item = {};
  for (const k of table.keys) key[k] = next[k]!;
  const old = table.get(id);
  return { table, id, key, old, next, passed: passes(exprs, old), exprs };
}

/** `inTransaction`: an updated item DynamoDB refuses (an index key of another type) cancels the transaction with ValidationError for this action, where a plain UpdateItem answers ValidationException. */
export function planUpdate(db: Db, input: Record<string, unknown>, opts: { inTransaction?: boolean } = {}): WritePlan {
  const table = db.table(input.TableName);
  const exprs = requestExpressions(input, ['ConditionExpression', 'UpdateExpression']);
  const { id, key } = table.keyOf(normalizeItem((input.Key ?? {}) as Record<string, unknown>));
  const old = table.get(id);
  // Overlapping paths are refused before the condition is read, a key attribute only after it held (DynamoDB Local's order).
  const paths = exprs.update === undefined ? [] : updatedPaths(exprs.update, exprs.scope, []).map((p) => [...p]);
  const passed = passes(exprs, old);
  if (!passed) return { table, id, key, old, next: old, passed, paths, exprs };
  if (exprs.update !== undefined) updatedPaths(exprs.update, exprs.scope, table.keys);
  const next = exprs.update === undefined ? (old ?? key) : applyUpdate(exprs.update, old ?? key, exprs.scope);
  const u = exprs.update;
  const written = u === undefined ? [] : [...u.set.map((a) => a.path), ...u.add.map((a) => a.path), ...u.delete.map((a) => a.path)].map((p) => resolvePath(p, exprs.scope.names).slice(0, 1));
  const newPaths = [...written, ...(u?.remove ?? []).map((p) => [...resolvePath(p, exprs.scope.names)])];
  try {
    table.checkItem(next);
  } catch (e) {
    if (!(opts.inTransaction && e instanceof SimAwsError && e.type === 'ValidationException') || table.hasNonScalarIndexKey(next)) throw e;
    return { table, id, key, old, next, passed, paths, newPaths, exprs, invalid: e.awsMessage };
  }
  return { table, id, key, old, next, passed, paths, newPaths, exprs };
}

export function planDelete(db: Db, input: Record<string, unknown>): WritePlan {
  const table = db.table(input.TableName);
  const exprs = requestExpressions(input, ['ConditionExpression']);
  const { id, key } = table.keyOf(normalizeItem((input.Key ?? {}) as Record<string, unknown>));
  const old = table.get(id);
  return { table, id, key, old, next: undefined, passed: passes(exprs, old), exprs };
}

export function planCheck(db: Db, input: Record<string, unknown>): WritePlan {
  const table = db.table(input.TableName);
  if (input.ConditionExpression === undefined) throw validation('1 validation error detected: Value null at \'conditionExpression\' failed to satisfy constraint: Member must not be null');
  const exprs = requestExpressions(input, ['ConditionExpression']);
  const { id, key } = table.keyOf(normalizeItem((input.Key ?? {}) as Record<string, unknown>));
  const old = table.get(id);
  return { table, id, key, old, next: old, passed: passes(exprs, old), exprs };
}

export function applyPlan(p: WritePlan): void {
  if (p.old === undefined && p.next === undefined) return;
  p.table.write(p.id, p.old, p.next);
}

type Returns = 'NONE' | 'ALL_OLD' | 'UPDATED_OLD' | 'ALL_NEW' | 'UPDATED_NEW';

function returned(p: WritePlan, mode: Returns): Item | undefined {
  switch (mode) {
    case 'NONE':
      return undefined;
    case 'ALL_OLD':
      return p.old;
    case 'ALL_NEW':
      return p.next;
    // The whole top-level attribute of each updated path, as DynamoDB Local returns it.
    case 'UPDATED_OLD':
      return p.old === undefined ? undefined : project(p.old, p.newPaths ?? (p.paths ?? []).map((x) => x.slice(0, 1)));
    case 'UPDATED_NEW':
      return p.next === undefined ? undefined : project(p.next, p.newPaths ?? (p.paths ?? []).map((x) => x.slice(0, 1)));
  }
}

/** One single-item write, as its operation answers it. */
export function singleWrite(db: Db, op: 'PutItem' | 'UpdateItem' | 'DeleteItem', input: Record<string, unknown>): Record<string, unknown> {
  checkFields(op, input, op === 'PutItem' ? PUT_FIELDS : op === 'UpdateItem' ? UPDATE_FIELDS : DELETE_FIELDS);
  const allowed: Returns[] = op === 'UpdateItem' ? ['NONE', 'ALL_OLD', 'UPDATED_OLD', 'ALL_NEW', 'UPDATED_NEW'] : ['NONE', 'ALL_OLD'];
  if (input.ReturnValues !== undefined && !allowed.includes(input.ReturnValues as Returns)) throw validation('Return values set to invalid value');
  const mode = oneOf(op, 'ReturnValues', input.ReturnValues, allowed, 'NONE');
  const onFailure = oneOf(op, 'ReturnValuesOnConditionCheckFailure', input.ReturnValuesOnConditionCheckFailure, ['NONE', 'ALL_OLD'], 'NONE');
  const capacity = oneOf(op, 'ReturnConsumedCapacity', input.ReturnConsumedCapacity, ['NONE', 'TOTAL', 'INDEXES'] as CapacityMode[], 'NONE');
  oneOf(op, 'ReturnItemCollectionMetrics', input.ReturnItemCollectionMetrics, ['NONE', 'SIZE'], 'NONE');
  const plan = op === 'PutItem' ? planPut(db, input) : op === 'UpdateItem' ? planUpdate(db, input) : planDelete(db, input);
  if (!plan.passed) throw conditionFailed(onFailure === 'ALL_OLD' ? plan.old : undefined);
  applyPlan(plan);
  const charge = new Charge(plan.table.spec.name);
  chargeWrite(charge, plan.table, plan.old, plan.next);
  const attrs = returned(plan, mode);
  const consumed = charge.answer(capacity);
  // An item collection metric exists only for tables with local secondary indexes, which the model has none of.
  return { ...(attrs === undefined || Object.keys(attrs).length === 0 ? {} : { Attributes: attrs }), ...(consumed === undefined ? {} : { ConsumedCapacity: consumed }) };
}
