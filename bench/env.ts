/**
 * The bench's environment: ONE DynamoDB Local it starts itself (or --endpoint), fresh tables per
 * measurement from the project's own schema, and clients built the way the library builds them
 * (lib/protocol/dynamo.ts: one kept-alive connection pool).
 *
 * DynamoDB Local 3.3.0 gets slower with every stream record it holds: each write to a table with a
 * stream runs a query (getStreamDescription, a MIN() subquery over the stream records) whose cost
 * grows with all the records written so far, and deleting tables does not give the time back
 * (stream records outlive their table, as on AWS). Seen: lease cycles 4-5x slower after the
 * throughput and floor measurements than on a fresh instance. So the light measurements run
 * first, the heavy writers last, and each keeps its volume small; every comparison interleaves
 * its two sides, so both see the same server.
 */
import { randomBytes } from 'node:crypto';
import { CreateTableCommand, type CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { startDynamoLocal, type DynamoLocal } from '../cli/local/dynamodb-local.js';
import { createDynamo, type Dynamo } from '../lib/protocol/index.js';
import { createTableInput, ensureTables, TABLE_ROLES, TABLES, tableNames, type TableNames } from '../lib/workflow/index.js';

export interface BenchEnv {
  readonly endpoint: string;
  /** A new client of the library's kind (keep-alive agent), for one measurement. */
  dynamo(opts?: { maxSockets?: number }): Dynamo;
  /** Creates the project's tables under a fresh prefix; `streams: false` creates them without their streams (bench/streams.ts). */
  tables(tag: string, opts?: { streams?: boolean }): Promise<TableNames>;
  /** Creates an extra table (a peer's lock table) with the same settings as ours: on-demand, stream NEW_AND_OLD_IMAGES. */
  table(input: Omit<CreateTableCommandInput, 'BillingMode' | 'StreamSpecification'>): Promise<string>;
  close(): Promise<void>;
}

export async function openEnv(opts: { endpoint?: string } = {}): Promise<BenchEnv> {
  let local: DynamoLocal | undefined;
  const endpoint = opts.endpoint ?? (local = await startDynamoLocal()).endpoint;
  const run = randomBytes(3).toString('hex');
  const admin = createDynamo({ endpoint });
  const clients: Dynamo[] = [admin];
  return {
    endpoint,
    dynamo(o = {}) {
      // A loaded shared machine can hold a transaction behind DynamoDB Local's table locks past the library's 5 s request
      // timeout: a timed-out commit is ambiguous (resent, then "uncertain"), which a throughput measurement must not see.
      const d = createDynamo({ endpoint, requestTimeoutMs: 30_000, ...o });
      clients.push(d);
      return d;
    },
    async tables(tag, o = {}) {
      const names = tableNames(`bench-${run}-${tag}-`);
      if (o.streams === false) {
        for (const role of TABLE_ROLES) await admin.client.send(new CreateTableCommand({ ...createTableInput(TABLES[role], names[role]), StreamSpecification: undefined }));
      } else {
        await ensureTables(admin.client, names);
      }
      return names;
    },
    async table(input) {
      const TableName = `bench-${run}-${input.TableName}`;
      await admin.client.send(
        new CreateTableCommand({
          ...input,
          TableName,
          BillingMode: 'PAY_PER_REQUEST',
          StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
        }),
      );
      return TableName;
    },
    async close() {
      for (const c of clients) c.client.destroy();
      await local?.stop();
    },
  };
}
