/**
 * The local stand-in for Lambda's DynamoDB stream event source: reads the Outbox table's stream
 * on DynamoDB Local, shard by shard, in order, and invokes the SAME sender handler Lambda runs
 * with the same event shape (INSERT records only: the stack's filter). A record reported failed
 * is retried from there after a pause, at most `maxRetries` times, then dropped to `deadLetters`
 * (the on-failure destination); an invocation that does not return within `invocationTimeoutMs`
 * (a sender that died) is abandoned and its batch retried, as Lambda does.
 *
 * Fault injection: `duplicateNext(n)` delivers the next n batches twice (at-least-once);
 * `raceNext(n)` invokes two senders at once with the next n batches (two pollers that got the
 * same records).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { outsideFunctions } from './aws-calls.js';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand, type DynamoDBStreamsClient, type _Record } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { Clock } from '../../lib/protocol/index.js';
import type { SenderHandler } from '../../functions/sender-handler.js';

export interface OutboxStreamOptions {
  client: DynamoDBClient;
  streams: DynamoDBStreamsClient;
  table: string;
  clock: Clock;
  sender: SenderHandler;
  batchSize?: number;
  pollMs?: number;
  retryAfterMs?: number;
  maxRetries?: number;
  invocationTimeoutMs?: number;
  onError?: (e: unknown) => void;
  /** Tells when the table's stream has new records, instead of polling for them every `pollMs` (the simulator's engine does). */
  activity?: StreamActivity;
}

/** An engine that tells its stream's appends: the stand-in reads when there is something to read, as Lambda's poller finds it. */
export interface StreamActivity {
  /** Records appended to `table`'s stream so far. */
  count(table: string): number;
  /** Resolves once more than `seen` records were appended, after the event source's polling latency; or at once when `signal` aborts. */
  after(table: string, seen: number, signal: AbortSignal): Promise<void>;
}

interface Shard {
  arn: string;
  id: string;
  iterator: string | undefined;
  /** The last sequence number read: where a fresh iterator resumes. */
  last: string | undefined;
  /** Records read and not yet handled, in order. */
  backlog: _Record[];
  retries: number;
}

export class OutboxStream {
  private live = false;
  private stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly shards = new Map<string, Shard>();
  private duplicates = 0;
  private races = 0;
  readonly deadLetters: _Record[] = [];
  /** Batches delivered twice, and batches given to two senders at once, so far (the faults that fired). */
  duplicated = 0;
  raced = 0;
  invocations = 0;
  timeouts = 0;

  constructor(private readonly opts: OutboxStreamOptions) {}

  duplicateNext(n: number): void {
    this.duplicates += n;
  }

  raceNext(n: number): void {
    this.races += n;
  }

  /** The loop reads and delivers on its own (between start and stop). */
  get running(): boolean {
    return this.live;
  }

  start(): void {
    if (this.live) return;
    this.live = true;
    this.stopping = new AbortController();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.live = false;
    this.stopping.abort();
    await this.loop;
  }

  /** Reads and delivers until nothing is left to read (for a final drain). */
  async drain(rounds = 3): Promise<void> {
    for (let i = 0; i < rounds; i++) await this.tick();
  }

  /** Records waiting (read, not yet handled), across shards. */
  get backlog(): number {
    return [...this.shards.values()].reduce((n, s) => n + s.backlog.length, 0);
  }

  private async run(): Promise<void> {
    const { activity, table } = this.opts;
    while (this.live) {
      const seen = activity?.count(table);
      let failed = false;
      try {
        await this.tick();
      } catch (e) {
        failed = true;
        this.opts.onError?.(e);
      }
      // Told of appends: wait for the next one, unless records wait for a retry or the read failed.
      if (activity === undefined || seen === undefined || failed || this.backlog > 0) await this.opts.clock.sleep(this.opts.pollMs ?? 50);
      else await activity.after(table, seen, this.stopping.signal);
    }
  }

