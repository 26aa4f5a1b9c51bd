// tier: quick
/**
 * The local runtime with many concurrent pollers: `npm start -- --workers 16` must not print
 * Node's MaxListenersExceededWarning (one abort listener per idle poller on the shared stop
 * signal) into the progress bar.
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../lib/protocol/index.js';
import { LocalQueue } from '../cli/local/queue.js';
import { LocalRuntime } from '../cli/local/runtime.js';

describe('the local runtime', () => {
  it('runs 64 idle pollers and a sweeper without a MaxListenersExceededWarning', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const queue = new LocalQueue({ clock: systemClock, visibilityTimeoutMs: 1_000, maxReceiveCount: 3 });
      let invoked = 0;
      const runtime = new LocalRuntime({
        clock: systemClock,
        queue,
        // The worker handler's contract (a partial batch response); the runtime's own behaviour is under test.
        worker: async () => ((invoked += 1), { batchItemFailures: [] }),
        sweeper: async () => ({ scanned: 0, requeued: 0, skipped: 0 }) as never,
        concurrency: 64,
        batchSize: 1,
        invocationTimeoutMs: 1_000,
        sweepIntervalMs: 50,
        pollIdleMs: 20,
      });
      runtime.start();
      await queue.send({ jobId: 'job-1', reason: 'start' });
      await systemClock.sleep(300);
      await runtime.stop();
      // Warnings are emitted on the next tick.
      await new Promise((r) => setImmediate(r));
      expect(invoked).toBe(1);
      expect(runtime.sweeps).toBeGreaterThan(0);
      expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
