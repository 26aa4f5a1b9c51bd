/**
 * The fenced workflow on AWS (DESIGN.md, Architecture): the tables of lib/workflow/schema.ts, the
 * work queue with its dead-letter queue, the worker, the sweeper and the starter with their
 * schedules, least-privilege roles, and the alarms and dashboard an on-call engineer needs.
 *
 * Everything a workload decides comes from its descriptor (lib/workflow/workload.ts), the one the
 * functions load by name (WORKLOAD): the unit-size cap, the run's largest size, the starter's
 * schedule, which external effects exist, the documents' folder, the Records table's construct
 * id. A fork registers its workload (lib/workloads/index.ts) and passes it here; nothing else in
 * infra/ changes. infra/stack.ts is one use of it.
 */
import { Duration, Stack, TimeZone, Validations } from 'aws-cdk-lib';
import { Table as TableBase, type ITable, type Table } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { EventSourceMapping, RecursiveLoop } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { ContextAttribute, Schedule, ScheduleExpression, ScheduleTargetInput } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { AWS_LIMITS, DEFAULT_UNFINISHED_JOB_ALARM_MINUTES, DEPLOYED_DEFAULTS, ENV, TABLE_ROLES, TABLES, workerConcurrencyFor, workerRoom, type TableRole, type Workload } from '../../lib/workflow/index.js';
import { ConfigError } from '../../lib/protocol/index.js';
import { WORKLOADS } from '../../lib/workloads/index.js';
import { deadLetterQueue, durableTable, secureQueue, type WarmUnits } from './defaults.js';
import { fencedFunction, type FencedFunction } from './function.js';
import { grantDataPlane } from './permissions.js';
import { validateConcurrency, validateScale, validateSettings } from './settings.js';
import { denyCounterDestruction, denyCounterUpdatesExcept, refuseReplication, watchCounterGuard } from './guards.js';
import { WorkflowMonitoring } from './monitoring.js';
import { ExternalEffects, type ExternalEffectsProps } from './external-effects.js';

/**
 * Construct ids of the tables, by schema role: tools read the template by these names. The
 * Records table's is the workload's own when it names one (`stackIds.records`): a stack deployed
 * before the role had its generic name keeps its table's logical id, since a new id would make
 * CloudFormation create a new, empty table (tableIdsOf).
 */
export const TABLE_IDS: Readonly<Record<TableRole, string>> = { leases: 'Leases', fences: 'Fences', jobs: 'Jobs', records: 'Records', outbox: 'Outbox' };

/** The construct ids of a workload's tables: TABLE_IDS with its Records id, if it keeps one. */
export function tableIdsOf(workload: Pick<Workload, 'stackIds'>): Readonly<Record<TableRole, string>> {
  return { ...TABLE_IDS, records: workload.stackIds?.records ?? TABLE_IDS.records };
}

/**
 * The environment variable every function finds its workload by (lib/workloads workloadFromEnv):
 * the bundles hold every registered descriptor and pick theirs by this name.
 */
export const WORKLOAD_VARIABLE = 'WORKLOAD';

/** The run size the starter uses when its payload names none, unless the workload's largest run is smaller. */
const DEFAULT_RUN_ITEMS = 1000;

/**
 * The workload must be the one registered under its name: the functions load theirs from the
 * registry by WORKLOAD, so a descriptor built elsewhere (a copy with another cap or prefix) would
 * be checked and granted here while the functions ran the registered one.
 */
function assertRegistered(workload: Workload<any>): void {
  const registered = WORKLOADS.find((w) => w.name === workload.name);
  const names = WORKLOADS.map((w) => w.name).join(', ');
  if (registered === undefined) throw new ConfigError('workload', `"${workload.name}" is not registered (lib/workloads/index.ts: ${names}): the functions find their workload there by name`);
  if (registered !== workload) {
    throw new ConfigError('workload', `"${workload.name}" is not the descriptor registered under that name (lib/workloads/index.ts): the functions would run the registered one, not the one this stack was checked and granted for`);
  }
}

