// tier: full
/**
 * State: the synthesized tables ARE lib/workflow/schema.ts, they outlive the stack, and Leases and Fences
 * can neither lose an item nor be replicated to another region.
 */
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { FencedWorkflow, TABLE_IDS } from '../../infra/constructs/fenced-workflow.js';
import { invoices } from '../../lib/workloads/invoices/index.js';
import { COUNTER_DESTROYING_ACTIONS } from '../../infra/constructs/guards.js';
import { createTableInput, TABLE_ROLES, TABLES, type TableRole } from '../../lib/workflow/index.js';
import { appWithoutBundling, arnOf, logicalId, tableIdDrift, templateOf, withoutCfnValidation, PINNED_TABLES } from './support.js';

type Props = Record<string, unknown>;
let template: Template;
let tableProps: Record<TableRole, { Properties: Props; DeletionPolicy?: string; UpdateReplacePolicy?: string }>;

beforeAll(() => {
  const built = templateOf();
  template = built.template;
  const resources = template.toJSON().Resources as Record<string, { Properties: Props; DeletionPolicy?: string; UpdateReplacePolicy?: string }>;
  tableProps = Object.fromEntries(
    TABLE_ROLES.map((role) => [role, resources[logicalId(built.stack.workflow.tables[role])]!]),
  ) as typeof tableProps;
});

describe('the synthesized tables are the schema module', () => {
  it.each(TABLE_ROLES)('%s: key schema, attributes, GSIs and stream equal lib/workflow/schema.ts and the local CreateTable input', (role) => {
    const schema = TABLES[role];
    const p = tableProps[role].Properties;
    expect(p.KeySchema).toEqual([{ AttributeName: schema.partitionKey.name, KeyType: 'HASH' }]);
    const expectedGsis = schema.globalSecondaryIndexes.map((g) => ({
      IndexName: g.indexName,
      KeySchema: [
        { AttributeName: g.partitionKey.name, KeyType: 'HASH' },
        ...(g.sortKey ? [{ AttributeName: g.sortKey.name, KeyType: 'RANGE' }] : []),
      ],
      Projection: { ProjectionType: g.projection },
    }));
    expect(p.GlobalSecondaryIndexes ?? []).toEqual(expectedGsis);
    expect(p.StreamSpecification).toEqual(schema.stream ? { StreamViewType: schema.stream } : undefined);
    // The local runtime creates its tables with createTableInput: both sides describe one table.
    const local = createTableInput(schema, `x-${role}`);
    const sortByName = (a: { AttributeName?: string }, b: { AttributeName?: string }) => String(a.AttributeName).localeCompare(String(b.AttributeName));
    expect([...(p.AttributeDefinitions as { AttributeName: string }[])].sort(sortByName)).toEqual([...local.AttributeDefinitions!].sort(sortByName));
    expect(p.KeySchema).toEqual(local.KeySchema);
    expect(p.GlobalSecondaryIndexes ?? []).toEqual(local.GlobalSecondaryIndexes ?? []);
    expect(p.BillingMode).toBe(local.BillingMode);
  });

  it('no table has a physical name, so two stacks (two forks) deploy into one account', () => {
    for (const role of TABLE_ROLES) expect(tableProps[role].Properties.TableName).toBeUndefined();
  });
});

describe("an index replacement is two deploys (DynamoDB creates or deletes one GSI per table update)", () => {
  const gsis = (context: Record<string, unknown>) => {
    const built = templateOf({ context });
    const outbox = (built.template.toJSON().Resources as Record<string, { Properties: Props }>)[logicalId(built.stack.workflow.tables.outbox)]!;
    return ((outbox.Properties.GlobalSecondaryIndexes ?? []) as { IndexName: string }[]).map((g) => g.IndexName).sort();
  };

  it('keepRetiredIndexes=true keeps the retired unsent-by-age beside unsent-by-shard (the first deploy: one create); without it, only the new one (the second: one delete)', () => {
    const now = TABLES.outbox.globalSecondaryIndexes.map((g) => g.indexName);
    const retired = (TABLES.outbox.retiredIndexes ?? []).map((g) => g.indexName);
    expect(retired).toEqual(['unsent-by-age']);
    expect(gsis({ keepRetiredIndexes: 'true' })).toEqual([...now, ...retired].sort());
    expect(gsis({})).toEqual(now);
    // Each step changes one index, as DynamoDB allows.
    expect(gsis({ keepRetiredIndexes: 'true' }).length - gsis({}).length).toBe(1);
  });

  it('a value other than true or false is refused at synth, naming the setting', () => {
    expect(() => templateOf({ context: { keepRetiredIndexes: 'yes' } })).toThrow(/keepRetiredIndexes: must be true or false, got "yes"/);
  });

  it('the local tables never carry a retired index', () => {
    expect(createTableInput(TABLES.outbox, 't-outbox').GlobalSecondaryIndexes?.map((g) => g.IndexName)).toEqual(TABLES.outbox.globalSecondaryIndexes.map((g) => g.indexName));
  });
});

