/**
 * The deployable stack: one FencedWorkflow running one registered workload (`-c workload=NAME`,
 * lib/workloads/index.ts), plus the outputs the CLI's ops commands read. The stack is its
 * workload: which effects exist, the unit-size cap, the schedule, the documents' folder all come
 * from the descriptor. Settings come from CDK context (cdk.json, or `-c key=value`):
 *
 * | context key                 | meaning                                              | default              |
 * | --------------------------- | ---------------------------------------------------- | -------------------- |
 * | `workload`                  | the registered workload the stack runs               | DEFAULT_WORKLOAD     |
 * | `fenceEpoch`                | epoch of every generation; raise after a restore     | required (cdk.json 0)|
 * | `leaseMode`                 | `wall-clock` or `version-watch`                      | `wall-clock`         |
 * | `sweepIntervalMinutes`      | sweeper rate                                         | 1                    |
 * | `starterSchedule`           | EventBridge Scheduler expression for the starter     | the workload's       |
 * | `scheduleRuns`              | `true`: the starter's schedule is enabled            | false (disabled)     |
 * | `runItems`                  | items in a run the payload does not size             | 1000                 |
 * | `unitSize`                  | items per fenced unit (at most the workload's cap)   | the workload's       |
 * | `shards`                    | shard jobs per run (npm run cli -- plan recommends)  | 1                    |
 * | `accountConcurrency`        | the account's Lambda concurrent executions           | 10 (a new account's) |
 * | `workerMaxConcurrency`      | worker event source maximum concurrency (>= shards)  | shards + 2, at least 10, within the account's room |
 * | `warmThroughput`            | per table: {"records":{"write":40000}} (the plan's)  | none (AWS defaults)  |
 * | `keepRetiredIndexes`        | `true` for the first deploy of an index replacement  | false                |
 * | `unfinishedJobAlarmMinutes` | alarm when a job stays unfinished longer than this   | 60                   |
 * | `alarmTopicArn`             | SNS topic every alarm notifies                       | none                 |
 * | `metricsNamespace`          | CloudWatch namespace (a fork in the same account)    | the stack name       |
 * | `adoptTables`               | restored Jobs/Records tables to use (DR runbook)     | none                 |
 * | `operatorRoleArn`           | role (ArnLike) that may update Leases/Fences: seal   | none                 |
 * | `senderAddress`             | From address of the emails (email workloads only)    | required if email    |
 * | `senderIdentity`            | existing SES identity to send as (name or ARN)       | none                 |
 * | `senderDomain`              | domain identity to create, with Easy DKIM            | none                 |
 * | `live`                      | `true`, or the targets that reach real recipients    | none: the sandbox    |
 * | `<target>Url`               | a live http target's endpoint: paymentsUrl...        | required if live     |
 * | `<target>SecretArn`         | a live http target's API key secret (complete ARN)   | one the stack creates|
 * | `sandboxProvider`           | {"declineShare":0.05,"throttleShare":0,"errorShare":0}| those shares         |
 * | `sendRatePerSecond`         | sends/s per sender or reconciler invocation          | none (unpaced)       |
 * | `stackName` (infra/app.ts)  | stack name; a fork sets its own                      | see stackNameFrom    |
 *
 * infra/context.ts checks each value at synth with the bound its handler enforces. A setting the
 * workload has no use for (an email setting for one that sends none, another workload's target)
 * is ignored with a synth warning naming it: one cdk.json serves the stacks of every workload.
 *
 * `adoptTables` is an object (in cdk.json) or its JSON (with -c):
 * `{"jobs": {"tableName": "..."}, "records": {"tableName": "...", "tableStreamArn": "..."}}`.
 */
import { Annotations, Arn, ArnFormat, Aws, CfnOutput, CfnRule, Duration, Fn, Stack, type StackProps } from 'aws-cdk-lib';
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import type { SenderIdentitySetting } from './constructs/external-effects.js';
import { FencedWorkflow } from './constructs/fenced-workflow.js';
import { TABLE_ROLES, type Workload } from '../lib/workflow/index.js';
import { ContextSettings } from './context.js';
import { OUTPUTS } from './outputs.js';

/** Output of a created domain identity's DKIM records: not among OUTPUTS, which every stack has and the CLI reads. */
export const SENDER_DKIM_OUTPUT = 'SenderDkimRecords';

/** Stack output keys (infra/outputs.ts, free of CDK imports for the CLI). */
export { OUTPUTS };

