/**
 * Synth-time guards for the rules that keep fencing tokens monotonic (DESIGN.md, TOKENS).
 * A guard is a construct validation: `cdk synth` fails with the message, nothing is deployed.
 */
import { CfnResource, Stack } from 'aws-cdk-lib';
import { CfnGlobalTable, type Table } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement, StarPrincipal } from 'aws-cdk-lib/aws-iam';

/**
 * Item-level actions that remove or blindly replace an item. On Leases or Fences any of them can
 * put a counter below a value already issued or accepted, and an obsolete holder's token would
 * pass again. The protocol needs none of them: acquire, renew, release, raise and seal are all
 * conditional UpdateItem calls.
 */
export const COUNTER_DESTROYING_ACTIONS = [
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:PutItem',
  'dynamodb:PartiQLDelete',
  'dynamodb:PartiQLInsert',
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
