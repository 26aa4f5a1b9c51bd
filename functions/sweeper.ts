/** Lambda entry: the sweeper (EventBridge Scheduler, rate). */
import { sweepSettingsFromEnv } from '../lib/workflow/index.js';
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { createSweeperHandler } from './sweeper-handler.js';

const telemetry = powertoolsTelemetry('sweeper');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });

export const handler = lambdaHandler(createSweeperHandler({ ...commons, telemetry, ...sweepSettingsFromEnv(process.env, commons.lease) }), telemetry);