export interface FencedWorkflowStackProps extends StackProps {
  /**
   * The workload the stack runs, as registered (lib/workloads/index.ts).
   * @default context `workload`, or the registry's default
   */
  readonly workload?: Workload<any>;
}

export class FencedWorkflowStack extends Stack {
  readonly workflow: FencedWorkflow;

  constructor(scope: Construct, id: string, props: FencedWorkflowStackProps = {}) {
    const { workload: given, ...stackProps } = props;
    const settings = new ContextSettings((key) => scope.node.tryGetContext(key));
    const workload = given ?? settings.workload();
    super(scope, id, {
      // CloudFormation takes at most 1,024 characters.
      description: `Fenced workflow, workload ${workload.name} (${workload.description}): DynamoDB leases and fences, Lambda workers, an SQS work queue, a scheduled sweeper`.slice(0, 1024),
      ...stackProps,
    });
    const fenceEpoch = settings.fenceEpoch();
    const leaseMode = settings.leaseMode();
    const sweepMinutes = settings.sweepIntervalMinutes();
    const alarmMinutes = settings.unfinishedJobAlarmMinutes();
    const runItems = settings.runItems(workload);
    const unitSize = settings.unitSize(workload);
    const starterSchedule = settings.starterSchedule();
    const scheduleRuns = settings.scheduleRuns();
    const alarmTopicArn = settings.arn('alarmTopicArn');
    const metricsNamespace = settings.metricsNamespace();
    const adoptTables = settings.adoptTables();
    const operatorRoleArn = settings.arn('operatorRoleArn');
    const email = settings.email(workload);
    const live = settings.live(workload);
    const httpTargets = settings.httpTargets(workload, live);
    const httpCredentials = settings.httpCredentials(workload, live);
    const sandboxProvider = settings.sandboxProvider();
    for (const { key, why } of settings.unusedBy(workload)) Annotations.of(this).addWarningV2(`fenced-workflow:ignored-${key}`, `${key} is ignored: ${why}`);
    const sendRatePerSecond = settings.sendRatePerSecond();
    const shards = settings.shards();
    const workerMaxConcurrency = settings.workerMaxConcurrency();
    const accountConcurrency = settings.accountConcurrency();
    const warmThroughput = settings.warmThroughput();
    const keepRetiredIndexes = settings.keepRetiredIndexes();

    this.workflow = new FencedWorkflow(this, 'Workflow', {
      workload,
      fenceEpoch,
      ...(leaseMode ? { leaseMode } : {}),
      ...(sweepMinutes !== undefined ? { sweepInterval: Duration.minutes(sweepMinutes) } : {}),
      ...(alarmMinutes !== undefined ? { unfinishedJobAlarmAfter: Duration.minutes(alarmMinutes) } : {}),
      ...(runItems !== undefined ? { runItems } : {}),
      ...(unitSize !== undefined ? { unitSize } : {}),
      ...(starterSchedule ? { starterSchedule: ScheduleExpression.expression(starterSchedule) } : {}),
      scheduleRuns,
      ...(alarmTopicArn ? { alarmTopic: this.alarmTopicHere(alarmTopicArn) } : {}),
      ...(adoptTables ? { adoptTables } : {}),
      ...(metricsNamespace ? { metricsNamespace } : {}),
      ...(operatorRoleArn ? { counterWriters: [operatorRoleArn] } : {}),
      externalEffects: {
        ...(email ?? {}),
        liveTargets: live,
        httpTargets,
        httpCredentials,
        ...(sandboxProvider ? { sandboxProvider } : {}),
        ...(sendRatePerSecond !== undefined ? { sendRatePerSecond } : {}),
      },
      ...(shards !== undefined ? { shards } : {}),
      ...(workerMaxConcurrency !== undefined ? { workerMaxConcurrency } : {}),
      ...(accountConcurrency !== undefined ? { accountConcurrency } : {}),
      ...(warmThroughput ? { warmThroughput } : {}),
      keepRetiredIndexes,
    });

    const w = this.workflow;
    for (const role of TABLE_ROLES) {
      new CfnOutput(this, OUTPUTS[role], { value: w.activeTables[role].tableName, description: `${w.tableIds[role]} table name (the one the functions use)` });
    }
    const stream = w.activeTables.records.tableStreamArn;
    if (stream !== undefined) new CfnOutput(this, OUTPUTS.recordsStreamArn, { value: stream, description: 'Records stream (invariant checker)' });
    const bucket = w.effects.bucket;
    if (bucket !== undefined) new CfnOutput(this, OUTPUTS.documentsBucket, { value: bucket.bucketName, description: 'Documents bucket (the records point to their objects: documentKey + documentEtag)' });
    new CfnOutput(this, OUTPUTS.queueUrl, { value: w.queue.queueUrl, description: 'Work queue URL (send {"jobId": "..."})' });
    new CfnOutput(this, OUTPUTS.deadLetterQueueArn, { value: w.deadLetterQueue.queueArn, description: 'Work queue DLQ (redrive: aws sqs start-message-move-task --source-arn)' });
    new CfnOutput(this, OUTPUTS.dashboardUrl, { value: w.monitoring.dashboardUrl, description: 'CloudWatch dashboard' });
    new CfnOutput(this, OUTPUTS.alarmTopicArn, { value: w.monitoring.alarmTopic.topicArn, description: 'SNS topic every alarm notifies (subscribe to it: aws sns subscribe)' });
    new CfnOutput(this, OUTPUTS.fenceEpoch, { value: String(fenceEpoch), description: 'Epoch the deployed functions issue generations in' });
    new CfnOutput(this, OUTPUTS.workload, { value: workload.name, description: 'The workload this stack runs (lib/workloads/index.ts): the ops CLI seals its fences' });
    new CfnOutput(this, OUTPUTS.workerFunction, {
      value: w.worker.fn.functionName,
      description: 'Worker (to pause it, disable its event source mapping; never put-function-concurrency 0: a throttled SQS poller still counts receives toward the DLQ)',
    });
    new CfnOutput(this, OUTPUTS.workerEventSourceMapping, {
      value: w.workerEventSourceMappingId,
      description: "Worker's SQS event source mapping (pause: npm run cli -- pause --outputs FILE; resume: ... resume)",
    });
    new CfnOutput(this, OUTPUTS.sweeperFunction, {
      value: w.sweeper.fn.functionName,
      description: 'Sweeper (to hold it: reserved concurrency 0; each throttled sweep lands in the schedule DLQ after one interval)',
    });
    if (email !== undefined) this.senderOutputs(email.senderIdentity);
    new CfnOutput(this, OUTPUTS.starterFunction, { value: w.starter.fn.functionName, description: 'Starter (invoke to start a run now)' });
  }

