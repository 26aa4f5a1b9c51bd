// tier: full
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
import { measureIdempotency } from '../bench/idempotency.js';
import { BenchError } from '../bench/errors.js';
import { renderTable, SMOKE_HEADER } from '../bench/report.js';
import { recordRequests } from '../bench/requests.js';
import { jsonReport, type BenchRun } from '../bench/results.js';
import { measureSharding } from '../bench/sharding.js';
import { fencedPhase, MAX_UNCERTAIN_RETRIES, measureThroughput, type Side } from '../bench/throughput.js';
import { bill, itemSize, updatedAttributes } from '../bench/wcu.js';

let env: BenchEnv;
beforeAll(async () => {
  env = await openEnv({ endpoint: inject('dynamoEndpoint') });
});
afterAll(async () => {
  await env.close();
});

describe('bench (smoke)', () => {
  it('one TransactWriteItems per fenced unit of 27 items (54 WCU for 25 effects), from a real run', async () => {
    const { sequential, parallel, mix } = await measureThroughput(env, { rounds: 1, warmupRounds: 0, units: 16, parallelJobs: 2, parallelUnits: 8 });
    expect(mix.requestsPerUnit).toBe(1);
    expect(mix.counts['unit.commit']).toBe(mix.units);
    expect(mix.perJob).toMatchObject({ 'lease.acquire': 1, 'fence.raise': 1, 'lease.release': 1 });
    // The unit's transaction is exactly 27 items of < 1 KB at 2 WCU each, for 25 effects. What the
    // job adds (renewals, heartbeat stamps) grows with the run's duration, so the ≤ 2.2 goal is the
    // benchmark's figure (`npm run bench`), not an assertion on a loaded test machine.
    expect(mix.unitWcu).toBe(27 * 2);
    expect(mix.wcuPerEffect).toBeGreaterThanOrEqual(2.16);
    expect(mix.unsafeWcuPerEffect).toBe(1);
    for (const r of [sequential, parallel]) expect(r.ratio).toBeGreaterThan(0);
  }, 90_000);

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

  it('Powertools idempotency, measured: 3 requests and 3 WCU per once-only effect; ours one transaction per 25 effects at no more WCU', async () => {
    const r = await measureIdempotency(env, { rounds: 1, units: 1 });
    expect(r.powertools.requestsPerEffect).toBe(3); // INPROGRESS put, the charge, the saved result
    expect(r.powertools.wcuPerEffect).toBe(3);
    expect(r.ours.requestsPerEffect).toBeLessThan(0.5); // 1 unit + the per-job requests, over 25 effects
    expect(r.ours.wcuPerEffect).toBeLessThan(r.powertools.wcuPerEffect);
    expect(r.ratio).toBeGreaterThan(0);
  });

  it('sharded runs, measured: every K passes the independent checker, and the --json report carries every field issue 16 names, each with goalsMet', async () => {
    const sharding = await measureSharding(() => openEnv({ endpoint: inject('dynamoEndpoint') }), { rounds: 1, customers: 60, shardCounts: [1, 3] });
    expect(sharding.rows.map((x) => [x.shards, x.invariantsHeld])).toEqual([[1, true], [3, true]]);
    for (const x of sharding.rows) expect(x.plan10MSeconds).toBeGreaterThan(0);
    const run: BenchRun = { machine: { cpu: 'x', cores: 2, memoryGB: 1, node: 'v20', dynamoDbLocal: 'x', loadAverage: { start: [0] }, date: '' }, quick: true, seconds: 1, sharding };
    const json = jsonReport(run);
    for (const k of ['fencedVsBareTransaction', 'libraryVsRaw', 'vsPowertoolsIdempotency', 'peers', 'streams', 'sharding', 'workerInit', 'goalsMet']) expect(json, k).toHaveProperty(k);
    expect(json.sharding).toMatchObject({ goalsMet: expect.any(Boolean), rows: [{ shards: 1, invariantsHeld: true }, { shards: 3, invariantsHeld: true }] });
    expect(json.peers).toMatchObject({ goalsMet: { leaseCycles: null, takeover: null, contention: null } });
    expect((json.goalsMet as Record<string, unknown>).sharding).toBe((json.sharding as { goalsMet: boolean }).goalsMet);
  });

  it('reads the stack\'s bundling options from infra/constructs/function.ts', () => {
    const o = stackBundlingOptions();
    expect(o.format).toMatch(/esm|cjs/);
    expect(o.target).toMatch(/^node\d+/);
    expect(typeof o.bundleAwsSdk).toBe('boolean');
  });
});