export interface FunctionSettings {
  /** Handler module (exports `handler`), absolute or relative to the project root. */
  readonly entry: string;
  readonly memorySize?: number;
  readonly timeout?: Duration;
}

export interface FencedWorkflowProps {
  /**
   * The workload, as registered (lib/workloads/index.ts; refused otherwise): every function runs
   * it (WORKLOAD), and the stack takes from it the unit-size cap, the run's bounds, the starter's
   * schedule, the external effects and the Records table's construct id.
   */
  readonly workload: Workload<any>;
  /**
   * The epoch of every generation issued (CDK context `fenceEpoch`). Raise it after any restore or
   * disaster recovery, then `seal` (docs/runbook-dr.md). Never lower it.
   */
  readonly fenceEpoch: number;
  /** The SQS batch handler (partial batch responses); it runs the workload's processor. @default functions/worker.ts */
  readonly worker?: FunctionSettings;
  /** @default functions/sweeper.ts */
  readonly sweeper?: FunctionSettings;
  /** @default functions/starter.ts */
  readonly starter?: FunctionSettings;
  /** @default 'wall-clock' */
  readonly leaseMode?: 'wall-clock' | 'version-watch';
  /** @default 30 seconds */
  readonly leaseDuration?: Duration;
  /** The stated bound on clock offset between hosts (wall-clock mode). @default 1 second */
  readonly maxClockSkew?: Duration;
  /**
   * Items per fenced unit, at most unitSizeCap(workload): its effects per item, the fence and the
   * checkpoint in one transaction. Checked here against the same cap every function reads at
   * cold start, so synth refuses what the functions would.
   * @default workload.defaultUnitSize
   */
  readonly unitSize?: number;
  /** Items in a run the starter creates when its payload names none (RUN_ITEMS, the starter's setting alone), at most workload.start.maxItems. @default 1000, or maxItems when smaller */
  readonly runItems?: number;
  /** How often the sweeper runs. @default 1 minute */
  readonly sweepInterval?: Duration;
  /** A claim whose heartbeat is older than this is requeued (if its lease is not live). @default 2 x lease + clock skew */
  readonly staleAfter?: Duration;
  /** When the starter starts a run. @default the workload's `start.schedule` (UTC) */
  readonly starterSchedule?: ScheduleExpression;
  /** Whether the starter's schedule is enabled (default false: a fresh deploy starts no run until the operator says so). */
  readonly scheduleRuns?: boolean;
  /**
   * SQS messages a worker invocation takes. Each message is a job's work until the invocation's
   * time runs out, run side by side with the batch's others: with more than one, several shard
   * jobs would share one invocation's memory and CPU instead of one each, as the plan counts them.
   * @default 1
   */
  readonly workerBatchSize?: number;
  /**
   * The account's Lambda concurrent executions in the stack's region (aws lambda
   * get-account-settings --query AccountLimit.ConcurrentExecutions). The worker's maximum
   * concurrency leaves one execution to each of the stack's other functions, and a setting that
   * does not is refused. @default 10: what a new account may start with, so the defaults fit any account
   */
  readonly accountConcurrency?: number;
  /**
   * Concurrent worker invocations the event source allows (2..1000), at least `shards`, and at
   * most what `accountConcurrency` leaves after one invocation of every other function.
   * @default workerConcurrencyFor(shards, room): one per shard plus 2, at least 10, within the room
   */
  readonly workerMaxConcurrency?: number;
  /** Shard jobs per run (lib/workflow/runs.ts), at most one per item: the starter's setting; sizes the event source. @default 1 */
  readonly shards?: number;
  /**
   * Warm throughput per table (read and write units per second it serves at once), as the
   * capacity plan recommends (`npm run cli -- plan`, docs/scale.md). A new on-demand table serves
   * 4,000 writes and 12,000 reads per second at once; a sharded run writes faster.
   * @default none: the tables start at AWS's defaults
   */
  readonly warmThroughput?: Partial<Record<TableRole, WarmUnits>>;
  /** Deliveries of one message before it goes to the dead-letter queue. @default 5 */
  readonly maxReceiveCount?: number;
  /** Alarm when the oldest unfinished job is older than this. @default 1 hour */
  readonly unfinishedJobAlarmAfter?: Duration;
  /** Every alarm notifies this topic (alarm and OK). @default a topic of the stack's own (KMS-encrypted, TLS-only), output as AlarmTopicArn */
  readonly alarmTopic?: ITopic;
  /**
   * CloudWatch namespace of the handlers' metrics (POWERTOOLS_METRICS_NAMESPACE). Two deployments
   * in one account and region need different namespaces, or their metrics and alarms mix; the
   * default follows the stack name, which CloudFormation already keeps unique per account and region.
   * @default the stack name
   */
  readonly metricsNamespace?: string;
  /**
   * The Powertools `service` of each function (log key and the `service` metric dimension). The
   * handlers name themselves worker, sweeper and starter (functions/*.ts); keep these equal.
   * @default { worker: 'worker', sweeper: 'sweeper', starter: 'starter' }
   */
  readonly serviceNames?: Readonly<Record<'worker' | 'sweeper' | 'starter', string>>;
  /**
   * Roles besides the worker's that may UpdateItem Leases and Fences, as IAM ARN patterns
   * (ArnLike: `*` allowed): the operator role that runs raise-epoch and seal (docs/runbook-dr.md).
   * Every other principal is denied UpdateItem on them by their resource policy.
   * @default none
   */
  readonly counterWriters?: readonly string[];
  /** Extra environment for every function (a fork's processor settings). */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Regions to replicate a table to (DynamoDB global tables). Refused at synth for Leases and
   * Fences (see guards.ts); a fork may replicate Records for reading elsewhere.
   */
  readonly replicationRegions?: Partial<Record<TableRole, string[]>>;
  /** Keep the tables' retired indexes for one more deploy (the first of the two an index replacement takes). */
  readonly keepRetiredIndexes?: boolean;
  /**
   * Disaster recovery: tables restored from a backup or a point in time (a restore always
   * creates a new table) that the functions use instead of the stack's own Jobs or Records
   * table. The stack's own tables stay in the template, retained and untouched. Leases and
   * Fences cannot be adopted: their live tables hold the highest counters ever issued and
   * accepted, and a restored copy is older (docs/runbook-dr.md).
   */
  readonly adoptTables?: Partial<Record<TableRole, AdoptedTable>>;
  /**
   * The external effects' settings (ExternalEffectsProps): the From address of the emails, for a
   * workload that sends email (an SES identity is created for it; refused for one that sends
   * none), the endpoint of each http target it declares, the reconciler's claim timeout and the
   * sends per second of each sender or reconciler invocation. Which effects exist, and the folder
   * the documents go under, are the workload's.
   */
  readonly externalEffects: Pick<ExternalEffectsProps, 'senderAddress' | 'senderIdentity' | 'liveTargets' | 'httpTargets' | 'httpCredentials' | 'sandboxProvider' | 'reconcileClaimTimeout' | 'sendRatePerSecond'>;
}

