/** Lambda entry: the worker. Clients and config are built once per container. */
import { invoiceProcessor } from '../lib/workloads/invoices.js';
import { commonsFromEnv, powertoolsTelemetry } from './commons.js';
import { createWorkerHandler } from './worker-handler.js';

const commons = commonsFromEnv(process.env);
const telemetry = powertoolsTelemetry('worker');

export const handler = createWorkerHandler(
  { ...commons, telemetry, processor: invoiceProcessor },
  { onFlush: () => telemetry.metrics.publishStoredMetrics() },
);
