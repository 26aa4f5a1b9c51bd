// tier: full
/**
 * The scale settings of the stack (docs/scale.md): CDK context `shards`, `workerMaxConcurrency`
 * and `warmThroughput`, what they put in the template, the ConfigErrors that refuse a value the
 * run or AWS cannot use, and the capacity plan's recommended settings synthesized as printed.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/protocol/index.js';
import { ENV } from '../../lib/workflow/index.js';
import { planInvoiceRun } from '../../lib/workloads/invoices/plan.js';
import { buildApp, logicalId, nagViolations, templateOf, withoutCfnValidation } from './support.js';

function scale(context: Record<string, unknown>) {
  const { template, stack } = templateOf({ context });
  const w = stack.workflow;
  // The worker's mapping (the sender has its own, on the Outbox stream).
  const esm = Object.values(template.findResources('AWS::Lambda::EventSourceMapping', { Properties: { FunctionName: { Ref: logicalId(w.worker.fn) } } }))[0] as {
    Properties: { ScalingConfig?: { MaximumConcurrency: number } };
  };
  const starterEnv = (template.toJSON().Resources[logicalId(w.starter.fn)].Properties.Environment.Variables ?? {}) as Record<string, string>;
  const warm = Object.fromEntries(
    (['leases', 'fences', 'jobs', 'records'] as const).map((role) => [role, template.toJSON().Resources[logicalId(w.tables[role])].Properties.WarmThroughput]),
  );
  return { maxConcurrency: esm.Properties.ScalingConfig?.MaximumConcurrency, shards: starterEnv[ENV.runShards], warm };
}

const refused = (context: Record<string, unknown>) => {
  try {
    templateOf({ context });
  } catch (e) {
    return e instanceof ConfigError ? e.message : `not a ConfigError: ${String(e)}`;
  }
  return 'accepted';
};

describe('the stack exposes what the capacity plan recommends', () => {
  it("shards sets the starter and sizes the worker event source: shards + 2, at least 10, within what the account's concurrency leaves the worker", () => {
    // A new account's 10 executions, 7 of them one for each other function: 3 for the worker.
    expect(scale({})).toMatchObject({ shards: '1', maxConcurrency: 3 });
    expect(scale({ shards: 3 })).toMatchObject({ shards: '3', maxConcurrency: 3 });
    const big = { accountConcurrency: 1000 };
    expect(scale(big)).toMatchObject({ shards: '1', maxConcurrency: 10 });
    expect(scale({ ...big, shards: 7 })).toMatchObject({ shards: '7', maxConcurrency: 10 });
    expect(scale({ ...big, shards: 64 })).toMatchObject({ shards: '64', maxConcurrency: 66 });
    expect(scale({ ...big, shards: 64, workerMaxConcurrency: 100 })).toMatchObject({ maxConcurrency: 100 });
    expect(scale({ accountConcurrency: 50, shards: 42 })).toMatchObject({ maxConcurrency: 43 });
  });

  it("a worker concurrency that leaves another function no execution is refused, naming where to read the account's", () => {
    expect(refused({ workerMaxConcurrency: 10 })).toBe(
      'accountConcurrency: 10 concurrent executions cannot hold the worker\'s 10 and one for each of the 7 other functions (17): give the account\'s own (aws lambda get-account-settings --query AccountLimit.ConcurrentExecutions), or lower workerMaxConcurrency or shards',
    );
    expect(refused({ shards: 4 })).toMatch(/^workerMaxConcurrency: 3 is below shards \(4\): a run's shards could not all run at once; raise it, and accountConcurrency if the account has more/);
    expect(refused({ accountConcurrency: 9 })).toMatch(/^accountConcurrency: must be an integer in \[10, 10000000\]/);
    // Live (no sandbox provider): one function fewer, one more execution for the worker.
    expect(scale({ live: 'true', paymentsUrl: 'https://pay.fenced-workflow.dev/charges' })).toMatchObject({ maxConcurrency: 4 });
  });

  it('warmThroughput puts WarmThroughput on exactly the tables it names (a JSON string with -c, an object in cdk.json)', () => {
    expect(scale({}).warm).toEqual({ leases: undefined, fences: undefined, jobs: undefined, records: undefined });
    expect(scale({ warmThroughput: '{"records":{"write":28000},"jobs":{"write":5000,"read":15000}}' }).warm).toEqual({
      leases: undefined,
      fences: undefined,
      jobs: { WriteUnitsPerSecond: 5000, ReadUnitsPerSecond: 15000 },
      records: { WriteUnitsPerSecond: 28000 },
    });
    expect(scale({ warmThroughput: { fences: { write: 4000 } } }).warm.fences).toEqual({ WriteUnitsPerSecond: 4000 });
  });

  it.each([
    [{ shards: 0 }, /shards: must be an integer in \[1, 1000\]/],
    [{ shards: 1001 }, /shards: must be an integer in \[1, 1000\]/],
    [{ shards: 'four' }, /shards: must be an integer/],
    [{ shards: 20, runItems: 10 }, /shards: 20 shards for 10 items/],
    [{ shards: 12, workerMaxConcurrency: 8, accountConcurrency: 1000 }, /workerMaxConcurrency: 8 is below shards \(12\)/],
    [{ workerMaxConcurrency: 1001 }, /workerMaxConcurrency: must be an integer in \[2, 1000\]/],
    [{ workerMaxConcurrency: 1 }, /workerMaxConcurrency: must be an integer in \[2, 1000\]/],
    [{ warmThroughput: '{"invoice":{"write":9000}}' }, /warmThroughput: unknown table role "invoice"/],
    [{ warmThroughput: '{"invoices":{"write":9000}}' }, /warmThroughput: unknown table role "invoices" \(one of .*\): the invoices role was renamed records/],
    [{ warmThroughput: '{"records":{"write":3999}}' }, /warmThroughput.records.write: must be an integer >= 4000/],
    [{ warmThroughput: '{"records":{"read":100}}' }, /warmThroughput.records.read: must be an integer >= 12000/],
    [{ warmThroughput: '{"records":{"write":"lots"}}' }, /warmThroughput.records.write: must be an integer/],
    [{ warmThroughput: '{"records":{"writes":9000}}' }, /warmThroughput.records: unknown key "writes"/],
    [{ warmThroughput: 'not json' }, /warmThroughput: must be JSON/],
    [{ warmThroughput: '{"outbox":{"indexes":{"unsent":{"write":9000}}}}' }, /^warmThroughput.outbox.indexes: the outbox table has no index "unsent" \(its indexes: unsent-by-shard\)/],
    [{ warmThroughput: '{"outbox":{"indexes":{"unsent-by-shard":{"write":3000}}}}' }, /^warmThroughput.outbox.indexes.unsent-by-shard.write: must be an integer >= 4000/],
    [{ warmThroughput: '{"outbox":{"indexes":{"unsent-by-shard":{"writes":9000}}}}' }, /^warmThroughput.outbox.indexes.unsent-by-shard: unknown key "writes"/],
  ])('%j is refused at synth with a ConfigError naming the setting', (context, message) => {
    expect(refused(context)).toMatch(message);
  });

  it("the plan's settings for 10 million customers synthesize as it prints them, with zero cdk-nag findings", () => {
    const plan = planInvoiceRun({ customers: 10_000_000 });
    const unsent = plan.settings.warmIndexWriteUnits.outbox!['unsent-by-shard']!;
    const context = { shards: plan.settings.shards, accountConcurrency: plan.settings.lambdaConcurrency, runItems: 10_000_000, warmThroughput: { records: { write: plan.settings.warmWriteUnits.records }, outbox: { write: plan.settings.warmWriteUnits.outbox, indexes: { 'unsent-by-shard': { write: unsent } } } } };
    // Each index has a warm throughput of its own: the plan's goes on the unsent index.
    const outbox = Object.values(templateOf({ context }).template.findResources('AWS::DynamoDB::Table')).find((t) => (t.Properties.GlobalSecondaryIndexes ?? []).some((g: { IndexName: string }) => g.IndexName === 'unsent-by-shard'))!;
    expect(outbox.Properties.GlobalSecondaryIndexes.find((g: { IndexName: string }) => g.IndexName === 'unsent-by-shard').WarmThroughput).toEqual({ WriteUnitsPerSecond: unsent });
    expect(scale(context)).toMatchObject({ shards: String(plan.shards), maxConcurrency: plan.settings.workerMaxConcurrency, warm: { records: { WriteUnitsPerSecond: plan.settings.warmWriteUnits.records } } });
    const { app, outdir } = buildApp({ nag: true, context });
    expect(withoutCfnValidation(() => nagViolations(app, outdir))).toEqual([]);
  });
});