/** The workload's own schedule (its `start.schedule` cron fields), in UTC. */
function workloadSchedule(workload: Workload<any>): ScheduleExpression {
  const { minute, hour, day, month, weekDay } = workload.start.schedule;
  return ScheduleExpression.cron({ minute, hour, ...(day !== undefined ? { day } : {}), ...(month !== undefined ? { month } : {}), ...(weekDay !== undefined ? { weekDay } : {}), timeZone: TimeZone.ETC_UTC });
}

/** EventBridge Scheduler takes a description of at most 512 characters. */
const starterScheduleDescription = (workload: Workload<any>): string => `Starts the ${workload.name} run: ${workload.start.schedule.description}`.slice(0, 512);

export interface AdoptedTable {
  readonly tableName: string;
  /** Needed for the Records stream output; a restored table has no stream until you enable one. */
  readonly tableStreamArn?: string;
}

/** Only the data tables may be replaced by a restored copy. */
export const ADOPTABLE: readonly TableRole[] = ['jobs', 'records'];

export class FencedWorkflow extends Construct {
  /** The tables this construct owns (retained, protected), by schema role. */
  readonly tables: Readonly<Record<TableRole, Table>>;
  /** The tables the functions read and write: the owned ones, or an adopted restored copy (`adoptTables`). */
  readonly activeTables: Readonly<Record<TableRole, ITable>>;
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  /** Scheduler delivery failures, the scheduled functions' failed async invocations, undeliverable counter-guard notifications. */
  readonly scheduleDeadLetterQueue: Queue;
  readonly worker: FencedFunction;
  readonly sweeper: FencedFunction;
  readonly starter: FencedFunction;
  /**
   * The worker's SQS event source mapping. Pause the worker by disabling it: a throttled function
   * (reserved concurrency 0) still has its messages received, and each receive counts toward the
   * queue's maxReceiveCount, so good work would reach the dead-letter queue.
   */
  readonly workerEventSourceMappingId: string;
  readonly sweeperSchedule: Schedule;
  readonly starterSchedule: Schedule;
  readonly monitoring: WorkflowMonitoring;
  /** The documents bucket, SES, and the sender, reconciler, recorder and collector functions: those the workload's effects need. */
  readonly effects: ExternalEffects;
  readonly reconcilerSchedule: Schedule;
  /** Only for a workload that writes documents (the collector exists). */
  readonly collectorSchedule?: Schedule;
  /** The workload every function runs. */
  readonly workload: Workload<any>;
  /** The tables' construct ids (tableIdsOf the workload). */
  readonly tableIds: Readonly<Record<TableRole, string>>;
  /** The environment every function gets (names from lib/workflow/config.ts ENV). */
  readonly environment: Readonly<Record<string, string>>;

