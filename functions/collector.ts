/** Lambda entry: the document collector (EventBridge Scheduler, rate). */
import { ConfigError } from '../lib/protocol/index.js';
import { ENV, integer } from '../lib/workflow/index.js';
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { documentsFromEnv } from './effects-commons.js';
import { createCollectorHandler } from './effects-handlers.js';

const telemetry = powertoolsTelemetry('collector');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });
const documents = documentsFromEnv(process.env, telemetry.tracer);
const catalog = commons.workload.processor.documents;
// The stack creates the collector only for a workload that writes documents.
if (catalog === undefined) throw new ConfigError('WORKLOAD', `workload ${commons.workload.name} writes no documents: there is nothing to collect`);
const set = documents.set === undefined ? '' : `${documents.set}/`;

export const handler = lambdaHandler(
  createCollectorHandler({
    doc: commons.doc,
    tables: commons.tables,
    store: documents.store,
    pages: documents.store,
    prefix: `${set}${catalog.prefix}`,
    refOf: (key) => (key.startsWith(set) ? catalog.refOf(key.slice(set.length), commons.tables) : undefined),
    clock: commons.clock,
    telemetry,
    // The longest lease (30 s by default) plus a wide margin.
    ...(commons.workload.fenceKeyPrefix === undefined ? {} : { fenceKeyPrefix: commons.workload.fenceKeyPrefix }),
    minAgeMs: integer(process.env, ENV.collectAfterMs, 3_600_000, 60_000, 30 * 86_400_000),
  }),
  telemetry,
);
