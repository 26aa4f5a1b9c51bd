// tier: full
/**
 * The stack is its workload (lib/workloads/index.ts, `-c workload=NAME`): which effect functions
 * and resources exist, the documents' folder, the http targets' endpoints, the unit-size cap, the
 * schedule and the Records table's construct id all come from the descriptor the functions load
 * by name. The reports workload, which sends no email, calls a per-tenant webhook and caps its
 * units at 49 (the invoice run: 24), shows each of those decisions going the other way.
 */
import { Stack } from 'aws-cdk-lib';
import { Annotations, Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { NO_FINDINGS_LINE } from '../../infra/constructs/checks.js';
import { FencedWorkflow, type FencedWorkflowProps } from '../../infra/constructs/fenced-workflow.js';
import { stackNameFrom } from '../../infra/context.js';
import { FencedWorkflowStack, OUTPUTS } from '../../infra/stack.js';
import { ENV, unitSizeCap, type Workload } from '../../lib/workflow/index.js';
import { WORKLOADS, workloadNamed } from '../../lib/workloads/index.js';
import { commonsFromEnv } from '../../functions/commons.js';
import { lambdaEnvironment } from './lambda-run.js';
import { allAllowed, appWithoutBundling, buildApp, contextFor, NO_BUNDLING, logicalId, nagViolations, permissionsOf, refusal, synthAsCdk, templateOf, TEST_SENDER, withoutCfnValidation } from './support.js';

type Props = Record<string, unknown>;
const reports = workloadNamed('reports');
const invoices = workloadNamed('invoices');
const WEBHOOKS = 'https://hooks.fenced-workflow.dev/v1';
/** The registered names, as the refusals list them. */
const REGISTERED = WORKLOADS.map((w) => w.name).join(', ');

let template: Template;
let stack: FencedWorkflowStack;
let resources: Record<string, { Type: string; Properties: Props }>;
beforeAll(() => {
  ({ template, stack } = templateOf({ workload: 'reports', context: { live: 'true', webhooksUrl: WEBHOOKS } }));
  resources = template.toJSON().Resources;
});

const fnsOf = (s: FencedWorkflowStack) => {
  const w = s.workflow;
  const e = w.effects;
  return { worker: w.worker, sweeper: w.sweeper, starter: w.starter, sender: e.sender, reconciler: e.reconciler, ...(e.recorder ? { recorder: e.recorder } : {}), ...(e.collector ? { collector: e.collector } : {}) };
};
const envOf = (t: Template, fn: { fn: Parameters<typeof logicalId>[0] }) => (t.toJSON().Resources[logicalId(fn.fn)].Properties.Environment as { Variables: Record<string, unknown> }).Variables;
const ofType = (type: string) => Object.values(resources).filter((r) => r.Type === type);

/** The construct alone on a stack (bundling skipped), as a fork's own stack code builds it. */
const workflowOf = (workload: Workload<any>, props: Partial<FencedWorkflowProps> = {}) => () => {
  const app = appWithoutBundling();
  return new FencedWorkflow(new Stack(app, 'Fork'), 'Workflow', { workload, fenceEpoch: 0, externalEffects: workload.outbox.email ? { senderAddress: TEST_SENDER } : {}, ...props });
};

describe('the reports stack: no email, a per-tenant webhook, documents under reports/', () => {
  it('is named for its workload, so it deploys beside the invoice stack (FencedWorkflow, as deployed)', () => {
    expect(stack.stackName).toBe('FencedWorkflow-reports');
    expect(stackNameFrom(undefined, 'invoices')).toBe('FencedWorkflow');
    expect(stackNameFrom('Mine', 'reports')).toBe('Mine');
    // Its metrics namespace follows its name: the two stacks' alarms never count each other's metrics.
    expect(envOf(template, stack.workflow.worker).POWERTOOLS_METRICS_NAMESPACE).toBe('FencedWorkflow-reports');
  });

  it('has no SES identity, configuration set, events rule or recorder, and no role may send email', () => {
    expect(Object.values(resources).filter((r) => r.Type.startsWith('AWS::SES::'))).toEqual([]);
    expect(stack.workflow.effects.recorder).toBeUndefined();
    expect(stack.workflow.effects.identity).toBeUndefined();
    expect(ofType('AWS::Lambda::Function').map((f) => (f.Properties.Environment as { Variables: Props }).Variables.POWERTOOLS_SERVICE_NAME).sort()).toEqual(
      ['collector', 'reconciler', 'sender', 'starter', 'sweeper', 'worker'],
    );
    expect(ofType('AWS::Events::Rule').filter((r) => JSON.stringify(r.Properties.EventPattern ?? {}).includes('aws.ses'))).toEqual([]);
    expect(allAllowed(template).filter((p) => p.action.startsWith('ses:'))).toEqual([]);
  });

  it('alarms on its outbox, but on no bounce, complaint or recorder (nothing emits those metrics in it)', () => {
    const alarms = stack.workflow.monitoring.alarms.map((a) => a.node.id);
    expect(alarms).toEqual(expect.arrayContaining(['OutboxUnknown', 'OutboxFailed', 'OutboxHeld', 'OutboxUnsentTooOld', 'OutboxRecordsFailed', 'SenderErrors', 'CollectorErrors']));
    for (const email of ['OutboxBounced', 'OutboxComplained', 'RecorderErrors', 'RecorderThrottles']) expect(alarms).not.toContain(email);
    const invoiceAlarms = templateOf().stack.workflow.monitoring.alarms.map((a) => a.node.id);
    expect(invoiceAlarms).toEqual(expect.arrayContaining(['OutboxBounced', 'OutboxComplained', 'RecorderErrors']));
  });

  it('every function runs WORKLOAD=reports with a unit size within its cap (49); the senders get WEBHOOKS_URL and no email or payment setting', () => {
    for (const [name, fn] of Object.entries(fnsOf(stack))) {
      const env = envOf(template, fn);
      expect(env.WORKLOAD, name).toBe('reports');
      expect(Number(env[ENV.unitSize]), name).toBe(reports.defaultUnitSize);
      expect(Number(env[ENV.unitSize]), name).toBeLessThanOrEqual(49);
      for (const v of [ENV.senderAddress, ENV.sesConfigurationSet, ENV.paymentsUrl]) expect(env[v], `${name} ${v}`).toBeUndefined();
      expect(env.WEBHOOKS_URL, name).toBe(name === 'sender' || name === 'reconciler' ? WEBHOOKS : undefined);
    }
    // In the sandbox (no -c live): the webhooks go to the stack's sandbox provider, the target's name its path.
    const bare = templateOf({ workload: 'reports' });
    const url = { 'Fn::GetAtt': [logicalId(bare.stack.workflow.effects.sandbox!.url), 'FunctionUrl'] };
    expect(envOf(bare.template, bare.stack.workflow.effects.sender).WEBHOOKS_URL).toEqual({ 'Fn::Join': ['', [url, 'webhooks']] });
  });

  it('its bucket policy, grants and listing conditions name reports/*, and nothing names invoices/', () => {
    const policy = ofType('AWS::S3::BucketPolicy')
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: { Sid?: string; Resource: unknown }[] }).Statement)
      .find((st) => st.Sid === 'DenyDocumentPutWithoutIfNoneMatch');
    expect(JSON.stringify(policy?.Resource)).toContain('/reports/*');
    const documents = allAllowed(template).filter((p) => p.action === 's3:PutObject' || p.action === 's3:DeleteObject');
    expect(documents.length).toBeGreaterThan(0);
    for (const p of documents) expect(p.resource).toContain('/reports/*');
    const collector = stack.workflow.effects.collector!;
    expect(JSON.stringify(permissionsOf(template, logicalId(collector.role)))).toContain('s3:ListBucket');
    expect(JSON.stringify(template.toJSON())).toContain('"s3:prefix":"reports/*"');
    expect(JSON.stringify(template.toJSON())).not.toContain('invoices/');
  });

  it('its Records table has the generic construct id; the invoice stack keeps the id its table was deployed with', () => {
    expect(logicalId(stack.workflow.tables.records)).toMatch(/^WorkflowRecords[0-9A-F]{8}$/);
    expect(logicalId(templateOf().stack.workflow.tables.records)).toBe('WorkflowInvoices78B9EFE3');
    expect(template.toJSON().Outputs[OUTPUTS.records]).toBeDefined();
    expect(template.toJSON().Outputs[OUTPUTS.recordsStreamArn]).toBeDefined();
    expect(template.toJSON().Outputs[OUTPUTS.documentsBucket]).toBeDefined();
  });

  it("the starter runs on the workload's own schedule (01:30 UTC daily), described by it", () => {
    const schedule = resources[logicalId(stack.workflow.starterSchedule)]!.Properties;
    expect(schedule.ScheduleExpression).toBe('cron(30 1 * * ? *)');
    expect(schedule.ScheduleExpressionTimezone).toBe('Etc/UTC');
    expect(schedule.Description).toBe(`Starts the reports run: ${reports.start.schedule.description}`);
    const inv = templateOf();
    expect(inv.template.toJSON().Resources[logicalId(inv.stack.workflow.starterSchedule)].Properties.ScheduleExpression).toBe('cron(0 2 1 * ? *)');
  });

  it('the invoice stack and the reports stack synthesize side by side in one app', () => {
    const app = appWithoutBundling(contextFor('invoices'));
    for (const w of WORKLOADS) new FencedWorkflowStack(app, stackNameFrom(undefined, w.name), { workload: w });
    const assembly = withoutCfnValidation(() => app.synth());
    expect(assembly.stacks.map((s) => s.stackName).sort()).toEqual(WORKLOADS.map((w) => stackNameFrom(undefined, w.name)).sort());
  });
});