  constructor(scope: Construct, id: string, props: FencedWorkflowProps) {
    super(scope, id);
    assertRegistered(props.workload);
    const workload = props.workload;
    this.workload = workload;
    const ids = tableIdsOf(workload);
    this.tableIds = ids;
    const leaseDuration = props.leaseDuration ?? Duration.millis(DEPLOYED_DEFAULTS.leaseDurationMs);
    const maxClockSkew = props.maxClockSkew ?? Duration.seconds(1);
    const sweepInterval = props.sweepInterval ?? Duration.minutes(1);
    const staleAfter = props.staleAfter ?? Duration.millis(2 * leaseDuration.toMilliseconds() + maxClockSkew.toMilliseconds());
    const services = props.serviceNames ?? { worker: 'worker', sweeper: 'sweeper', starter: 'starter' };
    const namespace = props.metricsNamespace ?? Stack.of(this).stackName;

    // ---- State --------------------------------------------------------------------------------
    const tables = {} as Record<TableRole, Table>;
    for (const role of TABLE_ROLES) {
      const schema = TABLES[role];
      const table = durableTable(this, ids[role], schema, props.replicationRegions?.[role], props.warmThroughput?.[role], props.keepRetiredIndexes === true);
      if (schema.permanent) {
        table.addToResourcePolicy(denyCounterDestruction());
        refuseReplication(table, ids[role]);
      }
      // The UpdateItem guard names the worker's role: added once the role exists (Compute).
      tables[role] = table;
    }
    this.tables = tables;
    const active = { ...tables } as Record<TableRole, ITable>;
    for (const [role, adopted] of Object.entries(props.adoptTables ?? {}) as [TableRole, AdoptedTable][]) {
      if (!ADOPTABLE.includes(role)) {
        throw new ConfigError(
          `adoptTables.${role}`,
          `the ${ids[role]} table cannot be replaced by a restored copy. Its live table holds the ` +
            `highest generations ever issued or accepted; a restore is older and would let obsolete tokens pass. Keep it, ` +
            `raise the epoch and seal (docs/runbook-dr.md).`,
        );
      }
      active[role] = TableBase.fromTableAttributes(this, `${ids[role]}Adopted`, {
        tableName: adopted.tableName,
        ...(adopted.tableStreamArn ? { tableStreamArn: adopted.tableStreamArn } : {}),
      });
    }
    this.activeTables = active;

    // ---- Messaging ----------------------------------------------------------------------------
    // Worker: 2 minutes. A job runs unit by unit while the lease's local deadline and the
    // invocation's remaining time allow, then hands off with a continuation message; a longer
    // timeout only delays redelivery after a crash. 512 MB: the work is DynamoDB round trips,
    // but Lambda's CPU share scales with memory and cold-start module init is CPU-bound.
    const workerTimeout = props.worker?.timeout ?? Duration.minutes(2);
    this.deadLetterQueue = deadLetterQueue(this, 'DeadLetterQueue');
    this.queue = secureQueue(this, 'WorkQueue', {
      // AWS: at least 6x the function timeout, so a message is not redelivered while a batch that
      // was throttled and retried by the event source is still running.
      visibilityTimeout: Duration.seconds(6 * workerTimeout.toSeconds()),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: props.maxReceiveCount ?? 5 },
    });
    this.scheduleDeadLetterQueue = deadLetterQueue(this, 'ScheduleDeadLetterQueue');

