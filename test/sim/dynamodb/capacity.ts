/**
 * ConsumedCapacity as DynamoDB bills it: 1 write unit per KB written (the larger of the item
 * before and after), 1 read unit per 4 KB read strongly consistent (0.5 eventually), twice that
 * in a transaction; with INDEXES, the table's and each GSI's share (DynamoDB Local's shape).
 */
import type { Index, Table } from './table.js';
import { equalItems, equalValues, itemSize, type Item } from './values.js';

export type CapacityMode = 'NONE' | 'TOTAL' | 'INDEXES';

export class Charge {
  table = 0;
  readonly indexes = new Map<string, number>();
  constructor(readonly tableName: string) {}

  addIndex(name: string, units: number): void {
    this.indexes.set(name, (this.indexes.get(name) ?? 0) + units);
  }

  /** The wire form, or undefined when not asked for. */
  answer(mode: CapacityMode | undefined): Record<string, unknown> | undefined {
    if (mode === undefined || mode === 'NONE') return undefined;
    const total = this.table + [...this.indexes.values()].reduce((a, b) => a + b, 0);
    if (mode === 'TOTAL') return { TableName: this.tableName, CapacityUnits: total };
    return {
      TableName: this.tableName,
      CapacityUnits: total,
      Table: { CapacityUnits: this.table },
      ...(this.indexes.size === 0 ? {} : { GlobalSecondaryIndexes: Object.fromEntries([...this.indexes].map(([n, u]) => [n, { CapacityUnits: u }])) }),
    };
  }
}

export const writeUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));
export const readUnits = (bytes: number, consistent: boolean): number => Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);

/** One write's charge on its table and on every GSI whose entry it puts or deletes. */
export function chargeWrite(charge: Charge, table: Table, old: Item | undefined, next: Item | undefined, factor = 1): void {
  charge.table += factor * writeUnits(Math.max(old === undefined ? 0 : itemSize(old), next === undefined ? 0 : itemSize(next)));
  for (const i of table.indexes) {
    const units = indexWriteUnits(i, old, next);
    if (units > 0) charge.addIndex(i.spec.name, factor * units);
  }
}

function indexWriteUnits(i: Index, old: Item | undefined, next: Item | undefined): number {
  const before = i.entryOf(old);
  const after = i.entryOf(next);
  if (before === undefined && after === undefined) return 0;
  if (before === undefined) return writeUnits(itemSize(after!));
  if (after === undefined) return writeUnits(itemSize(before));
  const h = i.spec.key.hash;
  const r = i.spec.key.range;
  const keyMoved = !equalValues(before[h]!, after[h]!) || (r !== undefined && !equalValues(before[r]!, after[r]!));
  if (keyMoved) return writeUnits(itemSize(before)) + writeUnits(itemSize(after));
  return equalItems(before, after) ? 0 : writeUnits(itemSize(after));
}
