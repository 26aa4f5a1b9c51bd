/**
 * The lock libraries people use today, and ours, behind one shape: one lease CYCLE = acquire a
 * free key + ONE renewal + release, each with the library's own code. Every client talks to the
 * same DynamoDB Local over a kept-alive connection pool, each to a table of its own key schema
 * with the same settings as ours (on-demand, stream NEW_AND_OLD_IMAGES). Every cycle locks a key
 * nobody has used (as a job would: one key per job), so no library waits on a previous holder.
 *
 * What each peer does not give is written next to it (`lacks`) and printed with the figures.
 */
import { Agent as HttpAgent } from 'node:http';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { DynamoDBDocument } from '@aws-sdk/lib-dynamodb';
import { LeaseManager, localRegion, localSigningKeys } from '../lib/protocol/index.js';
import type { BenchEnv } from './env.js';
import { BenchError } from './errors.js';

export interface LeaseAdapter {
  readonly name: string;
  readonly version: string;
  /** Requests one cycle sends (acquire + renew + release), by the library's code. */
  readonly requestsPerCycle: string;
  /** What this library does not give that ours does. */
  readonly lacks: readonly string[];
  cycle(key: string): Promise<void>;
  close(): void;
}

const require = createRequire(import.meta.url);
const versionOf = (pkg: string): string => (require(`${pkg}/package.json`) as { version: string }).version;

/** Ours: lib/protocol/lease.ts on the Leases table, wall-clock mode. */
export async function oursAdapter(env: BenchEnv): Promise<LeaseAdapter> {
  const tables = await env.tables('peers');
  const dynamo = env.dynamo();
  const leases = new LeaseManager({
    doc: dynamo.doc,
    table: tables.leases,
    owner: `bench-${randomUUID()}`,
    epoch: 0,
    durationMs: 10_000,
    mode: { kind: 'wall-clock', maxClockSkewMs: 1_000 },
  });
  return {
    name: 'fenced-leases (this library)',
    version: 'workspace',
    requestsPerCycle: '3: UpdateItem acquire (returns the fencing token), UpdateItem renew, UpdateItem release',
    lacks: [],
    async cycle(key) {
      const r = await leases.tryAcquire(key);
      if (!r.ok) throw new BenchError(`ours: ${key} unexpectedly held`);
      const renewed = await leases.renew(r.value);
      const released = await leases.release(renewed);
      if (!released.released) throw new BenchError(`ours: ${key} not released`);
    },
    close: () => dynamo.client.destroy(),
  };
}

/**
 * dynamodb-lock-client 0.7.3, FailOpen (the mode with leases and heartbeats), AWS SDK v2
 * DocumentClient with a keep-alive agent. Its heartbeat is a closure run by a timer; the bench
 * takes that closure from the timer and runs it at once, so the cycle holds no timer wait.
 */