/** What a loaded machine does to a commit: no answer in time. Neither transient nor permanent to the library, so ambiguous. */
class InjectedLostResponse extends Error {
  override readonly name = 'InjectedLostResponse';
}

/** A side whose TransactWriteItems fail, ambiguously, whenever `fails` says so for the request's input. */
async function sideFailingCommits(tag: string, fails: (input: string) => boolean): Promise<Side & { failed: () => number }> {
  const dynamo = env.dynamo();
  let failed = 0;
  dynamo.client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand' && fails(JSON.stringify(args.input))) {
        failed++;
        throw new InjectedLostResponse('no response in time');
      }
      return next(args);
    },
    { step: 'initialize', name: 'injectLostCommitResponse' },
  );
  return { dynamo, tables: await env.tables(tag), log: recordRequests(dynamo.client), failed: () => failed };
}

describe('bench: a job that ends uncertain', () => {
  it('is run again with fresh jobs, counted, and the figure comes from the clean attempt', async () => {
    // Every commit of the first attempt's job (id bench-unc-0) fails: the worker resends, then stops uncertain.
    const side = await sideFailingCommits('unc1', (input) => input.includes('bench-unc-0'));
    const r = await fencedPhase(side, 'unc', 1, 2);
    expect(side.failed()).toBeGreaterThan(0);
    expect(r.retries).toBe(1);
    expect(r.effectsPerSec).toBeGreaterThan(0);
    // The thrown-away attempt's requests are not in the log the request mix is computed from.
    expect(side.log.entries.filter((e) => e.operation === 'TransactWriteItems')).toHaveLength(2);
  }, 60_000);

  it(`is run again at most ${MAX_UNCERTAIN_RETRIES} times, then the bench stops with a BenchError that says so`, async () => {
    const side = await sideFailingCommits('unc2', () => true);
    const err = await fencedPhase(side, 'always', 1, 1).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BenchError);
    expect(String(err)).toMatch(new RegExp(`ended uncertain in ${MAX_UNCERTAIN_RETRIES + 1} attempts`));
  }, 60_000);
});

describe('bench --quick output', () => {
  const machine = { cpu: 'x', cores: 2, memoryGB: 1, node: 'v20', dynamoDbLocal: 'x', loadAverage: { start: [9] }, date: '' };
  // Figures that miss their goals, as a few rounds on a loaded machine do.
  const missing = { trials: 2, leaseMs: 1_000, maxClockSkewMs: 100, medianMs: 1_300, maxMs: 1_400, medianRatio: 1.3, maxRatio: 1.4 };

  it('labels a quick run\'s rows smoke figures and judges none: no MISSED, a header that says so', () => {
    const quick = renderTable({ machine, quick: true, seconds: 1, takeover: missing });
    expect(quick).not.toMatch(/MISSED/);
    expect(quick.split('\n')[0]).toBe(SMOKE_HEADER);
    expect(quick).toMatch(/Takeover ÷ lease duration, median\s+≤ 1.1\s+1.300\s+smoke/);
  });

  it('judges the same figures in a full run', () => {
    const full = renderTable({ machine, quick: false, seconds: 1, takeover: missing });
    expect(full).toMatch(/Takeover ÷ lease duration, median\s+≤ 1.1\s+1.300\s+MISSED/);
    expect(full).not.toContain(SMOKE_HEADER);
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
