/**
 * The AWS figures a capacity plan rests on, each with where it comes from, and the arithmetic
 * that turns a run's request mix into wall time, cost and the limit that binds. Pure data and
 * pure functions: the planner CLI (cli/ops/plan.ts) prints them, the stack (infra/) sizes the event
 * source from them. Nothing here is measured on DynamoDB Local: its latencies and its
 * ConsumedCapacity are not AWS's (docs/benchmarks.md).
 */

/** Service limits, as AWS documents them (read 2026-12-01 from stored copies of the pages named). */
export const AWS_LIMITS = {
  /**
   * On-demand tables are bounded by the table-level throughput quota, 40,000 read and 40,000 write
   * request units per second by default ("DynamoDB maximum throughput for on-demand tables";
   * raise: Service Quotas, "Table-level write throughput limit").
   */
  tableWriteUnitsPerSecond: 40_000,
  /**
   * A new on-demand table can sustain 4,000 writes and 12,000 reads per second at once; more
   * comes with traffic (up to twice the previous peak) or by pre-warming ("Understanding DynamoDB
   * warm throughput", "Pre-warming a table for on-demand capacity mode"). Raise: WarmThroughput.
   */
  newTableWarmWriteUnits: 4_000,
  newTableWarmReadUnits: 12_000,
  /** Each partition serves at most 1,000 write units/s and 3,000 read units/s; one item lives on one partition ("warm throughput scenarios"). */
  partitionWriteUnitsPerSecond: 1_000,
  partitionReadUnitsPerSecond: 3_000,
  /** A transactional write costs 2 write request units per 1 KB of each item (DynamoDB on-demand pricing; "Capacity management for transactions"). */
  transactionalWriteFactor: 2,
  /** Lambda concurrent executions per Region and account, by default (raise: Service Quotas, "Concurrent executions"). */
  lambdaConcurrency: 1_000,
  /**
   * What a new account may start with instead (as little as 10, raised as it is used): the stack's
   * default, so a first deploy fits any account (read yours: aws lambda get-account-settings).
   */
  newAccountLambdaConcurrency: 10,
  /** An SQS event source mapping's MaximumConcurrency: 2..1,000 (Lambda API, ScalingConfig). */
  eventSourceMinConcurrency: 2,
  eventSourceMaxConcurrency: 1_000,
  /** A standard queue's poller starts with 5 concurrent batches and adds up to 300 instances a minute ("Configuring scaling behavior for SQS event source mappings"). */
  eventSourceInitialConcurrency: 5,
  eventSourceScaleUpPerMinute: 300,
} as const;

/**
 * List prices, US East (N. Virginia), on-demand, as published after DynamoDB's on-demand price
 * reduction of 2024-11-01 and read 2026-12-01 (AWS pricing pages and the summaries quoting them;
 * check the live pages before a budget). Free tiers are not subtracted.
 */
export const PRICES_US_EAST_1 = {
  region: 'us-east-1',
  date: '2026-12-01',
  dynamoWriteRequestUnitPerMillion: 0.625,
  dynamoReadRequestUnitPerMillion: 0.125,
  s3PutPerThousand: 0.005,
  sesEmailPerThousand: 0.1,
  sqsRequestPerMillion: 0.4,
  lambdaRequestPerMillion: 0.2,
  /** Arm (the stack's ARCHITECTURE), first 7.5 billion GB-s a month. */
  lambdaArmGbSecond: 0.0000133334,
} as const;

/**
 * What an idle stack pays for, list prices of the same region and date, no free tier (cli/ops/cost.ts):
 * CloudWatch (a dashboard, each alarm's metrics, custom metrics, log ingestion), KMS keys,
 * Secrets Manager secrets, EventBridge Scheduler, X-Ray traces; and the two figures it assumes:
 * an idle scheduled run's duration, and the SQS event source's polling of an empty queue (five
 * pollers, each a 20 s long poll: three receives a minute).
 */
export const IDLE_PRICES_US_EAST_1 = {
  region: PRICES_US_EAST_1.region,
  date: PRICES_US_EAST_1.date,
  dashboardPerMonth: 3,
  alarmMetricPerMonth: 0.1,
  customMetricPerMonth: 0.3,
  logsIngestionPerGb: 0.5,
  kmsKeyPerMonth: 1,
  secretPerMonth: 0.4,
  schedulerPerMillion: 1,
  xrayTracePerMillion: 5,
  assumedIdleRunSeconds: 0.3,
  sqsPollersPerMapping: 5,
  sqsLongPollsPerMinute: 3,
} as const;

