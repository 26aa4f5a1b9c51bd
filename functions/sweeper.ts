/** Lambda entry: the sweeper (EventBridge Scheduler, rate). */
import { ENV, integer } from '../lib/workflow/index.js';
import { commonsFromEnv, powertoolsTelemetry } from './commons.js';
import { createSweeperHandler } from './sweeper-handler.js';

const commons = commonsFromEnv(process.env);
const telemetry = powertoolsTelemetry('sweeper');

export const handler = createSweeperHandler(
  {
    ...commons,
    telemetry,
    staleAfterMs: integer(process.env, ENV.staleAfterMs, commons.lease.durationMs * 2, 1, 86_400_000),
    sweepIntervalMs: integer(process.env, ENV.sweepIntervalMs, 60_000, 1_000, 86_400_000),
  },
  { onFlush: () => telemetry.metrics.publishStoredMetrics() },
);
