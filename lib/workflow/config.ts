/**
 * Configuration from environment variables, validated once at start-up. Every handler, the
 * CDK stack (which sets these) and the local runtime share these names.
 */
import { ConfigError, MAX_EPOCH, type LeaseMode } from '../protocol/index.js';
import { TABLE_NAME, type TableNames } from './schema.js';

export const ENV = {
  leasesTable: 'LEASES_TABLE',
  fencesTable: 'FENCES_TABLE',
  jobsTable: 'JOBS_TABLE',
  /** The workload's records: the effects its units write, fenced (upserts and once-only). */
  recordsTable: 'RECORDS_TABLE',
  outboxTable: 'OUTBOX_TABLE',
  /** The documents bucket, and optionally an S3-compatible endpoint (path-style) and a leading folder. */
  documentsBucket: 'DOCUMENTS_BUCKET',
  s3Endpoint: 'S3_ENDPOINT',
  documentSet: 'DOCUMENT_SET',
  /** Emails: the From address (an SES identity), the SES configuration set that publishes SEND/DELIVERY events. */
  senderAddress: 'SENDER_ADDRESS',
  sesConfigurationSet: 'SES_CONFIGURATION_SET',
  /**
   * The targets that reach real recipients and providers (`email`, http target names, comma
   * separated, or `none`). Unset: none. Every other target is in the sandbox (effects/sandbox.ts).
   */
  liveTargets: 'LIVE_TARGETS',
  /** The payment provider's charge-notification endpoint (http effects of target "payments"); optional. */
  paymentsUrl: 'PAYMENTS_URL',
  /** How long the payment provider keeps an Idempotency-Key (default Stripe's 24 h), and the sender's margin before it (default 1 h). */
  paymentsKeyRetentionMs: 'PAYMENTS_KEY_RETENTION_MS',
  /** The payments target's API key secret, when it is live (httpTargetEnv's `secretArn` for `payments`). */
  paymentsSecretArn: 'PAYMENTS_SECRET_ARN',
  keyRetentionMarginMs: 'KEY_RETENTION_MARGIN_MS',
  /** Reconciler: when a PENDING item or a SENDING claim counts as stuck; how long SES events may lag. */
  reconcilePendingAfterMs: 'RECONCILE_PENDING_AFTER_MS',
  reconcileClaimTimeoutMs: 'RECONCILE_CLAIM_TIMEOUT_MS',
  /** The sender function's timeout: a claim younger than it may belong to a sender still at work. */
  senderTimeoutMs: 'SENDER_TIMEOUT_MS',
  providerRecordLagMs: 'PROVIDER_RECORD_LAG_MS',
  /**
   * Pacing: the sends per second one sender or reconciler invocation may make (the account's
   * MaxSendRate shared among the invocations that can run at once); a throttled answer still
   * defers its item. Optional: unpaced.
   */
  sendRatePerSecond: 'SEND_RATE_PER_SECOND',
  /** Backoff: a throttled item's first wait (doubling, jittered, capped), and how long an item held by the account's state waits. */
  throttleBackoffMs: 'THROTTLE_BACKOFF_MS',
  heldRetryMs: 'HELD_RETRY_MS',
  /** Collector: an unreferenced document younger than this is kept (the longest lease plus a margin). */
  collectAfterMs: 'COLLECT_AFTER_MS',
  queueUrl: 'QUEUE_URL',
  epoch: 'FENCE_EPOCH',
  leaseMode: 'LEASE_MODE',
  leaseDurationMs: 'LEASE_DURATION_MS',
  maxClockSkewMs: 'MAX_CLOCK_SKEW_MS',
  unitSize: 'UNIT_SIZE',
  staleAfterMs: 'SWEEP_STALE_AFTER_MS',
  sweepIntervalMs: 'SWEEP_INTERVAL_MS',
  runItems: 'RUN_ITEMS',
  /** Shard jobs per run (lib/workflow/runs.ts): the starter's setting. */
  runShards: 'RUN_SHARDS',
  /** Optional: DynamoDB endpoint (DynamoDB Local). Absent in AWS. */
  dynamoEndpoint: 'DYNAMODB_ENDPOINT',
} as const;

type Env = Readonly<Record<string, string | undefined>>;

export function required(env: Env, name: string): string {
  const v = env[name];
  if (v === undefined || v.trim() === '') throw new ConfigError(name, `environment variable ${name} is required and missing`);
  return v;
}

export function integer(env: Env, name: string, fallback: number | undefined, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') {
    if (fallback === undefined) throw new ConfigError(name, `environment variable ${name} is required and missing`);
    return fallback;
  }
  const v = Number(raw);
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw new ConfigError(name, `${name} must be an integer in [${min}, ${max}], got "${raw}"`);
  }
  return v;
}

