/**
 * The deployable stack: one FencedWorkflow running this project's invoice workload, plus the
 * outputs the CLI's ops commands read. Settings come from CDK context (cdk.json, or `-c key=value`):
 *
 * | context key                 | meaning                                              | default              |
 * | --------------------------- | ---------------------------------------------------- | -------------------- |
 * | `fenceEpoch`                | epoch of every generation; raise after a restore     | required (cdk.json 0)|
 * | `leaseMode`                 | `wall-clock` or `version-watch`                      | `wall-clock`         |
 * | `sweepIntervalMinutes`      | sweeper rate                                         | 1                    |
 * | `starterSchedule`           | EventBridge Scheduler expression for the starter     | `cron(0 2 1 * ? *)`  |
 * | `invoiceCustomers`          | customers in the sample invoice run                  | 1000                 |
 * | `unfinishedJobAlarmMinutes` | alarm when a job stays unfinished longer than this   | 60                   |
 * | `alarmTopicArn`             | SNS topic every alarm notifies                       | none                 |
 * | `metricsNamespace`          | CloudWatch namespace (a fork in the same account)    | `FencedWorkflow`     |
 * | `adoptTables`               | restored Jobs/Invoices tables to use (DR runbook)    | none                 |
 * | `stackName` (infra/app.ts)  | stack name; a fork sets its own                      | `FencedWorkflow`     |
 *
 * `adoptTables` is an object (in cdk.json) or its JSON (with -c):
 * `{"jobs": {"tableName": "..."}, "invoices": {"tableName": "...", "tableStreamArn": "..."}}`.
 */
import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { FencedWorkflow, TABLE_IDS, type AdoptedTable, type FencedWorkflowProps } from './constructs/fenced-workflow.js';
import { ConfigError } from '../lib/protocol/index.js';
import { TABLE_NAME, TABLE_ROLES } from '../lib/workflow/index.js';
import { OUTPUTS } from './outputs.js';

/** Stack output keys (infra/outputs.ts, free of CDK imports for the CLI). */
export { OUTPUTS };

export class FencedWorkflowStack extends Stack {
  readonly workflow: FencedWorkflow;

