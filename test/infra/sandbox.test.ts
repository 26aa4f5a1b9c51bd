// tier: full
/**
 * A first deploy harms no one: a stack is in the sandbox unless `-c live` says otherwise. The
 * synthesized sender and reconciler are told which targets are live (none by default), a live
 * http target needs its endpoint, a sandboxed one takes none, and the deployed functions send
 * every email of a target that is not live to SES's mailbox simulator.
 */
import { describe, expect, it } from 'vitest';
import { Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { FencedWorkflow, type FencedWorkflowProps } from '../../infra/constructs/fenced-workflow.js';
import { senderFromEnv } from '../../functions/effects-commons.js';
import type { FencedWorkflowStack } from '../../infra/stack.js';
import { ENV, MAILBOX_SIMULATOR } from '../../lib/workflow/index.js';
import { workloadNamed } from '../../lib/workloads/index.js';
import { appWithoutBundling, logicalId, refusal, templateOf, TEST_SENDER } from './support.js';

const PAYMENTS = 'https://api.payments.fenced-workflow.dev/v1/charges';

/** The sender's and the reconciler's environment in the template. */
function sendingEnv(built: { template: Template; stack: FencedWorkflowStack }): Record<string, unknown>[] {
  const resources = built.template.toJSON().Resources as Record<string, { Properties: { Environment: { Variables: Record<string, unknown> } } }>;
  const e = built.stack.workflow.effects;
  return [e.sender, e.reconciler].map((f) => resources[logicalId(f.fn)]!.Properties.Environment.Variables);
}


describe('the stack deploys in the sandbox unless -c live says otherwise', () => {
  it('by default nothing is live: the sender and the reconciler are told so, and no provider endpoint is in the template', () => {
    for (const env of sendingEnv(templateOf())) {
      expect(env[ENV.liveTargets]).toBe('none');
      expect(env[ENV.paymentsUrl]).toBeUndefined();
    }
  });

  it('-c live=true: every target of the workload, each http target with its endpoint', () => {
    for (const env of sendingEnv(templateOf({ context: { live: 'true', paymentsUrl: PAYMENTS } }))) {
      expect(env[ENV.liveTargets]).toBe('email,payments');
      expect(env[ENV.paymentsUrl]).toBe(PAYMENTS);
    }
  });

  it('-c live=email: the email is live, the payments stay in the sandbox', () => {
    for (const env of sendingEnv(templateOf({ context: { live: 'email' } }))) {
      expect(env[ENV.liveTargets]).toBe('email');
      expect(env[ENV.paymentsUrl]).toBeUndefined();
    }
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['an endpoint for a target in the sandbox', { paymentsUrl: PAYMENTS }, `paymentsUrl: is set, but target payments is in the sandbox: add -c live=true (or live=payments) to call ${PAYMENTS}, or unset paymentsUrl`],
    ['a live target without its endpoint', { live: 'true' }, 'paymentsUrl: is required: target payments is live (-c live), and its calls need the provider\'s https endpoint'],
    ['a live name the workload does not have', { live: 'email,webhooks' }, 'live: must be true, false or a comma-separated list of workload invoices\'s targets (email, payments), got "webhooks"'],
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
