/**
 * Write capacity from the request mix, by AWS's pricing rules (DynamoDB Local's ConsumedCapacity
 * is not AWS's, so we never read it):
 * - standard PutItem / UpdateItem / DeleteItem: 1 WCU per 1 KB of the item, rounded up, min 1;
 * - BatchWriteItem: the same per item, each item rounded up on its own;
 * - TransactWriteItems: 2 WCU per 1 KB per item (Put, Update, Delete, ConditionCheck), rounded up per item;
 * - a write whose condition fails still bills; so does a cancelled transaction (we bill every attempt we sent);
 * - global secondary indexes: a write that changes an index key attribute costs the index two
 *   writes (delete the old entry, put the new one), one that removes it one write, each 1 WCU per
 *   KB of the projected item (the whole item under ALL, the Jobs index; its keys under KEYS_ONLY, the
 *   Outbox index: under 1 KB, so 1). An update of neither key attribute writes a KEYS_ONLY index not at
 *   all; an ALL index it rewrites once, which this bill does not count. Index propagation is
 *   asynchronous, after the transaction, and billed at the standard rate.
 * Item size: attribute names plus values (DynamoDB's item-size rules, see itemSize).
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { parseUpdate } from '../cli/demo/call-profile.js';
import type { LoggedRequest } from './requests.js';

/** Size of a number as DynamoDB stores it: ~1 byte per 2 significant digits, plus 1. */
function numberBytes(n: string): number {
  const digits = n.replace(/^-/, '').replace(/e.*$/i, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return 1 + Math.ceil(Math.max(1, digits.length) / 2);
}

export function valueSize(v: AttributeValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S);
  if (v.N !== undefined) return numberBytes(v.N);
  if (v.B !== undefined) return v.B.byteLength;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS !== undefined) return v.SS.reduce((n, s) => n + Buffer.byteLength(s), 0);
  if (v.NS !== undefined) return v.NS.reduce((n, s) => n + numberBytes(s), 0);
  if (v.BS !== undefined) return v.BS.reduce((n, b) => n + b.byteLength, 0);
  if (v.L !== undefined) return 3 + v.L.reduce((n, e) => n + 1 + valueSize(e), 0);
  if (v.M !== undefined) return 3 + Object.entries(v.M).reduce((n, [k, e]) => n + 1 + Buffer.byteLength(k) + valueSize(e), 0);
  return 0;
}

export function itemSize(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce((n, [k, v]) => n + Buffer.byteLength(k) + valueSize(v), 0);
}

const kb = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));

/** The stored item an Update/Delete/ConditionCheck touched (its size decides the bill). */
export type StoredSize = (table: string, key: Record<string, AttributeValue>) => number;

interface KeyedAction {
  TableName?: string;
  Key?: Record<string, AttributeValue>;
  Item?: Record<string, AttributeValue>;
  UpdateExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
}

function actionBytes(a: KeyedAction, stored: StoredSize): number {
  if (a.Item !== undefined) return itemSize(a.Item);
  return stored(a.TableName ?? '', a.Key ?? {});
}

export interface WcuBill {
  wcu: number;
  rcu: number;
  byOperation: Record<string, number>;
}

/** Attribute names an update SETs and REMOVEs (the one parser of update expressions: cli/demo/call-profile.ts). */
export function updatedAttributes(expression: string, names: Record<string, string> = {}): { set: string[]; remove: string[] } {
  const { set, remove } = parseUpdate(expression, names);
  return { set: [...set.keys()], remove };
}

/** Index writes caused by one Update on a table whose GSI key attributes are `indexKeys`. */
function indexWrites(action: { UpdateExpression?: string; ExpressionAttributeNames?: Record<string, string> }, indexKeys: readonly string[]): number {
  if (indexKeys.length === 0 || action.UpdateExpression === undefined) return 0;
  const { set, remove } = updatedAttributes(action.UpdateExpression, action.ExpressionAttributeNames);
  if (remove.some((a) => indexKeys.includes(a))) return 1; // the entry leaves the index
  if (set.some((a) => indexKeys.includes(a))) return 2; // delete the old entry, put the new one
  return 0;
}

/**
 * Bills every request in the log. Reads are billed per request, reported apart: 1 RCU per
 * strongly consistent GetItem, 0.5 per eventually consistent one (AWS bills per 4 KB; every item
 * read here is under 4 KB). `indexKeys(table)`: the key attributes of the table's GSIs.
 */
export function bill(log: readonly LoggedRequest[], stored: StoredSize, indexKeys: (table: string) => readonly string[] = () => []): WcuBill {
  let wcu = 0;
  let rcu = 0;
  const byOperation: Record<string, number> = {};
  const add = (op: string, n: number) => {
    wcu += n;
    byOperation[op] = (byOperation[op] ?? 0) + n;
  };
  for (const r of log) {
    const input = r.input as Record<string, any>;
    switch (r.operation) {
      case 'PutItem':
      case 'UpdateItem':
      case 'DeleteItem':
        add(r.operation, kb(actionBytes(input, stored)));
        add(`${r.operation} (index)`, indexWrites(input, indexKeys(input.TableName)) * kb(actionBytes(input, stored)));
        break;
      case 'BatchWriteItem':
        for (const [table, requests] of Object.entries(input.RequestItems as Record<string, any[]>)) {
          for (const w of requests) {
            add(r.operation, kb(w.PutRequest ? itemSize(w.PutRequest.Item) : stored(table, w.DeleteRequest.Key)));
          }
        }
        break;
      case 'TransactWriteItems':
        for (const item of input.TransactItems as Record<string, KeyedAction>[]) {
          const action = item.Put ?? item.Update ?? item.Delete ?? item.ConditionCheck ?? {};
          add(r.operation, 2 * kb(actionBytes(action, stored)));
          if (item.Update !== undefined) {
            add(`${r.operation} (index)`, indexWrites(item.Update, indexKeys(item.Update.TableName ?? '')) * kb(actionBytes(action, stored)));
          }
        }
        break;
      case 'GetItem':
        rcu += input.ConsistentRead ? 1 : 0.5;
        break;
      default:
        break;
    }
  }
  return { wcu, rcu, byOperation };
}
