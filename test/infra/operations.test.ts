// tier: full
/**
 * Operations: the alarms an on-call engineer is paged by, the dashboard, and the outputs the
 * CLI's ops commands read.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Annotations, Match, type Template } from 'aws-cdk-lib/assertions';
import { EventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FencedWorkflow } from '../../infra/constructs/fenced-workflow.js';
import { OUTPUTS } from '../../infra/stack.js';
import { METRIC } from '../../lib/workflow/index.js';
import { logicalId, PROJECT_ROOT, templateOf } from './support.js';

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

/** The workflow's functions: every function but the sandbox provider, a stand-in that publishes no metric. */
const workflowFunctions = (t: Template, stack: { workflow: FencedWorkflow }) => {
  const sandbox = stack.workflow.effects.sandbox;
  return Object.entries(t.findResources('AWS::Lambda::Function'))
    .filter(([id]) => sandbox === undefined || id !== logicalId(sandbox.provider.fn))
    .map(([, f]) => f);
};

const alarmOn = (metricName: string, dimension: Record<string, unknown>) =>
  alarms.filter((a) => a.MetricName === metricName && JSON.stringify(a.Dimensions) === JSON.stringify([dimension]));

describe('alarms', () => {
  it.each(['scheduleDeadLetterQueue', 'senderDeadLetterQueue'] as const)('%s (services send to it): each new message alarms, on NumberOfMessagesSent, however many are already there', (q) => {
    const queue = q === 'senderDeadLetterQueue' ? w.effects.senderDeadLetterQueue : w[q];
    const found = alarmOn('NumberOfMessagesSent', { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(queue), 'QueueName'] } });
    expect(found).toEqual([expect.objectContaining({ Namespace: 'AWS/SQS', Statistic: 'Sum', Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', EvaluationPeriods: 1 })]);
  });

  it("the work queue's DLQ (SQS's redrive policy moves messages there, which NumberOfMessagesSent does not count): a rise of its visible count alarms", () => {
    const queueName = JSON.stringify({ 'Fn::GetAtt': [logicalId(w.deadLetterQueue), 'QueueName'] });
    const found = alarms.filter((a) => JSON.stringify(a.Metrics ?? []).includes(queueName));
    expect(found).toHaveLength(1);
    const metrics = found[0]!.Metrics as { Id: string; Expression?: string; MetricStat?: { Metric: { MetricName: string } } }[];
    expect(metrics.find((m) => m.Expression !== undefined)?.Expression).toBe('DIFF(FILL(visible, 0))');
    expect(metrics.find((m) => m.Id === 'visible')?.MetricStat?.Metric.MetricName).toBe('ApproximateNumberOfMessagesVisible');
    expect(found[0]).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', EvaluationPeriods: 2, DatapointsToAlarm: 1 });
  });

  it('no alarm latches on a dead-letter queue holding messages (visible count at or above a threshold stays in ALARM for the 14 days they are kept)', () => {
    for (const q of [w.deadLetterQueue, w.scheduleDeadLetterQueue, w.effects.senderDeadLetterQueue]) {
      expect(alarmOn('ApproximateNumberOfMessagesVisible', { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(q), 'QueueName'] } })).toEqual([]);
    }
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

  it('a failed record alarms on the first one (the worker reports failures per record, so Errors stays 0)', () => {
    const found = alarmOn(METRIC.recordsFailed, { Name: 'service', Value: 'worker' });
    expect(found).toEqual([
      expect.objectContaining({ Namespace: 'FencedWorkflow', Statistic: 'Sum', Period: 300, Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', EvaluationPeriods: 1, TreatMissingData: 'notBreaching' }),
    ]);
  });

  /** The alarm on `name` summed over the sender and the reconciler (each sends, under its own service). */
  const summedAlarm = (name: string) => {
    const of = (service: string) => ({ MetricStat: { Metric: { MetricName: name, Namespace: 'FencedWorkflow', Dimensions: [{ Name: 'service', Value: service }] }, Period: 300, Stat: 'Sum' } });
    return expect.objectContaining({
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
      Metrics: [
        expect.objectContaining({ Expression: 'FILL(sender, 0) + FILL(reconciler, 0)' }),
        expect.objectContaining({ Id: 'sender', ...of('sender'), ReturnData: false }),
        expect.objectContaining({ Id: 'reconciler', ...of('reconciler'), ReturnData: false }),
      ],
    });
  };
  const alarmsOn = (name: string) => alarms.filter((a) => a.MetricName === name || JSON.stringify(a.Metrics ?? []).includes(`"MetricName":"${name}"`));

  it('an UNKNOWN outbox item alarms on the first one, whether the sender (a final ambiguous answer) or the reconciler marked it', () => {
    expect(alarmsOn(METRIC.outboxUnknown)).toEqual([summedAlarm(METRIC.outboxUnknown)]);
  });

  it('a FAILED outbox item alarms on the first one, whether the sender or the reconciler marked it, and the description says what to do', () => {
    const found = alarmsOn(METRIC.outboxFailed);
    expect(found).toEqual([summedAlarm(METRIC.outboxFailed)]);
    expect(found[0]!.AlarmDescription).toMatch(/FAILED.*put it back to PENDING/);
  });

  it("a send held by the account's state alarms on the first one in 5 minutes, from the sender or the reconciler, and says the items resume by themselves once it is fixed", () => {
    const found = alarmsOn(METRIC.outboxHeld);
    expect(found).toEqual([summedAlarm(METRIC.outboxHeld)]);
    expect(found[0]!.AlarmDescription).toMatch(/paused.*sandbox.*unverified identity/);
    expect(found[0]!.AlarmDescription).toMatch(/Fix the account.*sent by themselves once it lifts/);
  });

  it.each([
    [METRIC.outboxBounced, /bounced or rejected.*Fix the address.*over 5% SES reviews the account/],
    [METRIC.outboxComplained, /spam.*stop mailing them.*complaint rate passes 0\.1%/],
  ])("%s: any in an hour alarms, on the recorder's metric, and the description says what to do and SES's threshold", (name, description) => {
    const found = alarmsOn(name);
    expect(found).toEqual([
      expect.objectContaining({
        Namespace: 'FencedWorkflow',
        Dimensions: [{ Name: 'service', Value: 'recorder' }],
        Statistic: 'Sum',
        Period: 3600,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
        AlarmDescription: expect.stringMatching(description),
      }),
    ]);
  });

  it("the throttled sends alarm on nothing (each item is deferred and retried by itself; OutboxUnsentTooOld catches a throttle that never ends)", () => {
    expect(alarmsOn(METRIC.outboxThrottled)).toEqual([]);
  });

  it("the docs' alarm figures are the template's: docs/deploy.md's count, alarm metrics and price ($0.10 per standard alarm metric), README's count", () => {
    const metrics = alarms.reduce((n, a) => n + (Array.isArray(a.Metrics) ? (a.Metrics as { MetricStat?: unknown }[]).filter((m) => m.MetricStat !== undefined).length : 1), 0);
    const flat = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8').replace(/\s+/g, ' ');
    // The cost command's line for the invoice stack, as docs/deploy.md shows it.
    const deploy = /CloudWatch alarms \((\d+)\) (\d+) alarm metrics \$([\d.]+)/.exec(flat('docs/deploy.md'));
    expect(deploy?.slice(1)).toEqual([String(alarms.length), String(metrics), (metrics * 0.1).toFixed(2)]);
    expect(flat('README.md')).toContain(`the dashboard, ${alarms.length} alarms,`);
  });

  it.each(['worker', 'sweeper', 'starter'] as const)('%s: any throttled invocation alarms', (fn) => {
    const found = alarmOn('Throttles', { Name: 'FunctionName', Value: { Ref: logicalId(w[fn].fn) } });
    expect(found).toEqual([expect.objectContaining({ Namespace: 'AWS/Lambda', Statistic: 'Sum', Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' })]);
  });

  it('a work message older than 15 minutes alarms (nobody is receiving, or it keeps failing)', () => {
    const found = alarmOn('ApproximateAgeOfOldestMessage', { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(w.queue), 'QueueName'] } });
    expect(found).toEqual([expect.objectContaining({ Namespace: 'AWS/SQS', Statistic: 'Maximum', Threshold: 900, ComparisonOperator: 'GreaterThanThreshold' })]);
  });

  it('with no alarmTopicArn the stack creates a KMS-encrypted, TLS-only topic that CloudWatch may publish to, outputs it, and every alarm notifies it', () => {
    const topics = template.findResources('AWS::SNS::Topic');
    expect(Object.keys(topics)).toEqual([logicalId(w.monitoring.node.findChild('AlarmTopic'))]);
    const topicId = Object.keys(topics)[0]!;
    const keyRef = (Object.values(topics)[0]!.Properties as Props).KmsMasterKeyId as { 'Fn::GetAtt': [string, string] };
    const key = template.toJSON().Resources[keyRef['Fn::GetAtt'][0]];
    expect(key.Type).toBe('AWS::KMS::Key');
    expect(key.Properties.EnableKeyRotation).toBe(true);
    // CloudWatch cannot publish to a topic under the AWS managed key; this key lets it, for this account's alarms only.
    expect(key.Properties.KeyPolicy.Statement).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Effect: 'Allow',
          Principal: { Service: 'cloudwatch.amazonaws.com' },
          Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          Condition: expect.objectContaining({ StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } }),
        }),
      ]),
    );
    const topicPolicy = Object.values(template.findResources('AWS::SNS::TopicPolicy')).find((p) => JSON.stringify(p.Properties.Topics) === JSON.stringify([{ Ref: topicId }]));
    expect(topicPolicy?.Properties.PolicyDocument.Statement).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        expect.objectContaining({ Effect: 'Allow', Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: 'sns:Publish', Condition: expect.objectContaining({ StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } }) }),
      ]),
    );
    for (const a of alarms) {
      expect(a.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(a.OKActions).toEqual([{ Ref: topicId }]);
    }
    expect((template.toJSON().Outputs as Record<string, { Value: unknown }>)[OUTPUTS.alarmTopicArn]!.Value).toEqual({ Ref: topicId });
  });

  it('with alarmTopicArn every alarm notifies that topic, on alarm and on OK, and no topic is created', () => {
    const topic = 'arn:aws:sns:eu-west-1:111111111111:oncall';
    const withTopic = Object.values(templateOf({ context: { alarmTopicArn: topic, unfinishedJobAlarmMinutes: 30 } }).template.findResources('AWS::CloudWatch::Alarm'));
    expect(withTopic.length).toBe(alarms.length);
    for (const a of withTopic) {
      expect(a.Properties.AlarmActions).toEqual([topic]);
      expect(a.Properties.OKActions).toEqual([topic]);
    }
    expect(withTopic.find((a) => a.Properties.MetricName === METRIC.oldestUnfinishedJobAgeMs)?.Properties.Threshold).toBe(30 * 60_000);
    const given = templateOf({ context: { alarmTopicArn: topic } }).template;
    expect(given.findResources('AWS::SNS::Topic')).toEqual({});
    expect((given.toJSON().Outputs as Record<string, { Value: unknown }>)[OUTPUTS.alarmTopicArn]!.Value).toBe(topic);
  });

  it('with alarmTopicArn the deploy asserts the topic is in the stack\'s region, and synth warns of no unresolved environment', () => {
    const topic = 'arn:aws:sns:eu-west-1:111111111111:oncall';
    const { template, stack } = templateOf({ context: { alarmTopicArn: topic } });
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('unresolved environment'))).toEqual([]);
    const rules = (template.toJSON() as { Rules?: Record<string, { Assertions: { Assert: unknown; AssertDescription: string }[] }> }).Rules ?? {};
    const assertions = Object.values(rules).flatMap((r) => r.Assertions);
    expect(assertions).toContainEqual({ Assert: { 'Fn::Equals': ['eu-west-1', { Ref: 'AWS::Region' }] }, AssertDescription: expect.stringContaining('alarmTopicArn') });
  });
});

