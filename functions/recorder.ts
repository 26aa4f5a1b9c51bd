/** Lambda entry: the recorder (SES SEND/DELIVERY events from the configuration set, through EventBridge). */
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { createRecorderHandler } from './effects-handlers.js';

const telemetry = powertoolsTelemetry('recorder');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });

export const handler = lambdaHandler(createRecorderHandler({ doc: commons.doc, table: commons.tables.outbox, telemetry }), telemetry);
