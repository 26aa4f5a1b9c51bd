// tier: full
/**
 * cdk-nag (AwsSolutions + Serverless, v3 Validations API), registered as infra/app.ts registers
 * it: zero unacknowledged findings, and each acknowledgement names one rule on one resource with
 * a reason. (CDK's built-in CloudFormation schema validation only warns, never fails synth, and
 * costs seconds of WebAssembly per synth: `npm run synth` runs it and prints its warnings.)
 */
import { Names, Stack } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { stackNameFrom } from '../../infra/context.js';
import { WORKLOADS } from '../../lib/workloads/index.js';
import type { Workload } from '../../lib/workflow/index.js';
import { acknowledgementsOf, buildApp, nagViolations, withoutCfnValidation } from './support.js';

/**
 * The reviewed acknowledgements of a workload's stack. Adding one is a decision: write it here and
 * in the report. The recorder's only for a workload that sends email, the documents' wildcard
 * under its own folder and nothing wider.
 */
function expectedAcknowledgements(w: Workload<any>, workQueue: string): string[] {
  const stack = stackNameFrom(undefined, w.name);
  const prefix = w.processor.documents?.prefix;
  const effects = ['Sender', 'Reconciler', ...(w.outbox.email ? ['Recorder'] : []), ...(prefix !== undefined ? ['Collector'] : [])];
  return [
    ['Workflow/WorkerTracing', 'AwsSolutions::AwsSolutions-IAM5[Resource::*]'],
    ['Workflow/SweeperTracing', 'AwsSolutions::AwsSolutions-IAM5[Resource::*]'],
    ['Workflow/StarterTracing', 'AwsSolutions::AwsSolutions-IAM5[Resource::*]'],
    ['Workflow/Worker', 'Serverless::Serverless-LambdaDLQ'],
    ['Workflow/Sweeper/EventInvokeConfig', 'Serverless::Serverless-LambdaAsyncFailureDestination'],
    ['Workflow/Starter/EventInvokeConfig', 'Serverless::Serverless-LambdaAsyncFailureDestination'],
    // The event source's construct id names the queue by its unique id (FencedWorkflowWorkQueueD1305080 in the invoice stack).
    [`Workflow/Worker/SqsEventSource:${workQueue}`, 'Serverless::Serverless-LambdaEventSourceMappingDestination'],
    ['Workflow/DeadLetterQueue', 'Serverless::Serverless-SQSRedrivePolicy'],
    ['Workflow/ScheduleDeadLetterQueue', 'Serverless::Serverless-SQSRedrivePolicy'],
    // The external effects (infra/constructs/external-effects.ts): those the workload has.
    ...effects.map((f) => [`Workflow/Effects/${f}Tracing`, 'AwsSolutions::AwsSolutions-IAM5[Resource::*]']),
    ['Workflow/Effects/Reconciler/EventInvokeConfig', 'Serverless::Serverless-LambdaAsyncFailureDestination'],
    ['Workflow/Effects/Sender', 'Serverless::Serverless-LambdaDLQ'],
    ['Workflow/Effects/SenderDeadLetterQueue', 'AwsSolutions::AwsSolutions-SQS3'],
    ['Workflow/Effects/SenderDeadLetterQueue', 'Serverless::Serverless-SQSRedrivePolicy'],
    // dynamodb:ListStreams (added by the DynamoDB event source) has no resource-level permission.
    ['Workflow/Effects/SenderRole/DefaultPolicy', 'AwsSolutions::AwsSolutions-IAM5[Resource::*]'],
    // The sandbox provider (every registered workload has an http target, in the sandbox by default).
    ...(w.outbox.http.length > 0
      ? [
          ['Workflow/Effects/Sandbox/SandboxProviderTracing', 'AwsSolutions::AwsSolutions-IAM5[Resource::*]'],
          ['Workflow/Effects/Sandbox/SandboxProvider', 'Serverless::Serverless-LambdaDLQ'],
        ]
      : []),
    ...(prefix === undefined
      ? []
      : [
          ['Workflow/Effects/AccessLogs', 'AwsSolutions::AwsSolutions-S1'],
          ['Workflow/Effects/Collector/EventInvokeConfig', 'Serverless::Serverless-LambdaAsyncFailureDestination'],
          // Document keys are new per generation: <prefix>* and nothing wider.
          ['Workflow/Effects/CollectorRole/DefaultPolicy', `AwsSolutions::AwsSolutions-IAM5[Resource::<WorkflowEffectsDocumentsD5D6552C.Arn>/${prefix}*]`],
          ['Workflow/WorkerRole/DefaultPolicy', `AwsSolutions::AwsSolutions-IAM5[Resource::<WorkflowEffectsDocumentsD5D6552C.Arn>/${prefix}*]`],
        ]),
  ].map(([path, rule]) => `${stack}/${path} ${rule}`);
}

