/**
 * Guards for the rules that keep fencing tokens monotonic (DESIGN.md, TOKENS): the Leases and
 * Fences resource policy, the watch on what that policy cannot stop, and synth-time refusals (a
 * construct validation: `cdk synth` fails with the message, nothing is deployed).
 */
import { Annotations, CfnResource, Stack } from 'aws-cdk-lib';
import { CfnGlobalTable, type Table } from 'aws-cdk-lib/aws-dynamodb';
import { Rule } from 'aws-cdk-lib/aws-events';
import { SnsTopic } from 'aws-cdk-lib/aws-events-targets';
import { Effect, PolicyStatement, ServicePrincipal, StarPrincipal } from 'aws-cdk-lib/aws-iam';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

/**
 * Item-level actions that remove, blindly replace or rewrite an item by a path the workflow never
 * takes. On Leases or Fences any of them can put a counter below a value already issued or
 * accepted (a PartiQL UPDATE can REMOVE `generation` as well as an UpdateItem can), and an
 * obsolete holder's token would pass again. The protocol needs none of them: acquire, renew,
 * release, raise and seal are all conditional UpdateItem calls.
 */
export const COUNTER_DESTROYING_ACTIONS = [
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:PutItem',
  'dynamodb:PartiQLDelete',
  'dynamodb:PartiQLInsert',
  'dynamodb:PartiQLUpdate',
] as const;

/**
 * The resource-policy statement on Leases and Fences: every principal (in this account or any
 * other; an administrator too) is denied the actions above. An explicit Deny wins over any
 * Allow, so a later grant in some other stack cannot undo it. `Resource: *` in a resource
 * policy means this table (CloudFormation cannot reference a table's ARN inside its own policy).
 */
export function denyCounterDestruction(): PolicyStatement {
  return new PolicyStatement({
    sid: 'CountersAreNeverDeletedOrReplaced',
    effect: Effect.DENY,
    principals: [new StarPrincipal()],
    actions: [...COUNTER_DESTROYING_ACTIONS],
    resources: ['*'],
  });
}

/**
 * UpdateItem is how the workflow writes counters (always conditional, never lowering one), and
 * also how anyone else could `REMOVE generation` or set it to 0, which restarts a counter as a
 * delete would. So every principal whose ARN matches none of `writers` (the worker's role, and an
 * operator role for raise-epoch and seal) is denied it. IAM cannot look inside an update
 * expression: a writer is trusted with what it sends. aws:PrincipalArn is the role's ARN for any
 * session of it; a principal without one matches no writer and is denied.
 */
export function denyCounterUpdatesExcept(writers: readonly string[]): PolicyStatement {
  return new PolicyStatement({
    sid: 'OnlyTheWorkflowUpdatesCounters',
    effect: Effect.DENY,
    principals: [new StarPrincipal()],
    actions: ['dynamodb:UpdateItem'],
    resources: ['*'],
    conditions: { ArnNotLike: { 'aws:PrincipalArn': [...writers] } },
  });
}

/**
 * The resource policy cannot stop the account root from deleting it (DynamoDB lets root run
 * DeleteResourcePolicy whatever the policy says, so nobody locks themselves out), and an
 * administrator can change it, switch deletion protection off, or delete the table. What it
 * cannot stop is watched: CloudTrail records each of these calls and this rule sends it to the
 * alarm topic. Needs a CloudTrail trail logging management events in this region (EventBridge
 * sees CloudTrail API calls only through one). A deploy that changes the policy is reported too.
 */
