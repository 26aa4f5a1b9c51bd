/**
 * What the workflow needs from its surroundings, as small interfaces: Lambda wires them to SQS
 * and Powertools, the local runtime to an in-process queue and an in-memory sink.
 */

/** The work queue's message body. */
export interface WorkMessage {
  jobId: string;
  /**
   * Why the message was sent. In version-watch mode a `requeue` (the sweeper's trigger) makes the
   * worker watch a held lease for a full duration before it claims; any other message finding
   * the lease held is a duplicate and is acknowledged at once.
   */
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
  /** Runs whose completion check saw every shard DONE and recorded it (lib/workflow/runs.ts). */
  runsCompleted: 'RunsCompleted',
  oldestUnfinishedJobAgeMs: 'OldestUnfinishedJobAgeMs',
  /** Work messages the worker handler reported failed (redelivered, then dead-lettered). */
  recordsFailed: 'RecordsFailed',
  /** Documents put before their unit's transaction (worker), and orphans removed (collector). */
  documentsPublished: 'DocumentsPublished',
  documentsCollected: 'DocumentsCollected',
  /** Outbox deliveries (sender, reconciler): sent, refused for good, outcome unseen, given up to a person. */
  outboxSent: 'OutboxSent',
  outboxFailed: 'OutboxFailed',
  /** Items the provider declined for good (a card declined): a business outcome, followed by its steps, not alarmed. */
  outboxDeclined: 'OutboxDeclined',
  /** Items settled without their follow-ups because a step's next() failed: an operator's (alarmed). */
  outboxFollowUpFailed: 'OutboxFollowUpFailed',
  outboxAmbiguous: 'OutboxAmbiguous',
  outboxUnknown: 'OutboxUnknown',
  /** Sends the provider throttled (nothing taken): each item is deferred with a jittered backoff. */
  outboxThrottled: 'OutboxThrottled',
  /** Sends refused by the sending account's state (paused, sandbox, configuration): items held, sent once it lifts. The alarm's metric. */
  outboxHeld: 'OutboxHeld',
  /** Provider events after acceptance that a person should see: a hard bounce or suppression, a complaint, a rejection after acceptance. */
  outboxBounced: 'OutboxBounced',
  outboxComplained: 'OutboxComplained',
  /** A gauge in ms, emitted by every reconcile: the oldest item not yet sent. */
  outboxOldestUnsentAgeMs: 'OutboxOldestUnsentAgeMs',
  /** Outbox stream records the sender reported failed (retried by the event source, then its DLQ). */
  outboxRecordsFailed: 'OutboxRecordsFailed',
} as const;
export type MetricName = (typeof METRIC)[keyof typeof METRIC];

export interface Telemetry {
  count(metric: MetricName, n?: number): void;
  gauge(metric: MetricName, value: number): void;
  /** Structured event: becomes a JSON log line (Lambda) or a timeline entry (local). */
  event(name: string, fields: Record<string, unknown>): void;
}

export const silentTelemetry: Telemetry = { count: () => undefined, gauge: () => undefined, event: () => undefined };