describe('the deployed tables keep their identity', () => {
  it('each table keeps the logical id and resource type it was first deployed with (a change would replace it with an empty one)', () => {
    expect(tableIdDrift(template.toJSON()), 'see PINNED_TABLES in test/infra/support.ts').toEqual([]);
    expect(Object.keys(PINNED_TABLES).sort()).toEqual([...TABLE_ROLES].sort());
  });

  it('a renamed construct is caught, with the reason in the failure', () => {
    const app = appWithoutBundling();
    const stack = new Stack(app, 'FencedWorkflow');
    new FencedWorkflow(stack, 'RenamedWorkflow', { workload: invoices, fenceEpoch: 0, externalEffects: { senderAddress: 'sender@fenced-workflow.dev' } });
    const drift = tableIdDrift(withoutCfnValidation(() => Template.fromStack(stack)).toJSON());
    expect(drift).toHaveLength(5);
    expect(drift.find((d) => d.startsWith('leases'))).toMatch(
      /leases: WorkflowLeasesA5312C66 \(AWS::DynamoDB::Table\) is gone.*CloudFormation would create a new, empty Leases table.*every counter back at 0/s,
    );
  });

  it('a Table -> TableV2 (AWS::DynamoDB::GlobalTable) change under the same id is caught', () => {
    const changed = structuredClone(template.toJSON()) as { Resources: Record<string, { Type: string }> };
    changed.Resources[PINNED_TABLES.fences]!.Type = 'AWS::DynamoDB::GlobalTable';
    expect(tableIdDrift(changed)).toEqual([expect.stringMatching(/^fences: WorkflowFences7C5A223B is now AWS::DynamoDB::GlobalTable.*replace/s)]);
  });
});

describe('durable state', () => {
  it.each(TABLE_ROLES)('%s survives the stack: retained, deletion-protected, point-in-time recovery, encrypted, on-demand', (role) => {
    const t = tableProps[role];
    expect(t.DeletionPolicy).toBe('Retain');
    expect(t.UpdateReplacePolicy).toBe('Retain');
    expect(t.Properties.DeletionProtectionEnabled).toBe(true);
    expect(t.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(t.Properties.SSESpecification).toEqual({ SSEEnabled: true });
    expect(t.Properties.BillingMode).toBe('PAY_PER_REQUEST');
  });

  it('no table has a TTL: an expired lease or fence item would restart its counter', () => {
    for (const role of TABLE_ROLES) expect(tableProps[role].Properties.TimeToLiveSpecification).toBeUndefined();
  });

  it('the Records stream carries new and old images (the invariant checker compares generations)', () => {
    expect(tableProps.records.Properties.StreamSpecification).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
  });
});

describe('no principal may delete or replace an item in Leases or Fences', () => {
  const permanent = TABLE_ROLES.filter((r) => TABLES[r].permanent);

  it('the schema marks exactly Leases and Fences permanent', () => {
    expect(permanent.sort()).toEqual(['fences', 'leases']);
  });

  it.each(permanent)('%s: the resource policy denies DeleteItem, BatchWriteItem, PutItem and PartiQL delete/insert/update to every principal', (role) => {
    const statements = (tableProps[role].Properties.ResourcePolicy as { PolicyDocument: { Statement: Props[] } }).PolicyDocument.Statement;
    const denies = statements.filter((s) => s.Effect === 'Deny' && s.Principal === '*' && s.Resource === '*' && s.Condition === undefined);
    const denied = new Set(denies.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]) as string[]));
    for (const action of ['dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:PartiQLUpdate', ...COUNTER_DESTROYING_ACTIONS]) expect(denied).toContain(action);
    // Nothing in the policy allows anything: identity policies grant, the resource policy only forbids.
    expect(statements.filter((s) => s.Effect !== 'Deny')).toEqual([]);
  });
});

