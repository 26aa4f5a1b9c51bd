/**
 * The construct's settings, checked at synth with the code the handlers run at start-up (the
 * environment parsers of lib/workflow/config.ts) plus the rules only the stack knows: the
 * schedule's whole minutes, the unit size a transaction can hold, a staleness threshold above
 * the lease and the skew bound, a claim timeout above the sender's life.
 */
import type { Duration } from 'aws-cdk-lib';
import { ConfigError, MAX_TRANSACTION_ACTIONS } from '../../lib/protocol/index.js';
import { AWS_LIMITS, DEFAULT_SEND_TIMEOUT_MS, ENV, integer, leaseSettingsFromEnv, MAX_SHARDS, SETTLE_RESERVE_MS, sweepSettingsFromEnv, TABLE_ROLES, TABLES, unitSizeCap, type TableRole, type Workload } from '../../lib/workflow/index.js';
import type { WarmUnits } from './defaults.js';

export interface DurationSettings {
  leaseDuration: Duration;
  maxClockSkew: Duration;
  staleAfter: Duration;
  sweepInterval: Duration;
  workerTimeout: Duration;
}

/** What the settings are checked against: the workload's own bounds (its unit-size cap, its largest run). */
export type WorkloadBounds = Pick<Workload, 'name' | 'effectsPerItem'> & { readonly start: Pick<Workload['start'], 'maxItems'> };

export function validateSettings(env: Record<string, string>, d: DurationSettings, workload: WorkloadBounds): void {
  const { leaseDuration: lease, maxClockSkew: skew, staleAfter, sweepInterval } = d;
  validateWatch(env, lease, d.workerTimeout);
  sweepSettingsFromEnv(env, leaseSettingsFromEnv(env));
  // EventBridge Scheduler's rate() counts whole minutes; CDK would fail later with a bare error.
  if (sweepInterval.toSeconds() % 60 !== 0) throw new ConfigError('sweepInterval', `must be a whole number of minutes, got ${sweepInterval.toSeconds()} s`);
  validateUnitSize(env, workload);
  integer(env, ENV.runItems, undefined, 0, workload.start.maxItems);
  if (staleAfter.toMilliseconds() <= lease.toMilliseconds() + skew.toMilliseconds()) {
    throw new ConfigError(
      'staleAfter',
      `staleAfter (${staleAfter.toMilliseconds()} ms) must exceed the lease duration plus the clock-skew bound ` +
        `(${lease.toMilliseconds() + skew.toMilliseconds()} ms): the sweeper would requeue jobs whose holder is still live`,
    );
  }
}

/**
 * The unit size against the workload's cap, the very number every function reads at cold start
 * (functions/commons.ts: unitSizeCap of the same descriptor). Were the two read from different
 * places, a stack could synthesize a unit size its functions then refuse, and every worker of the
 * deploy would fail at cold start: the check is here so that synth refuses what they would.
 */
function validateUnitSize(env: Record<string, string>, workload: WorkloadBounds): void {
  const cap = unitSizeCap(workload);
  const unitSize = Number(env[ENV.unitSize]);
  if (!Number.isSafeInteger(unitSize) || unitSize < 1 || unitSize > cap) {
    throw new ConfigError(
      'unitSize',
      `must be an integer in [1, ${cap}] (workload ${workload.name}: ${workload.effectsPerItem} effects per item + fence + checkpoint <= ${MAX_TRANSACTION_ACTIONS} transaction actions), got ${env[ENV.unitSize]}`,
    );
  }
}

/**
 * Version-watch: a worker that receives the sweeper's requeue watches the lease for a full
 * duration (plus drift) inside its own invocation before it claims, and keeps the handler's
 * 10 s safety margin. A timeout shorter than that could never take over a dead holder's job.
 */
function validateWatch(env: Record<string, string>, lease: Duration, workerTimeout: Duration): void {
  if (env[ENV.leaseMode] !== 'version-watch') return;
  const needMs = lease.toMilliseconds() * 1.01 + 10_000 + 5_000;
  if (workerTimeout.toMilliseconds() < needMs) {
    throw new ConfigError('worker.timeout', `in version-watch mode the worker's timeout (${workerTimeout.toMilliseconds()} ms) must cover a full lease watch plus margins (${Math.ceil(needMs)} ms)`);
  }
}

/**
 * The scale settings the capacity plan recommends (docs/scale.md), checked against what AWS and
 * the workflow accept: a shard count the starter accepts, an event source that can run every shard
 * of a run at once within Lambda's 2..1,000, warm throughput no lower than a new table's (less
 * would not be a warm-up) on tables the stack has.
 */
export function validateScale(s: { shards: number; items: number; warmThroughput: Partial<Record<string, WarmUnits>> }): void {
  if (!Number.isSafeInteger(s.shards) || s.shards < 1 || s.shards > MAX_SHARDS) throw new ConfigError('shards', `must be an integer in [1, ${MAX_SHARDS}], got ${s.shards}`);
  // The starter refuses such a run (assertShardCount): an empty shard would do nothing.
  if (s.items > 0 && s.shards > s.items) throw new ConfigError('shards', `${s.shards} shards for ${s.items} items: a shard would cover none (at most one shard per item)`);
  const floor = { read: AWS_LIMITS.newTableWarmReadUnits, write: AWS_LIMITS.newTableWarmWriteUnits };
  const check = (at: string, w: { read?: number; write?: number } | undefined) => {
    for (const kind of ['read', 'write'] as const) {
      const v = w?.[kind];
      if (v !== undefined && (!Number.isSafeInteger(v) || v < floor[kind])) throw new ConfigError(`${at}.${kind}`, `must be an integer >= ${floor[kind]} (what a new on-demand table or index serves already), got ${v}`);
    }
  };
  for (const [role, w] of Object.entries(s.warmThroughput)) {
    if (!(TABLE_ROLES as string[]).includes(role)) throw new ConfigError('warmThroughput', `unknown table role "${role}" (one of ${TABLE_ROLES.join(', ')})`);
    check(`warmThroughput.${role}`, w);
    const names = TABLES[role as TableRole].globalSecondaryIndexes.map((g) => g.indexName);
    for (const [name, iw] of Object.entries(w?.indexes ?? {})) {
      if (!names.includes(name)) throw new ConfigError(`warmThroughput.${role}.indexes`, `the ${role} table has no index "${name.slice(0, 100)}" (its indexes: ${names.join(', ') || 'none'})`);
      check(`warmThroughput.${role}.indexes.${name}`, iw);
    }
  }
}

