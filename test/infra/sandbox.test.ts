// tier: full
/**
 * A first deploy harms no one: a stack is in the sandbox unless `-c live` says otherwise. The
 * synthesized sender and reconciler are told which targets are live (none by default), a live
 * http target needs its endpoint, a sandboxed one takes none and calls the stack's own sandbox
 * provider (a function URL only they may call), and the deployed functions send every email of a
 * target that is not live to SES's mailbox simulator.
 */
import { describe, expect, it } from 'vitest';
import { Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { FencedWorkflow, type FencedWorkflowProps } from '../../infra/constructs/fenced-workflow.js';
import { senderFromEnv } from '../../functions/effects-commons.js';
import type { FencedWorkflowStack } from '../../infra/stack.js';
import { SANDBOX_ENV } from '../../lib/workflow/adapters/index.js';
import { DEFAULT_HTTP_KEY_RETENTION_MS, ENV, MAILBOX_SIMULATOR } from '../../lib/workflow/index.js';
import { workloadNamed } from '../../lib/workloads/index.js';
import { appWithoutBundling, logicalId, permissionsOf, refusal, templateOf, TEST_SENDER } from './support.js';

const PAYMENTS = 'https://api.payments.fenced-workflow.dev/v1/charges';

/** The sender's and the reconciler's environment in the template. */
function sendingEnv(built: { template: Template; stack: FencedWorkflowStack }): Record<string, unknown>[] {
  const resources = built.template.toJSON().Resources as Record<string, { Properties: { Environment: { Variables: Record<string, unknown> } } }>;
  const e = built.stack.workflow.effects;
  return [e.sender, e.reconciler].map((f) => resources[logicalId(f.fn)]!.Properties.Environment.Variables);
}


describe('the stack deploys in the sandbox unless -c live says otherwise', () => {
  it('by default nothing is live: the sender and the reconciler are told so, and call the stack\'s sandbox provider (its function URL, the target\'s name as its path) for the payments', () => {
    const built = templateOf();
    const sandbox = built.stack.workflow.effects.sandbox!;
    const url = { 'Fn::GetAtt': [logicalId(sandbox.url), 'FunctionUrl'] };
    for (const env of sendingEnv(built)) {
      expect(env[ENV.liveTargets]).toBe('none');
      expect(env[ENV.paymentsUrl]).toEqual({ 'Fn::Join': ['', [url, 'payments']] });
    }
  });

  it('the sandbox provider is never an open endpoint: its URL takes AWS_IAM, no resource policy opens it, and only the sender and the reconciler may call it', () => {
    const built = templateOf();
    const { template, stack } = built;
    const sandbox = stack.workflow.effects.sandbox!;
    expect(Object.values(template.findResources('AWS::Lambda::Url')).map((u) => u.Properties.AuthType)).toEqual(['AWS_IAM']);
    for (const p of Object.values(template.findResources('AWS::Lambda::Permission'))) expect(JSON.stringify(p.Properties.Principal)).not.toBe('"*"');
    const fnArn = JSON.stringify({ 'Fn::GetAtt': [logicalId(sandbox.provider.fn), 'Arn'] });
    const callers = Object.keys(template.findResources('AWS::IAM::Role')).filter((r) => permissionsOf(template, r).some((p) => p.resource === fnArn));
    const e = stack.workflow.effects;
    expect(callers.sort()).toEqual([logicalId(e.sender.role), logicalId(e.reconciler.role)].sort());
    for (const role of callers) {
      expect(permissionsOf(template, role).filter((p) => p.resource === fnArn).map((p) => p.action).sort()).toEqual(['lambda:InvokeFunction', 'lambda:InvokeFunctionUrl']);
    }
    // Its own role: its keys table, put and read, nothing else of the stack's data.
    const keysArn = JSON.stringify({ 'Fn::GetAtt': [logicalId(sandbox.keys), 'Arn'] });
    const own = permissionsOf(template, logicalId(sandbox.provider.role)).filter((p) => p.action.startsWith('dynamodb:'));
    expect(own.map((p) => [p.action, p.resource])).toEqual(expect.arrayContaining([['dynamodb:PutItem', keysArn], ['dynamodb:GetItem', keysArn]]));
    expect(own.every((p) => p.resource === keysArn)).toBe(true);
  });

  it('-c live=true: every target of the workload, each http target with its endpoint; no sandbox provider is deployed', () => {
    const built = templateOf({ context: { live: 'true', paymentsUrl: PAYMENTS } });
    for (const env of sendingEnv(built)) {
      expect(env[ENV.liveTargets]).toBe('email,payments');
      expect(env[ENV.paymentsUrl]).toBe(PAYMENTS);
    }
    expect(built.stack.workflow.effects.sandbox).toBeUndefined();
    expect(Object.keys(built.template.findResources('AWS::Lambda::Url'))).toEqual([]);
  });

  it('-c live=email: the email is live, the payments stay with the sandbox provider', () => {
    const built = templateOf({ context: { live: 'email' } });
    for (const env of sendingEnv(built)) {
      expect(env[ENV.liveTargets]).toBe('email');
      expect(JSON.stringify(env[ENV.paymentsUrl])).toContain('FunctionUrl');
    }
  });

  it('-c sandboxProvider sets how it misbehaves; its keys are kept at least as long as the target says its provider keeps them', () => {
    const built = templateOf({ context: { sandboxProvider: '{"declineShare":0.5,"throttleShare":0.1,"errorShare":0.02}' } });
    const resources = built.template.toJSON().Resources as Record<string, { Properties: { Environment: { Variables: Record<string, unknown> } } }>;
    const env = resources[logicalId(built.stack.workflow.effects.sandbox!.provider.fn)]!.Properties.Environment.Variables;
    expect(env).toMatchObject({ [SANDBOX_ENV.declineShare]: '0.5', [SANDBOX_ENV.throttleShare]: '0.1', [SANDBOX_ENV.errorShare]: '0.02', [SANDBOX_ENV.keyRetentionMs]: String(DEFAULT_HTTP_KEY_RETENTION_MS) });
    const defaults = templateOf();
    const envDefault = (defaults.template.toJSON().Resources as typeof resources)[logicalId(defaults.stack.workflow.effects.sandbox!.provider.fn)]!.Properties.Environment.Variables;
    expect(envDefault).toMatchObject({ [SANDBOX_ENV.declineShare]: '0.05', [SANDBOX_ENV.throttleShare]: '0', [SANDBOX_ENV.errorShare]: '0' });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['an endpoint for a target in the sandbox', { paymentsUrl: PAYMENTS }, `paymentsUrl: is set, but target payments is in the sandbox: add -c live=true (or live=payments) to call ${PAYMENTS}, or unset paymentsUrl`],
    ['a live target without its endpoint', { live: 'true' }, 'paymentsUrl: is required: target payments is live (-c live), and its calls need the provider\'s https endpoint'],
    ['a live name the workload does not have', { live: 'email,webhooks' }, 'live: must be true, false or a comma-separated list of workload invoices\'s targets (email, payments), got "webhooks"'],
    ['a sandbox share out of [0, 1]', { sandboxProvider: '{"declineShare":2}' }, 'sandboxProvider.declineShare: must be a share in [0, 1], got 2'],
    ['an unknown sandbox setting', { sandboxProvider: '{"declineshare":0.1}' }, 'sandboxProvider: unknown key "declineshare" (declineShare, throttleShare, errorShare)'],
  ])('refused at synth in one line: %s', (_what, context, message) => {
    const e = refusal(() => templateOf({ context }));
    expect(e.message).toBe(message);
  });

  it('the construct refuses the same: a live target without an endpoint, an endpoint for a sandboxed target, an unknown live target', () => {
    const reports = workloadNamed('reports');
    const build = (externalEffects: FencedWorkflowProps['externalEffects']) => () => new FencedWorkflow(new Stack(appWithoutBundling(), 'Fork'), 'Workflow', { workload: reports, fenceEpoch: 0, externalEffects });
    expect(refusal(build({ liveTargets: ['webhooks'] })).message).toBe("httpTargets.webhooks: is required: target webhooks is live, and its calls need the provider's endpoint");
    expect(refusal(build({ httpTargets: { webhooks: 'https://hooks.fenced-workflow.dev' } })).message).toBe('httpTargets.webhooks: target webhooks is in the sandbox: name it in liveTargets to call its endpoint');
    expect(refusal(build({ liveTargets: ['email'] })).message).toBe('liveTargets: workload reports has no target "email" (its targets: webhooks)');
  });
});

describe('the deployed sender sends what is not live to the mailbox simulator', () => {
  const commons = { doc: {}, tables: { outbox: 'Outbox' }, clock: {}, workload: workloadNamed('invoices') } as unknown as Parameters<typeof senderFromEnv>[1];
  const telemetry = {} as Parameters<typeof senderFromEnv>[2];
  const base = { [ENV.sesConfigurationSet]: 'set', [ENV.senderAddress]: TEST_SENDER };
  const emailOf = (env: Record<string, string>) => senderFromEnv({ ...base, ...env }, commons, telemetry).email!.name;

  it('unset, none, or a list without email: the sandbox; email named: SES itself', () => {
    expect(emailOf({})).toContain(MAILBOX_SIMULATOR);
    expect(emailOf({ [ENV.liveTargets]: 'none' })).toContain(MAILBOX_SIMULATOR);
    expect(emailOf({ [ENV.liveTargets]: 'payments' })).toContain(MAILBOX_SIMULATOR);
    expect(emailOf({ [ENV.liveTargets]: 'email' })).toBe('ses');
  });

  it('a live target the workload does not have stops the function at start-up', () => {
    const e = refusal(() => emailOf({ [ENV.liveTargets]: 'webhooks' }));
    expect(e.variable).toBe(ENV.liveTargets);
  });
});