/** The assumptions of a plan, each stated and overridable (cli/ops/plan.ts prints them beside the figures). */
export interface PlanAssumptions {
  /**
   * One fenced unit's TransactWriteItems, ms, client to client in the same Region. AWS documents
   * single-digit millisecond latency for single-item operations and a transaction as two phases
   * (prepare, then commit, of every item: the reason it is billed twice); two such round trips
   * through a transaction coordinator, in parallel across the unit's items, plus the client's own
   * ~1 ms (docs/benchmarks.md, client CPU per unit): 2 x 9 + 7 = 25 ms, a conservative median.
   */
  unitLatencyMs: number;
  /** Units an invocation may commit before it hands off: the worker's timeout less its safety margin (120 s - 10 s). */
  invocationMs: number;
  /** One hand-off: release, continuation message, next invocation's screen, acquire, fence raise, checkpoint read (4 single-item requests and an SQS hop). */
  handoffMs: number;
  /** The worker's memory (the stack's 512 MB). */
  memoryGb: number;
  /** Lease duration (the stack's 30 s): renewals every half, heartbeat stamps every quarter. */
  leaseMs: number;
}

export const DEFAULT_ASSUMPTIONS: PlanAssumptions = { unitLatencyMs: 25, invocationMs: 110_000, handoffMs: 200, memoryGb: 0.5, leaseMs: 30_000 };

/** The limits a plan is held to: AWS's defaults unless the operator raised them. */
export interface PlanLimits {
  /** Table-level write quota, per table. */
  tableWriteUnits: number;
  /** Warm write throughput of each data table (a new table's 4,000 unless pre-warmed). */
  warmWriteUnits: number;
  lambdaConcurrency: number;
  /** The worker's event source MaximumConcurrency. */
  eventSourceConcurrency: number;
}

/** A limit's verdict: the shortest wall time it allows, and what raises it. */
export interface LimitVerdict {
  name: string;
  /** Wall-time floor this limit sets, seconds. */
  seconds: number;
  /** The rate this limit allows, and the rate the plan asks of it, in its own unit. */
  allows: number;
  demands: number;
  unit: string;
  raise: string;
}

/** Seconds to reach `concurrency` from the poller's 5, at 300 more a minute. */
export function rampSeconds(concurrency: number): number {
  return (Math.max(0, concurrency - AWS_LIMITS.eventSourceInitialConcurrency) / AWS_LIMITS.eventSourceScaleUpPerMinute) * 60;
}

/**
 * The event source's maximum concurrency for a run of `shards`: one invocation per shard (a shard
 * is one lease: more cannot help it), plus 2 for the messages that overlap a shard's own (a
 * continuation during its hand-off, a duplicate or a requeue that finds the lease held and
 * returns at once), at least 10 (periods can overlap: a backfill), at most Lambda's 1,000, and
 * at most `room`: what the account's concurrency leaves after one invocation of each of the
 * stack's other functions (workerRoom), so the worker never takes the whole account and throttles
 * the sweeper, the sender and the reconciler; never below the event source's minimum of 2.
 */
export function workerConcurrencyFor(shards: number, room = Number.POSITIVE_INFINITY): number {
  return Math.max(AWS_LIMITS.eventSourceMinConcurrency, Math.min(AWS_LIMITS.eventSourceMaxConcurrency, Math.max(10, shards + 2), room));
}

/** What the account's concurrency leaves the worker when each of the stack's `otherFunctions` runs one invocation at a time. */
export const workerRoom = (accountConcurrency: number, otherFunctions: number): number => accountConcurrency - otherFunctions;

/** Cost of request counts at PRICES_US_EAST_1, dollars. */
export function costOf(c: { wru: number; rru: number; s3Puts: number; emails: number; sqsRequests: number; lambdaRequests: number; lambdaGbSeconds: number }): Record<string, number> {
  const p = PRICES_US_EAST_1;
  const lines = {
    dynamodbWrites: (c.wru / 1e6) * p.dynamoWriteRequestUnitPerMillion,
    dynamodbReads: (c.rru / 1e6) * p.dynamoReadRequestUnitPerMillion,
    s3Puts: (c.s3Puts / 1e3) * p.s3PutPerThousand,
    emails: (c.emails / 1e3) * p.sesEmailPerThousand,
    sqs: (c.sqsRequests / 1e6) * p.sqsRequestPerMillion,
    lambda: (c.lambdaRequests / 1e6) * p.lambdaRequestPerMillion + c.lambdaGbSeconds * p.lambdaArmGbSecond,
  };
  return { ...lines, total: Object.values(lines).reduce((a, b) => a + b, 0) };
}

/** The verdict with the longest floor: the limit that binds. */
export function bindingLimit(verdicts: readonly LimitVerdict[]): LimitVerdict {
  return verdicts.reduce((a, b) => (b.seconds > a.seconds ? b : a));
}