/** Where to read the account's concurrency, for the refusals that name it. */
const READ_ACCOUNT = 'aws lambda get-account-settings --query AccountLimit.ConcurrentExecutions';

/**
 * The worker's concurrency within the event source's bounds, at least the shards (a run's shards
 * all run at once), and within the account's: with one execution for each other function, the
 * worker must leave room for them, or the sweeper, the sender and the reconciler throttle, and a
 * throttled SQS receive counts toward the work queue's maxReceiveCount.
 */
export function validateConcurrency(s: { shards: number; workerMaxConcurrency: number; accountConcurrency: number; otherFunctions: number }): void {
  const { eventSourceMinConcurrency: min, eventSourceMaxConcurrency: max } = AWS_LIMITS;
  if (!Number.isSafeInteger(s.workerMaxConcurrency) || s.workerMaxConcurrency < min || s.workerMaxConcurrency > max) {
    throw new ConfigError('workerMaxConcurrency', `must be an integer in [${min}, ${max}] (Lambda's SQS event source), got ${s.workerMaxConcurrency}`);
  }
  if (s.workerMaxConcurrency < s.shards) {
    throw new ConfigError('workerMaxConcurrency', `${s.workerMaxConcurrency} is below shards (${s.shards}): a run's shards could not all run at once; raise it, and accountConcurrency if the account has more (${READ_ACCOUNT})`);
  }
  const needed = s.workerMaxConcurrency + s.otherFunctions;
  if (needed > s.accountConcurrency) {
    throw new ConfigError('accountConcurrency', `${s.accountConcurrency} concurrent executions cannot hold the worker's ${s.workerMaxConcurrency} and one for each of the ${s.otherFunctions} other functions (${needed}): give the account's own (${READ_ACCOUNT}), or lower workerMaxConcurrency or shards`);
  }
}

/**
 * The sends per second one sender or reconciler invocation may make (ENV.sendRatePerSecond): the
 * bounds functions/effects-commons.ts reads it with (`decimal`), so a rate synth accepts is one
 * the functions start with. Held equal by test/infra/compute.test.ts.
 */
export const SEND_RATE_PER_SECOND = { min: 0.001, max: 10_000 } as const;

/**
 * The outbox's settings: the reconciler's claim timeout above the sender's timeout (a sender
 * lives that long, so a shorter claim timeout would let the reconciler take a live sender's claim
 * and both send; both functions refuse it at cold start, this refuses it at synth), within the
 * bounds the functions read it with, and the send rate within SEND_RATE_PER_SECOND and fast
 * enough for the sender's stream batch to fit in its timeout. The
 * reconciler's own timeout is below the claim timeout too: each of its claims is stamped when
 * written and checked before its send, and a run that cannot outlive a claim is one more bound.
 */
export function validateEffects(s: { senderTimeout: Duration; reconcilerTimeout: Duration; reconcileClaimTimeout: Duration; sendRatePerSecond?: number; senderBatchSize: number }): void {
  const claimMs = s.reconcileClaimTimeout.toMilliseconds();
  const senderMs = s.senderTimeout.toMilliseconds();
  const reconcilerMs = s.reconcilerTimeout.toMilliseconds();
  if (!Number.isSafeInteger(claimMs) || claimMs < 1_000 || claimMs > 86_400_000) throw new ConfigError('reconcileClaimTimeout', `must be 1 s to 1 day, got ${claimMs} ms`);
  if (claimMs <= senderMs) throw new ConfigError('reconcileClaimTimeout', `(${claimMs} ms) must be above the sender's timeout (${senderMs} ms): a live sender's claim would be taken over`);
  if (claimMs <= reconcilerMs) throw new ConfigError('reconcileClaimTimeout', `(${claimMs} ms) must be above the reconciler's timeout (${reconcilerMs} ms): a run could outlive its own claims`);
  const rate = s.sendRatePerSecond;
  if (rate === undefined) return;
  const { min, max } = SEND_RATE_PER_SECOND;
  if (!Number.isFinite(rate) || rate < min || rate > max) {
    throw new ConfigError('sendRatePerSecond', `must be a number in [${min}, ${max}] (sends per second per sender or reconciler invocation), got ${rate}`);
  }
  // A stream batch spaced at this rate must fit in one sender invocation, with one send's timeout
  // and its settle after the last wait: else every full batch runs out of time and is retried.
  const paced = ((s.senderBatchSize - 1) * 1000) / rate;
  const room = senderMs - DEFAULT_SEND_TIMEOUT_MS - SETTLE_RESERVE_MS;
  if (paced > room) {
    const least = Math.ceil(((s.senderBatchSize - 1) * 1000 * 100) / room) / 100;
    throw new ConfigError('sendRatePerSecond', `${rate}/s spaces the sender's stream batch of ${s.senderBatchSize} over ${Math.round(paced / 1000)} s, more than its ${senderMs / 1000} s timeout leaves (${room / 1000} s after one send and its settle): give at least ${least}`);
  }
}
