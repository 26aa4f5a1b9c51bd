/**
 * Compute and messaging: runtime and architecture, logs, tracing, configuration handed to the
 * handlers, the work queue and its event source, the schedules and their dead-letter queues.
 */
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { Runtime } from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { FencedWorkflow, MAX_UNIT_SIZE, type FencedWorkflowProps } from '../../infra/constructs/fenced-workflow.js';
import { MAX_UNIT_SIZE as INVOICE_MAX_UNIT_SIZE } from '../../lib/workloads/invoices.js';
import { ENV, leaseSettingsFromEnv } from '../../lib/workflow/index.js';
import { arnOf, logicalId, tempDir, templateOf } from './support.js';

type Props = Record<string, unknown>;
let template: Template;
let w: FencedWorkflow;
let resources: Record<string, { Type: string; Properties: Props }>;
beforeAll(() => {
  const built = templateOf({ context: { fenceEpoch: 7 } });
  template = built.template;
  w = built.stack.workflow;
  resources = template.toJSON().Resources;
});

const FUNCTIONS = ['worker', 'sweeper', 'starter'] as const;
const props = (c: Parameters<typeof logicalId>[0]) => resources[logicalId(c)]!.Properties;
const fnProps = (name: (typeof FUNCTIONS)[number]) => props(w[name].fn);
const envOf = (name: (typeof FUNCTIONS)[number]) => (fnProps(name).Environment as { Variables: Record<string, unknown> }).Variables;

/** The newest Node.js runtime this aws-cdk-lib knows, found by name rather than written down. */
function newestNodeRuntime(): string {
  const names = Object.values(Runtime)
    .filter((r): r is Runtime => r instanceof Runtime && /^nodejs\d+\.x$/.test(r.name))
    .map((r) => r.name);
  return names.sort((a, b) => Number(b.match(/\d+/)![0]) - Number(a.match(/\d+/)![0]))[0]!;
}

