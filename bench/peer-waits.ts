/**
 * Peers beyond lease cycles: what happens when a lock is HELD, ours against dynamodb-lock-client
 * and @deliveryhero/dynamodb-lock, each with its own waiting code and its default waiting rule,
 * on the same DynamoDB Local in the same run:
 *
 *   takeover    a holder acquires and crashes at once (no heartbeat, no release, the whole lease
 *               ahead); a successor, already asking, waits as its library waits. Crash to grant,
 *               as a multiple of the lease.
 *   contention  N contenders want one key for P lease periods; each acquires with its library's
 *               waiting acquire, holds half a lease, releases, leaves. Requests per contender per
 *               lease period, every request counted.
 *
 * Both peers, by default, do not trust clocks across hosts: they read the lock, wait one full
 * lease on their own clock and claim it if its version did not change. Ours runs the same rule
 * (version-watch mode); wall-clock mode (claim at the holder's expiry plus a clock-offset bound) is
 * reported beside it.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { Agent as HttpAgent } from 'node:http';
import { DynamoDBDocument } from '@aws-sdk/lib-dynamodb';
import { LeaseManager, localRegion, localSigningKeys, type LeaseMode } from '../lib/protocol/index.js';
import type { BenchEnv } from './env.js';
import { countRequests } from '../test/support/request-counter.js';
import { median, sleep } from './stats.js';
import { BenchError } from './errors.js';

const require = createRequire(import.meta.url);

interface Held {
  release(): Promise<void>;
}

interface Waiter {
  readonly name: string;
  /** Acquires `key` as `owner`, waiting as the library waits; rejects when it gives up. */
  acquire(key: string, owner: string): Promise<Held>;
  /** Acquires `key` and never renews or releases it: a crash right after the grant. */
  crashAfterAcquire(key: string, owner: string): Promise<void>;
  requests(): number;
  close(): void;
}

async function ours(env: BenchEnv, leaseMs: number, mode: LeaseMode, name: string): Promise<Waiter> {
  const tables = await env.tables(`pw${mode.kind === 'wall-clock' ? 'w' : 'v'}`);
  const dynamo = env.dynamo();
  const counter = countRequests(dynamo.client);
  const manager = (owner: string) => new LeaseManager({ doc: dynamo.doc, table: tables.leases, owner, epoch: 0, durationMs: leaseMs, mode });
  return {
    name,
    async acquire(key, owner) {
      const m = manager(owner);
      const lease = await m.acquire(key, { timeoutMs: leaseMs * 20 });
      return { release: async () => void (await m.release(lease)) };
    },
    async crashAfterAcquire(key, owner) {
      const r = await manager(owner).tryAcquire(key);
      if (!r.ok) throw new BenchError(`${name}: ${key} held`);
    },
    requests: () => counter.total(),
    close: () => dynamo.client.destroy(),
  };
}

interface LockClientLock {
  heartbeatTimeout?: unknown;
  release(cb: (e?: Error) => void): void;
}

async function lockClient(env: BenchEnv, leaseMs: number, retries: number): Promise<Waiter> {
  const AWS = require('aws-sdk') as typeof import('aws-sdk');
  const DynamoDBLockClient = require('dynamodb-lock-client') as { FailOpen: new (config: Record<string, unknown>) => { acquireLock(id: string, cb: (e: Error | undefined, lock: LockClientLock) => void): void } };
  const lockTable = await env.table({ TableName: `pw-lock-client-${randomUUID().slice(0, 6)}`, AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }] });
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 64 });
  const doc = new AWS.DynamoDB.DocumentClient({ endpoint: env.endpoint, region: localRegion(), credentials: new AWS.Credentials(localSigningKeys()), httpOptions: { agent }, maxRetries: 2 });
  let requests = 0;
  const counted = (op: 'get' | 'put' | 'delete') => (p: any, cb: any) => {
    requests++;
    return (doc[op] as (p: any, cb: any) => unknown).call(doc, p, cb);
  };
  const dynamodb = { get: counted('get'), put: counted('put'), delete: counted('delete') };
  // Its defaults for waiting: trustLocalTime false (wait one full lease after reading a held lock), heartbeats at a third of the lease.
  const client = (owner: string) => new DynamoDBLockClient.FailOpen({ dynamodb, lockTable, partitionKey: 'pk', heartbeatPeriodMs: Math.floor(leaseMs / 3), leaseDurationMs: leaseMs, owner, retryCount: retries });
  const acquire = (key: string, owner: string) => new Promise<LockClientLock>((resolve, reject) => client(owner).acquireLock(key, (e, l) => (e ? reject(e) : resolve(l))));
  return {
    name: 'dynamodb-lock-client',
    async acquire(key, owner) {
      const lock = await acquire(key, owner);
      return { release: () => new Promise<void>((resolve, reject) => lock.release((e) => (e ? reject(e) : resolve()))) };
    },
    async crashAfterAcquire(key, owner) {
      const lock = await acquire(key, owner);
      clearTimeout(lock.heartbeatTimeout as never); // the crash: its heartbeat never runs
    },
    requests: () => requests,
    close: () => agent.destroy(),
  };
}

