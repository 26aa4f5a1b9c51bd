// One worker at a time (leader election): whoever gets the lease works. Before each protected
// effect it calls keep(), which renews the lease once half of it has run out and says whether the
// work may go on: not when the lease was lost to someone else, nor when a renewal could not be
// confirmed before the local deadline. Nothing renews in the background. The others find the
// lease held and try again later.
import { LeaseKeeper, type Lease, type LeaseManager } from '../../lib/protocol/index.js';

export async function runIfLeader(leases: LeaseManager, key: string, work: (lease: Lease, keep: () => Promise<boolean>) => Promise<void>): Promise<'done' | 'stopped' | 'not-leader'> {
  const attempt = await leases.tryAcquire(key);
  if (!attempt.ok) return 'not-leader'; // attempt.error.holder: who leads, until when
  const keeper = new LeaseKeeper(leases, attempt.value);
  let stopped = false;
  const keep = async (): Promise<boolean> => {
    const kept = stopped ? undefined : await keeper.keep();
    stopped = kept?.kind !== 'held' || !keeper.isSafe();
    return !stopped;
  };
  try {
    await work(attempt.value, keep); // call keep() before every protected effect
  } finally {
    await leases.release(keeper.lease); // conditional on owner and generation: harmless if lost
  }
  return stopped ? 'stopped' : 'done';
}
