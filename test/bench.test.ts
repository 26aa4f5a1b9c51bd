/**
 * A reduced run of the benchmark's request accounting on the test run's DynamoDB Local: the real
 * worker commits fenced units, SDK middleware counts what it sent, WCU are billed by AWS's rules.
 * The full benchmark is `npm run bench` (docs/benchmarks.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { stackBundlingOptions } from '../bench/bundle.js';
import { openEnv, type BenchEnv } from '../bench/env.js';
import { measureFairness } from '../bench/fairness.js';
import { measureThroughput } from '../bench/throughput.js';
import { bill, itemSize, updatedAttributes } from '../bench/wcu.js';

let env: BenchEnv;
beforeAll(async () => {
  env = await openEnv({ endpoint: inject('dynamoEndpoint') });
});
afterAll(async () => {
  await env.close();
});

describe('bench (smoke)', () => {
  it('one TransactWriteItems per fenced unit, and at most 2.2 WCU per effect, from a real run', async () => {
    const { sequential, parallel, mix } = await measureThroughput(env, { rounds: 1, warmupRounds: 0, units: 16, parallelJobs: 2, parallelUnits: 8 });
    expect(mix.requestsPerUnit).toBe(1);
    expect(mix.counts['unit.commit']).toBe(mix.units);
    expect(mix.perJob).toMatchObject({ 'lease.acquire': 1, 'fence.raise': 1, 'lease.release': 1 });
    expect(mix.wcuPerEffect).toBeGreaterThanOrEqual(2.16); // 27 transactional items of < 1 KB for 25 effects
    expect(mix.wcuPerEffect).toBeLessThanOrEqual(2.2);
    expect(mix.unsafeWcuPerEffect).toBe(1);
    for (const r of [sequential, parallel]) expect(r.ratio).toBeGreaterThan(0);
  });

  it('bills by AWS rules: per item rounded up, transactions double, index moves and conditional failures count', () => {
    const small = { pk: { S: 'a' } };
    const big = { pk: { S: 'b' }, blob: { S: 'x'.repeat(1500) } };
    expect(itemSize(big)).toBe(2 + 1 + 4 + 1500);
    const log = [
      { operation: 'BatchWriteItem', input: { RequestItems: { t: [{ PutRequest: { Item: small } }, { PutRequest: { Item: big } }] } } },
      { operation: 'TransactWriteItems', input: { TransactItems: [{ Put: { TableName: 't', Item: big } }, { ConditionCheck: { TableName: 't', Key: small } }] } },
      {
        operation: 'UpdateItem',
        input: { TableName: 'jobs', Key: small, UpdateExpression: 'SET #h = :h, #s = :s', ExpressionAttributeNames: { '#h': 'heartbeatAt', '#s': 'status' } },
      },
      { operation: 'UpdateItem', input: { TableName: 'jobs', Key: small, UpdateExpression: 'SET #s = :s REMOVE #u', ExpressionAttributeNames: { '#s': 'status', '#u': 'unfinished' } } },
    ];
    const b = bill(log, () => 100, (t) => (t === 'jobs' ? ['unfinished', 'heartbeatAt'] : []));
    // batch 1 + 2; transaction 2*2 + 2*1; update 1 (+2 index: heartbeat moved); update 1 (+1 index: left the index)
    expect(b.byOperation).toEqual({ BatchWriteItem: 3, TransactWriteItems: 6, UpdateItem: 2, 'UpdateItem (index)': 3 });
    expect(updatedAttributes('SET #a = :a, b = :b REMOVE #c, d', { '#a': 'A', '#c': 'C' })).toEqual({ set: ['A', 'b'], remove: ['C', 'd'] });
  });

  it('fair waiting, both sides in one short run: grants on each, generations one apart, every request counted, the lease item tried less by the fair side', async () => {
    const r = await measureFairness(env, { contenders: 6, periods: 6, leaseMs: 200, maxClockSkewMs: 20, crashEvery: 4 });
    for (const side of [r.plain, r.fair]) {
      expect(side.grants).toBeGreaterThan(0);
      expect(side.tokensInOrder).toBe(true);
      expect(side.requests).toBeGreaterThan(side.grants);
      expect(side.neverServed).toBeLessThanOrEqual(6);
    }
    expect(r.fair.leaseRequestsPerLease).toBeLessThan(r.plain.leaseRequestsPerLease);
  });

  it('reads the stack\'s bundling options from infra/constructs/function.ts', () => {
    const o = stackBundlingOptions();
    expect(o.format).toMatch(/esm|cjs/);
    expect(o.target).toMatch(/^node\d+/);
    expect(typeof o.bundleAwsSdk).toBe('boolean');
  });
});

describe('bench flags', () => {
  it('rewrites the committed figures only when asked, and never from a quick or partial run', async () => {
    const { parseBenchFlags } = await import('../bench/main.js');
    expect(parseBenchFlags([])).toMatchObject({ writeDocs: false });
    expect(parseBenchFlags(['--quick'])).toMatchObject({ writeDocs: false, quick: true });
    expect(parseBenchFlags(['--json'])).toMatchObject({ writeDocs: false });
    expect(parseBenchFlags(['--write-docs'])).toMatchObject({ writeDocs: true, quick: false });
    expect(() => parseBenchFlags(['--write-docs', '--quick'])).toThrow(/--write-docs: needs a full run: leave out --quick/);
    expect(() => parseBenchFlags(['--write-docs', '--only', 'bundle'])).toThrow(/--write-docs: needs a full run: leave out --only/);
  });
});