  constructor(scope: Construct, id: string, props: StackProps = {}) {
    super(scope, id, {
      description: 'Fenced workflow: DynamoDB leases and fences, Lambda workers, an SQS work queue, a scheduled sweeper',
      ...props,
    });
    const ctx = (key: string): string | undefined => {
      const v: unknown = this.node.tryGetContext(key);
      return v === undefined || v === null || v === '' ? undefined : String(v);
    };
    const num = (key: string): number | undefined => {
      const v = ctx(key);
      if (v === undefined) return undefined;
      const n = Number(v);
      if (!Number.isSafeInteger(n) || n < 0) throw new ConfigError(key, `context ${key} must be a non-negative integer, got "${v}"`);
      return n;
    };
    const fenceEpoch = num('fenceEpoch');
    if (fenceEpoch === undefined) {
      throw new ConfigError('fenceEpoch', 'context fenceEpoch is required (cdk.json has 0; after a restore raise it, see docs/runbook-dr.md)');
    }
    const leaseMode = ctx('leaseMode');
    if (leaseMode !== undefined && leaseMode !== 'wall-clock' && leaseMode !== 'version-watch') {
      throw new ConfigError('leaseMode', `context leaseMode must be "wall-clock" or "version-watch", got "${leaseMode}"`);
    }
    const sweepMinutes = num('sweepIntervalMinutes');
    const alarmMinutes = num('unfinishedJobAlarmMinutes');
    const customers = num('invoiceCustomers');
    const starterSchedule = ctx('starterSchedule');
    const alarmTopicArn = ctx('alarmTopicArn');
    const metricsNamespace = ctx('metricsNamespace');
    const adoptTables = parseAdoptTables(this.node.tryGetContext('adoptTables'));

    this.workflow = new FencedWorkflow(this, 'Workflow', {
      fenceEpoch,
      worker: { entry: 'functions/worker.ts' },
      ...(leaseMode ? { leaseMode } : {}),
      ...(sweepMinutes !== undefined ? { sweepInterval: Duration.minutes(sweepMinutes) } : {}),
      ...(alarmMinutes !== undefined ? { unfinishedJobAlarmAfter: Duration.minutes(alarmMinutes) } : {}),
      ...(customers !== undefined ? { invoiceCustomers: customers } : {}),
      ...(starterSchedule ? { starterSchedule: ScheduleExpression.expression(starterSchedule) } : {}),
      ...(alarmTopicArn ? { alarmTopic: Topic.fromTopicArn(this, 'AlarmTopic', alarmTopicArn) } : {}),
      ...(adoptTables ? { adoptTables } : {}),
      ...(metricsNamespace ? { metricsNamespace } : {}),
    });

    const w = this.workflow;
    for (const role of TABLE_ROLES) {
      new CfnOutput(this, OUTPUTS[role], { value: w.activeTables[role].tableName, description: `${TABLE_IDS[role]} table name (the one the functions use)` });
    }
    const stream = w.activeTables.invoices.tableStreamArn;
    if (stream !== undefined) new CfnOutput(this, OUTPUTS.invoicesStreamArn, { value: stream, description: 'Invoices stream (invariant checker, outbox)' });
    new CfnOutput(this, OUTPUTS.queueUrl, { value: w.queue.queueUrl, description: 'Work queue URL (send {"jobId": "..."})' });
    new CfnOutput(this, OUTPUTS.deadLetterQueueArn, { value: w.deadLetterQueue.queueArn, description: 'Work queue DLQ (redrive: aws sqs start-message-move-task --source-arn)' });
    new CfnOutput(this, OUTPUTS.dashboardUrl, { value: w.monitoring.dashboardUrl, description: 'CloudWatch dashboard' });
    new CfnOutput(this, OUTPUTS.fenceEpoch, { value: String(fenceEpoch), description: 'Epoch the deployed functions issue generations in' });
    new CfnOutput(this, OUTPUTS.workerFunction, { value: w.worker.fn.functionName, description: 'Worker (pause: put-function-concurrency 0)' });
    new CfnOutput(this, OUTPUTS.sweeperFunction, { value: w.sweeper.fn.functionName, description: 'Sweeper (pause: put-function-concurrency 0)' });
    new CfnOutput(this, OUTPUTS.starterFunction, { value: w.starter.fn.functionName, description: 'Starter (invoke to start a run now)' });
  }
}

function parseAdoptTables(raw: unknown): FencedWorkflowProps['adoptTables'] {
  if (raw === undefined || raw === null || raw === '') return undefined;
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw new ConfigError('adoptTables', `context adoptTables must be JSON like {"jobs":{"tableName":"..."}}, got ${raw}`);
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ConfigError('adoptTables', 'context adoptTables must be an object keyed by table role');
  const out: Record<string, AdoptedTable> = {};
  for (const [role, v] of Object.entries(value)) {
    if (!(TABLE_ROLES as string[]).includes(role)) throw new ConfigError('adoptTables', `context adoptTables: unknown table role "${role}" (one of ${TABLE_ROLES.join(', ')})`);
    const t = (typeof v === 'string' ? { tableName: v } : v) as Partial<AdoptedTable> | null;
    if (t === null || typeof t.tableName !== 'string' || !TABLE_NAME.test(t.tableName)) {
      throw new ConfigError(`adoptTables.${role}.tableName`, `context adoptTables.${role}.tableName must be a DynamoDB table name`);
    }
    out[role] = { tableName: t.tableName, ...(typeof t.tableStreamArn === 'string' ? { tableStreamArn: t.tableStreamArn } : {}) };
  }
  return out;
}
