/**
 * One table's state: its items, its GSIs (each a store of projected items, updated with the
 * write or, with index lag, through a FIFO queue) and its stream.
 */
import { SimAwsError, validation } from './errors.js';
import { keyNames, type IndexSpec, type TableSpec } from './schema.js';
import { SortedStore } from './store.js';
import { StreamLog, type StreamClock } from './stream-log.js';
import { itemSize, keyString, payload, typeOf, type AV, type Item } from './values.js';

export const MAX_ITEM_BYTES = 400 * 1024;

export interface QueuedIndexUpdate {
  readonly seq: number;
  readonly id: string;
  readonly item: Item | undefined;
}

export class Index {
  readonly store: SortedStore;
  readonly queue: QueuedIndexUpdate[] = [];
  /** Attributes an entry keeps: undefined for ALL. */
  readonly kept: ReadonlySet<string> | undefined;

  constructor(
    readonly spec: IndexSpec,
    tableKey: readonly string[],
  ) {
    this.store = new SortedStore(spec.key.hash, spec.key.range);
    this.kept = spec.projection === 'ALL' ? undefined : new Set([...tableKey, ...keyNames(spec.key), ...spec.include]);
  }

  /** The item as the index holds it, or undefined when it is not in this sparse index. */
  entryOf(item: Item | undefined): Item | undefined {
    if (item === undefined || item[this.spec.key.hash] === undefined) return undefined;
    if (this.spec.key.range !== undefined && item[this.spec.key.range] === undefined) return undefined;
    if (this.kept === undefined) return item;
    const out: Item = {};
    for (const k of this.kept) if (item[k] !== undefined) out[k] = item[k];
    return out;
  }

  apply(u: QueuedIndexUpdate): void {
    if (u.item === undefined) this.store.remove(u.id);
    else this.store.put(u.id, u.item);
  }
}

export interface TableContext extends StreamClock {
  readonly indexLag: boolean;
  nextIndexSeq(): number;
}

export class Table {
  readonly store: SortedStore;
  readonly keys: readonly string[];
  readonly indexes: readonly Index[];
  readonly arn: string;
  stream: StreamLog | undefined;
  /** The items' total size, kept as they are written (DescribeTable's TableSizeBytes). */
  bytes = 0;

  constructor(
    readonly spec: TableSpec,
    private readonly ctx: TableContext,
    readonly created: number,
    streamLabel: string,
  ) {
    this.keys = keyNames(spec.key);
    this.store = new SortedStore(spec.key.hash, spec.key.range);
    this.indexes = spec.indexes.map((i) => new Index(i, this.keys));
    this.arn = `arn:aws:dynamodb:us-east-1:000000000000:table/${spec.name}`;
    if (spec.streamViewType !== undefined) {
      this.stream = new StreamLog(`${this.arn}/stream/${streamLabel}`, streamLabel, spec.name, spec.streamViewType, this.keys, ctx, created);
    }
  }

  index(name: string): Index {
    const i = this.indexes.find((x) => x.spec.name === name);
    if (i === undefined) throw validation(`The table does not have the specified index: ${name}`);
    return i;
  }

  /** A request's Key, checked: exactly the key attributes, of their types. */
  keyOf(raw: Item): { id: string; key: Item } {
    // DynamoDB Local's wording; AWS says "The provided key element does not match the schema" for both.
    if (Object.keys(raw).length !== this.keys.length) throw validation('The number of conditions on the keys is invalid');
    if (this.keys.some((k) => raw[k] === undefined)) throw validation('The provided key element does not match the schema');
    if (this.keys.some((k) => typeOf(raw[k]!) !== this.spec.types[k])) throw validation('One or more parameter values were invalid: Type mismatch for key');
    for (const k of this.keys) checkKeyValue(raw[k]!, k);
    return { id: keyString(raw, this.keys), key: raw };
  }

  /** Whether an index key attribute of `item` holds a list, map, set, boolean or null (refused up front in a transaction; a scalar of the wrong type cancels it). */
  hasNonScalarIndexKey(item: Item): boolean {
    return this.indexes.some((i) => keyNames(i.spec.key).some((k) => item[k] !== undefined && !['S', 'N', 'B'].includes(typeOf(item[k]!))));
  }

  /** An item to be written, checked: its key, its index keys' types, its size. */
  checkItem(item: Item): string {
    for (const k of this.keys) {
      const v = item[k];
      // DynamoDB Local's wording (AWS adds the key's name and types).
      if (v === undefined) throw validation('One of the required keys was not given a value');
      if (typeOf(v) !== this.spec.types[k]) throw validation('One or more parameter values were invalid: Type mismatch for key');
      checkKeyValue(v, k);
    }
    for (const i of this.indexes) {
      for (const k of keyNames(i.spec.key)) {
        const v = item[k];
        if (v === undefined) continue;
        if (typeOf(v) !== this.spec.types[k]) {
          throw validation('One or more parameter values were invalid: Type mismatch for Index Key');
        }
        if (isEmptyKey(v)) throw validation(`One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty ${typeOf(v) === 'S' ? 'string' : 'binary'} value. IndexName: ${i.spec.name}, IndexKey: ${k}`);
      }
    }
    if (itemSize(item) > MAX_ITEM_BYTES) throw validation('Item size has exceeded the maximum allowed size');
    return keyString(item, this.keys);
  }

  get(id: string): Item | undefined {
    return this.store.get(id)?.item;
  }

  /** Writes (next undefined: deletes) the item `id`, its index entries and its stream record. */
  write(id: string, old: Item | undefined, next: Item | undefined): void {
    if (next === undefined) this.store.remove(id);
    else this.store.put(id, next);
    this.bytes += (next === undefined ? 0 : itemSize(next)) - (old === undefined ? 0 : itemSize(old));
    for (const i of this.indexes) {
      const before = i.entryOf(old);
      const after = i.entryOf(next);
      if (before === undefined && after === undefined) continue;
      const u = { seq: this.ctx.nextIndexSeq(), id, item: after };
      if (this.ctx.indexLag) i.queue.push(u);
      else i.apply(u);
    }
    this.stream?.append(old, next);
  }
}

const isEmptyKey = (v: AV): boolean => (typeOf(v) === 'S' || typeOf(v) === 'B') && (payload(v) as string).length === 0;

function checkKeyValue(v: AV, name: string): void {
  if (isEmptyKey(v)) {
    throw new SimAwsError('ValidationException', `One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty ${typeOf(v) === 'S' ? 'string' : 'binary'} value. Key: ${name}`);
  }
}
