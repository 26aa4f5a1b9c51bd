/**
 * The workflow, built on the protocol (lib/protocol/): durable jobs with a checkpoint, a worker
 * that runs one job as acquire → raise fence → read checkpoint → fenced units → finish, a sweeper
 * that requeues what nobody progresses, and the table set. A workload (lib/workloads/) plugs in
 * as a Processor: it returns each unit's effects and never sees a lease or a fence.
 */
export {
  ENV,
  httpUrl,
  decimal,
  integer,
  isHttpUrl,
  leaseSettingsFromEnv,
  required,
  SWEEP_INTERVAL_MS,
  DEFAULT_UNFINISHED_JOB_ALARM_MINUTES,
  DEPLOYED_DEFAULTS,
  sweepSettingsFromEnv,
  tablesFromEnv,
  type LeaseSettings,
  type SweepSettings,
} from './config.js';
export { assertJobId, createJob, fenceKeyOf, fencesOfLease, jobFromItem, leaseKeyOf, MAX_UNIT_FAILURES, readJob, type Job, type JobStatus } from './jobs.js';
export { claimRequeue, markFailed, recordUnitFailure } from './job-writes.js';
export { AttemptRefusedError, DecisionRefusedError, InvalidJobItemError, InvalidRunItemError, JobNotFoundError, ObjectStateUnknownError, ObjectWriteConflictError, RunInputMismatchError, UnprocessedKeysError } from './errors.js';
export { METRIC, silentTelemetry, type MetricName, type Telemetry, type WorkMessage, type WorkQueue } from './ports.js';
export { maxUnitSize, type Processor, type UnitContext } from './processor.js';
export {
  RECORD_ATTR,
  OUTBOX_ATTR,
  OUTBOX_INDEX,
  JOB_ATTR,
  TABLE_NAME,
  TABLE_ROLES,
  TABLES,
  tableNames,
  UNFINISHED,
  UNFINISHED_INDEX,
  UNSENT_RETIRED_KEYS,
  UNSENT_SHARDS,
  unsentKeyOf,
  unsentKeys,
  unsentShardOf,
  type IndexSchema,
  type KeyAttribute,
  type KeyType,
  type TableNames,
  type TableRole,
  type TableSchema,
} from './schema.js';
export { sweep, sweepsToCover, type SweeperDeps, type SweepReport, type SweepWindow } from './sweeper.js';
export { createTableInput, ensureTables } from './tables.js';
export {
  fencedProtocol,
  shouldRetry,
  type ProtocolOps,
  type WorkerDeps,
  type WorkerHooks,
  type WorkerPoint,
  type WorkOutcome,
  type WorkRequest,
} from './worker.js';
export { runJob } from './run-job.js';

// External effects (DESIGN.md): the protected file (documents on an object store) and the
// unprotected email or provider call (the transactional outbox, its sender and reconciler).
export { ObjectExistsError, type ListedPage, type ObjectPages, type ObjectStore, type StoredObject } from './effects/object-store.js';
export { documentKey, publishDocuments, type DocumentDraft, type DocumentTarget, type PublishedDocument } from './effects/documents.js';
export {
  claim,
  deferClaimed,
  deferUnclaimed,
  markFailed as markOutboxFailed,
  markFailedUnclaimed,
  markSent,
  markSentUnclaimed,
  markUnknownUnclaimed,
  markUnknown,
  messageIdentity,
  outboxEmail,
  outboxHttp,
  readOutboxItem,
  recordAmbiguous,
  release as releaseClaim,
  settleByRecord,
  takeOver,
  type EmailPayload,
  type FollowUpWrite,
  type HttpPayload,
  type OutboxItem,
  type Refusal,
  type OutboxKind,
  type OutboxStatus,
} from './effects/outbox.js';
export { decideUnknown, type Decision, type DecisionResult } from './effects/decisions.js';
export { attemptId, retryAsNewAttempt } from './effects/attempts.js';
export { assertSteps, EMAIL_SOURCE, followUpId, followUps, followUpsOf, MAX_CHAIN, sourceOf, STEP_OUTCOMES, type FollowUpStep, type StepOutcome } from './effects/follow-ups.js';
export { Pacer, notBeforeOf, type BackoffSettings } from './effects/pacing.js';
export { EMAIL_TARGET, liveTargetsOf, MAILBOX_SIMULATOR, SandboxEmail, sandboxOutcome, sandboxRecipient, targetsOf, type SandboxOutcome } from './effects/sandbox.js';
export { PROVIDER_EVENT, recordedDelivery, type SendVerdict, type EmailProvider, type HttpProvider, type OutboundCall, type OutboundEmail, type RecordAnswer, type SendResult, type DeclineRule } from './effects/providers.js';
export { countKeyedRefusal, DEFAULT_KEY_RETENTION_MARGIN_MS, keyedDeadline, PAST_RETENTION, restartKeyWindow, startKeyedSend, type KeyedRounds } from './effects/key-retention.js';
export { claimCoversSend, DEFAULT_SEND_TIMEOUT_MS, deliver, SETTLE_RESERVE_MS, sendItem, settle, type DeliveryOutcome, type SenderDeps, type SenderHooks, type SenderPoint } from './effects/sender.js';
export { handleOutboxRecords, type OutboxRecord } from './effects/stream-batch.js';
export { reconcile, type ReconcileReport, type ReconcilerDeps } from './effects/reconciler.js';
export { countUnsent } from './effects/unsent-index.js';
export { recordSesEvent, type RecorderDeps, type SesEventDetail } from './effects/recorder.js';
export { recordBounce, recordProviderEvent } from './effects/provider-records.js';
export { collect, type CollectorDeps, type CollectReport, type CollectWindow, type DocumentRef } from './effects/collector.js';
export { CURSOR_KIND, cursorKeyOf, isJobItem, readCursor, type CollectorCursor } from './effects/collector-cursor.js';
export {
  checkRunOfJob,
  completeRun,
  createRun,
  isRunItem,
  MAX_SHARDS,
  readRun,
  RUN_ATTR,
  RUN_KIND,
  runFromItem,
  runIdOfJob,
  runKeyOf,
  runStatus,
  shardJobId,
  type RunRecord,
  type RunStatus,
  type ShardSpec,
} from './runs.js';
export {
  AWS_LIMITS,
  bindingLimit,
  costOf,
  DEFAULT_ASSUMPTIONS,
  IDLE_PRICES_US_EAST_1,
  PRICES_US_EAST_1,
  rampSeconds,
  workerConcurrencyFor,
  workerRoom,
  type LimitVerdict,
  type PlanAssumptions,
  type PlanLimits,
} from './capacity.js';
export { projectedKeyRate, projectedWrites, type Basis, type KeyScope, type LoadProfile, type PlanRates, type ProfileKey, type ProfileRun, type ProfileWrite } from './load-profile.js';
export { assertShardCount, assertWorkload, DEFAULT_HTTP_KEY_RETENTION_MS, httpTargetEnv, shardRange, shardsOfRun, unitSizeCap, type ExpectedEffect, type ExpectedRecord, type FollowUpExpectation, type HttpTargetSpec, type RunStart, type StartRequest, type Workload, type WorkloadChecks, type WorkloadStart } from './workload.js';
export { startRun } from './start-run.js';