/** An optional positive decimal in [min, max] (a rate); undefined when unset. */
export function decimal(env: Env, name: string, min: number, max: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min || v > max) throw new ConfigError(name, `${name} must be a number in [${min}, ${max}], got "${raw}"`);
  return v;
}

/**
 * An absolute http(s) URL with a host and no whitespace anywhere (a queue URL, an endpoint).
 * Checked before any client exists: the SDK accepts any string and fails only at the first
 * request, with a bare TypeError. Shared by the environment (httpUrl) and the CLI flags (urlFlag).
 */
export function isHttpUrl(s: string): boolean {
  // The WHATWG parser drops tabs and newlines and percent-encodes spaces in a path: test the raw string.
  if (/\s/.test(s)) return false;
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/** An http(s) URL (isHttpUrl); `undefined` when optional and absent or blank. */
export function httpUrl(env: Env, name: string, opts: { optional: true }): string | undefined;
export function httpUrl(env: Env, name: string, opts?: { optional?: false }): string;
export function httpUrl(env: Env, name: string, opts: { optional?: boolean } = {}): string | undefined {
  const raw = env[name];
  if (opts.optional && (raw === undefined || raw.trim() === '')) return undefined;
  const v = required(env, name);
  if (!isHttpUrl(v)) throw new ConfigError(name, `${name} must be an http(s) URL, got "${v}"`);
  return v;
}

function tableName(env: Env, name: string): string {
  const v = required(env, name);
  // DynamoDB's naming rule, checked here rather than by a ValidationException at the first request.
  if (!TABLE_NAME.test(v)) throw new ConfigError(name, `${name} must be a table name (3-255 chars of [a-zA-Z0-9_.-]), got "${v}"`);
  return v;
}

export function tablesFromEnv(env: Env): TableNames {
  return {
    leases: tableName(env, ENV.leasesTable),
    fences: tableName(env, ENV.fencesTable),
    jobs: tableName(env, ENV.jobsTable),
    records: tableName(env, ENV.recordsTable),
    outbox: tableName(env, ENV.outboxTable),
  };
}

/**
 * What the stack deploys by default (infra/constructs/fenced-workflow.ts): the lease's duration and
 * the reconciler's schedule. Local and simulated runs scale their reconciler to their own lease by
 * this ratio, so it passes as often per lease as the deployed one does.
 */
export const DEPLOYED_DEFAULTS = { leaseDurationMs: 30_000, reconcilerIntervalMs: 60_000 } as const;

export interface LeaseSettings {
  epoch: number;
  durationMs: number;
  mode: LeaseMode;
}

export function leaseSettingsFromEnv(env: Env): LeaseSettings {
  const epoch = integer(env, ENV.epoch, undefined, 0, MAX_EPOCH);
  const durationMs = integer(env, ENV.leaseDurationMs, DEPLOYED_DEFAULTS.leaseDurationMs, 100, 3_600_000);
  const modeName = env[ENV.leaseMode] ?? 'wall-clock';
  let mode: LeaseMode;
  if (modeName === 'wall-clock') {
    mode = { kind: 'wall-clock', maxClockSkewMs: integer(env, ENV.maxClockSkewMs, 1_000, 0, 600_000) };
  } else if (modeName === 'version-watch') {
    mode = { kind: 'version-watch' };
  } else {
    throw new ConfigError(ENV.leaseMode, `${ENV.leaseMode} must be "wall-clock" or "version-watch", got "${modeName}"`);
  }
  return { epoch, durationMs, mode };
}

/** The sweeper's schedule period, as the sweeper accepts it: 1 s to 1 day. The stack's sweepIntervalMinutes is checked against it. */
export const SWEEP_INTERVAL_MS = { min: 1_000, max: 86_400_000 } as const;

/** How long a job may stay unfinished before the stack's UnfinishedJobTooOld alarm fires, unless the stack sets `unfinishedJobAlarmMinutes`. */
export const DEFAULT_UNFINISHED_JOB_ALARM_MINUTES = 60;

export interface SweepSettings {
  /** wall-clock: a heartbeat older than this is stale. */
  staleAfterMs: number;
  /** version-watch: the schedule's period. */
  sweepIntervalMs: number;
}

/** The sweeper's own settings; the stale threshold defaults to two lease durations. */
export function sweepSettingsFromEnv(env: Env, lease: LeaseSettings): SweepSettings {
  return {
    staleAfterMs: integer(env, ENV.staleAfterMs, lease.durationMs * 2, 1, 86_400_000),
    sweepIntervalMs: integer(env, ENV.sweepIntervalMs, 60_000, SWEEP_INTERVAL_MS.min, SWEEP_INTERVAL_MS.max),
  };
}
