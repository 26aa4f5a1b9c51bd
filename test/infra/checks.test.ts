/**
 * cdk-nag (AwsSolutions + Serverless, v3 Validations API), registered as infra/app.ts registers
 * it: zero unacknowledged findings, and each acknowledgement names one rule on one resource with
 * a reason. (CDK's built-in CloudFormation schema validation only warns, never fails synth, and
 * costs seconds of WebAssembly per synth: `npm run synth` runs it and prints its warnings.)
 */
import { Stack } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { acknowledgementsOf, buildApp, nagViolations, withoutCfnValidation } from './support.js';

/** The reviewed acknowledgements. Adding one is a decision: write it here and in the report. */
const EXPECTED = [
  ['FencedWorkflow/Workflow/WorkerTracing', 'AwsSolutions::AwsSolutions-IAM5[Resource::*]'],
  ['FencedWorkflow/Workflow/SweeperTracing', 'AwsSolutions::AwsSolutions-IAM5[Resource::*]'],
  ['FencedWorkflow/Workflow/StarterTracing', 'AwsSolutions::AwsSolutions-IAM5[Resource::*]'],
  ['FencedWorkflow/Workflow/Worker', 'Serverless::Serverless-LambdaDLQ'],
  ['FencedWorkflow/Workflow/Sweeper/EventInvokeConfig', 'Serverless::Serverless-LambdaAsyncFailureDestination'],
  ['FencedWorkflow/Workflow/Starter/EventInvokeConfig', 'Serverless::Serverless-LambdaAsyncFailureDestination'],
  ['FencedWorkflow/Workflow/Worker/SqsEventSource:FencedWorkflowWorkQueueD1305080', 'Serverless::Serverless-LambdaEventSourceMappingDestination'],
  ['FencedWorkflow/Workflow/DeadLetterQueue', 'Serverless::Serverless-SQSRedrivePolicy'],
  ['FencedWorkflow/Workflow/ScheduleDeadLetterQueue', 'Serverless::Serverless-SQSRedrivePolicy'],
  // The external effects (infra/constructs/external-effects.ts).
  ...['Sender', 'Reconciler', 'Recorder', 'Collector'].map((f) => [`FencedWorkflow/Workflow/Effects/${f}Tracing`, 'AwsSolutions::AwsSolutions-IAM5[Resource::*]']),
  ['FencedWorkflow/Workflow/Effects/AccessLogs', 'AwsSolutions::AwsSolutions-S1'],
  ['FencedWorkflow/Workflow/Effects/Collector/EventInvokeConfig', 'Serverless::Serverless-LambdaAsyncFailureDestination'],
  ['FencedWorkflow/Workflow/Effects/Reconciler/EventInvokeConfig', 'Serverless::Serverless-LambdaAsyncFailureDestination'],
  ['FencedWorkflow/Workflow/Effects/Sender', 'Serverless::Serverless-LambdaDLQ'],
  ['FencedWorkflow/Workflow/Effects/SenderDeadLetterQueue', 'AwsSolutions::AwsSolutions-SQS3'],
  ['FencedWorkflow/Workflow/Effects/SenderDeadLetterQueue', 'Serverless::Serverless-SQSRedrivePolicy'],
  // dynamodb:ListStreams (added by the DynamoDB event source) has no resource-level permission.
  ['FencedWorkflow/Workflow/Effects/SenderRole/DefaultPolicy', 'AwsSolutions::AwsSolutions-IAM5[Resource::*]'],
  // Document keys are new per generation: invoices/* and nothing wider.
  ['FencedWorkflow/Workflow/Effects/CollectorRole/DefaultPolicy', 'AwsSolutions::AwsSolutions-IAM5[Resource::<WorkflowEffectsDocumentsD5D6552C.Arn>/invoices/*]'],
  ['FencedWorkflow/Workflow/WorkerRole/DefaultPolicy', 'AwsSolutions::AwsSolutions-IAM5[Resource::<WorkflowEffectsDocumentsD5D6552C.Arn>/invoices/*]'],
].map(([path, rule]) => `${path} ${rule}`);

describe('compliance checks', () => {
  it('the app has zero unacknowledged findings (AwsSolutions and Serverless packs)', () => {
    const { app, outdir } = buildApp({ nag: true });
    const violations = withoutCfnValidation(() => nagViolations(app, outdir));
    expect(violations).toEqual([]);
  });

  it('a stack that adopted restored tables (disaster recovery) passes the same checks', () => {
    const { app, outdir } = buildApp({ nag: true, context: { adoptTables: { jobs: 'restored-jobs', records: 'restored-invoices' } } });
    expect(withoutCfnValidation(() => nagViolations(app, outdir))).toEqual([]);
  });

  it('each acknowledgement is specific: one rule on one resource (never the stack), with a reason a reviewer can check', () => {
    const { stack } = buildApp({ nag: true });
    const acks = acknowledgementsOf(stack);
    expect(acks.map((a) => `${a.path} ${a.id}`).sort()).toEqual([...EXPECTED].sort());
    for (const a of acks) {
      expect(a.path).not.toBe(stack.node.path);
      // Plugin-qualified rule id, with the finding for granular rules: never a bare pack or a prefix.
      expect(a.id).toMatch(/^(AwsSolutions|Serverless)::\1-[A-Za-z0-9]+(\[[^\]]+\])?$/);
      expect(a.reason.length, `${a.path} ${a.id}`).toBeGreaterThan(80);
    }
    // The wildcards acknowledged: the X-Ray resource, ListStreams, and the documents under invoices/: any other would still be reported.
    expect(acks.filter((a) => a.id.includes('IAM5')).every((a) => a.id.endsWith('IAM5[Resource::*]') || a.id.endsWith('/invoices/*]'))).toBe(true);
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
