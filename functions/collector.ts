/** Lambda entry: the document collector (EventBridge Scheduler, rate). */
import { ENV, integer } from '../lib/workflow/index.js';
import { invoiceProcessor } from '../lib/workloads/invoices.js';
import { commonsFromEnv, lambdaHandler, powertoolsTelemetry } from './commons.js';
import { documentsFromEnv } from './effects-commons.js';
import { createCollectorHandler } from './effects-handlers.js';

const telemetry = powertoolsTelemetry('collector');
const commons = commonsFromEnv(process.env, { tracer: telemetry.tracer });
const documents = documentsFromEnv(process.env, telemetry.tracer);
const catalog = invoiceProcessor.documents!;
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
    minAgeMs: integer(process.env, ENV.collectAfterMs, 3_600_000, 60_000, 30 * 86_400_000),
  }),
  telemetry,
);