describe('functions', () => {
  it.each(FUNCTIONS)('%s: the newest Node.js runtime in aws-cdk-lib, arm64, active tracing, memory and timeout chosen', (name) => {
    const p = fnProps(name);
    expect(p.Runtime).toBe(newestNodeRuntime());
    expect(p.Architectures).toEqual(['arm64']);
    expect(p.TracingConfig).toEqual({ Mode: 'Active' });
    expect(p.Handler).toBe('index.handler');
    expect(p.MemorySize).toBeGreaterThanOrEqual(128);
    expect(p.Timeout).toBeGreaterThan(3); // not Lambda's 3 s default
  });

  it.each(FUNCTIONS)('%s: JSON logs into its own log group with a retention (not the deprecated logRetention)', (name) => {
    const p = fnProps(name);
    expect(p.LoggingConfig).toEqual(
      expect.objectContaining({ LogFormat: 'JSON', LogGroup: { Ref: logicalId(w[name].logGroup) }, ApplicationLogLevel: 'INFO' }),
    );
    expect(props(w[name].logGroup).RetentionInDays).toBe(30);
    expect(template.findResources('Custom::LogRetention')).toEqual({});
  });

  it('only the worker may feed itself through the queue (continuations); loop detection stays on for the others', () => {
    expect(fnProps('worker').RecursiveLoop).toBe('Allow');
    expect(fnProps('sweeper').RecursiveLoop).toBe('Terminate');
    expect(fnProps('starter').RecursiveLoop).toBe('Terminate');
  });

  it("the unit size is bounded by the invoice workload's transaction (2 effects per customer + fence + checkpoint <= 100)", () => {
    expect(MAX_UNIT_SIZE).toBe(INVOICE_MAX_UNIT_SIZE);
    const build = (props: Partial<FencedWorkflowProps>) => () =>
      new FencedWorkflow(new Stack(new App({ outdir: tempDir('fenced-cdk-') })), 'Workflow', { fenceEpoch: 0, worker: { entry: 'functions/worker.ts' }, ...props });
    expect(build({ unitSize: MAX_UNIT_SIZE + 1 })).toThrow(/UNIT_SIZE must be an integer in \[1, 49\]/);
    expect(build({ staleAfter: Duration.seconds(31) })).toThrow(/staleAfter \(31000 ms\) must exceed the lease duration plus the clock-skew bound/);
  });

  it("version-watch: the worker's timeout must cover a full lease watch, or no worker could ever take over a dead holder's job", () => {
    const build = (props: Partial<FencedWorkflowProps>) => () =>
      new FencedWorkflow(new Stack(new App({ outdir: tempDir('fenced-cdk-') })), 'Workflow', { fenceEpoch: 0, worker: { entry: 'functions/worker.ts' }, leaseMode: 'version-watch', ...props });
    expect(build({ leaseDuration: Duration.minutes(2) })).toThrow(/worker.timeout: in version-watch mode the worker's timeout \(120000 ms\) must cover a full lease watch/);
    expect(build({ leaseDuration: Duration.minutes(2), worker: { entry: 'functions/worker.ts', timeout: Duration.minutes(3) } })).not.toThrow();
    expect(build({})).not.toThrow(); // 30 s leases, 2-minute worker
  });

  it('the worker has 2 minutes, the scheduled functions have less; the work queue hides a message for 6x the worker timeout', () => {
    const workerTimeout = fnProps('worker').Timeout as number;
    expect(workerTimeout).toBe(120);
    expect(props(w.queue).VisibilityTimeout).toBeGreaterThanOrEqual(6 * workerTimeout);
  });

  it.each(FUNCTIONS)('%s: every configuration variable of lib/workflow/config.ts is set, the epoch from context, no DynamoDB endpoint', (name) => {
    const env = envOf(name);
    for (const [key, variable] of Object.entries(ENV)) {
      if (key === 'dynamoEndpoint') expect(env[variable]).toBeUndefined();
      else expect(env[variable], variable).toBeDefined();
    }
    expect(env[ENV.epoch]).toBe('7');
    expect(env.POWERTOOLS_METRICS_NAMESPACE).toBe('FencedWorkflow');
    expect(env.POWERTOOLS_SERVICE_NAME).toBe(name);
    expect(env[ENV.leasesTable]).toEqual({ Ref: logicalId(w.tables.leases) });
    expect(env[ENV.fencesTable]).toEqual({ Ref: logicalId(w.tables.fences) });
    expect(env[ENV.jobsTable]).toEqual({ Ref: logicalId(w.tables.jobs) });
    expect(env[ENV.invoicesTable]).toEqual({ Ref: logicalId(w.tables.invoices) });
    expect(env[ENV.queueUrl]).toEqual({ Ref: logicalId(w.queue) });
    // The handlers parse the same values at start-up.
    const strings = Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
    expect(leaseSettingsFromEnv(strings)).toEqual({ epoch: 7, durationMs: 30_000, mode: { kind: 'wall-clock', maxClockSkewMs: 1_000 } });
  });

  it('the sweeper is told its own schedule interval and a staleness threshold above lease + skew', () => {
    const env = envOf('sweeper');
    expect(env[ENV.sweepIntervalMs]).toBe('60000');
    expect(Number(env[ENV.staleAfterMs])).toBeGreaterThan(Number(env[ENV.leaseDurationMs]) + Number(env[ENV.maxClockSkewMs]));
  });
});

describe('configuration is checked at synth, with the checks the handlers run', () => {
  it.each([
    [{ fenceEpoch: 'x' }, /fenceEpoch must be a non-negative integer/],
    [{ fenceEpoch: 2 ** 21 }, /FENCE_EPOCH must be an integer in \[0, 2097151\]/],
    [{ leaseMode: 'optimistic' }, /leaseMode must be "wall-clock" or "version-watch"/],
    [{ fenceEpoch: undefined }, /context fenceEpoch is required/],
  ])('context %j is refused', (context, message) => {
    expect(() => templateOf({ context })).toThrow(message);
  });
});

describe('the work queue', () => {
  it('both queues are encrypted at rest and refuse non-TLS requests', () => {
    for (const q of [w.queue, w.deadLetterQueue, w.scheduleDeadLetterQueue]) {
      expect(props(q).SqsManagedSseEnabled).toBe(true);
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: logicalId(q) }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Principal: { AWS: '*' }, Action: 'sqs:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      });
    }
  });

  it('a message that keeps failing moves to the dead-letter queue after 5 receives; the DLQ keeps it 14 days', () => {
    expect(props(w.queue).RedrivePolicy).toEqual({ deadLetterTargetArn: arnOf(w.deadLetterQueue), maxReceiveCount: 5 });
    expect(props(w.deadLetterQueue).MessageRetentionPeriod).toBe(14 * 24 * 3600);
  });

  it('the worker reads it in batches with partial batch responses and a concurrency cap', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(w.worker.fn) },
      EventSourceArn: arnOf(w.queue),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 5,
      ScalingConfig: { MaximumConcurrency: 10 },
    });
  });
});

