/**
 * One table's DynamoDB stream: one shard, its records in write order. A write that changes
 * nothing leaves no record (DynamoDB emits none for a PutItem or UpdateItem that changes no data,
 * nor for a DeleteItem of an absent item).
 */
import type { Item } from './values.js';
import { equalItems, itemSize, type AV } from './values.js';

export type ViewType = 'KEYS_ONLY' | 'NEW_IMAGE' | 'OLD_IMAGE' | 'NEW_AND_OLD_IMAGES';

export interface StreamRecord {
  readonly eventID: string;
  readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  readonly eventVersion: '1.1';
  readonly eventSource: 'aws:dynamodb';
  readonly awsRegion: 'us-east-1';
  readonly dynamodb: {
    readonly ApproximateCreationDateTime: number;
    readonly Keys: Item;
    readonly NewImage?: Item;
    readonly OldImage?: Item;
    readonly SequenceNumber: string;
    readonly SizeBytes: number;
    readonly StreamViewType: ViewType;
  };
}

/** What every stream of one model shares: the clock and the sequence numbers (increasing across streams, as on AWS). */
export interface StreamClock {
  now(): number;
  nextSequence(): bigint;
  /** Told each record appended, with its table's name (the simulator's stream delivery waits on it). */
  recorded?(table: string): void;
}

/** Sequence numbers as DynamoDB prints them: decimal, fixed width so text order is numeric order. */
export const sequenceText = (n: bigint): string => n.toString().padStart(21, '0');

export class StreamLog {
  readonly records: StreamRecord[] = [];
  /** Set when the table is deleted or its stream disabled: the shard is closed. */
  endingSequence: string | undefined;
  readonly shardId: string;
  readonly startingSequence: string;

  constructor(
    readonly arn: string,
    readonly label: string,
    readonly tableName: string,
    readonly viewType: ViewType,
    readonly keyNames: readonly string[],
    private readonly clock: StreamClock,
    readonly created: number,
  ) {
    this.startingSequence = sequenceText(clock.nextSequence());
    this.shardId = `shardId-${String(created).padStart(20, '0')}-${this.startingSequence.slice(-8)}`;
  }

  get enabled(): boolean {
    return this.endingSequence === undefined;
  }

  /** Records one change, unless it changes nothing. */
  append(old: Item | undefined, next: Item | undefined): void {
    if (!this.enabled || (old === undefined && next === undefined)) return;
    if (old !== undefined && next !== undefined && equalItems(old, next)) return;
    const source = (next ?? old)!;
    const keys: Item = {};
    for (const k of this.keyNames) keys[k] = source[k] as AV;
    const seq = this.clock.nextSequence();
    const withNew = next !== undefined && (this.viewType === 'NEW_IMAGE' || this.viewType === 'NEW_AND_OLD_IMAGES');
    const withOld = old !== undefined && (this.viewType === 'OLD_IMAGE' || this.viewType === 'NEW_AND_OLD_IMAGES');
    const size = itemSize(keys) + (withNew ? itemSize(next) : 0) + (withOld ? itemSize(old) : 0);
    this.records.push({
      eventID: seq.toString(16).padStart(32, '0'),
      eventName: old === undefined ? 'INSERT' : next === undefined ? 'REMOVE' : 'MODIFY',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'us-east-1',
      dynamodb: {
        // Whole seconds: DynamoDB rounds this field down to the second.
        ApproximateCreationDateTime: Math.floor(this.clock.now() / 1000),
        Keys: keys,
        ...(withNew ? { NewImage: next } : {}),
        ...(withOld ? { OldImage: old } : {}),
        SequenceNumber: sequenceText(seq),
        SizeBytes: size,
        StreamViewType: this.viewType,
      },
    });
    this.clock.recorded?.(this.tableName);
  }

  close(): void {
    this.endingSequence ??= this.records.length === 0 ? this.startingSequence : this.records[this.records.length - 1]!.dynamodb.SequenceNumber;
  }

  /** Index of the first record with a sequence number >= seq. */
  positionOf(seq: string): number {
    let lo = 0;
    let hi = this.records.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.records[mid]!.dynamodb.SequenceNumber < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
