/**
 * The protocol, as a library: leases, fences and idempotent effects on DynamoDB. This module is
 * its public surface; it knows nothing of jobs, queues or the sample workload (lib/workflow/
 * builds on it). Three failures, three mechanisms (DESIGN.md):
 *
 *   a holder died or stalled        → the lease (LeaseManager, LeaseKeeper)
 *   an obsolete holder wakes up     → the fence (raiseFence, commitFencedUnit)
 *   the holder repeats an effect    → idempotency (onceOnly, putOnce, the unit's request token)
 *
 * Beside them, the lighter tools for when a lease is not worth it (guardedPut, putOnce,
 * updateOptimistic), and the fair acquire for many queued contenders (FairAcquirer). Which to
 * take: docs/choosing.md; examples: docs/library.md. Every export is documented where it is
 * declared (test/api-docs.test.ts).
 */

// Tokens: generations are (epoch, sequence) in one DynamoDB number; epochs after a restore.
export type { Brand, Generation, LeaseKey, OwnerId } from './brand.js';
export {
  asGeneration,
  assertEpoch,
  compareGenerations,
  epochCeiling,
  epochFloor,
  epochOf,
  formatGeneration,
  makeGeneration,
  MAX_EPOCH,
  MAX_SEQUENCE,
  parseGeneration,
  SEQUENCE_SPACE,
  sequenceOf,
} from './generation.js';
export { EPOCH_RECORD_KEY, raiseEpoch, readEpoch, seal, type SealReport } from './epochs.js';

// Time and contention: an injected clock, local deadlines, backoff with jitter.
export { driftedClock, leaseDeadline, ManualClock, skewedClock, systemClock, validateDeadlineRule, type Clock, type DeadlineRule } from './clock.js';
export { defaultBackoff, fullJitter, untilExpiry, type BackoffPolicy, type Random } from './backoff.js';

// The lease: who may start, until when, with which generation.
export { asLeaseKey, asOwnerId, LeaseManager, type Contended, type Holder, type Lease, type LeaseConfig, type LeaseMode, type Observation } from './lease.js';
export { LeaseKeeper, validateRenewBelow, type KeeperOptions, type KeepResult } from './keeper.js';
// Fair waiting (opt-in): a queue of contenders in a waiter table of the caller's, a predecessor watch.
export { FairAcquirer, type FairHooks, type FairOptions, type FairPoint } from './fair-acquire.js';
export { COUNTER_SK, WAITER_ATTR, waitersTableInput, type Waiter } from './waiters.js';

// The fence: raised before reading, checked in the same transaction as every effect.
export { assertFenceRef, raiseFence, type FenceContext, type FenceRef } from './fence.js';
export {
  buildFencedUnit,
  MAX_TRANSACTION_ACTIONS,
  MAX_TRANSACTION_BYTES,
  MAX_UNIT_EFFECTS,
  prepareFencedUnit,
  unitToken,
  type Checkpoint,
  type FencedUnit,
  type PreparedUnit,
} from './fenced-unit.js';
export { commitFencedUnit, decodeCancellation, retryableCancellation, type CommitOutcome } from './commit.js';

// Idempotency: a once-only effect carries its own operation key.
export { assertEffectItem, ONCE_CONDITION, onceOnly, putOnce, upsert, type Effect, type EffectItem } from './idempotency.js';

// The lighter tools, for when a lease is not worth it (docs/choosing.md).
export { GUARD_CONDITION, guardedPut, type GuardedItem } from './conditional.js';
export { updateOptimistic, VERSION_ATTR, type Change, type OptimisticOptions, type OptimisticOutcome, type VersionedRecord } from './optimistic.js';

// The items the protocol reads and writes (the attribute contract).
export { CHECKPOINT_ATTR, FENCE_ATTR, LEASE_ATTR, TIE_ATTR } from './items.js';

// Outcomes and errors: a Result for expected outcomes, one typed error per failure.
export { err, ok, type Err, type Ok, type Result } from './result.js';
export {
  AcquireTimeoutError,
  CheckpointMovedError,
  ConfigError,
  describeValue,
  EffectAlreadyExistsError,
  EpochBehindError,
  FencedError,
  InvalidInputError,
  LeaseExpiredError,
  LeaseLostError,
  OptimisticWriteUncertainError,
  SequenceExhaustedError,
  StaleGenerationError,
  StaleRecordError,
  TransactionConflictError,
  TransactionFailedError,
  VersionConflictError,
} from './errors.js';

// DynamoDB helpers: one kept-alive client, low-level sends without a second marshalling pass.
export {
  conditionFailureItem,
  createDynamo,
  fromAttributes,
  isConditionalCheckFailed,
  itemBytes,
  marshallOptionsOf,
  MAX_ITEM_BYTES,
  sendLowLevel,
  toAttributes,
  type Dynamo,
  type DynamoOptions,
  localCredentials,
  localSigningKeys,
  localRegion,
} from './dynamo.js';
export { scanAll } from './scan.js';
