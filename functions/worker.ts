/** Lambda entry: the worker, running the stack's workload (WORKLOAD). Clients and config are built once per container. */
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { documentsFromEnv } from './effects-commons.js';
import { createWorkerHandler } from './worker-handler.js';

const telemetry = powertoolsTelemetry('worker');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });
const { processor, fenceKeyPrefix } = commons.workload;

const documents = processor.documents === undefined ? undefined : documentsFromEnv(process.env, telemetry.tracer);

export const handler = lambdaHandler(
  createWorkerHandler({ ...commons, telemetry, processor, ...(fenceKeyPrefix === undefined ? {} : { fenceKeyPrefix }), ...(documents === undefined ? {} : { documents }) }),
  telemetry,
);