    // ---- Configuration (validated here with the same code the handlers run) -------------------
    const environment: Record<string, string> = {
      [ENV.leasesTable]: active.leases.tableName,
      [ENV.fencesTable]: active.fences.tableName,
      [ENV.jobsTable]: active.jobs.tableName,
      [ENV.recordsTable]: active.records.tableName,
      [ENV.outboxTable]: active.outbox.tableName,
      [ENV.queueUrl]: this.queue.queueUrl,
      [ENV.epoch]: String(props.fenceEpoch),
      [ENV.leaseMode]: props.leaseMode ?? 'wall-clock',
      [ENV.leaseDurationMs]: String(leaseDuration.toMilliseconds()),
      [ENV.maxClockSkewMs]: String(maxClockSkew.toMilliseconds()),
      [ENV.unitSize]: String(props.unitSize ?? workload.defaultUnitSize),
      [ENV.staleAfterMs]: String(staleAfter.toMilliseconds()),
      [ENV.sweepIntervalMs]: String(sweepInterval.toMilliseconds()),
      POWERTOOLS_METRICS_NAMESPACE: namespace,
      ...props.environment,
      // After the fork's extra environment: the functions must run the workload this stack was checked for.
      [WORKLOAD_VARIABLE]: workload.name,
    };
    const runItems = props.runItems ?? Math.min(DEFAULT_RUN_ITEMS, workload.start.maxItems);
    const starterEnvironment = { [ENV.runItems]: String(runItems), [ENV.runShards]: String(props.shards ?? 1) };
    validateScale({ shards: props.shards ?? 1, items: runItems, warmThroughput: props.warmThroughput ?? {} });
    validateSettings({ ...environment, ...starterEnvironment }, { leaseDuration, maxClockSkew, staleAfter, sweepInterval, workerTimeout }, workload);
    this.environment = environment;

    // ---- External effects: the documents bucket, SES, the outbox's functions -----------------
    this.effects = new ExternalEffects(this, 'Effects', {
      workload,
      tables: { records: active.records, fences: active.fences, jobs: active.jobs, outbox: active.outbox },
      ...(props.externalEffects.senderAddress !== undefined ? { senderAddress: props.externalEffects.senderAddress } : {}),
      ...(props.externalEffects.senderIdentity ? { senderIdentity: props.externalEffects.senderIdentity } : {}),
      ...(props.externalEffects.liveTargets ? { liveTargets: props.externalEffects.liveTargets } : {}),
      ...(props.externalEffects.httpTargets ? { httpTargets: props.externalEffects.httpTargets } : {}),
      ...(props.externalEffects.httpCredentials ? { httpCredentials: props.externalEffects.httpCredentials } : {}),
      ...(props.externalEffects.sandboxProvider ? { sandboxProvider: props.externalEffects.sandboxProvider } : {}),
      environment,
      scheduleDeadLetterQueue: this.scheduleDeadLetterQueue,
      services: { sender: 'sender', reconciler: 'reconciler', recorder: 'recorder', collector: 'collector' },
      ...(props.externalEffects.reconcileClaimTimeout ? { reconcileClaimTimeout: props.externalEffects.reconcileClaimTimeout } : {}),
      ...(props.externalEffects.sendRatePerSecond !== undefined ? { sendRatePerSecond: props.externalEffects.sendRatePerSecond } : {}),
    });

