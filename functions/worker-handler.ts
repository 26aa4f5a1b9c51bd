/**
 * The worker Lambda: SQS batch in, partial batch response out. Each record is one job's
 * work; a record fails alone (its message is redelivered after the visibility timeout and
 * reaches the DLQ after the queue's max receives). Thin: parse → lib/worker → shape.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { InvalidInputError } from '../lib/protocol/index.js';
import { runJob, shouldRetry, type WorkerDeps } from '../lib/workflow/index.js';
import { parseWorkMessage } from './messages.js';

export type WorkerHandler = (event: SQSEvent, context: Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>) => Promise<SQSBatchResponse>;

export function createWorkerHandler(deps: WorkerDeps, opts: { safetyMarginMs?: number; onFlush?: () => void } = {}): WorkerHandler {
  return async (event, context) => {
    const results = await Promise.all(
      event.Records.map(async (record, i) => {
        try {
          const message = parseWorkMessage(record.body);
          const outcome = await runJob(deps, {
            message,
            owner: `${context.awsRequestId}/${i}`,
            remainingTimeMs: () => context.getRemainingTimeInMillis(),
            ...(opts.safetyMarginMs === undefined ? {} : { safetyMarginMs: opts.safetyMarginMs }),
          });
          deps.telemetry.event('record-done', { messageId: record.messageId, outcome: outcome.kind, jobId: outcome.jobId });
          return shouldRetry(outcome) ? record.messageId : undefined;
        } catch (e) {
          deps.telemetry.event(e instanceof InvalidInputError ? 'record-invalid' : 'record-error', {
            messageId: record.messageId,
            error: e instanceof Error ? `${e.name}: ${e.message}` : String(e),
          });
          return record.messageId;
        }
      }),
    );
    opts.onFlush?.();
    return { batchItemFailures: results.filter((id): id is string => id !== undefined).map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