  /**
   * A created domain identity: the DNS records that verify it and turn on its DKIM signing (SES
   * sends nothing as the domain until they resolve). An imported ARN: asserted, at deploy, to be
   * in the stack's account and region, where SES looks the From address up.
   */
  private senderOutputs(identity: SenderIdentitySetting): void {
    const records = this.workflow.effects.dkimRecords;
    if (records !== undefined) {
      new CfnOutput(this, SENDER_DKIM_OUTPUT, {
        value: Fn.join(' ; ', records.map((r) => Fn.join(' ', [r.name, 'CNAME', r.value]))),
        description: 'Easy DKIM: create these three CNAME records in the sender domain\'s DNS (name CNAME value ; ...); SES verifies the domain when they resolve',
      });
    }
    if (identity.kind === 'imported' && identity.arn !== undefined) {
      const arn = Arn.split(identity.arn, ArnFormat.SLASH_RESOURCE_NAME);
      new CfnRule(this, 'SenderIdentityInStackAccountAndRegion', {
        assertions: [
          {
            assert: Fn.conditionAnd(Fn.conditionEquals(arn.region, Aws.REGION), Fn.conditionEquals(arn.account, Aws.ACCOUNT_ID)),
            assertDescription: `senderIdentity ${identity.arn} is not in this stack's account and region: the sender names no identity ARN, so SES looks the From address up in its own account and region`,
          },
        ],
      });
    }
  }

  /**
   * The given alarm topic, which must be in the region the stack deploys to: CloudWatch alarm
   * actions and an EventBridge rule's SNS target reach no topic in another region. The stack is
   * environment-agnostic, so that is asserted at deploy (a CloudFormation rule), and the rule's
   * CDK warning that its target's environment differs from its own unresolved one is acknowledged
   * there (infra/constructs/guards.ts). Another account in the same region is allowed: the topic's
   * policy is its owner's (docs/deploy.md).
   */
  private alarmTopicHere(arn: string) {
    const region = Arn.split(arn, ArnFormat.NO_RESOURCE_NAME).region;
    new CfnRule(this, 'AlarmTopicInStackRegion', {
      assertions: [{ assert: Fn.conditionEquals(region, Aws.REGION), assertDescription: `alarmTopicArn ${arn} is in ${region}; deploy the stack there, or give a topic of the stack's region` }],
    });
    return Topic.fromTopicArn(this, 'AlarmTopic', arn);
  }
}
