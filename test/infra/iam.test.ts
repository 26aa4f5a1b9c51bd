// tier: full
/**
 * Least privilege, per function, on the exact actions it uses; nobody may delete from Leases or
 * Fences. Checked on the effective (action, resource) pairs, so it holds however CDK groups
 * statements (the minimizePolicies feature flag).
 */
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FencedWorkflow } from '../../infra/constructs/fenced-workflow.js';
import { TABLE_ROLES, TABLES, UNFINISHED_INDEX, type TableRole } from '../../lib/workflow/index.js';
import { allAllowed, arnOf, logicalId, permissionsOf, templateOf, type Permission } from './support.js';

let template: Template;
let w: FencedWorkflow;
beforeAll(() => {
  const built = templateOf();
  template = built.template;
  w = built.stack.workflow;
});

const json = (v: unknown) => JSON.stringify(v);
const tableArn = (role: TableRole) => json(arnOf(w.tables[role]));
const queueArn = () => json(arnOf(w.queue));

/** The (action, resource) pairs a function's role is allowed on DynamoDB and the work queue. */
function dataPlane(fn: 'worker' | 'sweeper' | 'starter'): string[] {
  const dataResources = new Set([...TABLE_ROLES.map(tableArn), queueArn()]);
  return permissionsOf(template, logicalId(w[fn].role))
    .filter((p) => p.effect === 'Allow' && (p.action.startsWith('dynamodb:') || (p.action.startsWith('sqs:') && dataResources.has(p.resource)) || p.resource.includes('/index/')))
    .map((p) => `${p.action} ${p.resource}`)
    .sort();
}

const pairs = (actions: string[], resources: string[]) => actions.flatMap((a) => resources.map((r) => `${a} ${r}`));

describe('each function gets the exact actions it uses, on the exact resources', () => {
  it('the worker: Update on Leases; Update/ConditionCheck on Fences; Get/BatchGet/Update on Jobs (BatchGet: a run\'s shards); Put on Records; consume and continue on the work queue', () => {
    const consume = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'];
    expect(dataPlane('worker')).toEqual(
      [
        `dynamodb:UpdateItem ${tableArn('leases')}`,
        ...pairs(['dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'], [tableArn('fences')]),
        ...pairs(['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:UpdateItem'], [tableArn('jobs')]),
        `dynamodb:PutItem ${tableArn('records')}`,
        // The unit's outbox items are Puts in its transaction.
        `dynamodb:PutItem ${tableArn('outbox')}`,
        ...pairs([...consume, 'sqs:SendMessage'], [queueArn()]),
      ].sort(),
    );
  });

  it('the sweeper: Query on the unfinished-jobs index only, Update on Jobs, Get on Leases, SendMessage', () => {
    const index = json({ 'Fn::Join': ['', [arnOf(w.tables.jobs), `/index/${UNFINISHED_INDEX}`]] });
    expect(dataPlane('sweeper')).toEqual(
      [
        `dynamodb:Query ${index}`,
        `dynamodb:UpdateItem ${tableArn('jobs')}`,
        `dynamodb:GetItem ${tableArn('leases')}`,
        `sqs:SendMessage ${queueArn()}`,
      ].sort(),
    );
  });

  it('the starter: Put (run record, shards) and Get (an unsharded job of the period) on Jobs and SendMessage, nothing on Leases, Fences or Records', () => {
    expect(dataPlane('starter')).toEqual([`dynamodb:PutItem ${tableArn('jobs')}`, `dynamodb:GetItem ${tableArn('jobs')}`, `sqs:SendMessage ${queueArn()}`].sort());
  });

  it('each function writes logs to its own log group only, and no role carries a managed policy', () => {
    for (const fn of ['worker', 'sweeper', 'starter'] as const) {
      const logs = permissionsOf(template, logicalId(w[fn].role)).filter((p) => p.action.startsWith('logs:'));
      expect(logs.map((p) => p.action).sort()).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
      for (const p of logs) expect(p.resource).toBe(json(arnOf(w[fn].logGroup)));
    }
    for (const role of Object.values(template.findResources('AWS::IAM::Role'))) {
      expect((role.Properties as { ManagedPolicyArns?: unknown }).ManagedPolicyArns).toBeUndefined();
    }
  });

  it('the scheduler may invoke exactly the sweeper, the starter, the reconciler and the collector (no version or alias wildcard), and only from this account', () => {
    const roleId = logicalId(w.node.findChild('SchedulerRole'));
    const allowed = permissionsOf(template, roleId).map((p) => `${p.action} ${p.resource}`).sort();
    expect(allowed).toEqual(
      [
        `lambda:InvokeFunction ${json(arnOf(w.sweeper.fn))}`,
        `lambda:InvokeFunction ${json(arnOf(w.starter.fn))}`,
        `lambda:InvokeFunction ${json(arnOf(w.effects.reconciler.fn))}`,
        `lambda:InvokeFunction ${json(arnOf(w.effects.collector!.fn))}`,
        `sqs:SendMessage ${json(arnOf(w.scheduleDeadLetterQueue))}`,
      ].sort(),
    );
    const trust = (template.toJSON().Resources[roleId].Properties.AssumeRolePolicyDocument as { Statement: Record<string, unknown>[] }).Statement;
    expect(trust).toEqual([
      expect.objectContaining({
        Principal: { Service: 'scheduler.amazonaws.com' },
        Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
      }),
    ]);
  });
});