const byName = WORKLOADS.map((w) => [w.name, w] as const);

describe('compliance checks', () => {
  it.each(byName)('the %s app has zero unacknowledged findings (AwsSolutions and Serverless packs)', (name) => {
    const { app, outdir } = buildApp({ nag: true, workload: name });
    const violations = withoutCfnValidation(() => nagViolations(app, outdir));
    expect(violations).toEqual([]);
  });

  it('a stack that adopted restored tables (disaster recovery) passes the same checks', () => {
    const { app, outdir } = buildApp({ nag: true, context: { adoptTables: { jobs: 'restored-jobs', records: 'restored-invoices' } } });
    expect(withoutCfnValidation(() => nagViolations(app, outdir))).toEqual([]);
  });

  it.each(byName)('%s: each acknowledgement is specific: one rule on one resource (never the stack), with a reason a reviewer can check', (name, workload) => {
    const { stack } = buildApp({ nag: true, workload: name });
    const acks = acknowledgementsOf(stack);
    const prefix = workload.processor.documents?.prefix ?? '(none)';
    // The invoice stack's event source keeps the construct id it was deployed with.
    if (name === 'invoices') expect(Names.nodeUniqueId(stack.workflow.queue.node)).toBe('FencedWorkflowWorkQueueD1305080');
    expect(acks.map((a) => `${a.path} ${a.id}`).sort()).toEqual([...expectedAcknowledgements(workload, Names.nodeUniqueId(stack.workflow.queue.node))].sort());
    for (const a of acks) {
      expect(a.path).not.toBe(stack.node.path);
      // Plugin-qualified rule id, with the finding for granular rules: never a bare pack or a prefix.
      expect(a.id).toMatch(/^(AwsSolutions|Serverless)::\1-[A-Za-z0-9]+(\[[^\]]+\])?$/);
      expect(a.reason.length, `${a.path} ${a.id}`).toBeGreaterThan(80);
    }
    // The wildcards acknowledged: the X-Ray resource, ListStreams, and the documents under the workload's folder: any other would still be reported.
    expect(acks.filter((a) => a.id.includes('IAM5')).every((a) => a.id.endsWith('IAM5[Resource::*]') || a.id.endsWith(`/${prefix}*]`))).toBe(true);
  });

  it.each(['worker', 'sweeper', 'starter'] as const)('a DynamoDB statement on "*" added to the %s role is a finding: only the X-Ray policy is acknowledged', (fn) => {
    const { app, stack, outdir } = buildApp({ nag: true });
    stack.workflow[fn].role.addToPrincipalPolicy(new PolicyStatement({ actions: ['dynamodb:UpdateItem'], resources: ['*'] }));
    const violations = withoutCfnValidation(() => nagViolations(app, outdir));
    const role = stack.workflow[fn].role.node.path;
    expect(violations).toEqual([{ plugin: 'AwsSolutions', rule: 'AwsSolutions-IAM5[Resource::*]', paths: [`${role}/DefaultPolicy/Resource`] }]);
  });

  it('the checks are live: an unacknowledged plain queue fails synth with the rules it breaks', () => {
    const { app, stack, outdir } = buildApp({ nag: true });
    new Queue(stack as Stack, 'PlainQueue');
    const violations = withoutCfnValidation(() => nagViolations(app, outdir));
    const rules = violations.filter((v) => v.paths.some((p) => p.startsWith('FencedWorkflow/PlainQueue'))).map((v) => v.rule);
    expect(rules).toEqual(expect.arrayContaining(['AwsSolutions-SQS3', 'AwsSolutions-SQS4', 'Serverless-SQSRedrivePolicy']));
    // ...and nothing else in the stack.
    expect(violations.filter((v) => !v.paths.every((p) => p.startsWith('FencedWorkflow/PlainQueue')))).toEqual([]);
  });
});
