/**
 * Operations: the alarms an on-call engineer is paged by, the dashboard, and the outputs the
 * CLI's ops commands read.
 */
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FencedWorkflow } from '../../infra/constructs/fenced-workflow.js';
import { OUTPUTS } from '../../infra/stack.js';
import { METRIC } from '../../lib/workflow/index.js';
import { logicalId, templateOf } from './support.js';

type Props = Record<string, unknown>;
let template: Template;
let w: FencedWorkflow;
let alarms: Props[];
beforeAll(() => {
  const built = templateOf();
  template = built.template;
  w = built.stack.workflow;
  alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties as Props);
});

const alarmOn = (metricName: string, dimension: Record<string, unknown>) =>
  alarms.filter((a) => a.MetricName === metricName && JSON.stringify(a.Dimensions) === JSON.stringify([dimension]));

describe('alarms', () => {
  it.each(['deadLetterQueue', 'scheduleDeadLetterQueue'] as const)('%s: one message is enough to alarm', (q) => {
    const found = alarmOn('ApproximateNumberOfMessagesVisible', { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(w[q]), 'QueueName'] } });
    expect(found).toEqual([
      expect.objectContaining({ Namespace: 'AWS/SQS', Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', EvaluationPeriods: 1 }),
    ]);
  });

  it.each(['worker', 'sweeper', 'starter'] as const)('%s: any invocation error alarms', (fn) => {
    const found = alarmOn('Errors', { Name: 'FunctionName', Value: { Ref: logicalId(w[fn].fn) } });
    expect(found).toEqual([
      expect.objectContaining({ Namespace: 'AWS/Lambda', Statistic: 'Sum', Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' }),
    ]);
  });

  it("a job unfinished for more than an hour alarms, on the sweeper's OldestUnfinishedJobAgeMs gauge", () => {
    const found = alarmOn(METRIC.oldestUnfinishedJobAgeMs, { Name: 'service', Value: 'sweeper' });
    expect(found).toEqual([
      expect.objectContaining({ Namespace: 'FencedWorkflow', Statistic: 'Maximum', Threshold: 3_600_000, ComparisonOperator: 'GreaterThanThreshold' }),
    ]);
  });

  it('a sweeper that stops running alarms (missing invocations breach)', () => {
    const found = alarmOn('Invocations', { Name: 'FunctionName', Value: { Ref: logicalId(w.sweeper.fn) } });
    expect(found).toEqual([expect.objectContaining({ ComparisonOperator: 'LessThanThreshold', Threshold: 1, TreatMissingData: 'breaching' })]);
  });

  it('alarms have no actions unless a topic is given; with alarmTopicArn every alarm notifies it, on alarm and on OK', () => {
    for (const a of alarms) expect(a.AlarmActions).toBeUndefined();
    const topic = 'arn:aws:sns:eu-west-1:111111111111:oncall';
    const withTopic = Object.values(templateOf({ context: { alarmTopicArn: topic, unfinishedJobAlarmMinutes: 30 } }).template.findResources('AWS::CloudWatch::Alarm'));
    expect(withTopic.length).toBe(alarms.length);
    for (const a of withTopic) {
      expect(a.Properties.AlarmActions).toEqual([topic]);
      expect(a.Properties.OKActions).toEqual([topic]);
    }
    expect(withTopic.find((a) => a.Properties.MetricName === METRIC.oldestUnfinishedJobAgeMs)?.Properties.Threshold).toBe(30 * 60_000);
  });
});

describe('dashboard', () => {
  let body: string;
  beforeAll(() => {
    body = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]?.Properties.DashboardBody);
  });

  it('shows every metric the handlers emit (lib/workflow/ports.ts METRIC), in the FencedWorkflow namespace', () => {
    for (const name of Object.values(METRIC)) expect(body, name).toContain(`\\"${name}\\"`);
    expect(body).toContain('\\"FencedWorkflow\\"');
  });

  it('shows the queues, the dead-letter queues, function errors and the alarms', () => {
    for (const m of ['ApproximateNumberOfMessagesVisible', 'ApproximateAgeOfOldestMessage', 'Errors', 'Throttles', 'Duration']) expect(body).toContain(m);
    expect(body).toContain('\\"alarms\\"');
  });

  it('a second copy under another stack name publishes, graphs and alarms on a namespace named after it, with no setting', () => {
    const { template: t } = templateOf({ stackName: 'FencedWorkflowStaging' });
    const fns = Object.values(t.findResources('AWS::Lambda::Function'));
    for (const f of fns) expect(f.Properties.Environment.Variables.POWERTOOLS_METRICS_NAMESPACE).toBe('FencedWorkflowStaging');
    const custom = Object.values(t.findResources('AWS::CloudWatch::Alarm')).filter((a) => a.Properties.MetricName === METRIC.oldestUnfinishedJobAgeMs);
    expect(custom.map((a) => a.Properties.Namespace)).toEqual(['FencedWorkflowStaging']);
    expect(JSON.stringify(t.toJSON())).not.toMatch(/"FencedWorkflow"|\\"FencedWorkflow\\"/);
  });

  it('a fork in the same account publishes, graphs and alarms on its own namespace', () => {
    const { template: t } = templateOf({ stackName: 'Fork', context: { metricsNamespace: 'ForkWorkflow' } });
    const text = JSON.stringify(t.toJSON());
    expect(text).toContain('ForkWorkflow');
    expect(text).not.toMatch(/"FencedWorkflow"|\\"FencedWorkflow\\"/);
    const fns = Object.values(t.findResources('AWS::Lambda::Function'));
    for (const f of fns) expect(f.Properties.Environment.Variables.POWERTOOLS_METRICS_NAMESPACE).toBe('ForkWorkflow');
    const custom = Object.values(t.findResources('AWS::CloudWatch::Alarm')).filter((a) => a.Properties.MetricName === METRIC.oldestUnfinishedJobAgeMs);
    expect(custom.map((a) => a.Properties.Namespace)).toEqual(['ForkWorkflow']);
  });
});

describe('outputs', () => {
  it('table names, stream, queue URLs, dashboard URL, epoch and starter: what the CLI ops commands read', () => {
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(Object.keys(outputs).sort()).toEqual(Object.values(OUTPUTS).sort());
    expect(outputs[OUTPUTS.leases]!.Value).toEqual({ Ref: logicalId(w.tables.leases) });
    expect(outputs[OUTPUTS.fences]!.Value).toEqual({ Ref: logicalId(w.tables.fences) });
    expect(outputs[OUTPUTS.queueUrl]!.Value).toEqual({ Ref: logicalId(w.queue) });
    expect(outputs[OUTPUTS.fenceEpoch]!.Value).toBe('0');
    expect(JSON.stringify(outputs[OUTPUTS.dashboardUrl]!.Value)).toContain('#dashboards/dashboard/');
  });
});