    // ---- Compute ------------------------------------------------------------------------------
    this.worker = fencedFunction(this, 'Worker', {
      entry: props.worker?.entry ?? 'functions/worker.ts',
      description: `Fenced worker (${workload.name}): runs jobs from the work queue under a lease, one fenced transaction per unit`,
      timeout: workerTimeout,
      memorySize: props.worker?.memorySize ?? 512,
      environment: { ...environment, ...this.effects.workerEnvironment, POWERTOOLS_SERVICE_NAME: services.worker },
      // A long job hands off to itself through the work queue (a continuation per invocation that
      // ran out of time). Lambda's loop detection would drop the 17th hop (~30 minutes of work)
      // as a runaway loop. Each hop follows an invocation that spent its time committing units,
      // and the job's unit count bounds the chain.
      recursiveLoop: RecursiveLoop.ALLOW,
    });
    // Sweeper: one index query and a few conditional updates; 1 minute is far more than a sweep needs
    // and overlapping sweeps are harmless (each requeue is conditional).
    this.sweeper = fencedFunction(this, 'Sweeper', {
      entry: props.sweeper?.entry ?? 'functions/sweeper.ts',
      description: 'Sweeper: requeues unfinished jobs whose claim went stale and whose lease is not live',
      timeout: props.sweeper?.timeout ?? Duration.minutes(1),
      memorySize: props.sweeper?.memorySize ?? 256,
      environment: { ...environment, POWERTOOLS_SERVICE_NAME: services.sweeper },
      // Invoked asynchronously by the scheduler: what still fails after Lambda's retries lands here.
      deadLetterQueue: this.scheduleDeadLetterQueue,
    });
    // Lambda's own async queue would retry a failed sweep twice and keep a throttled one up to 6
    // hours, so retries would overlap the sweeps that follow: the next sweep is the retry (as the
    // schedule's retryAttempts 0 says), and an event older than one interval is dropped to the DLQ.
    this.sweeper.fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.seconds(Math.min(6 * 3600, Math.max(60, sweepInterval.toSeconds()))) });
    // Starter: one conditional PutItem and one SendMessage.
    this.starter = fencedFunction(this, 'Starter', {
      entry: props.starter?.entry ?? 'functions/starter.ts',
      description: `Starter (${workload.name}): creates the run of each schedule slot (idempotent run id) and enqueues its shards`,
      timeout: props.starter?.timeout ?? Duration.seconds(30),
      memorySize: props.starter?.memorySize ?? 256,
      environment: { ...environment, ...starterEnvironment, POWERTOOLS_SERVICE_NAME: services.starter },
      deadLetterQueue: this.scheduleDeadLetterQueue,
    });
    // The starter is idempotent (one run id per schedule slot): Lambda may retry it, within the same 2 hours
    // the schedule's own retries use.
    this.starter.fn.configureAsyncInvoke({ retryAttempts: 2, maxEventAge: Duration.hours(2) });

    // One execution for each function besides the worker (they run one at a time: scheduled, or
    // one per stream shard for the sender); what the account has left is the worker's at most.
    const others = [this.sweeper, this.starter, this.effects.sender, this.effects.reconciler, this.effects.recorder, this.effects.collector, this.effects.sandbox?.provider].filter((f) => f !== undefined).length;
    const accountConcurrency = props.accountConcurrency ?? AWS_LIMITS.newAccountLambdaConcurrency;
    const workerMaxConcurrency = props.workerMaxConcurrency ?? workerConcurrencyFor(props.shards ?? 1, workerRoom(accountConcurrency, others));
    validateConcurrency({ shards: props.shards ?? 1, workerMaxConcurrency, accountConcurrency, otherFunctions: others });
    const workerSource = new SqsEventSource(this.queue, {
      batchSize: props.workerBatchSize ?? 1,
      maxConcurrency: workerMaxConcurrency,
      reportBatchItemFailures: true,
    });
    this.worker.fn.addEventSource(workerSource);
    this.workerEventSourceMappingId = workerSource.eventSourceMappingId;
    const counterTables = TABLE_ROLES.filter((r) => TABLES[r].permanent).map((r) => tables[r]);
    for (const table of counterTables) table.addToResourcePolicy(denyCounterUpdatesExcept([this.worker.role.roleArn, ...(props.counterWriters ?? [])]));

    // ---- Least privilege: exact actions on exact resources ------------------------------------
    grantDataPlane({ worker: this.worker, sweeper: this.sweeper, starter: this.starter }, active, this.queue);
    this.effects.grantWorker(this.worker, active.outbox);

    // ---- Schedules (EventBridge Scheduler) ----------------------------------------------------
    const schedulerRole = new Role(this, 'SchedulerRole', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
      description: 'EventBridge Scheduler: invokes the sweeper and the starter',
    });
    // The scheduler targets would grant lambda:InvokeFunction on `<function ARN>:*` as well (every
    // version and alias); the schedules invoke the unqualified function only, so the role gets
    // exactly that and the targets get a view of it they cannot widen.
    const scheduled = [this.sweeper, this.starter, this.effects.reconciler, ...(this.effects.collector ? [this.effects.collector] : [])];
    schedulerRole.addToPrincipalPolicy(new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: scheduled.map((f) => f.fn.functionArn) }));
    schedulerRole.addToPrincipalPolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.scheduleDeadLetterQueue.queueArn] }));
    const schedulerTargetRole = schedulerRole.withoutPolicyUpdates();
    this.sweeperSchedule = new Schedule(this, 'SweeperSchedule', {
      description: 'Runs the sweeper',
      schedule: ScheduleExpression.rate(sweepInterval),
      target: new LambdaInvoke(this.sweeper.fn, {
        role: schedulerTargetRole,
        deadLetterQueue: this.scheduleDeadLetterQueue,
        // The next sweep is one interval away: retrying a missed one only makes them overlap.
        retryAttempts: 0,
        maxEventAge: Duration.minutes(1),
      }),
    });
    this.starterSchedule = new Schedule(this, 'StarterSchedule', {
      description: starterScheduleDescription(workload),
      schedule: props.starterSchedule ?? workloadSchedule(workload),
      enabled: props.scheduleRuns === true,
      target: new LambdaInvoke(this.starter.fn, {
        role: schedulerTargetRole,
        // The workload names its run from `time` (the previous month, the previous day): the
        // scheduled time, not the delivery time, so a delivery retried across midnight still names the same run.
        input: ScheduleTargetInput.fromObject({ time: ContextAttribute.scheduledTime }),
        deadLetterQueue: this.scheduleDeadLetterQueue,
        // The starter is idempotent (one run id per schedule slot): retry delivery for up to 2 hours.
        retryAttempts: 10,
        maxEventAge: Duration.hours(2),
      }),
    });

    const every = (id: string, description: string, rate: Duration, fn: FencedFunction) =>
      new Schedule(this, id, {
        description,
        schedule: ScheduleExpression.rate(rate),
        target: new LambdaInvoke(fn.fn, { role: schedulerTargetRole, deadLetterQueue: this.scheduleDeadLetterQueue, retryAttempts: 0, maxEventAge: Duration.minutes(1) }),
      });
    this.reconcilerSchedule = every('ReconcilerSchedule', 'Runs the outbox reconciler', Duration.minutes(DEPLOYED_DEFAULTS.reconcilerIntervalMs / 60_000), this.effects.reconciler);
    if (this.effects.collector !== undefined) this.collectorSchedule = every('CollectorSchedule', 'Runs the document collector', Duration.hours(1), this.effects.collector);

    // ---- Operations ---------------------------------------------------------------------------
    this.monitoring = new WorkflowMonitoring(this, 'Monitoring', {
      namespace,
      services,
      queue: this.queue,
      deadLetterQueues: {
        // The work queue's redrive policy moves a message here after its 5th receive.
        DeadLetterQueue: { queue: this.deadLetterQueue, filledBy: 'redrive' },
        // Scheduler, EventBridge and Lambda's async invocations send to it.
        ScheduleDeadLetterQueue: { queue: this.scheduleDeadLetterQueue, filledBy: 'service' },
        // The Outbox stream's event source mapping sends its on-failure records to it.
        SenderDeadLetterQueue: { queue: this.effects.senderDeadLetterQueue, filledBy: 'service' },
      },
      functions: {
        Worker: this.worker.fn,
        Sweeper: this.sweeper.fn,
        Starter: this.starter.fn,
        Sender: this.effects.sender.fn,
        Reconciler: this.effects.reconciler.fn,
        ...(this.effects.recorder ? { Recorder: this.effects.recorder.fn } : {}),
        ...(this.effects.collector ? { Collector: this.effects.collector.fn } : {}),
      },
      sweeper: this.sweeper.fn,
      effects: { sender: 'sender', reconciler: 'reconciler', ...(this.effects.recorder ? { recorder: 'recorder' } : {}), ...(this.effects.collector ? { collector: 'collector' } : {}), steps: (this.workload.steps ?? []).length > 0 },
      sweepInterval,
      unfinishedJobAlarmAfter: props.unfinishedJobAlarmAfter ?? Duration.minutes(DEFAULT_UNFINISHED_JOB_ALARM_MINUTES),
      ...(props.alarmTopic ? { alarmTopic: props.alarmTopic } : {}),
    });
    watchCounterGuard(this, counterTables, this.monitoring.alarmTopic, this.scheduleDeadLetterQueue);

    this.acknowledgeFindings();
  }

  /** Each cdk-nag acknowledgement names one rule on one resource, with the reason it does not apply there. */
  private acknowledgeFindings(): void {
    Validations.of(this.worker.fn).acknowledge({
      id: 'Serverless::Serverless-LambdaDLQ',
      reason:
        'The worker is invoked only synchronously, by the SQS event source mapping, which never uses a function ' +
        "dead-letter queue; a message that keeps failing moves to the work queue's redrive DLQ (DeadLetterQueue, alarmed).",
    });
    const esm = this.worker.fn.node.findAll().find((c) => c instanceof EventSourceMapping);
    if (esm === undefined) throw new ConfigError('worker', 'has no event source mapping');
    Validations.of(esm).acknowledge({
      id: 'Serverless::Serverless-LambdaEventSourceMappingDestination',
      reason:
        'Lambda supports OnFailure destinations only for stream and Kafka event sources, not for SQS. A failed SQS ' +
        "record is retried by redelivery and moves to the work queue's redrive DLQ (DeadLetterQueue) after maxReceiveCount.",
    });
    for (const fn of [this.sweeper.fn, this.starter.fn]) {
      Validations.of(fn.node.findChild('EventInvokeConfig')).acknowledge({
        id: 'Serverless::Serverless-LambdaAsyncFailureDestination',
        reason:
          "An asynchronous invocation that fails or expires goes to the function's dead-letter queue (DeadLetterConfig: " +
          'ScheduleDeadLetterQueue, alarmed on the first message). An OnFailure destination as well would record the same failure twice.',
      });
    }
    for (const dlq of [this.deadLetterQueue, this.scheduleDeadLetterQueue]) {
      Validations.of(dlq).acknowledge({
        id: 'Serverless::Serverless-SQSRedrivePolicy',
        reason:
          'This queue is itself a dead-letter queue: a redrive policy would need a DLQ for the DLQ. Messages stay 14 days ' +
          '(the SQS maximum) and an alarm fires on the first one.',
      });
    }
  }
}