describe('no principal may delete an item from Leases or Fences', () => {
  let allowed: Permission[];
  beforeAll(() => {
    allowed = allAllowed(template);
  });

  it('no identity policy in the stack allows DeleteItem, BatchWriteItem or PartiQLDelete, on any resource', () => {
    const deleting = allowed.filter((p) => ['dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:PartiQLDelete'].includes(p.action));
    expect(deleting).toEqual([]);
  });

  it('no identity policy allows PutItem (a blind overwrite resets a counter) on Leases or Fences', () => {
    const permanent = TABLE_ROLES.filter((r) => TABLES[r].permanent).map(tableArn);
    expect(allowed.filter((p) => permanent.includes(p.resource) && !['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'].includes(p.action))).toEqual([]);
  });

  it.each(['worker', 'sweeper', 'starter'] as const)('%s: the X-Ray statement is alone in a policy of its own, attached to its role only; the role\'s default policy has no "*" resource', (fn) => {
    const roleRef = JSON.stringify([{ Ref: logicalId(w[fn].role) }]);
    const policies = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) => JSON.stringify(p.Properties.Roles) === roleRef);
    const tracing = policies.filter((p) => JSON.stringify(p.Properties.PolicyDocument).includes('xray:'));
    expect(tracing.map((p) => p.Properties.PolicyDocument.Statement)).toEqual([
      [{ Effect: 'Allow', Action: ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'], Resource: '*' }],
    ]);
    const others = policies.filter((p) => !tracing.includes(p));
    expect(others.length).toBeGreaterThan(0);
    expect(JSON.stringify(others.map((p) => p.Properties.PolicyDocument))).not.toContain('"Resource":"*"');
    // Active tracing itself is still on.
    expect(template.toJSON().Resources[logicalId(w[fn].fn)].Properties.TracingConfig).toEqual({ Mode: 'Active' });
  });

  it('no action is a wildcard, and "*" resources are only the actions that have no resource-level permissions (X-Ray, ListStreams) and the documents under invoices/', () => {
    expect(allowed.filter((p) => p.action.includes('*'))).toEqual([]);
    const star = allowed.filter((p) => p.resource.includes('*') && !p.resource.includes('/invoices/*'));
    expect(new Set(star.map((p) => p.action))).toEqual(new Set(['xray:PutTraceSegments', 'xray:PutTelemetryRecords', 'dynamodb:ListStreams']));
    expect(new Set(star.map((p) => p.resource))).toEqual(new Set([json('*')]));
    const documents = allowed.filter((p) => p.resource.includes('/invoices/*'));
    expect(new Set(documents.map((p) => p.action))).toEqual(new Set(['s3:PutObject', 's3:GetObject', 's3:DeleteObject']));
  });
});

describe('s3:ListBucket: granted so a missing document answers 404, scoped to the documents prefix', () => {
  /** Every statement of a role's identity policies that allows s3:ListBucket. */
  const listStatements = (roleId: string) =>
    Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((p) => JSON.stringify(p.Properties.Roles ?? []).includes(JSON.stringify({ Ref: roleId })))
      .flatMap((p) => p.Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown }[])
      .filter((s) => s.Effect === 'Allow' && [s.Action].flat().includes('s3:ListBucket'));

  it.each(['worker', 'collector'] as const)('%s: s3:ListBucket on the documents bucket only, conditioned on s3:prefix invoices/*', (fn) => {
    const role = fn === 'worker' ? w.worker.role : w.effects.collector!.role;
    const statements = listStatements(logicalId(role));
    expect(statements).toEqual([
      expect.objectContaining({ Action: 's3:ListBucket', Resource: arnOf(w.effects.bucket!), Condition: { StringLike: { 's3:prefix': 'invoices/*' } } }),
    ]);
  });

  it('no role in the stack holds s3:ListBucket without the prefix condition', () => {
    for (const roleId of Object.keys(template.findResources('AWS::IAM::Role'))) {
      for (const s of listStatements(roleId)) expect(s.Condition).toEqual({ StringLike: { 's3:prefix': 'invoices/*' } });
    }
  });
});
