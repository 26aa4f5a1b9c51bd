// tier: full
/**
 * Model-based property test of the lease and fence API on DynamoDB Local (test/fuzz/model.ts):
 * random short sequences of acquire/tryAcquire/fairAcquire, renew, release, raiseFence, commit, retry and
 * clock advances by 2-4 owners, compared after every command with a pure reference model, in
 * outcome and in table state. Long runs: `npm run fuzz -- --runs 5000`.
 * Replay a failure: FUZZ_SEED=<seed> FUZZ_PATH=<path> npx vitest run test/property.test.ts
 */
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitersTableInput } from '../lib/protocol/index.js';
import { coverage, leaseFenceProperty } from './fuzz/model.js';
import { makeTables, type TestTables } from './support/tables.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);

describe('lease + fence API against a reference model (fast-check commands)', () => {
  let t: TestTables;
  let waiters: string;
  beforeAll(async () => {
    t = await makeTables(import.meta.filename);
    waiters = `${t.prefix}waiters`;
    await t.dynamo.client.send(new CreateTableCommand(waitersTableInput(waiters)));
  });
  afterAll(() => {
    t?.dynamo.client.destroy();
  });

  it(`${RUNS} random command sequences agree with the model, outcome by outcome and item by item`, async () => {
    for (const k of Object.keys(coverage)) delete coverage[k];
    const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
    await fc.assert(leaseFenceProperty({ doc: t.dynamo.doc, tables: t.names, waiters }), {
      numRuns: RUNS,
      ...(seed === undefined ? {} : { seed }),
      ...(process.env.FUZZ_PATH === undefined ? {} : { path: process.env.FUZZ_PATH }),
      endOnFailure: process.env.FUZZ_SHRINK === undefined,
    });
    console.log(`property: ${JSON.stringify(coverage)}`);
    // The sequences must reach the interesting cases, or the property proves little. Each group
    // below occurs ~10+ times per 200 sequences; a group is any command kind with that result.
    if (seed === undefined && RUNS >= 200) {
      const seen = (re: RegExp) => Object.entries(coverage).some(([k, n]) => re.test(k) && n > 0);
      for (const re of [
        /^tryAcquire:granted$/,
        /^tryAcquire:contended$/,
        /:granted-takeover$/,
        /^acquire:granted/,
        /^acquire:timeout$/,
        /^fairAcquire:granted/,
        /^fairAcquire:timeout$/,
        /^renew:renewed$/,
        /^renew:lost$/,
        /^release:released$/,
        /^release:release-refused$/,
        /^raiseFence:raised$/,
        /^commit:committed$/,
        /:already-committed$/,
        /:stale$/,
        /:moved$/,
        /:duplicate$/,
        /^retryLastCommit:committed$/,
        /^boundary/,
      ]) {
        expect(seen(re), String(re)).toBe(true);
      }
    }
  }, 180_000);
});