export function watchCounterGuard(scope: Construct, tables: readonly Table[], topic: ITopic, deadLetterQueue: IQueue): Rule {
  const arns = tables.map((t) => t.tableArn);
  const names = [...tables.map((t) => t.tableName), ...arns];
  const rule = new Rule(scope, 'CounterGuardChanged', {
    description: 'Notifies the alarm topic when the guard of Leases/Fences changes: resource policy, deletion protection, the table itself',
    eventPattern: {
      source: ['aws.dynamodb'],
      detailType: ['AWS API Call via CloudTrail'],
      detail: {
        eventSource: ['dynamodb.amazonaws.com'],
        $or: [
          { eventName: ['PutResourcePolicy', 'DeleteResourcePolicy'], requestParameters: { resourceArn: arns } },
          { eventName: ['UpdateTable'], requestParameters: { tableName: names, deletionProtectionEnabled: [false] } },
          // A replica added after deploy (console, CLI): global tables must never hold these counters.
          { eventName: ['UpdateTable'], requestParameters: { tableName: names, replicaUpdates: [{ exists: true }] } },
          { eventName: ['CreateTableReplica'], requestParameters: { tableName: names } },
          { eventName: ['DeleteTable'], requestParameters: { tableName: names } },
        ],
      },
    },
  });
  // A notification EventBridge cannot deliver (a topic policy or key that refuses it) is kept there, and that queue alarms.
  rule.addTarget(new SnsTopic(topic, { deadLetterQueue }));
  // A given topic (alarmTopicArn) has its ARN's account and region, this env-agnostic stack none:
  // CDK warns that they may differ. infra/stack.ts asserts at deploy that the region is the stack's.
  Annotations.of(rule).acknowledgeWarning('@aws-cdk/aws-events:ruleUnresolvedEnvironment', "the alarm topic's region is asserted at deploy to be the stack's");
  // The target grants events.amazonaws.com Publish with no condition: any account's rule could
  // then post fake or flooding guard notices. Only this rule may (EventBridge names its rule in
  // aws:SourceArn when it publishes). An imported topic's policy is its owner's (docs/deploy.md).
  topic.addToResourcePolicy(
    new PolicyStatement({
      effect: Effect.DENY,
      principals: [new ServicePrincipal('events.amazonaws.com')],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: { ArnNotEquals: { 'aws:SourceArn': rule.ruleArn } },
    }),
  );
  return rule;
}

/** The synth error for a Leases or Fences table that would be replicated to `regions`. */
function replicationRefused(path: string, role: string, regions: string): string {
  return (
    `${path}: the ${role} table must not be replicated to another region (${regions}). DynamoDB global tables ` +
    `replicate asynchronously: after a failover the replica's ${role === 'Leases' ? 'lease generations' : 'fence generations'} ` +
    `can be lower than tokens already issued or accepted, and an obsolete holder's writes would pass the fence again. ` +
    `Keep Leases and Fences in one region (with every table that shares their transactions); for disaster recovery ` +
    `restore from backup and raise the epoch (docs/runbook-dr.md).`
  );
}

/**
 * Every region other than the stack's that `table` would be replicated to: `replicationRegions`
 * (Table v1 adds one Custom::DynamoDBReplica child, id `Replica<region>`, per region) or
 * replicas of an AWS::DynamoDB::GlobalTable underneath it.
 */
export function replicaRegions(table: Table): string[] {
  const stack = Stack.of(table);
  const regions = new Set<string>();
  for (const c of table.node.findAll()) {
    if (c instanceof CfnResource && c.cfnResourceType === 'Custom::DynamoDBReplica') {
      // CustomResource's CfnResource is its `Default` child; the region is in the parent's id.
      const id = c.node.id === 'Default' ? (c.node.scope?.node.id ?? c.node.id) : c.node.id;
      regions.add(id.replace(/^Replica/, ''));
    } else if (c instanceof CfnGlobalTable) {
      const replicas = stack.resolve(c.replicas) as { region?: string }[] | undefined;
      for (const r of replicas ?? []) if (r.region !== undefined && r.region !== stack.region) regions.add(r.region);
    }
  }
  return [...regions];
}

/** Fails synth if `table` (Leases or Fences) would be replicated to any other region. */
export function refuseReplication(table: Table, role: string): void {
  table.node.addValidation({
    validate: () => {
      const regions = replicaRegions(table);
      return regions.length === 0 ? [] : [replicationRefused(table.node.path, role, regions.join(', '))];
    },
  });
}
