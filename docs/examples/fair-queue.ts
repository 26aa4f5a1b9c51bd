// Many contenders for one key, served in the order they queued: the fair acquire. Only the first
// in line tries the lease; the others each watch the waiter ahead of them. The waiter table is
// yours (create it once with waitersTableInput); the lease's own acquire still decides.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { FairAcquirer, type LeaseManager } from '../../lib/protocol/index.js';

export async function inTurn<T>(leases: LeaseManager, doc: DynamoDBDocumentClient, waiters: string, key: string, work: () => Promise<T>): Promise<T> {
  const queue = new FairAcquirer(leases, { doc, table: waiters });
  const lease = await queue.acquire(key, { timeoutMs: 60_000 }); // AcquireTimeoutError after a minute
  try {
    return await work();
  } finally {
    await leases.release(lease);
  }
}
