// One worker at a time (leader election): whoever gets the lease works, a keeper renews it in the
// background, and the work stops when the keeper's signal fires (the lease was lost, or renewal
// stayed uncertain up to the local deadline). The others find it held and try again later.
import { LeaseKeeper, type Lease, type LeaseManager } from '../../lib/protocol/index.js';

export async function runIfLeader(leases: LeaseManager, key: string, work: (lease: Lease, stop: AbortSignal) => Promise<void>): Promise<'done' | 'stopped' | 'not-leader'> {
  const attempt = await leases.tryAcquire(key);
  if (!attempt.ok) return 'not-leader'; // attempt.error.holder: who leads, until when
  const keeper = new LeaseKeeper(leases, attempt.value, { intervalMs: leases.rule.durationMs / 3 });
  try {
    await work(attempt.value, keeper.signal); // check keeper.signal before every protected effect
  } finally {
    const last = await keeper.stop();
    if (!keeper.signal.aborted) await leases.release(last);
  }
  return keeper.signal.aborted ? 'stopped' : 'done';
}
