/** Lambda entry: the outbox reconciler (EventBridge Scheduler, rate). */
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { reconcilerFromEnv, senderFromEnv } from './effects-commons.js';
import { createReconcilerHandler } from './effects-handlers.js';

const telemetry = powertoolsTelemetry('reconciler');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });

export const handler = lambdaHandler(createReconcilerHandler(reconcilerFromEnv(process.env, senderFromEnv(process.env, commons, telemetry, telemetry.tracer))), telemetry);