  private async discover(): Promise<void> {
    // The stand-in's own lookup, no function's: in AWS the event source mapping is configured with the stream ARN.
    const arn = (await outsideFunctions(() => this.opts.client.send(new DescribeTableCommand({ TableName: this.opts.table })))).Table?.LatestStreamArn;
    if (arn === undefined) return;
    const d = await this.opts.streams.send(new DescribeStreamCommand({ StreamArn: arn }));
    for (const s of d.StreamDescription?.Shards ?? []) {
      if (s.ShardId === undefined || this.shards.has(s.ShardId)) continue;
      const it = await this.opts.streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: s.ShardId, ShardIteratorType: 'TRIM_HORIZON' }));
      this.shards.set(s.ShardId, { arn, id: s.ShardId, iterator: it.ShardIterator, last: undefined, backlog: [], retries: 0 });
    }
  }

  private async tick(): Promise<void> {
    await this.discover();
    for (const shard of this.shards.values()) {
      if (shard.backlog.length === 0 && shard.iterator !== undefined) await this.read(shard);
      while (shard.backlog.length > 0) {
        const batch = shard.backlog.slice(0, this.opts.batchSize ?? 10);
        const failedFrom = await this.invoke(batch);
        if (failedFrom === undefined) {
          shard.backlog.splice(0, batch.length);
          shard.retries = 0;
          continue;
        }
        const at = Math.max(0, batch.findIndex((r) => r.dynamodb?.SequenceNumber === failedFrom));
        shard.backlog.splice(0, at);
        if (++shard.retries > (this.opts.maxRetries ?? 3)) {
          this.deadLetters.push(shard.backlog.shift()!);
          shard.retries = 0;
        }
        // Retried later, in order: the shard waits (as Lambda's does), the others go on.
        await this.opts.clock.sleep(this.opts.retryAfterMs ?? 200);
        break;
      }
    }
  }

  private async read(shard: Shard): Promise<void> {
    let page;
    try {
      page = await this.opts.streams.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: 1000 }));
    } catch (e) {
      // An iterator that expired, or that DynamoDB Local no longer serves: a fresh one after the last record read.
      if (!(e instanceof Error) || !['TrimmedDataAccessException', 'ExpiredIteratorException'].includes(e.name)) throw e;
      const it = await this.opts.streams.send(
        new GetShardIteratorCommand({ StreamArn: shard.arn, ShardId: shard.id, ...(shard.last === undefined ? { ShardIteratorType: 'TRIM_HORIZON' } : { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: shard.last }) }),
      );
      shard.iterator = it.ShardIterator;
      return;
    }
    shard.iterator = page.NextShardIterator;
    const records = page.Records ?? [];
    shard.last = records[records.length - 1]?.dynamodb?.SequenceNumber ?? shard.last;
    // The stack's filter: only INSERTs reach the sender.
    shard.backlog.push(...records.filter((r) => r.eventName === 'INSERT'));
  }

  /** One invocation (two when racing, twice when duplicated); the first failed sequence, or undefined. */
  private async invoke(batch: _Record[]): Promise<string | undefined> {
    const event: DynamoDBStreamEvent = { Records: batch as unknown as DynamoDBRecord[] };
    const once = () => this.invokeOnce(event);
    let copies = 1;
    if (this.races > 0) {
      this.races--;
      this.raced++;
      copies = 2;
    }
    const results = await Promise.all(Array.from({ length: copies }, once));
    if (this.duplicates > 0) {
      this.duplicates--;
      this.duplicated++;
      results.push(await once());
    }
    const failed = results.flat().filter((x): x is string => x !== undefined);
    return failed.length === 0 ? undefined : failed.sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1))[0];
  }

  private async invokeOnce(event: DynamoDBStreamEvent): Promise<string[]> {
    this.invocations++;
    const timeout = new AbortController();
    const result = await Promise.race([
      this.opts.sender(event).catch((e: unknown) => {
        this.opts.onError?.(e);
        return { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.dynamodb?.SequenceNumber ?? '' })) };
      }),
      this.opts.clock.sleep(this.opts.invocationTimeoutMs ?? 5_000, timeout.signal).then(
        () => 'timeout' as const,
        () => 'timeout' as const,
      ),
    ]);
    timeout.abort();
    if (result === 'timeout') {
      this.timeouts++;
      // Like a sender that died: the whole batch comes back.
      return event.Records.map((r) => r.dynamodb?.SequenceNumber ?? '');
    }
    return result.batchItemFailures.map((f) => f.itemIdentifier);
  }
}
