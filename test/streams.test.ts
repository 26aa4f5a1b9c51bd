/**
 * The stream reader the invariant checker relies on: it must see every record, or a violation
 * written after a gap would pass unseen. DynamoDB Streams on AWS may answer empty pages before
 * more records; the fault proxy answers such pages here, in front of DynamoDB Local.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { readStream, streamsClient } from '../cli/streams.js';
import { proxiedTables } from './support/tables.js';

const env = proxiedTables(import.meta.filename);

describe('readStream', () => {
  it('an empty page before more records (as AWS may answer): the reader reads on and returns every record', async () => {
    const table = env.t.names.invoices;
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
});
