/**
 * What an on-call engineer looks at: the handlers' Powertools metrics (the stack's namespace,
 * dimension `service`), the queues and the functions, as alarms and one dashboard, and the SNS
 * topic every alarm notifies.
 *
 * Alarms: a message in either dead-letter queue; any function error or throttle; any failed work
 * record (the worker's RecordsFailed: a partial batch failure is not a Lambda error); a work
 * message older than a threshold; the oldest unfinished job older than a threshold (the
 * sweeper's OldestUnfinishedJobAgeMs gauge); the sweeper not running.
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
import { METRIC } from '../../lib/workflow/index.js';

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
  /** The external effects: documents (worker, collector), deliveries (sender, reconciler). */
  documents: [METRIC.documentsPublished, METRIC.documentsCollected],
  outbox: [METRIC.outboxSent, METRIC.outboxFailed, METRIC.outboxAmbiguous, METRIC.outboxUnknown, METRIC.outboxRecordsFailed],
  /** A gauge in ms, emitted by every reconcile. */
  oldestUnsent: METRIC.outboxOldestUnsentAgeMs,
} as const;

export interface WorkflowMonitoringProps {
  readonly namespace: string;
  /** The `service` dimension each emitter publishes with. */
  readonly services: Readonly<{ worker: string; sweeper: string }>;
  /** The external effects' emitters; alarms on UNKNOWN items, the oldest unsent item and the sender's failed records. */
  readonly effects?: { readonly sender: string; readonly reconciler: string; readonly collector: string; readonly unsentAlarmAfter?: Duration };
  readonly queue: IQueue;
  readonly deadLetterQueues: Readonly<Record<string, IQueue>>;
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

    // Anything in a dead-letter queue is a job or a schedule that needs a human.
    for (const [name, dlq] of Object.entries(props.deadLetterQueues)) {
      addAlarm(
        new Alarm(this, `${name}NotEmpty`, {
          alarmDescription: `${name} holds messages: a job or scheduled invocation failed repeatedly. Inspect, fix, then redrive (docs/deploy.md).`,
          metric: dlq.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: Duration.minutes(1) }),
          threshold: 1,
          comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
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
              q.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: Duration.minutes(1), label: name }),
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

  /** UNKNOWN outbox items (a person must decide), FAILED ones (a cause to fix), the oldest unsent item, the sender's failed records; and their graphs. */
  private effectAlarms(
    e: NonNullable<WorkflowMonitoringProps['effects']>,
    metric: (service: string, name: string, statistic: string) => Metric,
    addAlarm: (a: Alarm) => Alarm,
  ): GraphWidget[][] {
    const unknown = metric(e.reconciler, METRIC.outboxUnknown, 'Sum');
    const failed = this.failedItems(e, metric);
    const oldest = metric(e.reconciler, METRIC.outboxOldestUnsentAgeMs, 'Maximum');
    const failedRecords = metric(e.sender, METRIC.outboxRecordsFailed, 'Sum');
    const after = e.unsentAlarmAfter ?? Duration.minutes(30);
    const once = { threshold: 1, comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, evaluationPeriods: 1, treatMissingData: TreatMissingData.NOT_BREACHING };
    addAlarm(new Alarm(this, 'OutboxUnknown', { alarmDescription: 'An outbox item is UNKNOWN: its send may or may not have been delivered and the provider record cannot tell. A person decides (docs/external-effects.md).', metric: unknown, ...once }));
    addAlarm(new Alarm(this, 'OutboxFailed', {
      alarmDescription:
        'An outbox item ended FAILED: the provider refused it for good, or the stack is misconfigured (an unverified SES identity, no paymentsUrl). Nothing retries it: read the reason on the item, fix the cause, put it back to PENDING (docs/deploy.md, Verify the sender address; docs/external-effects.md).',
      metric: failed,
      ...once,
    }));
    addAlarm(new Alarm(this, 'OutboxUnsentTooOld', { alarmDescription: `An outbox item has waited more than ${after.toHumanString()} to be sent: the provider is down, or the sender and the reconciler fail. See their logs.`, metric: oldest, threshold: after.toMilliseconds(), comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD, evaluationPeriods: 1, treatMissingData: TreatMissingData.NOT_BREACHING }));
    addAlarm(new Alarm(this, 'OutboxRecordsFailed', { alarmDescription: 'The sender reported Outbox stream records failed (a provider not taking mail now, an error): retried by the stream, then its DLQ; the reconciler sends what stays PENDING.', metric: failedRecords, ...once }));
    const g = (title: string, left: IMetric[]) => new GraphWidget({ title, left, width: 12, height: 6 });
    return [
      [g('Outbox deliveries', WORKFLOW_METRICS.outbox.map((m) => metric(m === METRIC.outboxUnknown ? e.reconciler : e.sender, m, 'Sum'))), g('Oldest unsent outbox item (ms)', [oldest])],
      [g('Documents', [metric('worker', METRIC.documentsPublished, 'Sum'), metric(e.collector, METRIC.documentsCollected, 'Sum')])],
    ];
  }

  /**
   * FAILED items from both the sender and the reconciler: each marks an item FAILED when the
   * provider refuses it for good (the reconciler when it delivers what the stream left PENDING).
   * FILL(…, 0): an emitter that failed nothing publishes no point, and a sum of two series has no
   * point where either lacks one, so one alone failing items would never breach.
   */
  private failedItems(e: NonNullable<WorkflowMonitoringProps['effects']>, metric: (service: string, name: string, statistic: string) => Metric): MathExpression {
    return new MathExpression({
      expression: 'FILL(sender, 0) + FILL(reconciler, 0)',
      usingMetrics: { sender: metric(e.sender, METRIC.outboxFailed, 'Sum'), reconciler: metric(e.reconciler, METRIC.outboxFailed, 'Sum') },
      label: 'FAILED outbox items',
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
  const topic = new Topic(scope, 'AlarmTopic', { displayName: `${stack.stackName} alarms`, masterKey: key, enforceSSL: true });
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
