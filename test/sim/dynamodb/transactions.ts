/**
 * TransactWriteItems (all or nothing: every action planned against the state before any is
 * applied) with ClientRequestToken idempotency, and BatchWriteItem (each write on its own).
 */
import { Charge, chargeWrite, type CapacityMode } from './capacity.js';
import { SimAwsError, validation } from './errors.js';
import { applyPlan, CHECK_FIELDS, DELETE_FIELDS, planCheck, planDelete, planPut, planUpdate, PUT_FIELDS, UPDATE_FIELDS, type WritePlan } from './item-writes.js';
import { checkFields, oneOf, type Db } from './request.js';
import { normalizeItem } from './values.js';
import { requestExpressions } from './expressions.js';
import { updatedPaths } from './update.js';

/** DynamoDB keeps a client token for 10 minutes. */
const TOKEN_TTL_MS = 10 * 60 * 1000;
const ACTIONS = ['Put', 'Update', 'Delete', 'ConditionCheck'] as const;
const NOT_IN_TRANSACTION = ['ReturnValues', 'ReturnConsumedCapacity', 'ReturnItemCollectionMetrics'];

export interface TokenLedger {
  readonly tokens: Map<string, { fingerprint: string; at: number }>;
  now(): number;
}

function planAction(db: Db, raw: Record<string, unknown>): WritePlan {
  const kinds = ACTIONS.filter((k) => raw[k] !== undefined);
  if (kinds.length !== 1 || Object.keys(raw).length !== 1) throw validation('TransactItems can only contain one of Check, Put, Update or Delete');
  const kind = kinds[0]!;
  const input = raw[kind] as Record<string, unknown>;
  const fields = kind === 'Put' ? PUT_FIELDS : kind === 'Update' ? UPDATE_FIELDS : kind === 'Delete' ? DELETE_FIELDS : CHECK_FIELDS;
  checkFields(`TransactWriteItems.${kind}`, input, fields.filter((f) => !NOT_IN_TRANSACTION.includes(f)));
  oneOf(`TransactWriteItems.${kind}`, 'ReturnValuesOnConditionCheckFailure', input.ReturnValuesOnConditionCheckFailure, ['NONE', 'ALL_OLD'], 'NONE');
  return kind === 'Put' ? planPut(db, input) : kind === 'Update' ? planUpdate(db, input, { inTransaction: true }) : kind === 'Delete' ? planDelete(db, input) : planCheck(db, input);
}

/** What DynamoDB refuses of an action before reading any item: its table, its expressions and placeholders, an update's paths. */
function checkShape(db: Db, raw: Record<string, unknown>): void {
  const kind = ACTIONS.find((k) => raw[k] !== undefined);
  if (kind === undefined) return;
  const input = raw[kind] as Record<string, unknown>;
  const table = db.table(input.TableName);
  const exprs = requestExpressions(input, kind === 'Update' ? ['ConditionExpression', 'UpdateExpression'] : ['ConditionExpression']);
  if (exprs.update !== undefined) updatedPaths(exprs.update, exprs.scope, table.keys);
}

export function transactWriteItems(db: Db, ledger: TokenLedger, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('TransactWriteItems', input, ['TransactItems', 'ClientRequestToken', 'ReturnConsumedCapacity', 'ReturnItemCollectionMetrics']);
  const capacity = oneOf('TransactWriteItems', 'ReturnConsumedCapacity', input.ReturnConsumedCapacity, ['NONE', 'TOTAL', 'INDEXES'] as CapacityMode[], 'NONE');
  const items = (input.TransactItems ?? []) as Record<string, unknown>[];
  if (!Array.isArray(items) || items.length === 0 || items.length > 100) {
    throw validation(`Value ${items.length === 0 ? '[]' : `'${items.length} items'`} at 'transactItems' failed to satisfy constraint: Member must have length ${items.length === 0 ? 'greater than or equal to 1' : 'less than or equal to 100'}`);
  }
  const token = input.ClientRequestToken as string | undefined;
  const fingerprint = JSON.stringify({ ...input, ClientRequestToken: undefined });
  if (token !== undefined) {
    const seen = ledger.tokens.get(token);
    if (seen !== undefined && ledger.now() - seen.at < TOKEN_TTL_MS) {
      // Another request under a used token: a refusal of its shape (a bad expression) comes first, what its
      // items would do (a path into a missing map) after the token's, as DynamoDB Local answers.
      if (seen.fingerprint !== fingerprint) items.forEach((raw) => checkShape(db, raw));
      if (seen.fingerprint !== fingerprint) throw new SimAwsError('IdempotentParameterMismatchException', 'The request uses the same client token as a previous, but non-identical request.');
      // The same request again: success, nothing applied a second time; the capacity it reads when asked
      // (AWS: a replay reports the read units of reading the items, here billed as chargesOf bills).
      const replayed = capacity === 'NONE' ? undefined : chargesOf(items.map((raw) => planAction(db, raw)), capacity);
      return replayed === undefined ? {} : { ConsumedCapacity: replayed };
    }
  }
  const plans = items.map((raw) => planAction(db, raw));
  const ids = new Set<string>();
  for (const p of plans) {
    const id = `${p.table.spec.name}\u0000${p.id}`;
    if (ids.has(id)) throw validation('Transaction request cannot include multiple operations on one item');
    ids.add(id);
  }
  if (plans.some((p) => !p.passed || p.invalid !== undefined)) throw cancelled(plans, items);
  for (const p of plans) applyPlan(p);
  if (token !== undefined) ledger.tokens.set(token, { fingerprint, at: ledger.now() });
  const consumed = chargesOf(plans, capacity);
  return consumed === undefined ? {} : { ConsumedCapacity: consumed };
}

