/**
 * Creates the tables of lib/workflow/schema.ts through the SDK: the local runtime and tests use this,
 * the CDK stack builds the same schema as CloudFormation.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { TABLES, TABLE_ROLES, type TableNames, type TableSchema } from './schema.js';

export function createTableInput(schema: TableSchema, tableName: string): CreateTableCommandInput {
  const attrs = new Map<string, string>([[schema.partitionKey.name, schema.partitionKey.type]]);
  for (const gsi of schema.globalSecondaryIndexes) {
    attrs.set(gsi.partitionKey.name, gsi.partitionKey.type);
    if (gsi.sortKey) attrs.set(gsi.sortKey.name, gsi.sortKey.type);
  }
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attrs].map(([AttributeName, AttributeType]) => ({
      AttributeName,
      AttributeType: AttributeType as 'S' | 'N',
    })),
    KeySchema: [{ AttributeName: schema.partitionKey.name, KeyType: 'HASH' }],
    GlobalSecondaryIndexes:
      schema.globalSecondaryIndexes.length === 0
        ? undefined
        : schema.globalSecondaryIndexes.map((gsi) => ({
            IndexName: gsi.indexName,
            KeySchema: [
              { AttributeName: gsi.partitionKey.name, KeyType: 'HASH' as const },
              ...(gsi.sortKey ? [{ AttributeName: gsi.sortKey.name, KeyType: 'RANGE' as const }] : []),
            ],
            Projection: { ProjectionType: gsi.projection },
          })),
    StreamSpecification: schema.stream ? { StreamEnabled: true, StreamViewType: schema.stream } : undefined,
  };
}

/** Creates every table that does not exist yet; existing tables are left as they are. */
export async function ensureTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  await Promise.all(
    TABLE_ROLES.map(async (role) => {
      try {
        await client.send(new CreateTableCommand(createTableInput(TABLES[role], names[role])));
      } catch (e) {
        if (!(e instanceof ResourceInUseException)) throw e;
      }
      // DynamoDB Local creates synchronously; AWS needs the wait.
      for (let i = 0; i < 120; i++) {
        const d = await client.send(new DescribeTableCommand({ TableName: names[role] }));
        if (d.Table?.TableStatus === 'ACTIVE') return;
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }),
  );
}
