/**
 * The collector's durable cursor: where the last run stopped in its prefix, kept in the Jobs
 * table beside the jobs and run records (no table of its own for one small item per prefix):
 *
 *   pk `collector#<prefix>`, kind `collector-cursor`, after (S: the last key handled; '' = from
 *   the first), passes (N: full passes completed), updatedAt (N)
 *
 * Like a run record it has neither `status` nor `unfinished`: the sweeper's index never holds it
 * and jobFromItem refuses it; every scan of the Jobs table keeps only items without a `kind`
 * (isJobItem). The cursor is advice, never a safety condition: each delete is decided on its own
 * checks, so a lost or stale cursor only makes a run look at some objects again.
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export const CURSOR_KIND = 'collector-cursor';
export const cursorKeyOf = (prefix: string): string => `collector#${prefix}`;

/** Whether a Jobs item is a job: run records and the collector's cursors carry a `kind`, jobs none. */
export const isJobItem = (item: Record<string, unknown>): boolean => item.kind === undefined;

export interface CollectorCursor {
  readonly after: string;
  readonly passes: number;
}

export async function readCursor(doc: DynamoDBDocumentClient, table: string, prefix: string): Promise<CollectorCursor> {
  const item = (await doc.send(new GetCommand({ TableName: table, Key: { pk: cursorKeyOf(prefix) }, ConsistentRead: true }))).Item;
  return { after: typeof item?.after === 'string' ? item.after : '', passes: typeof item?.passes === 'number' ? item.passes : 0 };
}

/** Unconditional: two overlapping runs may both write it, and either position is a safe place to resume. */
export async function saveCursor(doc: DynamoDBDocumentClient, table: string, prefix: string, cursor: CollectorCursor, now: number): Promise<void> {
  await doc.send(new PutCommand({ TableName: table, Item: { pk: cursorKeyOf(prefix), kind: CURSOR_KIND, after: cursor.after, passes: cursor.passes, updatedAt: now } }));
}
