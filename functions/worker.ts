/** Lambda entry: the worker. Clients and config are built once per container. */
import { invoiceProcessor } from '../lib/workloads/invoices.js';
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { documentsFromEnv } from './effects-commons.js';
import { createWorkerHandler } from './worker-handler.js';

const telemetry = powertoolsTelemetry('worker');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });

const documents = documentsFromEnv(process.env, telemetry.tracer);

export const handler = lambdaHandler(createWorkerHandler({ ...commons, telemetry, processor: invoiceProcessor, documents }), telemetry);
