/** The sweeper Lambda: a scheduled event in, a sweep, a summary out. */
import { sweep, type SweeperDeps, type SweepReport } from '../lib/workflow/index.js';

export type SweeperHandler = (event?: unknown) => Promise<SweepReport>;

export function createSweeperHandler(deps: SweeperDeps): SweeperHandler {
  return async () => {
    const report = await sweep(deps);
    deps.telemetry.event('sweep-done', { ...report });
    return report;
  };
}
