/** Per-file tables on the run's shared DynamoDB Local. */
import { randomBytes } from 'node:crypto';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { basename } from 'node:path';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { createDynamo, waitersTableInput, type Dynamo, type DynamoOptions, type LeaseConfig, type LeaseManager } from '../../lib/protocol/index.js';
import { ensureTables, tableNames, type TableNames } from '../../lib/workflow/index.js';
// fixtures.ts imports only types from this file: no runtime cycle.
import { manager } from './fixtures.js';
import { startFaultProxy, type FaultProxy } from '../../cli/local/fault-proxy.js';

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

export interface ProxiedTables {
  /** The file's tables (set in beforeAll). */
  readonly t: TestTables;
  /** A fault proxy in front of the run's DynamoDB Local (set in beforeAll). */
  readonly proxy: FaultProxy;
  /** A client of its own (its own request counter, its own retry settings), direct or through the proxy; destroyed after all. */
  dynamo(opts?: DynamoOptions & { viaProxy?: boolean }): Dynamo;
  /** A lease manager on the file's Leases table: epoch 0, wall-clock mode without skew, 10 s unless `cfg` says otherwise. */
  leases(owner: string, cfg?: Partial<Omit<LeaseConfig, 'owner'>>): LeaseManager;
}

/**
 * Per-file tables plus a fault proxy, created in beforeAll and closed in afterAll, with a
 * factory for clients of their own: `const env = proxiedTables(import.meta.filename);`.
 */
export function proxiedTables(file: string): ProxiedTables {
  let t: TestTables | undefined;
  let proxy: FaultProxy | undefined;
  const clients: Dynamo[] = [];
  beforeAll(async () => {
    t = await makeTables(file);
    proxy = await startFaultProxy(t.endpoint);
  });
  afterAll(async () => {
    for (const c of clients) c.client.destroy();
    await proxy?.close();
    t?.dynamo.client.destroy();
  });
  const ready = <T>(x: T | undefined, what: string): T => {
    if (x === undefined) throw new TypeError(`${what} is set in beforeAll`);
    return x;
  };
  return {
    get t() {
      return ready(t, 'tables');
    },
    get proxy() {
      return ready(proxy, 'the proxy');
    },
    leases(owner, cfg = {}) {
      return manager(ready(t, 'tables'), owner, cfg);
    },
    dynamo(opts = {}) {
      const { viaProxy, ...rest } = opts;
      const d = createDynamo({ endpoint: viaProxy ? ready(proxy, 'the proxy').endpoint : ready(t, 'tables').endpoint, ...rest });
      clients.push(d);
      return d;
    },
  };
}

/** A fair-acquire waiter table of a test file, and what is queued in it. */
export interface WaiterTable {
  /** Its name (set in beforeAll). */
  readonly name: string;
  /** The waiter items queued for `key` (the ticket counter left out), strongly consistent. */
  queued(key: string): Promise<Record<string, unknown>[]>;
}

/**
 * A fair-acquire waiter table beside a file's proxied tables, created in beforeAll (register it
 * after `proxiedTables`): `const waiters = waiterTable(env);`, then `waiters.name` in a test.
 */
export function waiterTable(env: ProxiedTables): WaiterTable {
  let name: string | undefined;
  beforeAll(async () => {
    name = `${env.t.prefix}waiters`;
    await env.t.dynamo.client.send(new CreateTableCommand(waitersTableInput(name)));
  });
  const table = {
    get name() {
      if (name === undefined) throw new TypeError('the waiter table is created in beforeAll');
      return name;
    },
    async queued(key: string) {
      const out = await env.t.dynamo.doc.send(
        new QueryCommand({ TableName: table.name, KeyConditionExpression: 'pk = :k AND sk > :counter', ExpressionAttributeValues: { ':k': key, ':counter': 0 }, ConsistentRead: true }),
      );
      return out.Items ?? [];
    },
  };
  return table;
}
