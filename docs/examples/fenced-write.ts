// A fenced write to a table of your own: a report rebuilt batch by batch by whoever holds its
// lease. The fence and the checkpoint live in the same table as the lines, and every batch is ONE
// transaction with the fence check: a holder that lost the lease while paused writes nothing.
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { commitFencedUnit, isConditionalCheckFailed, raiseFence, upsert, type Lease } from '../../lib/protocol/index.js';

export async function writeReport(doc: DynamoDBDocumentClient, table: string, report: string, lease: Lease, batches: string[][]): Promise<void> {
  const fence = { table, resource: `fence#${report}` };
  const checkpoint = `progress#${report}`;
  // Raise the fence BEFORE reading what you will change: from here on no older holder can commit.
  await raiseFence({ doc }, fence, lease.generation);
  const first = new PutCommand({ TableName: table, Item: { pk: checkpoint, cursor: 0 }, ConditionExpression: 'attribute_not_exists(pk)' });
  await doc.send(first).catch((e: unknown) => {
    if (!isConditionalCheckFailed(e)) throw e; // exists: resume where the last holder stopped
  });
  const read = await doc.send(new GetCommand({ TableName: table, Key: { pk: checkpoint }, ConsistentRead: true }));
  for (let n = read.Item?.cursor as number; n < batches.length; n++) {
    const lines = batches[n]!.map((text, i) => upsert(table, { pk: `line#${report}#${n}#${i}`, text, generation: lease.generation }));
    // Throws StaleGenerationError if a newer holder raised the fence: nothing of this batch is written.
    await commitFencedUnit({ doc }, { fence, generation: lease.generation, checkpoint: { table, key: checkpoint, expected: n, next: n + 1 }, effects: lines, token: { job: report, unit: n } });
  }
}
