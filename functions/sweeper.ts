/** Lambda entry: the sweeper (EventBridge Scheduler, rate). */
import { sweepSettingsFromEnv } from '../lib/workflow/index.js';
import { commonsFromEnv, powertoolsTelemetry } from './commons.js';
import { createSweeperHandler } from './sweeper-handler.js';

const commons = commonsFromEnv(process.env);
const telemetry = powertoolsTelemetry('sweeper');

export const handler = createSweeperHandler(
  { ...commons, telemetry, ...sweepSettingsFromEnv(process.env, commons.lease) },
  { onFlush: () => telemetry.metrics.publishStoredMetrics() },
);
