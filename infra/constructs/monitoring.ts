/**
 * What an on-call engineer looks at: the handlers' Powertools metrics (the stack's namespace,
 * dimension `service`), the queues and the functions, as alarms and one dashboard, and the SNS
 * topic every alarm notifies.
 *
 * Alarms: a message in either dead-letter queue; any function error or throttle; any failed work
 * record (the worker's RecordsFailed: a partial batch failure is not a Lambda error); a work
 * message older than a threshold; the oldest unfinished job older than a threshold (the
 * sweeper's OldestUnfinishedJobAgeMs gauge); the sweeper not running. With the external effects:
 * UNKNOWN and FAILED outbox items, sends held by the account's state, the oldest unsent item, the
 * sender's failed records; and, for a workload that sends email (a recorder exists), bounces and
 * complaints.
 */
import { ArnFormat, Aws, CfnCondition, Duration, Fn, RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  HorizontalAnnotation,
  MathExpression,
  Metric,
  SingleValueWidget,
  TextWidget,
  TreatMissingData,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic, type ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { METRIC, type MetricName } from '../../lib/workflow/index.js';

/**
 * The metrics the handlers emit (lib/workflow/ports.ts METRIC), grouped by emitter and dashboard graph. A
 * test checks that the dashboard shows every METRIC name, so a new metric must be placed here.
 */
export const WORKFLOW_METRICS = {
  /** Emitted by the worker. */
  leases: [METRIC.leaseAcquired, METRIC.leaseTakeover, METRIC.leaseBusy, METRIC.leaseLost, METRIC.staleGenerationRejected],
  units: [METRIC.unitsCommitted, METRIC.duplicatesSuppressed],
  jobs: [METRIC.jobsCompleted, METRIC.jobsFailed, METRIC.runsCompleted],
  /** Emitted by the worker handler, per failed record. */
  recordsFailed: METRIC.recordsFailed,
  /** Emitted by the sweeper. */
  requeues: METRIC.jobsRequeued,
  /** A gauge in ms, emitted by every sweep. */
  oldestUnfinishedJobAge: METRIC.oldestUnfinishedJobAgeMs,
  /** The external effects: documents (worker, collector). */
  documents: [METRIC.documentsPublished, METRIC.documentsCollected],
  /** Deliveries, emitted by the sender and the reconciler alike (both send through lib/workflow/effects/sender.ts). */
  outbox: [METRIC.outboxSent, METRIC.outboxDeclined, METRIC.outboxFailed, METRIC.outboxAmbiguous, METRIC.outboxUnknown, METRIC.outboxFollowUpFailed],
  /** The provider asked to wait: throttled, or held by the account's state (sender and reconciler). */
  waits: [METRIC.outboxThrottled, METRIC.outboxHeld],
  /** Emitted by the sender handler, per failed stream record. */
  outboxRecordsFailed: METRIC.outboxRecordsFailed,
  /** SES events after acceptance, emitted by the recorder. */
  providerTrouble: [METRIC.outboxBounced, METRIC.outboxComplained],
  /** A gauge in ms, emitted by every reconcile. */
  oldestUnsent: METRIC.outboxOldestUnsentAgeMs,
} as const;

export interface DeadLetterQueueSpec {
  readonly queue: IQueue;
  readonly filledBy: 'service' | 'redrive';
}

/**
 * The alarm on new messages in a dead-letter queue: it fires for each arrival and returns to OK,
 * rather than staying in ALARM while old messages sit there (up to 14 days), when later failures
 * would notify no one.
 */
function newMessagesMetric(name: string, dlq: DeadLetterQueueSpec): IMetric {
  if (dlq.filledBy === 'service') return dlq.queue.metricNumberOfMessagesSent({ statistic: 'Sum', period: Duration.minutes(5) });
  // A rise of the visible count; the minutes the queue published nothing (an empty queue goes
  // quiet) count as 0, so the first message rises from 0.
  return new MathExpression({
    expression: 'DIFF(FILL(visible, 0))',
    usingMetrics: { visible: dlq.queue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: Duration.minutes(1) }) },
    label: `${name}: new messages`,
    period: Duration.minutes(1),
  });
}