export async function lockClientAdapter(env: BenchEnv): Promise<LeaseAdapter> {
  process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE = '1';
  const AWS = require('aws-sdk') as typeof import('aws-sdk');
  const DynamoDBLockClient = require('dynamodb-lock-client') as {
    FailOpen: new (config: Record<string, unknown>) => { acquireLock(id: string, cb: (e: Error | undefined, lock: PeerLock) => void): void };
  };
  interface PeerLock {
    heartbeatTimeout?: { _onTimeout?: () => void };
    release(cb: (e?: Error) => void): void;
  }
  const lockTable = await env.table({
    TableName: 'peer-lock-client',
    AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
  });
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 64 });
  const doc = new AWS.DynamoDB.DocumentClient({
    endpoint: env.endpoint,
    region: localRegion(),
    credentials: new AWS.Credentials(localSigningKeys()),
    httpOptions: { agent },
    maxRetries: 2,
  });
  // The library calls put/get/delete with callbacks; this wrapper tells us when a heartbeat has landed.
  let heartbeatDone: ((e?: Error) => void) | undefined;
  const dynamodb = {
    get: (p: any, cb: any) => doc.get(p, cb),
    delete: (p: any, cb: any) => doc.delete(p, cb),
    put: (p: any, cb: any) =>
      doc.put(p, (e: any, data: any) => {
        cb(e, data);
        const isHeartbeat = String(p.ConditionExpression).startsWith('attribute_exists') && p.Item?.leaseDurationMs !== 1;
        if (isHeartbeat && heartbeatDone) heartbeatDone(e ?? undefined);
      }),
  };
  const client = new DynamoDBLockClient.FailOpen({
    dynamodb,
    lockTable,
    partitionKey: 'pk',
    heartbeatPeriodMs: 60_000,
    leaseDurationMs: 10_000,
    trustLocalTime: true,
    retryCount: 0,
  });
  return {
    name: 'dynamodb-lock-client',
    version: versionOf('dynamodb-lock-client'),
    requestsPerCycle: '4: GetItem + PutItem acquire, PutItem heartbeat, PutItem release',
    lacks: [
      'its fencingToken is nowhere enforced: no resource checks it, so a paused holder still writes',
      'the token is computed read-then-write (GetItem, then a PutItem conditioned on the guid read)',
      'heartbeats are conditioned on the guid the previous heartbeat rotated: one heartbeat whose response is lost makes the next fail (the lock is lost on an ambiguous heartbeat)',
      'FailClosed mode has no lease at all (a crashed holder blocks forever) and releases by DeleteItem',
      'AWS SDK v2 only (maintenance mode)',
    ],
    async cycle(key) {
      const lock = await new Promise<PeerLock>((resolve, reject) => client.acquireLock(key, (e, l) => (e ? reject(e) : resolve(l))));
      // One renewal: the library's own heartbeat closure, taken from its timer and run now.
      const beat = lock.heartbeatTimeout?._onTimeout;
      if (beat === undefined) throw new BenchError('dynamodb-lock-client: no heartbeat timer to run');
      clearTimeout(lock.heartbeatTimeout as never);
      await new Promise<void>((resolve, reject) => {
        heartbeatDone = (e) => (e ? reject(e) : resolve());
        beat();
      });
      heartbeatDone = undefined;
      await new Promise<void>((resolve, reject) => lock.release((e) => (e ? reject(e) : resolve())));
    },
    close: () => agent.destroy(),
  };
}

/** @deliveryhero/dynamodb-lock 2.0.0: AWS SDK v3 document client (ours, kept-alive); renew = its prolongLease. */
export async function deliveryHeroAdapter(env: BenchEnv): Promise<LeaseAdapter> {
  const { dynamoDBLockClientFactory } = require('@deliveryhero/dynamodb-lock') as {
    dynamoDBLockClientFactory: (doc: unknown, config: Record<string, unknown>) => {
      lock(group: string, id: string, opts: Record<string, unknown>): Promise<unknown>;
      prolongLease(lock: unknown): Promise<void>;
      releaseLock(lock: unknown): Promise<void>;
    };
  };
  const tableName = await env.table({
    TableName: 'peer-deliveryhero',
    AttributeDefinitions: [
      { AttributeName: 'lockId', AttributeType: 'S' },
      { AttributeName: 'lockGroup', AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: 'lockId', KeyType: 'HASH' },
      { AttributeName: 'lockGroup', KeyType: 'RANGE' },
    ],
  });
  const dynamo = env.dynamo();
  const client = dynamoDBLockClientFactory(DynamoDBDocument.from(dynamo.client), { tableName, partitionKey: 'lockId', sortKey: 'lockGroup' });
  return {
    name: '@deliveryhero/dynamodb-lock',
    version: versionOf('@deliveryhero/dynamodb-lock'),
    requestsPerCycle: '4: GetItem + PutItem acquire, UpdateItem prolong, DeleteItem release',
    lacks: [
      'no fencing token at all: nothing orders holders, nothing stops a paused one',
      'release is a DeleteItem: the lock item (and anything one would count on it) is gone',
      'heartbeats are conditioned on the recordVersionNumber the previous heartbeat rotated: an ambiguous heartbeat loses the lock',
      'acquire reads then writes (GetItem + PutItem/UpdateItem): two round trips',
    ],
    async cycle(key) {
      const lock = await client.lock('bench', key, { leaseDurationInMs: 10_000, prolongLeaseEnabled: false, trustLocalTime: true, maxRetryCount: 0 });
      await client.prolongLease(lock);
      await client.releaseLock(lock);
    },
    close: () => dynamo.client.destroy(),
  };
}