describe('schedules (EventBridge Scheduler)', () => {
  it('the sweeper runs every minute, without retries (the next sweep is the retry), failures to the schedule DLQ', () => {
    expect(props(w.sweeperSchedule)).toEqual(
      expect.objectContaining({
        ScheduleExpression: 'rate(1 minute)',
        State: 'ENABLED',
        Target: expect.objectContaining({
          Arn: arnOf(w.sweeper.fn),
          DeadLetterConfig: { Arn: arnOf(w.scheduleDeadLetterQueue) },
          RetryPolicy: { MaximumEventAgeInSeconds: 60, MaximumRetryAttempts: 0 },
        }),
      }),
    );
  });

  it('the starter runs monthly at 02:00 UTC on the 1st, with retries (it is idempotent) and the schedule DLQ', () => {
    expect(props(w.starterSchedule)).toEqual(
      expect.objectContaining({
        ScheduleExpression: 'cron(0 2 1 * ? *)',
        ScheduleExpressionTimezone: 'Etc/UTC',
        Target: expect.objectContaining({
          Arn: arnOf(w.starter.fn),
          DeadLetterConfig: { Arn: arnOf(w.scheduleDeadLetterQueue) },
          RetryPolicy: { MaximumEventAgeInSeconds: 7200, MaximumRetryAttempts: 10 },
          // functions/starter.ts bills the month before `time`
          Input: JSON.stringify({ time: '<aws.scheduler.scheduled-time>' }),
        }),
      }),
    );
  });

  it('failed asynchronous invocations of the scheduled functions land in the schedule DLQ; the worker has none (SQS redrive)', () => {
    expect(fnProps('sweeper').DeadLetterConfig).toEqual({ TargetArn: arnOf(w.scheduleDeadLetterQueue) });
    expect(fnProps('starter').DeadLetterConfig).toEqual({ TargetArn: arnOf(w.scheduleDeadLetterQueue) });
    expect(fnProps('worker').DeadLetterConfig).toBeUndefined();
  });

  it('context sets the sweep rate (and the sweeper is told) and the starter expression', () => {
    const { template: t, stack } = templateOf({ context: { sweepIntervalMinutes: 5, starterSchedule: 'cron(30 4 2 * ? *)' } });
    const r = t.toJSON().Resources;
    expect(r[logicalId(stack.workflow.sweeperSchedule)].Properties.ScheduleExpression).toBe('rate(5 minutes)');
    expect(r[logicalId(stack.workflow.starterSchedule)].Properties.ScheduleExpression).toBe('cron(30 4 2 * ? *)');
    expect(r[logicalId(stack.workflow.sweeper.fn)].Properties.Environment.Variables[ENV.sweepIntervalMs]).toBe('300000');
  });
});
