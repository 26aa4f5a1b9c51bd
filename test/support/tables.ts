/** Per-file tables on the run's shared DynamoDB Local. */
import { randomBytes } from 'node:crypto';
import { basename } from 'node:path';
import { afterEach, inject } from 'vitest';
import { createDynamo, type Dynamo, type DynamoOptions } from '../../lib/dynamo.js';
import { tableNames, type TableNames } from '../../lib/schema.js';
import { ensureTables } from '../../lib/tables.js';

export interface TestTables {
  endpoint: string;
  dynamo: Dynamo;
  names: TableNames;
  prefix: string;
}

/** A fresh prefix per call: `t-<file>-<random>-`; call it in beforeAll (or per test for isolation). */
export async function makeTables(file: string, opts: DynamoOptions = {}): Promise<TestTables> {
  const endpoint = inject('dynamoEndpoint');
  const tag = basename(file).replace(/\.test\.ts$/, '').replace(/[^a-zA-Z0-9]/g, '').slice(0, 24);
  const prefix = `t-${tag}-${randomBytes(4).toString('hex')}-`;
  const dynamo = createDynamo({ endpoint, ...opts });
  const names = tableNames(prefix);
  await ensureTables(dynamo.client, names);
  return { endpoint, dynamo, names, prefix };
}

/**
 * Fresh tables per test, with an after-each cleanup list (clients, proxies, anything a test
 * registers): `const { tables, cleanups } = perTestTables(import.meta.filename);`.
 */
export function perTestTables(file: string): { tables: () => Promise<TestTables>; cleanups: (() => Promise<void> | void)[] } {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });
  const tables = async () => {
    const t = await makeTables(file);
    cleanups.push(() => t.dynamo.client.destroy());
    return t;
  };
  return { tables, cleanups };
}