describe("the unit size is checked at synth against the workload's own cap, the one its functions read at cold start", () => {
  it.each(WORKLOADS.map((w) => [w.name, unitSizeCap(w), w] as const))('%s: a unit size above its cap (%i) is refused, naming the setting and the cap; the cap itself is accepted', (name, cap, w) => {
    const e = refusal(workflowOf(w, { unitSize: cap + 1 }));
    expect(e.variable).toBe('unitSize');
    expect(e.message).toBe(`unitSize: must be an integer in [1, ${cap}] (workload ${name}: ${w.effectsPerItem} effects per item + fence + checkpoint <= 100 transaction actions), got ${cap + 1}`);
    expect(workflowOf(w, { unitSize: cap })).not.toThrow();
    // The same through the app's context.
    expect(refusal(() => templateOf({ workload: name, context: { unitSize: cap + 1 } })).message).toMatch(new RegExp(`^unitSize: must be an integer in \\[1, ${cap}\\] \\(workload ${name}: `));
  });

  it('25 is accepted for reports (49) and refused for invoices (24): each stack reads its own descriptor, not the sample it was written for', () => {
    expect([unitSizeCap(invoices), unitSizeCap(reports)]).toEqual([24, 49]);
    expect(workflowOf(reports, { unitSize: 25 })).not.toThrow();
    expect(refusal(workflowOf(invoices, { unitSize: 25 })).variable).toBe('unitSize');
    const { template: t, stack: s } = templateOf({ workload: 'reports', context: { unitSize: 25 } });
    expect(envOf(t, s.workflow.worker)[ENV.unitSize]).toBe('25');
  });

  it("the cold-start trap: the worker's synthesized environment starts (commonsFromEnv) with the workload it names, and would not with another one's cap", () => {
    const { template: t, stack: s } = templateOf({ workload: 'reports', context: { unitSize: 25 } });
    const local = { [ENV.leasesTable]: 'leases', [ENV.fencesTable]: 'fences', [ENV.jobsTable]: 'jobs', [ENV.recordsTable]: 'records', [ENV.outboxTable]: 'outbox', [ENV.documentsBucket]: 'documents', [ENV.queueUrl]: 'http://127.0.0.1:9/q' };
    const env = lambdaEnvironment(t.toJSON() as never, s.workflow.worker.fn, local);
    const commons = commonsFromEnv(env);
    expect(commons.workload).toBe(reports);
    expect(commons.unitSize).toBe(25);
    // The invoice cap with the same unit size: what a stack checked against the wrong descriptor would deploy.
    const e = refusal(() => commonsFromEnv({ ...env, WORKLOAD: 'invoices' }));
    expect(e.variable).toBe(ENV.unitSize);
  });
});

