/**
 * The worker Lambda: SQS batch in, partial batch response out. Each record is one job's
 * work. A job that ends DONE (here, or before: a redelivery) gets its run's completion check
 * (lib/workflow/runs.ts) before its record is acknowledged: a check that fails fails the record,
 * so the last shard of a run is acknowledged only after a check that saw it complete. A record fails alone (its message is redelivered after the visibility timeout and
 * reaches the DLQ after the queue's max receives). Thin: parse → lib/worker → shape.
 *
 * Every failed record is counted (RecordsFailed): a partial batch response is a successful
 * invocation, so Lambda's Errors metric never sees it. When every record of a batch fails the
 * invocation fails as a whole (Powertools BatchProcessor's rule): Lambda's SQS poller then backs
 * off instead of fetching the next batch that would fail the same way (a broken permission, a
 * table that is gone), and the Errors alarm fires.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { FencedError, InvalidInputError } from '../lib/protocol/index.js';
import { checkRunOfJob, METRIC, runJob, shouldRetry, type WorkerDeps } from '../lib/workflow/index.js';
import { parseWorkMessage } from './messages.js';

/** Every record of the batch failed: the whole invocation fails and all of them are redelivered. */
export class FullBatchFailureError extends FencedError {
  readonly code = 'FULL_BATCH_FAILURE';
  constructor(readonly failedMessageIds: readonly string[]) {
    super(`all ${failedMessageIds.length} records of the batch failed; see the record-invalid and record-error log lines`);
  }
}

export type WorkerHandler = (event: SQSEvent, context: Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>) => Promise<SQSBatchResponse>;

export function createWorkerHandler(deps: WorkerDeps, opts: { safetyMarginMs?: number } = {}): WorkerHandler {
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
          if (outcome.kind === 'done') await checkRunOfJob(deps.doc, deps.tables.jobs, outcome.jobId, deps.clock, deps.telemetry);
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
    const failed = results.filter((id): id is string => id !== undefined);
    if (failed.length > 0) deps.telemetry.count(METRIC.recordsFailed, failed.length);
    if (failed.length > 0 && failed.length === event.Records.length) throw new FullBatchFailureError(failed);
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
