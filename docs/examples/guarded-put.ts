// A record that is its own fence: a customer's balance, written by whichever job run holds the
// lease, with the run's generation. A run that lost its lease while paused is refused here.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { guardedPut, type Generation } from '../../lib/protocol/index.js';

export async function saveBalance(doc: DynamoDBDocumentClient, table: string, customer: string, cents: number, generation: Generation): Promise<'saved' | 'stale'> {
  const written = await guardedPut(doc, table, { pk: `balance#${customer}`, cents, generation });
  if (written.ok) return 'saved';
  // A newer run wrote this record (written.error.existing shows it): drop this write, stop the run.
  return 'stale';
}
