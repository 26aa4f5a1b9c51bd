/**
 * Epochs: after a restore from backup (or any event that may move a counter backward), the
 * operator raises the epoch and seals. Tokens are `epoch * 2^32 + seq`, so every token of the
 * new epoch is greater than every token of any older one; sealing raises every fence and
 * lease counter to `epoch * 2^32` so old tokens are rejected AT ONCE, before any new holder
 * arrives. Both are idempotent and restartable: run them again after any interruption.
 */
import { GetCommand, ScanCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from './dynamo.js';
import { InvalidInputError } from './errors.js';
import { assertEpoch, epochFloor } from './generation.js';
import { LEASE_ATTR } from './items.js';

/** The durable record of the highest epoch ever raised (an item of the Leases table). */
export const EPOCH_RECORD_KEY = '@epoch';

/**
 * Records `epoch` as the current epoch; refuses to go backward. Returns the previous epoch.
 * Processes must also be configured with it (stack context `fenceEpoch`, env FENCE_EPOCH).
 */
export async function raiseEpoch(doc: DynamoDBDocumentClient, leasesTable: string, epoch: number): Promise<{ previous: number | undefined }> {
  assertEpoch(epoch);
  try {
    const out = await doc.send(
      new UpdateCommand({
        TableName: leasesTable,
        Key: { [LEASE_ATTR.key]: EPOCH_RECORD_KEY },
        ConditionExpression: 'attribute_not_exists(#e) OR #e <= :e',
        UpdateExpression: 'SET #e = :e',
        ExpressionAttributeNames: { '#e': 'epoch' },
        ExpressionAttributeValues: { ':e': epoch },
        ReturnValues: 'UPDATED_OLD',
      }),
    );
    const previous = out.Attributes?.epoch;
    return { previous: typeof previous === 'number' ? previous : undefined };
  } catch (e) {
    if (isConditionalCheckFailed(e)) throw new InvalidInputError('epoch', `epoch ${epoch} is lower than the recorded epoch; epochs only go up`);
    throw e;
  }
}

/** The recorded epoch (the highest ever raised), or undefined before the first raise. */
export async function readEpoch(doc: DynamoDBDocumentClient, leasesTable: string): Promise<number | undefined> {
  const out = await doc.send(new GetCommand({ TableName: leasesTable, Key: { [LEASE_ATTR.key]: EPOCH_RECORD_KEY }, ConsistentRead: true }));
  const e = out.Item?.epoch;
  return typeof e === 'number' ? e : undefined;
}

/** What seal did to one table: items scanned, items raised to the epoch's floor. */
export interface SealReport {
  table: string;
  scanned: number;
  raised: number;
}

/**
 * Raises the `generation` of every item in the given tables (Fences, Leases) to at least
 * `epoch * 2^32`. Each raise is conditional (`generation < :floor`), so a rerun, a concurrent
 * seal or a newer holder is never moved backward. A lease holder of an older epoch loses its
 * lease (renew conditions on its generation); a fence rejects every older token.
 */
export async function seal(
  doc: DynamoDBDocumentClient,
  tables: readonly string[],
  epoch: number,
  opts: { onProgress?: (r: SealReport) => void } = {},
): Promise<SealReport[]> {
  assertEpoch(epoch);
  const floor = epochFloor(epoch);
  const reports: SealReport[] = [];
  for (const table of tables) {
    const report: SealReport = { table, scanned: 0, raised: 0 };
    let start: Record<string, unknown> | undefined;
    do {
      const page = await doc.send(
        new ScanCommand({
          TableName: table,
          ConsistentRead: true,
          ExclusiveStartKey: start,
          ProjectionExpression: '#pk, #g',
          ExpressionAttributeNames: { '#pk': 'pk', '#g': 'generation' },
        }),
      );
      for (const item of page.Items ?? []) {
        report.scanned++;
        if (item.pk === EPOCH_RECORD_KEY) continue;
        const g = item.generation;
        if (typeof g === 'number' && g >= floor) continue;
        try {
          await doc.send(
            new UpdateCommand({
              TableName: table,
              Key: { pk: item.pk },
              ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(#g) OR #g < :floor)',
              UpdateExpression: 'SET #g = :floor',
              ExpressionAttributeNames: { '#g': 'generation' },
              ExpressionAttributeValues: { ':floor': floor },
            }),
          );
          report.raised++;
        } catch (e) {
          if (!isConditionalCheckFailed(e)) throw e;
        }
      }
      start = page.LastEvaluatedKey;
      opts.onProgress?.(report);
    } while (start !== undefined);
    reports.push(report);
  }
  return reports;
}