function cancelled(plans: readonly WritePlan[], items: readonly Record<string, unknown>[]): SimAwsError {
  const reasons = plans.map((p, i) => {
    if (p.invalid !== undefined) return { Code: 'ValidationError', Message: p.invalid };
    if (p.passed) return { Code: 'None' };
    const action = Object.values(items[i]!)[0] as Record<string, unknown>;
    const withItem = action.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && p.old !== undefined;
    return { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed', ...(withItem ? { Item: p.old } : {}) };
  });
  const message = `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`;
  return new SimAwsError('TransactionCanceledException', message, { CancellationReasons: reasons });
}

/** Twice a plain write's units, per table (a ConditionCheck reads: charged as a write of its item, as AWS bills it). */
function chargesOf(plans: readonly WritePlan[], mode: CapacityMode): Record<string, unknown>[] | undefined {
  if (mode === 'NONE') return undefined;
  const byTable = new Map<string, Charge>();
  for (const p of plans) {
    const c = byTable.get(p.table.spec.name) ?? new Charge(p.table.spec.name);
    byTable.set(p.table.spec.name, c);
    chargeWrite(c, p.table, p.old, p.next, 2);
  }
  return [...byTable.values()].map((c) => c.answer(mode)!);
}

/** Every write is processed (the model never throttles): UnprocessedItems is always empty. */
export function batchWriteItem(db: Db, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('BatchWriteItem', input, ['RequestItems', 'ReturnConsumedCapacity', 'ReturnItemCollectionMetrics']);
  const capacity = oneOf('BatchWriteItem', 'ReturnConsumedCapacity', input.ReturnConsumedCapacity, ['NONE', 'TOTAL', 'INDEXES'] as CapacityMode[], 'NONE');
  const request = (input.RequestItems ?? {}) as Record<string, Record<string, unknown>[]>;
  const total = Object.values(request).reduce((n, l) => n + l.length, 0);
  if (total === 0 || total > 25) throw validation(`1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]`);
  const plans: WritePlan[] = [];
  const ids = new Set<string>();
  for (const [name, writes] of Object.entries(request)) {
    for (const w of writes) {
      checkFields('BatchWriteItem.RequestItems', w, ['PutRequest', 'DeleteRequest']);
      const p = w.PutRequest !== undefined
        ? planPut(db, { TableName: name, Item: (w.PutRequest as { Item: unknown }).Item })
        : planDelete(db, { TableName: name, Key: normalizeItem(((w.DeleteRequest as { Key?: Record<string, unknown> } | undefined)?.Key ?? {}) as Record<string, unknown>) });
      const id = `${name}\u0000${p.id}`;
      if (ids.has(id)) throw validation('Provided list of item keys contains duplicates');
      ids.add(id);
      plans.push(p);
    }
  }
  // Each write applies against the state left by the one before it (no conditions in a batch).
  const byTable = new Map<string, Charge>();
  for (const p of plans) {
    const old = p.table.get(p.id);
    applyPlan({ ...p, old });
    const c = byTable.get(p.table.spec.name) ?? new Charge(p.table.spec.name);
    byTable.set(p.table.spec.name, c);
    chargeWrite(c, p.table, old, p.next);
  }
  const consumed = capacity === 'NONE' ? undefined : [...byTable.values()].map((c) => c.answer(capacity)!);
  return { UnprocessedItems: {}, ...(consumed === undefined ? {} : { ConsumedCapacity: consumed }) };
}
