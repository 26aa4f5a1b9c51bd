/**
 * What the workflow needs from its surroundings, as small interfaces: Lambda wires them to SQS
 * and Powertools, the local runtime to an in-process queue and an in-memory sink.
 */

/** The work queue's message body. `observedVersion`: a version-watch sweeper's matured observation. */
export interface WorkMessage {
  jobId: string;
  /** Set by the sweeper in version-watch mode: the lease version it saw unchanged long enough. */
  observedVersion?: string;
  /** Why the message was sent: start, continuation, requeue (for logs). */
  reason?: 'start' | 'continuation' | 'requeue';
}

export interface WorkQueue {
  send(message: WorkMessage): Promise<void>;
}

export const METRIC = {
  leaseAcquired: 'LeaseAcquired',
  leaseTakeover: 'LeaseTakeover',
  leaseLost: 'LeaseLost',
  leaseBusy: 'LeaseBusy',
  staleGenerationRejected: 'StaleGenerationRejected',
  unitsCommitted: 'UnitsCommitted',
  duplicatesSuppressed: 'DuplicatesSuppressed',
  jobsRequeued: 'JobsRequeued',
  jobsCompleted: 'JobsCompleted',
  jobsFailed: 'JobsFailed',
  oldestUnfinishedJobAgeMs: 'OldestUnfinishedJobAgeMs',
  /** Work messages the worker handler reported failed (redelivered, then dead-lettered). */
  recordsFailed: 'RecordsFailed',
} as const;
export type MetricName = (typeof METRIC)[keyof typeof METRIC];

export interface Telemetry {
  count(metric: MetricName, n?: number): void;
  gauge(metric: MetricName, value: number): void;
  /** Structured event: becomes a JSON log line (Lambda) or a timeline entry (local). */
  event(name: string, fields: Record<string, unknown>): void;
}

export const silentTelemetry: Telemetry = { count: () => undefined, gauge: () => undefined, event: () => undefined };
