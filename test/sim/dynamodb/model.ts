/**
 * An in-memory DynamoDB and DynamoDB Streams, answering operations in their wire format (the
 * JSON bodies the SDK sends and parses). Synchronous, deterministic: no timers, no randomness;
 * the only outside input is `now`, for stream records' times, token and iterator expiry.
 *
 * Outputs share structure with the model's state: serialize them (the handler does) or treat
 * them as read-only.
 */
import { SimAwsError, SimUnsupportedError } from './errors.js';
import { batchGetItem, getItem } from './item-reads.js';
import { singleWrite } from './item-writes.js';
import { query, scan } from './query-scan.js';
import type { Db } from './request.js';
import { requestShapes } from './shape.js';
import { describeStream, getRecords, getShardIterator, listStreams } from './streams-api.js';
import type { StreamLog } from './stream-log.js';
import { createTable, deleteTable, describeTable, listTables, tableOf, type Catalog } from './table-admin.js';
import type { Index, Table, TableContext } from './table.js';
import { batchWriteItem, transactWriteItems, type TokenLedger } from './transactions.js';

export { SimAwsError, SimUnsupportedError } from './errors.js';

export interface DynamoModelOptions {
  /** Wall-clock ms (stream records' ApproximateCreationDateTime, token and iterator expiry); default () => 0. */
  now?: () => number;
  /** false (default): GSIs are updated with the write; true: index updates queue until propagateIndexes. */
  indexLag?: boolean;
  /**
   * The request shapes (shape.ts) the model may answer: those the fidelity test compared against
   * DynamoDB Local. Any other is unsupported. Absent: every shape (the fidelity test's own model).
   */
  shapes?: ReadonlySet<string>;
  /** Told every request the model receives, in the order it applies them (a trace to replay). */
  onRequest?: (service: 'dynamodb' | 'streams', operation: string, input: Record<string, unknown>) => void;
}

/** One index's queue of updates not yet applied, as `propagateIndexes`'s `pick` sees it. */
export interface IndexQueueView {
  readonly table: string;
  readonly index: string;
  readonly pending: number;
}

type Operation = (input: Record<string, unknown>) => Record<string, unknown>;

export class DynamoModel implements Db {
  /** What was asked that the model does not implement: a run must fail when this is not empty. */
  readonly unsupported: string[] = [];
  private readonly catalog: Catalog;
  private readonly ledger: TokenLedger;
  private readonly dynamodb: Record<string, Operation>;
  private readonly streams: Record<string, Operation>;
  private readonly shapes: ReadonlySet<string> | undefined;
  private readonly onRequest: DynamoModelOptions['onRequest'];

  /** Told each stream record as it is appended, with its table's name (who delivers the stream waits on it instead of polling). */
  onStreamRecord: ((table: string) => void) | undefined;

  /** Records in `table`'s current stream so far (0: no table or no stream). */
  streamRecords(table: string): number {
    return this.catalog.tables.get(table)?.stream?.records.length ?? 0;
  }

  constructor(opts: DynamoModelOptions = {}) {
    this.shapes = opts.shapes;
    this.onRequest = opts.onRequest;
    const now = opts.now ?? (() => 0);
    let sequence = 0n;
    let indexSeq = 0;
    const ctx: TableContext = { now, indexLag: opts.indexLag ?? false, nextSequence: () => ++sequence, nextIndexSeq: () => ++indexSeq, recorded: (table) => this.onStreamRecord?.(table) };
    this.catalog = { tables: new Map<string, Table>(), streams: [] as StreamLog[], ctx };
    this.ledger = { tokens: new Map(), now };
    const c = this.catalog;
    this.dynamodb = {
      CreateTable: (i) => createTable(c, i),
      DescribeTable: (i) => describeTable(c, i),
      DeleteTable: (i) => deleteTable(c, i),
      ListTables: (i) => listTables(c, i),
      GetItem: (i) => getItem(this, i),
      BatchGetItem: (i) => batchGetItem(this, i),
      PutItem: (i) => singleWrite(this, 'PutItem', i),
      UpdateItem: (i) => singleWrite(this, 'UpdateItem', i),
      DeleteItem: (i) => singleWrite(this, 'DeleteItem', i),
      Query: (i) => query(this, i),
      Scan: (i) => scan(this, i),
      TransactWriteItems: (i) => transactWriteItems(this, this.ledger, i),
      BatchWriteItem: (i) => batchWriteItem(this, i),
    };
    this.streams = {
      ListStreams: (i) => listStreams(c, i),
      DescribeStream: (i) => describeStream(c, i),
      GetShardIterator: (i) => getShardIterator(c, i),
      GetRecords: (i) => getRecords(c, i),
    };
  }

  table(name: unknown): Table {
    return tableOf(this.catalog, name);
  }

  /** One operation on the wire format. Throws SimAwsError (a service error) or SimUnsupportedError (recorded in `unsupported`). */
  handle(service: 'dynamodb' | 'streams', operation: string, input: Record<string, unknown>): Record<string, unknown> {
    const op = (service === 'dynamodb' ? this.dynamodb : this.streams)[operation];
    try {
      if (op === undefined || !Object.hasOwn(service === 'dynamodb' ? this.dynamodb : this.streams, operation)) throw new SimUnsupportedError(`${service}.${operation}`);
      const uncompared = this.shapes === undefined ? undefined : requestShapes(operation, input).find((x) => !this.shapes!.has(x));
      if (uncompared !== undefined) throw new SimUnsupportedError(`${service}.${operation}: a request shape the fidelity test never compared against DynamoDB Local: ${uncompared}`);
      this.onRequest?.(service, operation, input);
      return op(input);
    } catch (e) {
      if (e instanceof SimAwsError) throw e;
      const u = e instanceof SimUnsupportedError ? e : new SimUnsupportedError(`${service}.${operation}: the model failed: ${e instanceof Error ? e.message : String(e)}`);
      this.unsupported.push(u.what);
      throw u;
    }
  }

  private queues(): { table: Table; index: Index }[] {
    return [...this.catalog.tables.values()].flatMap((table) => table.indexes.filter((index) => index.queue.length > 0).map((index) => ({ table, index })));
  }

  pendingIndexUpdates(): number {
    return this.queues().reduce((n, q) => n + q.index.queue.length, 0);
  }

  /**
   * Applies the oldest `n` queued GSI updates (all when omitted), each index's in its own order.
   * `pick` chooses which index's queue advances next (a seeded schedule); by default the one whose
   * head was written first.
   */
  propagateIndexes(n = Infinity, pick?: (queues: readonly IndexQueueView[]) => number): void {
    for (let done = 0; done < n; done++) {
      const queues = this.queues();
      if (queues.length === 0) return;
      const at = pick === undefined ? oldest(queues) : pick(queues.map((q) => ({ table: q.table.spec.name, index: q.index.spec.name, pending: q.index.queue.length })));
      const q = queues[at];
      if (q === undefined) throw new SimUnsupportedError(`propagateIndexes: pick returned ${at} of ${queues.length} queues`);
      q.index.apply(q.index.queue.shift()!);
    }
  }
}

function oldest(queues: readonly { index: Index }[]): number {
  let best = 0;
  queues.forEach((q, i) => {
    if (q.index.queue[0]!.seq < queues[best]!.index.queue[0]!.seq) best = i;
  });
  return best;
}
