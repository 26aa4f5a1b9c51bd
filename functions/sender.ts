/** Lambda entry: the outbox sender (the Outbox stream's INSERTs, partial batch responses). */
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { senderFromEnv } from './effects-commons.js';
import { createSenderHandler } from './sender-handler.js';

const telemetry = powertoolsTelemetry('sender');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });

export const handler = lambdaHandler(createSenderHandler(senderFromEnv(process.env, commons, telemetry, telemetry.tracer)), telemetry);
