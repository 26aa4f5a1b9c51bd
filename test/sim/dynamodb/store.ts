/**
 * Items ordered as DynamoDB serves them: by partition, and within a partition by sort key (an
 * index's ties by the base table's key). One store holds a table's items; one each of its GSIs'.
 * Scan order is by partition key text: DynamoDB's is by a hash of the partition key, which no
 * caller may rely on.
 */
import { compareScalars, keyString, type AV, type Item } from './values.js';

export interface Entry {
  /** The base table's primary key text of the item: unique in every store. */
  readonly id: string;
  readonly partition: string;
  readonly range: AV | undefined;
  readonly item: Item;
}

export class SortedStore {
  private readonly partitions = new Map<string, Entry[]>();
  private readonly byId = new Map<string, Entry>();
  private sortedPartitions: string[] | undefined;

  constructor(
    readonly hashName: string,
    readonly rangeName: string | undefined,
  ) {}

  get size(): number {
    return this.byId.size;
  }

  get(id: string): Entry | undefined {
    return this.byId.get(id);
  }

  put(id: string, item: Item): void {
    this.remove(id);
    const partition = keyString(item, [this.hashName]);
    const entry: Entry = { id, partition, range: this.rangeName === undefined ? undefined : item[this.rangeName], item };
    let list = this.partitions.get(partition);
    if (list === undefined) {
      list = [];
      this.partitions.set(partition, list);
      this.sortedPartitions = undefined;
    }
    list.splice(lowerBound(list, entry.range, id), 0, entry);
    this.byId.set(id, entry);
  }

  remove(id: string): void {
    const entry = this.byId.get(id);
    if (entry === undefined) return;
    this.byId.delete(id);
    const list = this.partitions.get(entry.partition)!;
    list.splice(list.indexOf(entry), 1);
    if (list.length === 0) {
      this.partitions.delete(entry.partition);
      this.sortedPartitions = undefined;
    }
  }

  /** One partition's entries in sort order (do not mutate). */
  partition(hash: AV, hashName = this.hashName): readonly Entry[] {
    return this.partitions.get(keyString({ [hashName]: hash }, [hashName])) ?? [];
  }

  /** Where a read resumes after (range, id): the first position past it. */
  static after(list: readonly Entry[], range: AV | undefined, id: string): number {
    const i = lowerBound(list, range, id);
    return i < list.length && list[i]!.id === id ? i + 1 : i;
  }

  /** Every entry, partition by partition, from just after `start` (a partition text and position). */
  *scan(startPartition?: string, startRange?: AV, startId?: string): Generator<Entry> {
    this.sortedPartitions ??= [...this.partitions.keys()].sort();
    const keys = this.sortedPartitions;
    let p = startPartition === undefined ? 0 : lowerBoundString(keys, startPartition);
    for (; p < keys.length; p++) {
      const list = this.partitions.get(keys[p]!)!;
      let i = 0;
      if (startPartition !== undefined && keys[p] === startPartition) i = SortedStore.after(list, startRange, startId!);
      for (; i < list.length; i++) yield list[i]!;
    }
  }
}

function compareEntry(e: Entry, range: AV | undefined, id: string): number {
  const r = e.range === undefined || range === undefined ? 0 : compareScalars(e.range, range)!;
  return r !== 0 ? r : e.id < id ? -1 : e.id > id ? 1 : 0;
}

function lowerBound(list: readonly Entry[], range: AV | undefined, id: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareEntry(list[mid]!, range, id) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function lowerBoundString(list: readonly string[], s: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]! < s) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
