// tier: full
/**
 * Compute and messaging: runtime and architecture, logs, tracing, configuration handed to the
 * handlers, the work queue and its event source, the schedules and their dead-letter queues.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { Runtime } from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { Duration, Stack } from 'aws-cdk-lib';
import { FencedWorkflow, type FencedWorkflowProps } from '../../infra/constructs/fenced-workflow.js';
import { validateEffects } from '../../infra/constructs/settings.js';
import { EFFECTS_PER_CUSTOMER, invoiceProcessor } from '../../lib/workloads/invoices/invoices.js';
import { invoices } from '../../lib/workloads/invoices/index.js';
import { WORKLOADS } from '../../lib/workloads/index.js';
import { ENV, leaseSettingsFromEnv, maxUnitSize, tableNames, unitSizeCap } from '../../lib/workflow/index.js';
import { ConfigError, MAX_TRANSACTION_ACTIONS, type Generation } from '../../lib/protocol/index.js';
import { appWithoutBundling, arnOf, logicalId, NO_BUNDLING, PROJECT_ROOT, tempDir, templateOf, TEST_SENDER } from './support.js';

const run = promisify(execFile);
const INVOICE_MAX_UNIT_SIZE = unitSizeCap(invoices);

/** The construct on a stack of its own, the invoice workload's, as a fork instantiates it (bundling skipped: these cases test settings, not the bundle). */
const buildWorkflow = (props: Partial<FencedWorkflowProps>) => () =>
  new FencedWorkflow(new Stack(appWithoutBundling()), 'Workflow', { workload: invoices, fenceEpoch: 0, externalEffects: { senderAddress: TEST_SENDER }, ...props });

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

  it.each(FUNCTIONS)('%s: its log group outlives `cdk destroy` (billing forensics), but not a failed first deploy', (name) => {
    const group = resources[logicalId(w[name].logGroup)] as unknown as { DeletionPolicy?: string; UpdateReplacePolicy?: string };
    expect(group.DeletionPolicy).toBe('RetainExceptOnCreate');
    expect(group.UpdateReplacePolicy).toBe('Retain');
  });

  it('only the worker may feed itself through the queue (continuations); loop detection stays on for the others', () => {
    expect(fnProps('worker').RecursiveLoop).toBe('Allow');
    expect(fnProps('sweeper').RecursiveLoop).toBe('Terminate');
    expect(fnProps('starter').RecursiveLoop).toBe('Terminate');
  });

  it("the unit size is bounded by the invoice workload's transaction (4 effects per item + fence + checkpoint <= 100)", () => {
    expect(INVOICE_MAX_UNIT_SIZE).toBe(24);
    expect(buildWorkflow({ unitSize: INVOICE_MAX_UNIT_SIZE + 1 })).toThrow(/unitSize: must be an integer in \[1, 24\] \(workload invoices: 4 effects per item/);
    expect(buildWorkflow({ unitSize: INVOICE_MAX_UNIT_SIZE })).not.toThrow();
    expect(buildWorkflow({ staleAfter: Duration.seconds(31) })).toThrow(/staleAfter \(31000 ms\) must exceed the lease duration plus the clock-skew bound/);
  });

  it("version-watch: the worker's timeout must cover a full lease watch, or no worker could ever take over a dead holder's job", () => {
    const build = (props: Partial<FencedWorkflowProps>) => buildWorkflow({ leaseMode: 'version-watch', ...props });
    expect(build({ leaseDuration: Duration.minutes(2) })).toThrow(/worker.timeout: in version-watch mode the worker's timeout \(120000 ms\) must cover a full lease watch/);
    expect(build({ leaseDuration: Duration.minutes(2), worker: { entry: 'functions/worker.ts', timeout: Duration.minutes(3) } })).not.toThrow();
    expect(build({})).not.toThrow(); // 30 s leases, 2-minute worker
  });

  it("the invoice workload's cap is derived from what its processor really writes per customer", () => {
    const input = { period: '2026-01', customers: INVOICE_MAX_UNIT_SIZE, seed: 1, unitSize: INVOICE_MAX_UNIT_SIZE, currency: 'EUR' };
    const effects = invoiceProcessor.unitEffects(input, { jobId: 'j', generation: 1 as Generation, unit: 0, tables: tableNames('x-'), now: 0 });
    expect(effects.length).toBe(EFFECTS_PER_CUSTOMER * INVOICE_MAX_UNIT_SIZE);
    expect(INVOICE_MAX_UNIT_SIZE).toBe(maxUnitSize(EFFECTS_PER_CUSTOMER));
    expect(effects.length + 2).toBeLessThanOrEqual(MAX_TRANSACTION_ACTIONS);
    expect(EFFECTS_PER_CUSTOMER * (INVOICE_MAX_UNIT_SIZE + 1) + 2).toBeGreaterThan(MAX_TRANSACTION_ACTIONS);
  });

  it("a fork's sweep interval is checked at synth as the sweeper checks it (1 s to 1 day) and as the schedule needs it (whole minutes)", () => {
    const build = (sweepInterval: Duration) => buildWorkflow({ sweepInterval });
    expect(build(Duration.seconds(90))).toThrow(/sweepInterval: must be a whole number of minutes, got 90 s/);
    expect(build(Duration.days(2))).toThrow(/SWEEP_INTERVAL_MS must be an integer in \[1000, 86400000\]/);
    expect(build(Duration.minutes(0))).toThrow(/SWEEP_INTERVAL_MS must be an integer in \[1000, 86400000\]/);
    expect(build(Duration.hours(24))).not.toThrow();
  });

  it('the worker has 2 minutes, the scheduled functions have less; the work queue hides a message for 6x the worker timeout', () => {
    const workerTimeout = fnProps('worker').Timeout as number;
    expect(workerTimeout).toBe(120);
    expect(props(w.queue).VisibilityTimeout).toBeGreaterThanOrEqual(6 * workerTimeout);
  });

  it.each(FUNCTIONS)('%s: every configuration variable of lib/workflow/config.ts it reads is set, the epoch from context, no DynamoDB endpoint', (name) => {
    const env = envOf(name);
    // The external effects' settings are per function (the worker's bucket, the sender's SES); below.
    const perFunction = ['documentsBucket', 's3Endpoint', 'documentSet', 'senderAddress', 'sesConfigurationSet', 'liveTargets', 'paymentsUrl', 'paymentsKeyRetentionMs', 'paymentsSecretArn', 'keyRetentionMarginMs', 'reconcilePendingAfterMs', 'reconcileClaimTimeoutMs', 'senderTimeoutMs', 'providerRecordLagMs', 'sendRatePerSecond', 'throttleBackoffMs', 'heldRetryMs', 'collectAfterMs'];
    if (name === 'worker') expect(env[ENV.documentsBucket]).toBeDefined();
    for (const [key, variable] of Object.entries(ENV)) {
      if (perFunction.includes(key)) continue;
      if (key === 'dynamoEndpoint') expect(env[variable]).toBeUndefined();
      // The run's size and shard count are the starter's alone (functions/starter.ts reads them).
      else if (key === 'runItems' || key === 'runShards') expect(env[variable] !== undefined, variable).toBe(name === 'starter');
      else expect(env[variable], variable).toBeDefined();
    }
    // The workload every function loads by name: the registered one the stack was checked for.
    expect(env.WORKLOAD).toBe('invoices');
    expect(env[ENV.epoch]).toBe('7');
    expect(env.POWERTOOLS_METRICS_NAMESPACE).toBe('FencedWorkflow');
    expect(env.POWERTOOLS_SERVICE_NAME).toBe(name);
    expect(env[ENV.leasesTable]).toEqual({ Ref: logicalId(w.tables.leases) });
    expect(env[ENV.fencesTable]).toEqual({ Ref: logicalId(w.tables.fences) });
    expect(env[ENV.jobsTable]).toEqual({ Ref: logicalId(w.tables.jobs) });
    expect(env[ENV.recordsTable]).toEqual({ Ref: logicalId(w.tables.records) });
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
    [{ fenceEpoch: 'x' }, 'fenceEpoch', /fenceEpoch: must be an integer in \[0, 2097151\], got "x"/],
    [{ fenceEpoch: 2 ** 21 }, 'fenceEpoch', /fenceEpoch: must be an integer in \[0, 2097151\]/],
    [{ fenceEpoch: undefined }, 'fenceEpoch', /fenceEpoch: is required/],
    [{ leaseMode: 'optimistic' }, 'leaseMode', /leaseMode: must be "wall-clock" or "version-watch"/],
    // The sweeper accepts 1 s to 1 day (SWEEP_INTERVAL_MS); the schedule's rate is whole minutes.
    [{ sweepIntervalMinutes: 2000 }, 'sweepIntervalMinutes', /sweepIntervalMinutes: must be an integer in \[1, 1440\].*, got "2000"/],
    [{ sweepIntervalMinutes: 0 }, 'sweepIntervalMinutes', /sweepIntervalMinutes: must be an integer in \[1, 1440\].*, got "0"/],
    [{ sweepIntervalMinutes: 1.5 }, 'sweepIntervalMinutes', /sweepIntervalMinutes: must be an integer/],
    [{ starterSchedule: 'cron(nonsense)' }, 'starterSchedule', /starterSchedule: .*cron\(minutes hours day-of-month month day-of-week year\)/],
    [{ starterSchedule: 'cron(0 2 1 * * *)' }, 'starterSchedule', /starterSchedule: .*day-of-month or day-of-week must be "\?"/],
    [{ starterSchedule: 'cron(61 2 1 * ? *)' }, 'starterSchedule', /starterSchedule: .*minutes/],
    [{ starterSchedule: 'rate(0 minutes)' }, 'starterSchedule', /starterSchedule: /],
    [{ starterSchedule: 'every month' }, 'starterSchedule', /starterSchedule: /],
    [{ runItems: 10_000_001 }, 'runItems', /runItems: must be an integer in \[0, 10000000\]/],
    [{ invoiceCustomers: 10 }, 'invoiceCustomers', /invoiceCustomers: was renamed runItems/],
    [{ workload: 'payroll' }, 'workload', new RegExp(`workload: no workload "payroll" is registered \\(lib/workloads/index.ts: ${WORKLOADS.map((w) => w.name).join(', ')}\\)`)],
    [{ unitSize: 25 }, 'unitSize', /unitSize: must be an integer in \[1, 24\] \(workload invoices: 4 effects per item/],
    [{ unfinishedJobAlarmMinutes: 0 }, 'unfinishedJobAlarmMinutes', /unfinishedJobAlarmMinutes: must be an integer in \[1, /],
    [{ alarmTopicArn: 'oncall' }, 'alarmTopicArn', /alarmTopicArn: must be an SNS topic ARN/],
    [{ metricsNamespace: 'AWS/Lambda' }, 'metricsNamespace', /metricsNamespace: .*"AWS\/"/],
    [{ metricsNamespace: 'bad\nname' }, 'metricsNamespace', /metricsNamespace: /],
  ])('context %j is refused as a ConfigError naming %s', (context, setting, message) => {
    let error: unknown;
    try {
      templateOf({ context });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(setting);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('\n');
  });

  it.each(['rate(1 day)', 'rate(5 minutes)', 'cron(30 4 2 * ? *)', 'cron(0 2 ? JAN-DEC MON#1 *)', 'cron(0/15 8-17 L * ? 2026-2030)', 'at(2027-01-01T02:00:00)'])(
    'starterSchedule %s is accepted',
    (starterSchedule) => {
      const { template, stack } = templateOf({ context: { starterSchedule } });
      expect(template.toJSON().Resources[logicalId(stack.workflow.starterSchedule)].Properties.ScheduleExpression).toBe(starterSchedule);
    },
  );

  it("the sender and the reconciler get the same claim timeout, above the sender's timeout, and both start with it; a claim timeout at or below it is refused (a live sender's claim would be taken over)", async () => {
    const { reconcilerFromEnv } = await import('../../functions/effects-commons.js');
    const sender = {} as Parameters<typeof reconcilerFromEnv>[1];
    const envOfEffect = (fn: 'sender' | 'reconciler') => (props(w.effects[fn].fn).Environment as { Variables: Record<string, string> }).Variables;
    const senderTimeoutMs = (props(w.effects.sender.fn).Timeout as number) * 1000;
    for (const fn of ['sender', 'reconciler'] as const) {
      const env = envOfEffect(fn);
      // The sender's real timeout (1 minute), and the claim timeout (5 minutes) above it, written down rather than left to the handlers' default.
      expect(env[ENV.senderTimeoutMs], fn).toBe(String(senderTimeoutMs));
      expect(env[ENV.reconcileClaimTimeoutMs], fn).toBe('300000');
      expect(Number(env[ENV.reconcileClaimTimeoutMs])).toBeGreaterThan(Number(env[ENV.senderTimeoutMs]));
      expect(reconcilerFromEnv({ [ENV.senderTimeoutMs]: env[ENV.senderTimeoutMs], [ENV.reconcileClaimTimeoutMs]: env[ENV.reconcileClaimTimeoutMs] }, sender).claimTimeoutMs).toBe(300_000);
    }
    for (const claim of ['60000', '30000']) {
      let error: unknown;
      try {
        reconcilerFromEnv({ [ENV.senderTimeoutMs]: '60000', [ENV.reconcileClaimTimeoutMs]: claim }, sender);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe(ENV.reconcileClaimTimeoutMs);
      expect((error as Error).message).toMatch(/must be above the sender's timeout \(SENDER_TIMEOUT_MS 60000 ms\)/);
    }
  });

  it.each([Duration.minutes(1), Duration.seconds(30)])("a fork's reconcileClaimTimeout of %s (not above the sender's 1 minute) is refused at synth", (reconcileClaimTimeout) => {
    const stack = new Stack(appWithoutBundling());
    const externalEffects = { senderAddress: TEST_SENDER, reconcileClaimTimeout };
    expect(() => new FencedWorkflow(stack, 'Workflow', { workload: invoices, fenceEpoch: 0, externalEffects })).toThrow(
      /reconcileClaimTimeout: \(\d+ ms\) must be above the sender's timeout \(60000 ms\)/,
    );
  });

  it("a reconciler timeout not below the claim timeout is refused (a run could outlive its own claims); one below it is taken", () => {
    const settings = (reconcilerTimeout: Duration) => () => validateEffects({ senderTimeout: Duration.minutes(1), reconcilerTimeout, reconcileClaimTimeout: Duration.minutes(5), senderBatchSize: 10 });
    for (const d of [Duration.minutes(5), Duration.minutes(6)]) expect(settings(d)).toThrow(new RegExp(`must be above the reconciler's timeout \\(${d.toMilliseconds()} ms\\)`));
    expect(settings(Duration.minutes(4))).not.toThrow();
  });

  it('a bad setting stops `cdk synth` with one line naming it, no stack trace', async () => {
    const app = join(PROJECT_ROOT, 'infra', 'app.ts');
    const tsx = join(PROJECT_ROOT, 'node_modules', '.bin', 'tsx');
    const result = await run(tsx, [app], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, CDK_OUTDIR: tempDir('fenced-cdk-'), CDK_CONTEXT_JSON: JSON.stringify({ fenceEpoch: 0, sweepIntervalMinutes: 2000, ...NO_BUNDLING }) },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual(['sweepIntervalMinutes: must be an integer in [1, 1440] (the sweeper accepts 1 s to 1 day; the schedule rate is whole minutes), got "2000"']);
  }, 60_000);
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

  it("the worker reads it one job's message per invocation, with partial batch responses, its concurrency leaving one execution to each other function of a new account's 10", () => {
    // The invoice stack's other functions: sweeper, starter, sender, reconciler, recorder, collector, sandbox provider.
    expect(Object.keys(template.findResources('AWS::Lambda::Function'))).toHaveLength(8);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(w.worker.fn) },
      EventSourceArn: arnOf(w.queue),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 1,
      ScalingConfig: { MaximumConcurrency: 3 },
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

  it('the starter runs monthly at 02:00 UTC on the 1st, with retries (it is idempotent) and the schedule DLQ; deployed disabled', () => {
    expect(props(w.starterSchedule)).toEqual(
      expect.objectContaining({
        ScheduleExpression: 'cron(0 2 1 * ? *)',
        State: 'DISABLED',
        ScheduleExpressionTimezone: 'Etc/UTC',
        Target: expect.objectContaining({
          Arn: arnOf(w.starter.fn),
          DeadLetterConfig: { Arn: arnOf(w.scheduleDeadLetterQueue) },
          RetryPolicy: { MaximumEventAgeInSeconds: 7200, MaximumRetryAttempts: 10 },
          // the invoice workload's run is the month before `time`
          Input: JSON.stringify({ time: '<aws.scheduler.scheduled-time>' }),
        }),
      }),
    );
  });

  it('a fresh deploy starts no run by itself: the starter schedule is enabled only by -c scheduleRuns=true; another value is refused at synth in one line', () => {
    const stateWith = (scheduleRuns: string) => {
      const { template, stack } = templateOf({ context: { scheduleRuns } });
      return template.toJSON().Resources[logicalId(stack.workflow.starterSchedule)].Properties.State;
    };
    expect(stateWith('true')).toBe('ENABLED');
    expect(stateWith('false')).toBe('DISABLED');
    expect(() => templateOf({ context: { scheduleRuns: 'yes' } })).toThrow('scheduleRuns: must be true or false, got "yes"');
    // The sweeper is not a run: it stays enabled, whatever the flag.
    expect(props(w.sweeperSchedule)).toEqual(expect.objectContaining({ State: 'ENABLED' }));
  });

  it("Lambda does not retry a failed or throttled sweep either (the next sweep is one interval away); the starter's async retries stay", () => {
    const configs = Object.values(template.findResources('AWS::Lambda::EventInvokeConfig')).map((c) => c.Properties as Props);
    expect(configs.filter((c) => JSON.stringify(c.FunctionName) === JSON.stringify({ Ref: logicalId(w.sweeper.fn) }))).toEqual([
      expect.objectContaining({ Qualifier: '$LATEST', MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 }),
    ]);
    expect(configs.filter((c) => JSON.stringify(c.FunctionName) === JSON.stringify({ Ref: logicalId(w.starter.fn) }))).toEqual([
      expect.objectContaining({ Qualifier: '$LATEST', MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 7200 }),
    ]);
    const slow = templateOf({ context: { sweepIntervalMinutes: 10 } });
    const sweeperConfig = Object.values(slow.template.findResources('AWS::Lambda::EventInvokeConfig')).find(
      (c) => JSON.stringify(c.Properties.FunctionName) === JSON.stringify({ Ref: logicalId(slow.stack.workflow.sweeper.fn) }),
    );
    expect(sweeperConfig?.Properties).toEqual(expect.objectContaining({ MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 600 }));
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
