/**
 * The sender Lambda: the Outbox stream's records in (the event source passes INSERTs only), a
 * partial batch response out. Each INSERT is one outbox item to claim, send and mark
 * (lib/workflow sender.ts); a record the provider could not take now is reported failed with
 * every record after it, so the stream retries from there in order (bisect on error, then the
 * on-failure destination; the reconciler sends whatever is left PENDING). So is every record the
 * invocation has no time left to send: one more send and its settle must fit in what remains.
 */
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { handleOutboxRecords, METRIC, type OutboxItem, type OutboxRecord, type SenderDeps } from '../lib/workflow/index.js';

export type SenderHandler = (event: DynamoDBStreamEvent, context?: Pick<Context, 'getRemainingTimeInMillis'>) => Promise<DynamoDBBatchResponse>;

export function outboxRecords(event: DynamoDBStreamEvent): OutboxRecord[] {
  return event.Records.map((r) => {
    const image = r.dynamodb?.NewImage;
    return {
      sequence: r.dynamodb?.SequenceNumber ?? '',
      eventName: (r.eventName ?? 'MODIFY') as OutboxRecord['eventName'],
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      ...(image === undefined ? {} : { item: unmarshall(image as any) as OutboxItem }),
    };
  });
}

export function createSenderHandler(deps: SenderDeps): SenderHandler {
  return async (event, context) => {
    // The invocation's remaining time bounds what it claims: a claim it could not finish is left to the stream's retry.
    const budget = context === undefined ? undefined : { remainingTimeMs: () => context.getRemainingTimeInMillis() };
    const failed = await handleOutboxRecords(deps, outboxRecords(event), budget);
    if (failed.length > 0) deps.telemetry.count(METRIC.outboxRecordsFailed, failed.length);
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
