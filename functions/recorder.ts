/** Lambda entry: the recorder (SES events from the configuration set, through EventBridge; a hard bounce with its workload's `bounced` steps). */
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { createRecorderHandler } from './effects-handlers.js';

const telemetry = powertoolsTelemetry('recorder');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });

export const handler = lambdaHandler(createRecorderHandler({ doc: commons.doc, table: commons.tables.outbox, telemetry, steps: commons.workload.steps }), telemetry);