describe('the alarm topic', () => {
  it("is named for its stack; a stack name of 128 characters (the longest allowed) still synthesizes, its topic's display name cut to SNS's 100", () => {
    const topicOf = (t: Template) => Object.values(t.findResources('AWS::SNS::Topic'))[0]!.Properties as { DisplayName: string };
    expect(topicOf(templateOf().template).DisplayName).toBe('FencedWorkflow alarms');
    const long = `F${'w'.repeat(127)}`;
    const name = topicOf(templateOf({ stackName: long }).template).DisplayName;
    expect(name).toHaveLength(100);
    expect(name).toBe(`${long.slice(0, 93)} alarms`);
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

  it('graphs each outbox outcome summed over the sender and the reconciler, the waits beside the bounces and complaints, and the new alarms on the status widget', () => {
    // The body is a Fn::Join of JSON text and references, each reference inside a JSON string: read it with each one as X.
    const parts = (Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]!.Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
    const dashboard = JSON.parse(parts.map((p) => (typeof p === 'string' ? p : 'X')).join('')) as { widgets: { properties: { title?: string; metrics?: unknown[][] } }[] };
    const graphs = dashboard.widgets.map((x) => x.properties);
    const graph = (title: RegExp) => graphs.find((g) => title.test(g.title ?? ''))!;
    const deliveries = JSON.stringify(graph(/^Outbox deliveries/).metrics);
    for (const name of [METRIC.outboxSent, METRIC.outboxFailed, METRIC.outboxAmbiguous, METRIC.outboxUnknown]) {
      for (const service of ['sender', 'reconciler']) expect(deliveries, `${name} ${service}`).toContain(`"${name}","service","${service}"`);
      expect(deliveries).toContain(`FILL(${name.toLowerCase()}Sender, 0) + FILL(${name.toLowerCase()}Reconciler, 0)`);
    }
    const provider = JSON.stringify(graph(/^Provider/).metrics);
    for (const name of [METRIC.outboxThrottled, METRIC.outboxHeld]) for (const service of ['sender', 'reconciler']) expect(provider).toContain(`"${name}","service","${service}"`);
    for (const name of [METRIC.outboxBounced, METRIC.outboxComplained]) expect(provider).toContain(`"${name}","service","recorder",{"period":3600,"stat":"Sum"}`);
    for (const id of ['OutboxHeld', 'OutboxBounced', 'OutboxComplained']) expect(body).toContain(logicalId(w.monitoring.node.findChild(id)));
  });

  it('labels each dead-letter queue on its widget by name', () => {
    for (const q of ['DeadLetterQueue', 'ScheduleDeadLetterQueue']) expect(body).toContain(`\\"label\\":\\"${q}\\"`);
  });

  it.each([
    ['aws', 'eu-west-1', 'https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#dashboards/dashboard/'],
    ['aws-cn', 'cn-north-1', 'https://console.amazonaws.cn/cloudwatch/home?region=cn-north-1#dashboards/dashboard/'],
    ['aws-us-gov', 'us-gov-west-1', 'https://console.amazonaws-us-gov.com/cloudwatch/home?region=us-gov-west-1#dashboards/dashboard/'],
  ])('the dashboard URL output opens the console of the partition it is deployed in: %s', (partition, region, prefix) => {
    const t = template.toJSON() as { Outputs: Record<string, { Value: unknown }>; Conditions?: Record<string, unknown> };
    const dashboard = logicalId(w.monitoring.dashboard);
    expect(evaluate(t.Outputs[OUTPUTS.dashboardUrl]!.Value, { partition, region, conditions: t.Conditions ?? {}, refs: { [dashboard]: 'fenced-dash' } })).toBe(`${prefix}fenced-dash`);
  });

  it('shows the queues, the dead-letter queues, function errors and the alarms', () => {
    for (const m of ['ApproximateNumberOfMessagesVisible', 'ApproximateAgeOfOldestMessage', 'Errors', 'Throttles', 'Duration']) expect(body).toContain(m);
    expect(body).toContain('\\"alarms\\"');
  });

  it('a second copy under another stack name publishes, graphs and alarms on a namespace named after it, with no setting', () => {
    const { template: t, stack } = templateOf({ stackName: 'FencedWorkflowStaging' });
    const fns = workflowFunctions(t, stack);
    for (const f of fns) expect(f.Properties.Environment.Variables.POWERTOOLS_METRICS_NAMESPACE).toBe('FencedWorkflowStaging');
    const custom = Object.values(t.findResources('AWS::CloudWatch::Alarm')).filter((a) => a.Properties.MetricName === METRIC.oldestUnfinishedJobAgeMs);
    expect(custom.map((a) => a.Properties.Namespace)).toEqual(['FencedWorkflowStaging']);
    expect(JSON.stringify(t.toJSON())).not.toMatch(/"FencedWorkflow"|\\"FencedWorkflow\\"/);
  });

  it('a fork in the same account publishes, graphs and alarms on its own namespace', () => {
    const { template: t, stack } = templateOf({ stackName: 'Fork', context: { metricsNamespace: 'ForkWorkflow' } });
    const text = JSON.stringify(t.toJSON());
    expect(text).toContain('ForkWorkflow');
    expect(text).not.toMatch(/"FencedWorkflow"|\\"FencedWorkflow\\"/);
    const fns = workflowFunctions(t, stack);
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

  it("the worker's event source mapping id is an output, and pausing means disabling it: never throttling the worker", () => {
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown; Description?: string }>;
    const mapping = w.worker.fn.node.findAll().find((c) => c instanceof EventSourceMapping)!;
    expect(outputs[OUTPUTS.workerEventSourceMapping]!.Value).toEqual({ Ref: logicalId(mapping) });
    expect(outputs[OUTPUTS.workerEventSourceMapping]!.Description).toMatch(/pause.*npm run cli -- pause/);
    // An SQS poller keeps receiving for a throttled function; every receive counts toward maxReceiveCount.
    for (const o of Object.values(outputs)) expect(o.Description ?? '').not.toMatch(/pause: put-function-concurrency/);
    expect(outputs[OUTPUTS.workerFunction]!.Description).toMatch(/never put-function-concurrency 0/);
  });
});

/** Just enough of CloudFormation's intrinsics to resolve an output for one partition and region. */
function evaluate(v: unknown, env: { partition: string; region: string; conditions: Record<string, unknown>; refs: Record<string, string> }): unknown {
  const ev = (x: unknown): unknown => evaluate(x, env);
  if (Array.isArray(v)) return v.map(ev);
  if (typeof v !== 'object' || v === null) return v;
  const o = v as Record<string, unknown>;
  if ('Ref' in o) {
    const ref = o.Ref as string;
    const pseudo: Record<string, string> = { 'AWS::Partition': env.partition, 'AWS::Region': env.region, 'AWS::URLSuffix': env.partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com' };
    const value = pseudo[ref] ?? env.refs[ref];
    if (value === undefined) throw new Error(`unresolved Ref ${ref}`);
    return value;
  }
  if ('Fn::Join' in o) {
    const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
    return (ev(parts) as unknown[]).join(sep);
  }
  if ('Fn::Equals' in o) {
    const [a, b] = ev(o['Fn::Equals']) as [unknown, unknown];
    return a === b;
  }
  if ('Fn::If' in o) {
    const [cond, yes, no] = o['Fn::If'] as [string, unknown, unknown];
    return ev(env.conditions[cond]) === true ? ev(yes) : ev(no);
  }
  if ('Fn::Not' in o) return !(ev((o['Fn::Not'] as unknown[])[0]) as boolean);
  if ('Fn::Or' in o) return (ev(o['Fn::Or']) as boolean[]).some(Boolean);
  if ('Condition' in o) return ev(env.conditions[o.Condition as string]);
  throw new Error(`cannot evaluate ${JSON.stringify(o).slice(0, 80)}`);
}
