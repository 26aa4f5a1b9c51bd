/** Lambda entry: the starter (EventBridge Scheduler, monthly cron). */
import { ENV, integer, MAX_SHARDS } from '../lib/workflow/index.js';
import { MAX_CUSTOMERS } from '../lib/workloads/invoices.js';
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { createStarterHandler } from './starter-handler.js';

const telemetry = powertoolsTelemetry('starter');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });

export const handler = lambdaHandler(
  createStarterHandler({
    ...commons,
    telemetry,
    customers: integer(process.env, ENV.customers, 1_000, 0, MAX_CUSTOMERS),
    shards: integer(process.env, ENV.shards, 1, 1, MAX_SHARDS),
  }),
  telemetry,
);
