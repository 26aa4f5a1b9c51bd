/** Reads a table's whole stream (every shard from TRIM_HORIZON), as the invariant checker needs it. */
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record,
} from '@aws-sdk/client-dynamodb-streams';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { localCredentials, localRegion } from '../lib/protocol/index.js';

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
 * An open shard has no end: past its last record it answers empty pages, and on AWS it can also
 * answer empty pages BEFORE more records ("it might take multiple calls to get to a portion of
 * the shard that contains stream records"). So an open shard is read until this many empty pages
 * in a row; a closed shard until its iterator ends.
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

/** A table's whole stream, every shard from TRIM_HORIZON, the records as they come. */
export async function readStreamRecords(
  client: DynamoDBClient,
  streams: DynamoDBStreamsClient,
  table: string,
  opts: { emptyPagesAtTip?: number } = {},
): Promise<RawStreamRecord[]> {
  const arn = (await client.send(new DescribeTableCommand({ TableName: table }))).Table?.LatestStreamArn;
  if (!arn) return [];
  const out: RawStreamRecord[] = [];
  let exclusiveStart: string | undefined;
  do {
    const d = await streams.send(new DescribeStreamCommand({ StreamArn: arn, ExclusiveStartShardId: exclusiveStart }));
    for (const shard of d.StreamDescription?.Shards ?? []) {
      const closed = shard.SequenceNumberRange?.EndingSequenceNumber !== undefined;
      let iterator = (
        await streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: shard.ShardId, ShardIteratorType: 'TRIM_HORIZON' }))
      ).ShardIterator;
      let empty = 0;
      for (let pages = 0; iterator && pages < 100_000; pages++) {
        const r = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
        const records = r.Records ?? [];
        for (const record of records) out.push({ streamArn: arn, shard: shard.ShardId ?? '', record });
        empty = records.length === 0 ? empty + 1 : 0;
        if (!closed && empty >= (opts.emptyPagesAtTip ?? EMPTY_PAGES_AT_TIP)) break;
        iterator = r.NextShardIterator;
      }
    }
    exclusiveStart = d.StreamDescription?.LastEvaluatedShardId;
  } while (exclusiveStart);
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
