/** Lambda entry: the starter (EventBridge Scheduler, monthly cron). */
import { ENV, integer } from '../lib/workflow/index.js';
import { MAX_CUSTOMERS } from '../lib/workloads/invoices.js';
import { commonsFromEnv, powertoolsTelemetry } from './commons.js';
import { createStarterHandler } from './starter-handler.js';

const commons = commonsFromEnv(process.env);
const telemetry = powertoolsTelemetry('starter');

export const handler = createStarterHandler(
  { ...commons, telemetry, customers: integer(process.env, ENV.customers, 1_000, 0, MAX_CUSTOMERS) },
  { onFlush: () => telemetry.metrics.publishStoredMetrics() },
);
