/**
 * The sweeper Lambda: a scheduled event in, a sweep, a summary out. A sweep that runs short of
 * the invocation's time stops and the next invocation of this container resumes where it
 * stopped; a new container starts over from the oldest heartbeat (correct either way: every
 * requeue is conditional, and the oldest jobs come first).
 */
import type { Context } from 'aws-lambda';
import { sweep, type SweeperDeps, type SweepReport } from '../lib/workflow/index.js';

export type SweeperHandler = (event?: unknown, context?: Pick<Context, 'getRemainingTimeInMillis'>) => Promise<SweepReport>;

export function createSweeperHandler(deps: SweeperDeps): SweeperHandler {
  let resumeFrom: Record<string, unknown> | undefined;
  return async (_event, context) => {
    const report = await sweep(deps, {
      ...(context ? { remainingTimeMs: () => context.getRemainingTimeInMillis() } : {}),
      ...(resumeFrom ? { resumeFrom } : {}),
    });
    resumeFrom = report.resumeFrom;
    deps.telemetry.event('sweep-done', { ...report, resumed: report.resumeFrom !== undefined });
    return report;
  };
}