export interface WorkflowMonitoringProps {
  readonly namespace: string;
  /** The `service` dimension each emitter publishes with. */
  readonly services: Readonly<{ worker: string; sweeper: string }>;
  /**
   * The external effects' emitters; alarms on UNKNOWN, FAILED and held items, the oldest unsent
   * item, the sender's failed records. `recorder`: only a workload that sends email has one, and
   * only then are bounces and complaints alarmed (there is no metric to alarm on otherwise: an
   * alarm on a metric nobody emits would sit at OK forever, a false reassurance). `collector`:
   * only a workload that writes documents has one.
   */
  readonly effects?: { readonly sender: string; readonly reconciler: string; readonly recorder?: string; readonly collector?: string; readonly unsentAlarmAfter?: Duration; /** The workload declares steps (Workload.steps): only then can an item settle without its follow-ups, alarmed. */ readonly steps?: boolean };
  readonly queue: IQueue;
  /**
   * Each dead-letter queue, and how messages reach it: `service` (Lambda's on-failure destination
   * or async DLQ, Scheduler's or EventBridge's DLQ: a SendMessage, counted by NumberOfMessagesSent)
   * or `redrive` (SQS moves them by the source queue's redrive policy: NumberOfMessagesSent does
   * not count those, so the alarm watches the visible count rise).
   */
  readonly deadLetterQueues: Readonly<Record<string, DeadLetterQueueSpec>>;
  readonly functions: Readonly<Record<string, IFunction>>;
  readonly sweeper: IFunction;
  readonly sweepInterval: Duration;
  readonly unfinishedJobAlarmAfter: Duration;
  /** Alarm when the oldest work message is older than this. @default 15 minutes */
  readonly queueAgeAlarmAfter?: Duration;
  /** @default a topic of this construct's own (KMS-encrypted, TLS-only), so the alarms notify someone */
  readonly alarmTopic?: ITopic;
}