/** A resource-policy Deny evaluator for the shapes the guard uses: Principal "*", Action list, optional ArnNotLike on aws:PrincipalArn. */
function deniedBy(statements: Props[], principalArn: string, action: string): boolean {
  const like = (pattern: string, value: string) => new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\/]/g, '\\$&')).join('.*')}$`).test(value);
  return statements.some((s) => {
    if (s.Effect !== 'Deny' || s.Principal !== '*') return false;
    if (!(Array.isArray(s.Action) ? s.Action : [s.Action]).includes(action)) return false;
    const cond = s.Condition as { ArnNotLike?: { 'aws:PrincipalArn': string[] } } | undefined;
    if (cond === undefined) return true;
    const exempt = cond.ArnNotLike?.['aws:PrincipalArn'] ?? [];
    return !exempt.some((p) => like(p, principalArn));
  });
}

describe('nobody but the workflow updates a counter: UpdateItem and PartiQL update are denied to every other principal', () => {
  const OPERATOR = 'arn:aws:iam::111111111111:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_Oncall_*';
  let built: ReturnType<typeof templateOf>;
  let withOperator: ReturnType<typeof templateOf>;
  const ARN = { worker: 'arn:aws:iam::111111111111:role/FencedWorkflow-WorkflowWorkerRole-ABC', admin: 'arn:aws:iam::111111111111:role/Admin' };
  beforeAll(() => {
    built = templateOf();
    withOperator = templateOf({ context: { operatorRoleArn: OPERATOR } });
  });
  const statementsOf = (b: ReturnType<typeof templateOf>, role: 'leases' | 'fences') => {
    const r = b.template.toJSON().Resources[logicalId(b.stack.workflow.tables[role])] as { Properties: Props };
    // Resolve the worker role's ARN to a literal, as IAM sees it at request time.
    const text = JSON.stringify((r.Properties.ResourcePolicy as { PolicyDocument: { Statement: Props[] } }).PolicyDocument.Statement).replaceAll(
      JSON.stringify({ 'Fn::GetAtt': [logicalId(b.stack.workflow.worker.role), 'Arn'] }),
      JSON.stringify(ARN.worker),
    );
    return JSON.parse(text) as Props[];
  };

  it.each(['leases', 'fences'] as const)('%s: the worker role may UpdateItem; an administrator, the sweeper and the starter may not; PartiQL update nobody', (role) => {
    const st = statementsOf(built, role);
    expect(deniedBy(st, ARN.worker, 'dynamodb:UpdateItem')).toBe(false);
    expect(deniedBy(st, ARN.admin, 'dynamodb:UpdateItem')).toBe(true);
    expect(deniedBy(st, 'arn:aws:iam::111111111111:role/FencedWorkflow-WorkflowSweeperRole-XYZ', 'dynamodb:UpdateItem')).toBe(true);
    for (const who of [ARN.worker, ARN.admin]) expect(deniedBy(st, who, 'dynamodb:PartiQLUpdate')).toBe(true);
    // Reads and the worker's ConditionCheck are not touched by the guard.
    for (const a of ['dynamodb:GetItem', 'dynamodb:ConditionCheckItem', 'dynamodb:Query']) expect(deniedBy(st, ARN.admin, a)).toBe(false);
  });

  it.each(['leases', 'fences'] as const)('%s: with context operatorRoleArn that role may UpdateItem too (raise-epoch, seal)', (role) => {
    const st = statementsOf(withOperator, role);
    const session = 'arn:aws:iam::111111111111:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_Oncall_0123456789abcdef';
    expect(deniedBy(st, session, 'dynamodb:UpdateItem')).toBe(false);
    expect(deniedBy(st, ARN.admin, 'dynamodb:UpdateItem')).toBe(true);
    expect(deniedBy(st, session, 'dynamodb:DeleteItem')).toBe(true);
  });

  it('the Jobs and Records tables carry no such policy (the sweeper, the starter and a DR restore update them)', () => {
    for (const role of ['jobs', 'records'] as const) expect(tableProps[role].Properties.ResourcePolicy).toBeUndefined();
  });

  it('a malformed operatorRoleArn is refused at synth', () => {
    expect(() => templateOf({ context: { operatorRoleArn: 'Admin' } })).toThrow(/operatorRoleArn: must be an IAM role ARN/);
  });

  it('a change to the guard itself is watched: an EventBridge rule on CloudTrail for the policy, deletion protection and deletion of Leases and Fences notifies the alarm topic', () => {
    const w = built.stack.workflow;
    // The other rule of the stack is the SES events' (to the recorder).
    const rules = Object.values(built.template.findResources('AWS::Events::Rule')).map((r) => r.Properties as Props).filter((p) => JSON.stringify(p.EventPattern).includes('aws.dynamodb'));
    const arns = [arnOf(w.tables.leases), arnOf(w.tables.fences)];
    const names = [{ Ref: logicalId(w.tables.leases) }, { Ref: logicalId(w.tables.fences) }];
    expect(rules).toEqual([
      expect.objectContaining({
        State: 'ENABLED',
        EventPattern: {
          source: ['aws.dynamodb'],
          'detail-type': ['AWS API Call via CloudTrail'],
          detail: {
            eventSource: ['dynamodb.amazonaws.com'],
            $or: [
              { eventName: ['PutResourcePolicy', 'DeleteResourcePolicy'], requestParameters: { resourceArn: arns } },
              { eventName: ['UpdateTable'], requestParameters: { tableName: [...names, ...arns], deletionProtectionEnabled: [false] } },
              { eventName: ['UpdateTable'], requestParameters: { tableName: [...names, ...arns], replicaUpdates: [{ exists: true }] } },
              { eventName: ['CreateTableReplica'], requestParameters: { tableName: [...names, ...arns] } },
              { eventName: ['DeleteTable'], requestParameters: { tableName: [...names, ...arns] } },
            ],
          },
        },
        Targets: [expect.objectContaining({ Arn: { Ref: logicalId(w.monitoring.node.findChild('AlarmTopic')) } })],
      }),
    ]);
  });

  it("only this stack's guard rule may publish to the alarm topic as EventBridge: the target's open grant is closed by a deny on any other source", () => {
    const w = built.stack.workflow;
    const topic = w.monitoring.node.findChild('AlarmTopic');
    // The guard's rule: the one that targets the alarm topic (the SES events rule targets the recorder).
    const rules = Object.entries(built.template.findResources('AWS::Events::Rule'));
    const rule = rules.find(([, r]) => JSON.stringify(r.Properties.Targets).includes(JSON.stringify({ Ref: logicalId(topic) })))![0];
    const policies = Object.values(built.template.findResources('AWS::SNS::TopicPolicy')).filter((p) => JSON.stringify(p.Properties.Topics) === JSON.stringify([{ Ref: logicalId(topic) }]));
    const statements = policies.flatMap((p) => p.Properties.PolicyDocument.Statement as Props[]);
    expect(statements).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Effect: 'Deny', Principal: { Service: 'events.amazonaws.com' }, Action: 'sns:Publish', Condition: { ArnNotEquals: { 'aws:SourceArn': { 'Fn::GetAtt': [rule, 'Arn'] } } } }),
      ]),
    );
  });

  it('an operatorRoleArn whose wildcard would match any role is refused at synth; a suffix after a role-name prefix (SSO) is not', () => {
    for (const broad of ['arn:aws:iam::111111111111:role/*', 'arn:aws:iam::111111111111:role/ops/*', 'arn:aws:iam::111111111111:role/*/Admin']) {
      expect(() => templateOf({ context: { operatorRoleArn: broad } }), broad).toThrow(/operatorRoleArn: .*wildcard that matches any role/);
    }
  });
});

describe('Leases and Fences are never replicated (global tables replicate asynchronously)', () => {
  const synthWithReplicas = (role: TableRole) => {
    const app = appWithoutBundling();
    const stack = new Stack(app, 'Fork', { env: { account: '111111111111', region: 'eu-west-1' } });
    new FencedWorkflow(stack, 'Workflow', {
      workload: invoices,
      fenceEpoch: 0,
      externalEffects: { senderAddress: 'sender@fenced-workflow.dev' },
      replicationRegions: { [role]: ['eu-central-1'] },
    });
    return () => withoutCfnValidation(() => Template.fromStack(stack));
  };

  it.each(['leases', 'fences'] as const)('synth fails, saying why, when %s would get a replica', (role) => {
    expect(synthWithReplicas(role)).toThrow(
      new RegExp(`Workflow/${TABLE_IDS[role]}: the ${TABLE_IDS[role]} table must not be replicated to another region \\(eu-central-1\\).*asynchronously.*raise the epoch`, 's'),
    );
  });

  it('a fork may still replicate Records (read elsewhere; writes stay in the home region)', () => {
    const template = synthWithReplicas('records')();
    template.hasResourceProperties('Custom::DynamoDBReplica', { Region: 'eu-central-1' });
  });
});
