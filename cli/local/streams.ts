/** Reads a table's whole stream (every shard from TRIM_HORIZON), as the invariant checker needs it. */
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record,
  type Shard,
} from '@aws-sdk/client-dynamodb-streams';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { localCredentials, localRegion } from '../../lib/protocol/index.js';

export interface StreamChange {
  event: 'INSERT' | 'MODIFY' | 'REMOVE';
  key: string;
  sequence: bigint;
  shard: string;
  oldImage?: Record<string, unknown>;
  newImage?: Record<string, unknown>;
}

export function streamsClient(endpoint: string | undefined): DynamoDBStreamsClient {
  return new DynamoDBStreamsClient(
    endpoint
      ? { endpoint, region: localRegion(), ...localCredentials() }
      : {},
  );
}

/**
 * When a shard is read to its end. AWS documents DynamoDB Streams so: a CLOSED shard (its
 * SequenceNumberRange has an EndingSequenceNumber) ends when GetRecords answers no
 * NextShardIterator; an OPEN shard's iterator never becomes null, past its last record it answers
 * empty pages, and it may also answer empty pages BEFORE more records ("it might take multiple
 * calls to get to a portion of the shard that contains stream records"). So no count of empty
 * pages says an open shard is read; the rule here ("caught up"):
 *
 * - the tip as it stood when reading began is taken first: a LATEST iterator, "just after the
 *   most recent stream record in the shard". Every record that existed then has a lower sequence
 *   number than any record that iterator ever yields;
 * - at each empty page of the read, that iterator is asked for one page (it walks on by its own
 *   NextShardIterator). Once it has yielded a record (written after reading began), the read is
 *   caught up at the first empty page after it has returned a record at or above that record's
 *   sequence number: it has read past everything that existed. Empty pages before that never end
 *   the read, however many;
 * - while the tip iterator has yielded nothing (nothing written since reading began: the
 *   checker's case, every writer has stopped), no call of the API tells the tip from an empty
 *   portion before more records. DynamoDB Local answers empty pages only past its last record (it
 *   serves the records of its own store in order, with no empty portions), so there the first
 *   empty page is the tip; for AWS's empty portions the read goes on through
 *   `emptyPagesAtTip` empty pages in a row (default EMPTY_PAGES_AT_TIP) before it takes the tip
 *   as reached. That bound is a judgement, not a proof: it holds only for a table that nothing
 *   writes to while it is read.
 */
export const EMPTY_PAGES_AT_TIP = 5;

/** The whole stream as changes (keys and images unmarshalled), what the invariant checker reads. */
export async function readStream(...args: Parameters<typeof readStreamRecords>): Promise<StreamChange[]> {
  return (await readStreamRecords(...args)).map((r) => toChange(r.record, r.shard));
}

/** One record as GetRecords returns it (what Lambda's event source puts in a stream event), with its stream and shard. */
export interface RawStreamRecord {
  streamArn: string;
  shard: string;
  record: _Record;
}

export interface ReadStreamOptions {
  /** With nothing written since reading began: empty pages in a row taken as an open shard's tip. */
  emptyPagesAtTip?: number;
}

/** A table's whole stream, every shard from TRIM_HORIZON, the records as they come. */
export async function readStreamRecords(client: DynamoDBClient, streams: DynamoDBStreamsClient, table: string, opts: ReadStreamOptions = {}): Promise<RawStreamRecord[]> {
  const arn = (await client.send(new DescribeTableCommand({ TableName: table }))).Table?.LatestStreamArn;
  if (!arn) return [];
  const out: RawStreamRecord[] = [];
  let exclusiveStart: string | undefined;
  do {
    const d = await streams.send(new DescribeStreamCommand({ StreamArn: arn, ExclusiveStartShardId: exclusiveStart }));
    for (const shard of d.StreamDescription?.Shards ?? []) {
      for (const record of await readShard(streams, arn, shard, opts)) out.push({ streamArn: arn, shard: shard.ShardId ?? '', record });
    }
    exclusiveStart = d.StreamDescription?.LastEvaluatedShardId;
  } while (exclusiveStart);
  return out;
}

const iteratorOf = async (streams: DynamoDBStreamsClient, arn: string, shard: Shard, type: 'TRIM_HORIZON' | 'LATEST') =>
  (await streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: shard.ShardId, ShardIteratorType: type }))).ShardIterator;

const sequenceOf = (r: _Record): bigint => BigInt(r.dynamodb?.SequenceNumber ?? '0');

/**
 * One page of the tip iterator. An iterator expires 15 minutes after it was handed out: then a
 * fresh LATEST one, whose records are written later still, so still after reading began.
 */
async function probeTip(streams: DynamoDBStreamsClient, arn: string, shard: Shard, tip: string): Promise<{ first?: _Record; next?: string }> {
  try {
    const probe = await streams.send(new GetRecordsCommand({ ShardIterator: tip, Limit: 1 }));
    return { ...(probe.Records?.[0] === undefined ? {} : { first: probe.Records[0] }), ...(probe.NextShardIterator === undefined ? {} : { next: probe.NextShardIterator }) };
  } catch (e) {
    if (!(e instanceof ExpiredIteratorException)) throw e;
    const next = await iteratorOf(streams, arn, shard, 'LATEST');
    return next === undefined ? {} : { next };
  }
}

/** One shard from TRIM_HORIZON to its end: a closed one to its null iterator, an open one until caught up (see above). */
async function readShard(streams: DynamoDBStreamsClient, arn: string, shard: Shard, opts: ReadStreamOptions): Promise<_Record[]> {
  const closed = shard.SequenceNumberRange?.EndingSequenceNumber !== undefined;
  // The tip as reading began: taken before the first page.
  let tip = closed ? undefined : await iteratorOf(streams, arn, shard, 'LATEST');
  let pastTip: bigint | undefined;
  let iterator = await iteratorOf(streams, arn, shard, 'TRIM_HORIZON');
  const out: _Record[] = [];
  let highest: bigint | undefined;
  let empty = 0;
  for (let pages = 0; iterator && pages < 1_000_000; pages++) {
    const r = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
    const records = r.Records ?? [];
    out.push(...records);
    for (const record of records) highest = highest === undefined || sequenceOf(record) > highest ? sequenceOf(record) : highest;
    iterator = r.NextShardIterator;
    empty = records.length === 0 ? empty + 1 : 0;
    if (closed || records.length > 0) continue;
    if (pastTip === undefined && tip !== undefined) {
      // The first record written since reading began, if there is one yet.
      const probe = await probeTip(streams, arn, shard, tip);
      if (probe.first !== undefined) pastTip = sequenceOf(probe.first);
      tip = probe.next;
    }
    if (pastTip !== undefined) {
      if (highest !== undefined && highest >= pastTip) break;
    } else if (empty >= (opts.emptyPagesAtTip ?? EMPTY_PAGES_AT_TIP)) break;
  }
  return out;
}

function toChange(rec: _Record, shard: string): StreamChange {
  const db = rec.dynamodb ?? {};
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const u = (img: any) => (img ? unmarshall(img) : undefined);
  const keys = u(db.Keys) ?? {};
  const c: StreamChange = {
    event: rec.eventName as StreamChange['event'],
    key: String(keys.pk),
    sequence: BigInt(db.SequenceNumber ?? '0'),
    shard,
  };
  const oldImage = u(db.OldImage);
  const newImage = u(db.NewImage);
  if (oldImage) c.oldImage = oldImage;
  if (newImage) c.newImage = newImage;
  return c;
}
