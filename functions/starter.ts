/** Lambda entry: the starter (EventBridge Scheduler, the workload's schedule). */
import { ENV, integer, MAX_SHARDS } from '../lib/workflow/index.js';
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { createStarterHandler } from './starter-handler.js';

const telemetry = powertoolsTelemetry('starter');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });

export const handler = lambdaHandler(
  createStarterHandler({
    ...commons,
    telemetry,
    items: integer(process.env, ENV.runItems, 1_000, 0, commons.workload.start.maxItems),
    shards: integer(process.env, ENV.runShards, 1, 1, MAX_SHARDS),
  }),
  telemetry,
);