export class WorkflowMonitoring extends Construct {
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];
  readonly unfinishedJobAlarm: Alarm;
  /** The topic every alarm notifies, on alarm and on OK. */
  readonly alarmTopic: ITopic;

  constructor(scope: Construct, id: string, props: WorkflowMonitoringProps) {
    super(scope, id);
    const topic = props.alarmTopic ?? alarmTopic(this);
    this.alarmTopic = topic;
    const period = Duration.minutes(5);
    const metric = (service: string, metricName: string, statistic: string): Metric =>
      new Metric({ namespace: props.namespace, metricName, dimensionsMap: { service }, statistic, period });
    const sum = (name: string) => metric(props.services.worker, name, 'Sum');
    const addAlarm = (alarm: Alarm): Alarm => {
      alarm.addAlarmAction(new SnsAction(topic));
      alarm.addOkAction(new SnsAction(topic));
      this.alarms.push(alarm);
      return alarm;
    };

    // A new message in a dead-letter queue is a job or a schedule that needs a human: each one
    // alarms, however many are already there.
    for (const [name, dlq] of Object.entries(props.deadLetterQueues)) {
      addAlarm(
        new Alarm(this, `${name}NewMessages`, {
          alarmDescription: `New messages in ${name}: a job or scheduled invocation failed repeatedly. Inspect, fix, then redrive (docs/deploy.md, Dead-letter queues).`,
          metric: newMessagesMetric(name, dlq),
          threshold: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          // A rise is one minute's difference: two minutes in the window hold the minute before it.
          evaluationPeriods: dlq.filledBy === 'redrive' ? 2 : 1,
          datapointsToAlarm: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }
    for (const [name, fn] of Object.entries(props.functions)) {
      addAlarm(
        new Alarm(this, `${name}Errors`, {
          alarmDescription: `The ${name} function failed (an invocation error, not a partial batch failure). See its log group.`,
          metric: fn.metricErrors({ statistic: 'Sum', period }),
          threshold: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }
    for (const [name, fn] of Object.entries(props.functions)) {
      addAlarm(
        new Alarm(this, `${name}Throttles`, {
          alarmDescription: `Lambda throttled the ${name} function: the account's or the function's concurrency is exhausted. Work waits (queue) or is retried (schedules).`,
          metric: fn.metricThrottles({ statistic: 'Sum', period }),
          threshold: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }
    // The worker turns a failing record into a partial batch failure: the invocation succeeds, so
    // Errors stays 0 while every message fails (and reaches the DLQ only after maxReceiveCount).
    addAlarm(
      new Alarm(this, 'WorkRecordsFailed', {
        alarmDescription:
          'Work messages failed (the worker logs record-invalid or record-error with the messageId and the error). ' +
          'They are redelivered and reach the dead-letter queue after the queue\'s max receives.',
        metric: sum(WORKFLOW_METRICS.recordsFailed),
        threshold: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    const queueAge = props.queueAgeAlarmAfter ?? Duration.minutes(15);
    addAlarm(
      new Alarm(this, 'WorkQueueMessageTooOld', {
        alarmDescription:
          `A work message has waited more than ${queueAge.toHumanString()}: nobody is receiving (event source mapping ` +
          'disabled, e.g. paused; worker throttled) or it keeps failing. Check the mapping state and WorkRecordsFailed.',
        metric: props.queue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', period: Duration.minutes(1) }),
        threshold: queueAge.toSeconds(),
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    const oldestJobAge = metric(props.services.sweeper, WORKFLOW_METRICS.oldestUnfinishedJobAge, 'Maximum');
    const requeues = metric(props.services.sweeper, WORKFLOW_METRICS.requeues, 'Sum');
    const thresholdMs = props.unfinishedJobAlarmAfter.toMilliseconds();
    this.unfinishedJobAlarm = addAlarm(
      new Alarm(this, 'UnfinishedJobTooOld', {
        alarmDescription:
          `A job has been unfinished for more than ${props.unfinishedJobAlarmAfter.toHumanString()}: ` +
          'check the worker errors, the dead-letter queue and the requeue count on the dashboard.',
        metric: oldestJobAge,
        threshold: thresholdMs,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        // No data means no sweep ran; the SweeperNotRunning alarm covers that.
        treatMissingData: TreatMissingData.NOT_BREACHING,
      }),
    );
    // Without sweeps, a crashed job is never requeued and its age is never reported.
    const sweepWindow = Duration.seconds(Math.max(period.toSeconds(), 2 * props.sweepInterval.toSeconds()));
    addAlarm(
      new Alarm(this, 'SweeperNotRunning', {
        alarmDescription: 'The sweeper has not been invoked for three windows: check its schedule and the schedule dead-letter queue.',
        metric: props.sweeper.metricInvocations({ statistic: 'Sum', period: sweepWindow }),
        threshold: 1,
        comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: 3,
        treatMissingData: TreatMissingData.BREACHING,
      }),
    );

    const effectWidgets = props.effects === undefined ? [] : this.effectAlarms(props.effects, metric, addAlarm);

    // ---- Dashboard -----------------------------------------------------------------------------
    const graph = (title: string, left: IMetric[], extra: { leftAnnotations?: HorizontalAnnotation[] } = {}) =>
      new GraphWidget({ title, left, width: 12, height: 6, ...extra });
    const fns = Object.entries(props.functions);
    this.dashboard = new Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.hours(3),
      widgets: [
        [
          new TextWidget({
            markdown:
              `# Fenced workflow: ${Stack.of(this).stackName}\n` +
              'A **takeover** is a lease acquired after its holder expired; a **stale-generation rejection** is the fence ' +
              'refusing an obsolete holder (expected after a takeover, never a data error). Runbook: docs/runbook-dr.md.',
            width: 24,
            height: 2,
          }),
        ],
        [new AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 3 })],
        [
          graph('Jobs', [...WORKFLOW_METRICS.jobs.map(sum), requeues, sum(WORKFLOW_METRICS.recordsFailed)]),
          graph('Oldest unfinished job (ms)', [oldestJobAge], {
            leftAnnotations: [{ value: thresholdMs, label: 'alarm', color: '#d62728' }],
          }),
        ],
        [graph('Leases and fences', WORKFLOW_METRICS.leases.map(sum)), graph('Fenced units', WORKFLOW_METRICS.units.map(sum))],
        [
          graph('Work queue', [
            props.queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1) }),
            props.queue.metricApproximateNumberOfMessagesNotVisible({ period: Duration.minutes(1) }),
          ]),
          new SingleValueWidget({
            title: 'Dead-letter queues (messages)',
            metrics: Object.entries(props.deadLetterQueues).map(([name, q]) =>
              q.queue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: Duration.minutes(1), label: name }),
            ),
            width: 12,
            height: 6,
          }),
        ],
        [
          graph('Function errors', fns.map(([name, f]) => f.metricErrors({ period, label: name }))),
          graph('Function duration p99 (ms)', fns.map(([name, f]) => f.metricDuration({ period, statistic: 'p99', label: name }))),
        ],
        [
          graph('Function throttles', fns.map(([name, f]) => f.metricThrottles({ period, label: name }))),
          graph('Oldest message age in the work queue (s)', [props.queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1) })]),
        ],
        ...effectWidgets,
      ],
    });
  }

  /**
   * UNKNOWN outbox items (a person must decide), FAILED ones (a cause to fix), held sends (the
   * account to fix), the oldest unsent item, the sender's failed records, and, for a workload that
   * sends email, bounces and complaints (SES reputation); and their graphs.
   */
  private effectAlarms(
    e: NonNullable<WorkflowMonitoringProps['effects']>,
    metric: (service: string, name: string, statistic: string) => Metric,
    addAlarm: (a: Alarm) => Alarm,
  ): GraphWidget[][] {
    const summed = (name: MetricName, label: string, ids?: readonly [string, string]) => this.bothSenders(e, metric, name, label, ids);
    const oldest = metric(e.reconciler, METRIC.outboxOldestUnsentAgeMs, 'Maximum');
    const failedRecords = metric(e.sender, METRIC.outboxRecordsFailed, 'Sum');
    const after = e.unsentAlarmAfter ?? Duration.minutes(30);
    const once = { threshold: 1, comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, evaluationPeriods: 1, treatMissingData: TreatMissingData.NOT_BREACHING };
    addAlarm(new Alarm(this, 'OutboxUnknown', { alarmDescription: 'An outbox item is UNKNOWN: its send may or may not have been delivered and the provider record cannot tell. A person decides (docs/external-effects.md).', metric: summed(METRIC.outboxUnknown, 'UNKNOWN outbox items'), ...once }));
    addAlarm(new Alarm(this, 'OutboxFailed', {
      alarmDescription:
        'An outbox item ended FAILED as a refusal of our request: the provider refused its content or the request itself (a 400, a 404, a redirect), or the stack is misconfigured. A declined card is not this: it is counted OutboxDeclined, a business outcome its steps follow (an http target without its endpoint, -c <target>Url). Nothing retries it: read the reason on the item, fix the cause, put it back to PENDING (docs/deploy.md, Verify the sender address; docs/external-effects.md).',
      metric: summed(METRIC.outboxFailed, 'FAILED outbox items'),
      ...once,
    }));
    // Any held send: the provider refused the account, not the message (sending paused or suspended,
    // the sandbox, an unverified identity, a missing configuration set, a disabled key). Every send
    // until it is fixed meets the same refusal, so the first one is the signal.
    addAlarm(new Alarm(this, 'OutboxHeld', {
      alarmDescription:
        "A send was held by the account's state (SES sending paused or suspended, the sandbox, an unverified identity, the configuration set, credentials, an http provider's 401/403: the item's heldReason, outbox-held in the logs). " +
        'Fix the account (aws sesv2 get-account, or the provider\'s); held items wait and are sent by themselves once it lifts (docs/deploy.md, Watch it).',
      metric: summed(METRIC.outboxHeld, 'held sends'),
      ...once,
    }));
    if (e.steps === true) addAlarm(new Alarm(this, 'OutboxFollowUpFailed', {
      alarmDescription: "An outbox item settled without its follow-ups: a step's next() of the workload failed on it (the item's followUpError, outbox-follow-up-failed in the logs). Its chain stops there: fix the step, then create the follow-up by hand from the item (docs/external-effects.md, Steps that follow an outcome).",
      metric: summed(METRIC.outboxFollowUpFailed, 'items settled without their follow-ups'),
      ...once,
    }));
    addAlarm(new Alarm(this, 'OutboxUnsentTooOld', { alarmDescription: `An outbox item has waited more than ${after.toHumanString()} to be sent: the provider is down, or the sender and the reconciler fail. See their logs.`, metric: oldest, threshold: after.toMilliseconds(), comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD, evaluationPeriods: 1, treatMissingData: TreatMissingData.NOT_BREACHING }));
    addAlarm(new Alarm(this, 'OutboxRecordsFailed', { alarmDescription: 'The sender reported Outbox stream records failed (a provider not taking sends now, an error): retried by the stream, then its DLQ; the reconciler sends what stays PENDING.', metric: failedRecords, ...once }));
    const trouble = e.recorder === undefined ? [] : this.emailAlarms(e.recorder, metric, addAlarm);
    const g = (title: string, left: IMetric[]) => new GraphWidget({ title, left, width: 12, height: 6 });
    // One line per outcome, the sender's and the reconciler's summed (their own ids: a graph's metric ids are shared by its lines).
    const both = (names: readonly MetricName[]) => names.map((n) => summed(n, n, [`${n.toLowerCase()}Sender`, `${n.toLowerCase()}Reconciler`]));
    const documents = e.collector === undefined ? [] : [g('Documents', [metric('worker', METRIC.documentsPublished, 'Sum'), metric(e.collector, METRIC.documentsCollected, 'Sum')])];
    return [
      [g('Outbox deliveries (sender + reconciler)', [...both(WORKFLOW_METRICS.outbox), metric(e.sender, WORKFLOW_METRICS.outboxRecordsFailed, 'Sum')]), g('Oldest unsent outbox item (ms)', [oldest])],
      [g(e.recorder === undefined ? 'Provider: waits (sender + reconciler)' : 'Provider: waits (sender + reconciler), bounces and complaints (recorder, per hour)', [...both(WORKFLOW_METRICS.waits), ...trouble]), ...documents],
    ];
  }

  /**
   * Bounces and complaints, from the recorder (a workload that sends email): any in an hour, not a
   * rate against OutboxSent. SES reviews the account on its own rates (bounces over 5%, complaints
   * over 0.1%), computed over a representative volume of the whole account's mail (AWS/SES
   * Reputation.*); a ratio of ours would be a guess at it: a bounce or complaint arrives minutes to
   * days after its send (an hour's OutboxSent is often 0 then, the ratio undefined), soft bounces
   * and rejections count in OutboxBounced but not in SES's rate, and ten sends make one bounce 10%.
   * Each one is a recipient who did not get, or did not want, a message: worth a look. An hour's
   * period pages once per burst (a run's bad addresses bounce together), not once per bounce.
   * Returns the hourly metrics, for the dashboard.
   */
  private emailAlarms(recorder: string, metric: (service: string, name: string, statistic: string) => Metric, addAlarm: (a: Alarm) => Alarm): Metric[] {
    const hourly = (name: MetricName) => metric(recorder, name, 'Sum').with({ period: Duration.hours(1) });
    const once = { threshold: 1, comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, evaluationPeriods: 1, treatMissingData: TreatMissingData.NOT_BREACHING };
    addAlarm(new Alarm(this, 'OutboxBounced', {
      alarmDescription:
        "SES reported an outbox email bounced or rejected (the recorder's OutboxBounced, in the last hour): that recipient did not get it. " +
        "Fix the address (the item's providerEvents) and watch the account's bounce rate (SES console, Reputation metrics): over 5% SES reviews the account and may pause its sending.",
      metric: hourly(METRIC.outboxBounced),
      ...once,
    }));
    addAlarm(new Alarm(this, 'OutboxComplained', {
      alarmDescription:
        "A recipient marked an outbox email as spam (the recorder's OutboxComplained, in the last hour). " +
        "Find whom (the item's providerEvents) and stop mailing them; SES reviews an account whose complaint rate passes 0.1% and may pause its sending (SES console, Reputation metrics).",
      metric: hourly(METRIC.outboxComplained),
      ...once,
    }));
    return WORKFLOW_METRICS.providerTrouble.map(hourly);
  }

  /**
   * An outbox outcome from both the sender and the reconciler: each sends (the reconciler what the
   * stream left PENDING) through the same code, under its own `service`. FILL(…, 0): an emitter
   * that counted nothing publishes no point, and a sum of two series has no point where either
   * lacks one, so one alone counting would never breach.
   */
  private bothSenders(
    e: NonNullable<WorkflowMonitoringProps['effects']>,
    metric: (service: string, name: string, statistic: string) => Metric,
    name: MetricName,
    label: string,
    [s, r]: readonly [string, string] = ['sender', 'reconciler'],
  ): MathExpression {
    return new MathExpression({
      expression: `FILL(${s}, 0) + FILL(${r}, 0)`,
      usingMetrics: { [s]: metric(e.sender, name, 'Sum'), [r]: metric(e.reconciler, name, 'Sum') },
      label,
      period: Duration.minutes(5),
    });
  }

  /**
   * The console URL of the dashboard (a stack output), in the console of the partition the stack
   * is deployed to: the stack is environment-agnostic, so the choice is made by CloudFormation.
   */
  get dashboardUrl(): string {
    const stack = Stack.of(this);
    const inPartition = (id: string, partition: string) =>
      (stack.node.tryFindChild(id) as CfnCondition | undefined) ?? new CfnCondition(stack, id, { expression: Fn.conditionEquals(Aws.PARTITION, partition) });
    const china = inPartition('InAwsChinaPartition', 'aws-cn');
    const govCloud = inPartition('InAwsGovCloudPartition', 'aws-us-gov');
    const host = Fn.conditionIf(
      china.logicalId,
      'console.amazonaws.cn',
      Fn.conditionIf(govCloud.logicalId, 'console.amazonaws-us-gov.com', `${Aws.REGION}.console.aws.amazon.com`),
    ).toString();
    return `https://${host}/cloudwatch/home?region=${Aws.REGION}#dashboards/dashboard/${this.dashboard.dashboardName}`;
  }
}

/**
 * The alarms' own topic. Encrypted with a key of its own: CloudWatch cannot publish to a topic
 * under the AWS managed SNS key, so the key and the topic policy let the CloudWatch service
 * publish, for alarms of this account only. Subscribe to it after deploy (docs/deploy.md).
 */
function alarmTopic(scope: Construct): Topic {
  const stack = Stack.of(scope);
  const fromThisAccount = {
    StringEquals: { 'aws:SourceAccount': stack.account },
    ArnLike: { 'aws:SourceArn': stack.formatArn({ service: 'cloudwatch', resource: 'alarm', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }) },
  };
  const key = new Key(scope, 'AlarmTopicKey', {
    description: 'Encrypts the fenced workflow alarm topic',
    enableKeyRotation: true,
    // Nothing but alarm notifications in flight depends on it: it goes with the stack (after KMS's waiting period).
    removalPolicy: RemovalPolicy.DESTROY,
    pendingWindow: Duration.days(7),
  });
  key.addToResourcePolicy(
    new PolicyStatement({
      principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
      resources: ['*'],
      conditions: fromThisAccount,
    }),
  );
  // EventBridge (the counter-guard watch) publishes too. Its KMS requests carry no aws:SourceAccount
  // or aws:SourceArn, so a condition on them would drop every event: the topic policy scopes it instead.
  key.addToResourcePolicy(
    new PolicyStatement({ principals: [new ServicePrincipal('events.amazonaws.com')], actions: ['kms:Decrypt', 'kms:GenerateDataKey*'], resources: ['*'] }),
  );
  const topic = new Topic(scope, 'AlarmTopic', { displayName: alarmTopicDisplayName(stack.stackName), masterKey: key, enforceSSL: true });
  topic.addToResourcePolicy(
    new PolicyStatement({
      principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: fromThisAccount,
    }),
  );
  return topic;
}

/** SNS takes a display name of at most 100 characters, and a stack name may have 128: a long one is cut to fit. */
export function alarmTopicDisplayName(stackName: string): string {
  const suffix = ' alarms';
  return `${stackName.slice(0, 100 - suffix.length)}${suffix}`;
}
