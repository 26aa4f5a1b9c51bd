/**
 * The scheduled and event-driven handlers of the external effects, thin: the reconciler
 * (outbox items the sender did not finish), the collector (orphaned documents) and the recorder
 * (SES events, through EventBridge, onto the outbox item they name).
 */
import type { EventBridgeEvent } from 'aws-lambda';
import { collect, reconcile, recordSesEvent, type CollectorDeps, type CollectReport, type ReconcilerDeps, type ReconcileReport, type SesEventDetail } from '../lib/workflow/index.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export type ReconcilerHandler = (event?: unknown) => Promise<ReconcileReport>;
export type CollectorHandler = (event?: unknown) => Promise<CollectReport>;
export type RecorderHandler = (event: EventBridgeEvent<string, SesEventDetail>) => Promise<{ recorded: boolean }>;

export const createReconcilerHandler = (deps: ReconcilerDeps): ReconcilerHandler => async () => reconcile(deps);

export const createCollectorHandler = (deps: CollectorDeps): CollectorHandler => async () => collect(deps);

export function createRecorderHandler(deps: { doc: DynamoDBDocumentClient; table: string }): RecorderHandler {
  return async (event) => ({ recorded: await recordSesEvent(deps.doc, deps.table, event.detail) });
}
