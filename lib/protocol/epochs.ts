/**
 * Epochs: after a restore from backup (or any event that may move a counter backward), the
 * operator raises the epoch and seals. Tokens are `epoch * 2^32 + seq`, so every token of the
 * new epoch is greater than every token of any older one; sealing raises every fence and
 * lease counter to `epoch * 2^32` so old tokens are rejected AT ONCE, before any new holder
 * arrives. Both are idempotent and restartable: run them again after any interruption.
 * (Fence and lease items share the key and generation attribute names: items.ts.)
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
  /** Fences table only: fences a lease key protects that did not exist yet, created at the floor. */
  created?: number;
}

export interface SealOptions {
  /**
   * The fences each lease key protects (a workflow's convention, e.g. `job#J` protects
   * `fence#J`). Each is raised, or CREATED at the floor when absent: a holder of an older epoch
   * that paused between its acquire and its first fence raise must not be able to create the
   * fence at its old generation after the seal.
   */
  fencesOf: (leaseKey: string) => readonly string[];
  onProgress?: (r: SealReport) => void;
}

/** Every item of a table (key and generation only), page by page, consistently. */
async function* generations(doc: DynamoDBDocumentClient, table: string, onPage: () => void): AsyncGenerator<{ pk: string; generation: unknown }> {
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(
      new ScanCommand({
        TableName: table,
        ConsistentRead: true,
        ExclusiveStartKey: start,
        ProjectionExpression: '#pk, #g',
        ExpressionAttributeNames: { '#pk': LEASE_ATTR.key, '#g': LEASE_ATTR.generation },
      }),
    );
    for (const item of page.Items ?? []) yield { pk: String(item[LEASE_ATTR.key]), generation: item[LEASE_ATTR.generation] };
    start = page.LastEvaluatedKey;
    onPage();
  } while (start !== undefined);
}

/**
 * Raises `pk`'s generation to `floor` unless it is there already: conditional, so a rerun, a
 * concurrent seal or a newer holder is never moved backward. `create` also writes an absent item.
 * Returns what happened.
 */
async function raiseTo(doc: DynamoDBDocumentClient, table: string, pk: string, floor: number, create: boolean): Promise<'raised' | 'created' | 'above'> {
  try {
    const out = await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: { [LEASE_ATTR.key]: pk },
        ConditionExpression: `${create ? '' : 'attribute_exists(#pk) AND '}(attribute_not_exists(#g) OR #g < :floor)`,
        UpdateExpression: 'SET #g = :floor',
        ExpressionAttributeNames: { '#g': LEASE_ATTR.generation, ...(create ? {} : { '#pk': LEASE_ATTR.key }) },
        ExpressionAttributeValues: { ':floor': floor },
        ReturnValues: 'UPDATED_OLD',
      }),
    );
    return out.Attributes === undefined ? 'created' : 'raised';
  } catch (e) {
    if (!isConditionalCheckFailed(e)) throw e;
    return 'above';
  }
}

/**
 * Raises every lease counter, every fence, and every fence a lease key protects (created if
 * absent) to at least `epoch * 2^32`. A lease holder of an older epoch loses its lease (renew
 * conditions on its generation); a fence rejects every older token, including one that was never
 * raised before the seal. Refuses any epoch but the recorded one (raiseEpoch): a typo would
 * otherwise seal every counter above every configured process and halt the workflow.
 */
export async function seal(
  doc: DynamoDBDocumentClient,
  tables: { leases: string; fences: string },
  epoch: number,
  opts: SealOptions,
): Promise<SealReport[]> {
  assertEpoch(epoch);
  const recorded = (await readEpoch(doc, tables.leases)) ?? 0;
  if (epoch !== recorded) {
    throw new InvalidInputError('epoch', `the recorded epoch is ${recorded}; seal seals the recorded epoch only (raise-epoch first, then seal that epoch)`);
  }
  const floor = epochFloor(epoch);
  const leases: SealReport = { table: tables.leases, scanned: 0, raised: 0 };
  const fences: SealReport = { table: tables.fences, scanned: 0, raised: 0, created: 0 };
  const count = (report: SealReport, outcome: 'raised' | 'created' | 'above') => {
    if (outcome === 'raised') report.raised++;
    if (outcome === 'created') report.created = (report.created ?? 0) + 1;
  };
  for await (const item of generations(doc, tables.leases, () => opts.onProgress?.(leases))) {
    leases.scanned++;
    if (item.pk === EPOCH_RECORD_KEY) continue;
    if (!(typeof item.generation === 'number' && item.generation >= floor)) count(leases, await raiseTo(doc, tables.leases, item.pk, floor, false));
    for (const fence of opts.fencesOf(item.pk)) count(fences, await raiseTo(doc, tables.fences, fence, floor, true));
  }
  for await (const item of generations(doc, tables.fences, () => opts.onProgress?.(fences))) {
    fences.scanned++;
    if (!(typeof item.generation === 'number' && item.generation >= floor)) count(fences, await raiseTo(doc, tables.fences, item.pk, floor, false));
  }
  return [leases, fences];
}