describe("another stack's settings are ignored with a warning (one cdk.json serves every workload's stack)", () => {
  const warnings = (s: FencedWorkflowStack) => Annotations.fromStack(s).findWarning('*', Match.anyValue()).map((m) => String(m.entry.data));

  it.each<[string, string, Record<string, unknown>, string]>([
    ['the invoice stack\'s From address', 'reports', { senderAddress: TEST_SENDER }, 'senderAddress is ignored: workload reports sends no email (its stack has no SES identity, configuration set or recorder)'],
    ['a sender domain', 'reports', { senderDomain: 'fenced-workflow.dev' }, 'senderDomain is ignored: workload reports sends no email'],
    ["the payment provider's endpoint", 'reports', { paymentsUrl: 'https://pay.fenced-workflow.dev' }, 'paymentsUrl is ignored: workload reports has no http target payments (its targets: webhooks)'],
    ["the reports' webhooks on the invoice stack", 'invoices', { webhooksUrl: WEBHOOKS }, 'webhooksUrl is ignored: workload invoices has no http target webhooks (its targets: payments)'],
  ])('%s (%s, %j): no resource, no variable, one warning naming it', (_what, workload, context, warning) => {
    const { template: t, stack: s } = templateOf({ workload, context });
    expect(warnings(s).some((w) => w.startsWith(warning)), JSON.stringify(warnings(s))).toBe(true);
    const vars = JSON.stringify(Object.values(fnsOf(s)).map((f) => envOf(t, f)));
    for (const v of Object.values(context)) expect(vars).not.toContain(String(v));
  });

  it('with cdk.json holding the invoice stack\'s senderAddress and paymentsUrl, the reports app still has zero cdk-nag findings', () => {
    const { app, outdir } = buildApp({ nag: true, workload: 'reports', context: { senderAddress: TEST_SENDER, paymentsUrl: 'https://pay.fenced-workflow.dev' } });
    expect(withoutCfnValidation(() => nagViolations(app, outdir))).toEqual([]);
  });
});

