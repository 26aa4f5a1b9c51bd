// tier: quick
/**
 * The stream reader the invariant checker relies on: it must see every record, or a violation
 * written after a gap would pass unseen. DynamoDB Streams on AWS may answer empty pages before
 * more records; the fault proxy answers such pages here, in front of DynamoDB Local.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { readStream, streamsClient } from '../cli/local/streams.js';
import { proxiedTables } from './support/tables.js';

const env = proxiedTables(import.meta.filename);

describe('readStream', () => {
  it('an empty page before more records (as AWS may answer): the reader reads on and returns every record', async () => {
    const table = env.t.names.records;
    for (const pk of ['a', 'b', 'c']) await env.t.dynamo.doc.send(new PutCommand({ TableName: table, Item: { pk, n: 1 } }));
    const streams = streamsClient(env.proxy.endpoint);
    try {
      const gap = env.proxy.respond({ target: 'GetRecords', times: 2 }, (q) => ({ Records: [], NextShardIterator: q.json?.ShardIterator }));
      const changes = await readStream(env.t.dynamo.client, streams, table);
      expect(gap.hits).toBe(2);
      expect(changes.map((c) => [c.event, c.key])).toEqual([
        ['INSERT', 'a'],
        ['INSERT', 'b'],
        ['INSERT', 'c'],
      ]);
    } finally {
      streams.destroy();
    }
  });

  it('more than 5 empty pages before the records, with a record written after reading began: the reader reads through every empty page until past that record, and returns every record', async () => {
    const table = env.t.names.fences;
    const doc = env.t.dynamo.doc;
    for (const pk of ['a', 'b', 'c']) await doc.send(new PutCommand({ TableName: table, Item: { pk, n: 1 } }));
    const streams = streamsClient(env.proxy.endpoint);
    // Forced interleaving: after the reader took its iterators and before its first page, another writer writes d.
    let pages = 0;
    const horizon = new Set<string>();
    streams.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'GetRecordsCommand' && ++pages === 1) await doc.send(new PutCommand({ TableName: table, Item: { pk: 'd', n: 1 } }));
        const out = await next(args);
        const input = args.input as { ShardIteratorType?: string };
        const iterator = (out.output as { ShardIterator?: string }).ShardIterator;
        if (context.commandName === 'GetShardIteratorCommand' && input.ShardIteratorType === 'TRIM_HORIZON' && iterator !== undefined) horizon.add(iterator);
        return out;
      },
      { step: 'initialize', name: 'writeAfterReadingBegan' },
    );
    try {
      // Twenty empty pages from TRIM_HORIZON before the shard's records (AWS: "it might take
      // multiple calls to get to a portion of the shard that contains stream records").
      const gap = env.proxy.respond({ target: 'GetRecords', times: 20, when: (q) => horizon.has(q.json?.ShardIterator) }, (q) => ({ Records: [], NextShardIterator: q.json?.ShardIterator }));
      const changes = await readStream(env.t.dynamo.client, streams, table);
      expect(gap.hits).toBe(20);
      expect(changes.map((c) => [c.event, c.key])).toEqual([
        ['INSERT', 'a'],
        ['INSERT', 'b'],
        ['INSERT', 'c'],
        ['INSERT', 'd'],
      ]);
    } finally {
      streams.destroy();
    }
  });
});
