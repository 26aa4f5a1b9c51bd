/** The sweeper Lambda: a scheduled event in, a sweep, a summary out. */
import { sweep, type SweeperDeps, type SweepReport } from '../lib/workflow/index.js';

export type SweeperHandler = (event?: unknown) => Promise<SweepReport>;

export function createSweeperHandler(deps: SweeperDeps, opts: { onFlush?: () => void } = {}): SweeperHandler {
  return async () => {
    try {
      const report = await sweep(deps);
      deps.telemetry.event('sweep-done', { ...report });
      return report;
    } finally {
      opts.onFlush?.();
    }
  };
}