describe('settings out of the workload\'s bounds, and descriptors the functions would not find, are refused at synth', () => {
  it.each<[string, string, Record<string, unknown>, RegExp]>([
    ['an http endpoint', 'reports', { live: 'true', webhooksUrl: 'http://hooks.fenced-workflow.dev' }, /^webhooksUrl: must be an https URL/],
    ['the old name of runItems', 'reports', { invoiceCustomers: 10 }, /^invoiceCustomers: was renamed runItems/],
    ['more items than the workload runs', 'reports', { runItems: reports.start.maxItems + 1 }, new RegExp(`^runItems: must be an integer in \\[0, ${reports.start.maxItems}\\]`)],
  ])('%s (%s, %j)', (_what, workload, context, message) => {
    const e = refusal(() => templateOf({ workload, context }));
    expect(e.message).toMatch(message);
    expect(e.message).not.toContain('\n');
  });

  it('the construct: a From address for a workload without email, none for one with it, an http target it does not declare', () => {
    expect(refusal(workflowOf(reports, { externalEffects: { senderAddress: TEST_SENDER } })).message).toMatch(/^senderAddress: workload reports sends no email: .*leave senderAddress unset$/);
    expect(refusal(workflowOf(invoices, { externalEffects: {} })).message).toMatch(/^senderAddress: is required: workload invoices sends email/);
    expect(refusal(workflowOf(reports, { externalEffects: { httpTargets: { payments: 'https://pay.fenced-workflow.dev' } } })).message).toBe('httpTargets.payments: workload reports has no http target "payments" (its targets: webhooks)');
    expect(refusal(workflowOf(reports, { externalEffects: { liveTargets: ['webhooks'], httpTargets: { webhooks: 'not a url' } } })).variable).toBe('httpTargets.webhooks');
  });

  it('a descriptor that is not the registered one of its name is refused: the functions would load the registered one', () => {
    const copy = { ...reports, effectsPerItem: 1 };
    expect(refusal(workflowOf(copy, { unitSize: 90 })).message).toMatch(/^workload: "reports" is not the descriptor registered under that name/);
    expect(refusal(workflowOf({ ...reports, name: 'payroll' })).message).toBe(`workload: "payroll" is not registered (lib/workloads/index.ts: ${REGISTERED}): the functions find their workload there by name`);
  });

  it('`cdk synth -c workload=NAME` with an unregistered name exits 1 with one line listing the registered ones', () => {
    const r = synthAsCdk({ fenceEpoch: 0, workload: 'payroll', ...NO_BUNDLING });
    expect(r.status).toBe(1);
    expect(r.lines).toEqual([`workload: no workload "payroll" is registered (lib/workloads/index.ts: ${REGISTERED})`]);
  });

  it('`cdk synth -c workload=reports` names the stack FencedWorkflow-reports and passes the compliance checks', async () => {
    const r = synthAsCdk({ ...contextFor('reports'), ...NO_BUNDLING });
    expect(r.status, r.lines.join('\n')).toBe(0);
    expect(r.lines).toEqual([NO_FINDINGS_LINE]);
    const { readdirSync } = await import('node:fs');
    expect(readdirSync(r.outdir)).toContain('FencedWorkflow-reports.template.json');
  });
});

describe('a registered workload needs nothing else of the stack', () => {
  it.each(WORKLOADS.map((w) => [w.name] as const))('%s: `buildApp` with only its name synthesizes', (name) => {
    expect(() => buildApp({ workload: name })).not.toThrow();
  });
});
