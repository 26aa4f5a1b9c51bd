/**
 * The scheduled and event-driven handlers of the external effects, thin: the reconciler
 * (outbox items the sender did not finish), the collector (orphaned documents) and the recorder
 * (SES events, through EventBridge, onto the outbox item they name).
 */
import type { Context, EventBridgeEvent } from 'aws-lambda';
import { collect, reconcile, recordSesEvent, type CollectorDeps, type CollectReport, type ReconcilerDeps, type ReconcileReport, type RecorderDeps, type SesEventDetail, type Telemetry } from '../lib/workflow/index.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** What the scheduled handlers read of Lambda's context: the time left, their budget. */
export type BudgetContext = Pick<Context, 'getRemainingTimeInMillis'>;
export type ReconcilerHandler = (event?: unknown, context?: BudgetContext) => Promise<ReconcileReport>;
export type CollectorHandler = (event?: unknown, context?: BudgetContext) => Promise<CollectReport>;
export type RecorderHandler = (event: EventBridgeEvent<string, SesEventDetail>) => Promise<{ recorded: boolean }>;

const budgetOf = (context: BudgetContext | undefined) => (context ? { remainingTimeMs: () => context.getRemainingTimeInMillis() } : {});

/** Where a reconcile starts is drawn from its start time (reconciler.ts): the container keeps nothing between invocations. */
export const createReconcilerHandler = (deps: ReconcilerDeps): ReconcilerHandler => async (_event, context) => reconcile(deps, budgetOf(context));

/** The collector's resume point is durable (its cursor item), not the container's. */
export const createCollectorHandler = (deps: CollectorDeps): CollectorHandler => async (_event, context) => collect(deps, budgetOf(context));

export function createRecorderHandler(deps: RecorderDeps): RecorderHandler {
  return async (event) => ({ recorded: await recordSesEvent(deps, event.detail) });
}