async function deliveryHero(env: BenchEnv, leaseMs: number, retries: number): Promise<Waiter> {
  const { dynamoDBLockClientFactory } = require('@deliveryhero/dynamodb-lock') as {
    dynamoDBLockClientFactory: (doc: unknown, config: Record<string, unknown>) => { lock(group: string, id: string, opts: Record<string, unknown>): Promise<unknown>; releaseLock(lock: unknown): Promise<void> };
  };
  const tableName = await env.table({
    TableName: `pw-deliveryhero-${randomUUID().slice(0, 6)}`,
    AttributeDefinitions: [{ AttributeName: 'lockId', AttributeType: 'S' }, { AttributeName: 'lockGroup', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'lockId', KeyType: 'HASH' }, { AttributeName: 'lockGroup', KeyType: 'RANGE' }],
  });
  const dynamo = env.dynamo();
  const counter = countRequests(dynamo.client);
  const doc = DynamoDBDocument.from(dynamo.client);
  // One client per owner: the library names its owner per client. Its default waiting rule: trustLocalTime false.
  const client = () => dynamoDBLockClientFactory(doc, { tableName, partitionKey: 'lockId', sortKey: 'lockGroup' });
  return {
    name: '@deliveryhero/dynamodb-lock',
    async acquire(key) {
      const c = client();
      const lock = await c.lock('bench', key, { leaseDurationInMs: leaseMs, prolongLeaseEnabled: false, maxRetryCount: retries });
      return { release: () => c.releaseLock(lock) };
    },
    async crashAfterAcquire(key) {
      await client().lock('bench', key, { leaseDurationInMs: leaseMs, prolongLeaseEnabled: false });
    },
    requests: () => counter.total(),
    close: () => dynamo.client.destroy(),
  };
}

export interface PeerWaitFigures {
  name: string;
  takeoverMedianRatio: number;
  takeoverMaxRatio: number;
  requestsPerTakeover: number;
  requestsPerContenderPerLease: number;
  contentionGrants: number;
  /** Contenders whose library gave up waiting during the run. */
  contentionGaveUp: number;
  overlap: boolean;
}

export interface PeerWaits {
  leaseMs: number;
  trials: number;
  contenders: number;
  periods: number;
  sides: PeerWaitFigures[];
}

async function takeover(w: Waiter, leaseMs: number, trials: number): Promise<{ ratios: number[]; requests: number }> {
  const before = w.requests();
  const ratios = await Promise.all(
    Array.from({ length: trials }, async (_, i) => {
      await sleep(i * 150);
      const key = `takeover-${randomUUID().slice(0, 8)}`;
      await w.crashAfterAcquire(key, `holder-${i}`);
      const crashed = performance.now();
      const held = await w.acquire(key, `successor-${i}`);
      const ms = performance.now() - crashed;
      await held.release();
      return ms / leaseMs;
    }),
  );
  return { ratios, requests: (w.requests() - before) / trials };
}

async function contention(w: Waiter, leaseMs: number, contenders: number, periods: number): Promise<{ perContenderPerLease: number; grants: number; overlap: boolean; gaveUp: number }> {
  const key = `contended-${randomUUID().slice(0, 8)}`;
  const runMs = periods * leaseMs;
  const start = performance.now();
  const before = w.requests();
  let holders = 0;
  let overlap = false;
  let grants = 0;
  let over = false;
  let gaveUp = 0;
  const one = async (i: number) => {
    try {
      const held = await w.acquire(key, `contender-${i}`);
      if (over) return held.release();
      grants++;
      if (++holders > 1) overlap = true;
      await sleep(leaseMs / 2);
      holders--;
      await held.release();
    } catch {
      gaveUp++; // its library gave up (retries or timeout ran out): counted, the others go on
    }
  };
  const all = Promise.all(Array.from({ length: contenders }, (_, i) => one(i)));
  await Promise.race([all, sleep(runMs)]);
  over = true;
  const requests = w.requests() - before;
  const elapsed = (performance.now() - start) / leaseMs;
  await Promise.race([all.catch(() => undefined), sleep(leaseMs * 3)]); // let the stragglers give up before the next side
  return { perContenderPerLease: requests / contenders / elapsed, grants, overlap, gaveUp };
}

export async function measurePeerWaits(env: BenchEnv, opts: { leaseMs: number; trials: number; contenders: number; periods: number; onProgress?: (label: string) => void }): Promise<PeerWaits> {
  const retries = opts.periods * 3;
  const waiters = [
    await ours(env, opts.leaseMs, { kind: 'version-watch' }, 'this library (version-watch)'),
    await ours(env, opts.leaseMs, { kind: 'wall-clock', maxClockSkewMs: Math.round(opts.leaseMs / 30) }, 'this library (wall-clock, bound lease/30)'),
    await lockClient(env, opts.leaseMs, retries),
    await deliveryHero(env, opts.leaseMs, retries),
  ];
  const sides: PeerWaitFigures[] = [];
  try {
    for (const w of waiters) {
      const t = await takeover(w, opts.leaseMs, opts.trials);
      const c = await contention(w, opts.leaseMs, opts.contenders, opts.periods);
      sides.push({
        name: w.name,
        takeoverMedianRatio: median(t.ratios),
        takeoverMaxRatio: Math.max(...t.ratios),
        requestsPerTakeover: t.requests,
        requestsPerContenderPerLease: c.perContenderPerLease,
        contentionGrants: c.grants,
        contentionGaveUp: c.gaveUp,
        overlap: c.overlap,
      });
      opts.onProgress?.(`peers: ${w.name}`);
    }
  } finally {
    for (const w of waiters) w.close();
  }
  return { leaseMs: opts.leaseMs, trials: opts.trials, contenders: opts.contenders, periods: opts.periods, sides };
}
