/** Lambda entry: the worker. Clients and config are built once per container. */
import { invoiceProcessor } from '../lib/workloads/invoices.js';
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { createWorkerHandler } from './worker-handler.js';

const telemetry = powertoolsTelemetry('worker');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });

export const handler = lambdaHandler(createWorkerHandler({ ...commons, telemetry, processor: invoiceProcessor }), telemetry);
