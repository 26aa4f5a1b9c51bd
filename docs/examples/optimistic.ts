// Seats sold from a show's record by read, change, write-if-unchanged: no lease, and two sellers
// meeting on one show retry instead of overselling.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { updateOptimistic, VersionConflictError } from '../../lib/protocol/index.js';

export async function sellSeats(doc: DynamoDBDocumentClient, table: string, show: string, seats: number): Promise<'sold' | 'sold-out' | 'busy'> {
  try {
    const out = await updateOptimistic({ doc, table, key: `show#${show}` }, (current) => {
      const left = typeof current?.seatsLeft === 'number' ? current.seatsLeft : 0;
      return left < seats ? undefined : { ...current, seatsLeft: left - seats };
    });
    return out.status === 'written' ? 'sold' : 'sold-out';
  } catch (e) {
    // Five conflicts in a row: contention is not rare here; retry later, or coordinate with a lease.
    if (e instanceof VersionConflictError) return 'busy';
    throw e;
  }
}
