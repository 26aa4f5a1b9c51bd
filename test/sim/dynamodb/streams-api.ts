/**
 * The DynamoDB Streams API over the model's stream logs: ListStreams, DescribeStream,
 * GetShardIterator, GetRecords. Iterators are opaque strings naming a stream, a position and
 * when they were handed out (they expire after 15 minutes of the model's clock, as on AWS).
 * Nothing is ever trimmed: AWS trims records after 24 hours.
 */
import { notFound, SimAwsError, validation } from './errors.js';
import { checkFields, oneOf } from './request.js';
import { keySchemaOf } from './schema.js';
import { sequenceText, type StreamLog } from './stream-log.js';
import type { Catalog } from './table-admin.js';

const ITERATOR_TTL_MS = 15 * 60 * 1000;

function streamOf(c: Catalog, arn: unknown): StreamLog {
  const s = c.streams.find((x) => x.arn === arn);
  if (s === undefined) throw notFound(`Requested resource not found: Stream: ${String(arn)} not found`);
  return s;
}

export function listStreams(c: Catalog, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('ListStreams', input, ['TableName', 'Limit', 'ExclusiveStartStreamArn']);
  const all = c.streams.filter((s) => input.TableName === undefined || s.tableName === input.TableName);
  const from = input.ExclusiveStartStreamArn === undefined ? 0 : all.findIndex((s) => s.arn === input.ExclusiveStartStreamArn) + 1;
  const limit = (input.Limit as number | undefined) ?? 100;
  const page = all.slice(from, from + limit);
  return {
    Streams: page.map((s) => ({ StreamArn: s.arn, TableName: s.tableName, StreamLabel: s.label })),
    ...(from + limit < all.length ? { LastEvaluatedStreamArn: page[page.length - 1]!.arn } : {}),
  };
}

export function describeStream(c: Catalog, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('DescribeStream', input, ['StreamArn', 'Limit', 'ExclusiveStartShardId']);
  const s = streamOf(c, input.StreamArn);
  // One shard per stream: nothing follows it.
  const shards = input.ExclusiveStartShardId === s.shardId ? [] : [{ ShardId: s.shardId, SequenceNumberRange: { StartingSequenceNumber: s.startingSequence, ...(s.endingSequence === undefined ? {} : { EndingSequenceNumber: s.endingSequence }) } }];
  return {
    StreamDescription: {
      StreamArn: s.arn,
      StreamLabel: s.label,
      StreamStatus: s.enabled ? 'ENABLED' : 'DISABLED',
      StreamViewType: s.viewType,
      CreationRequestDateTime: s.created / 1000,
      TableName: s.tableName,
      KeySchema: keySchemaOf({ hash: s.keyNames[0]!, ...(s.keyNames[1] === undefined ? {} : { range: s.keyNames[1] }) }),
      Shards: shards,
    },
  };
}

const encode = (arn: string, position: number, issued: number): string => Buffer.from(JSON.stringify([arn, position, issued])).toString('base64url');

function decode(c: Catalog, iterator: unknown): { s: StreamLog; position: number } {
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(String(iterator), 'base64url').toString());
  } catch {
    parts = undefined;
  }
  if (!Array.isArray(parts) || parts.length !== 3) throw validation('Invalid ShardIterator');
  const [arn, position, issued] = parts as [string, number, number];
  if (c.ctx.now() - issued > ITERATOR_TTL_MS) throw new SimAwsError('ExpiredIteratorException', 'Iterator expired. The iterator was created at time ' + new Date(issued).toUTCString() + ' while right now it is ' + new Date(c.ctx.now()).toUTCString() + ' which is further in the future than the tolerated delay of 900000 milliseconds.');
  return { s: streamOf(c, arn), position };
}

export function getShardIterator(c: Catalog, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('GetShardIterator', input, ['StreamArn', 'ShardId', 'ShardIteratorType', 'SequenceNumber']);
  const s = streamOf(c, input.StreamArn);
  if (input.ShardId !== s.shardId) throw notFound(`Requested resource not found: Shard does not exist`);
  const type = oneOf('GetShardIterator', 'shardIteratorType', input.ShardIteratorType, ['TRIM_HORIZON', 'LATEST', 'AT_SEQUENCE_NUMBER', 'AFTER_SEQUENCE_NUMBER'], 'TRIM_HORIZON');
  let position = 0;
  if (type === 'LATEST') position = s.records.length;
  else if (type !== 'TRIM_HORIZON') {
    if (typeof input.SequenceNumber !== 'string' || !/^\d+$/.test(input.SequenceNumber)) throw validation('Invalid SequenceNumber');
    const seq = sequenceText(BigInt(input.SequenceNumber));
    position = s.positionOf(seq);
    if (type === 'AFTER_SEQUENCE_NUMBER' && s.records[position]?.dynamodb.SequenceNumber === seq) position++;
  }
  return { ShardIterator: encode(s.arn, position, c.ctx.now()) };
}

export function getRecords(c: Catalog, input: Record<string, unknown>): Record<string, unknown> {
  checkFields('GetRecords', input, ['ShardIterator', 'Limit']);
  const limit = (input.Limit as number | undefined) ?? 1000;
  if (limit < 1 || limit > 1000) throw validation(`1 validation error detected: Value '${limit}' at 'limit' failed to satisfy constraint: Member must have value ${limit < 1 ? 'greater than or equal to 1' : 'less than or equal to 1000'}`);
  const { s, position } = decode(c, input.ShardIterator);
  const records = s.records.slice(position, position + limit);
  const next = position + records.length;
  // A closed shard read to its end has no next iterator; an open one always has.
  const ended = !s.enabled && next >= s.records.length;
  return { Records: records, ...(ended ? {} : { NextShardIterator: encode(s.arn, next, c.ctx.now()) }) };
}
