// tier: quick
/**
 * The capacity planner (lib/workloads/invoices/plan.ts, lib/workflow/capacity.ts, cli/ops/plan.ts):
 * its figures follow from the stated request mix, assumptions and AWS limits (none is a
 * constant), the limit that binds moves as the setting that raises it moves, and the CLI prints
 * one JSON object or a one-line error with exit 2.
 */
import { describe, expect, it } from 'vitest';
import { AWS_LIMITS, costOf, PRICES_US_EAST_1, projectedWrites, rampSeconds, TABLE_ROLES, TABLES, workerConcurrencyFor } from '../lib/workflow/index.js';
import { INVOICE_MIX, planInvoiceRun } from '../lib/workloads/invoices/plan.js';
import { INVOICE_PROFILE } from '../lib/workloads/invoices/profile.js';
import { DEFAULT_UNIT_SIZE, EFFECTS_PER_CUSTOMER } from '../lib/workloads/invoices/invoices.js';
import { runCli } from './support/cli.js';
import { renderPlan, unfinishedJobAlarmLine } from '../cli/ops/plan.js';

const cli = runCli;

describe('the plan follows from the request mix and the stated assumptions', () => {
  it('units, write units per table, S3 puts and emails are the mix times the customers; the cost is the list prices times the counts', () => {
    const p = planInvoiceRun({ customers: 1_000, shards: 4 });
    // The plan's outbox items are the workload's: with the invoice and the charge, the effects per customer the fenced unit writes.
    expect(2 + INVOICE_MIX.outboxItems).toBe(EFFECTS_PER_CUSTOMER);
    expect(p.unitSize).toBe(DEFAULT_UNIT_SIZE);
    expect(p.units).toBe(4 * Math.ceil(250 / DEFAULT_UNIT_SIZE)); // four shards of 250
    // The work's writes are the measured profile's shares times the plan's customers and units.
    const work = projectedWrites(INVOICE_PROFILE, 1_000, p.units);
    expect(p.writeUnits.records).toBeCloseTo(work.get('records')!);
    expect(p.writeUnits.outbox).toBeCloseTo(work.get('outbox')!);
    expect(p.writeUnits.fences).toBeCloseTo(work.get('fences')! + p.invocations); // the units' fence writes, and one raise per invocation
    // Per customer: every write unit is on a line of the breakdown, and every table and index has its hottest key.
    expect(p.writeUnitsPerCustomer.total * 1_000).toBeCloseTo(p.writeUnits.total);
    expect(p.writeUnitsPerCustomer.breakdown.reduce((x, w) => x + w.units, 0)).toBeCloseTo(p.writeUnitsPerCustomer.total);
    const places = TABLE_ROLES.flatMap((r) => [r, ...TABLES[r].globalSecondaryIndexes.map((i) => `${r}/${i.indexName}`)]);
    expect(new Set(p.partitions.map((x) => `${x.table}${x.index === undefined ? '' : `/${x.index}`}`))).toEqual(new Set(places));
    expect(p.requests.transactWriteItems).toBe(p.units);
    // Two emails a customer: the invoice, and the payment's follow-up (its receipt or the declined card's email).
    expect([p.s3Puts, p.emails, p.paymentCalls]).toEqual([1_000, 2_000, 1_000]);
    const total = Object.entries(p.writeUnits).filter(([k]) => k !== 'total').reduce((n, [, v]) => n + v, 0);
    expect(p.writeUnits.total).toBeCloseTo(total);
    expect(p.cost.emails).toBeCloseTo((2_000 / 1_000) * PRICES_US_EAST_1.sesEmailPerThousand);
    expect(p.cost.dynamodbWrites).toBeCloseTo((p.writeUnits.total / 1e6) * PRICES_US_EAST_1.dynamoWriteRequestUnitPerMillion);
    expect(p.cost.total).toBeCloseTo(Object.entries(p.cost).filter(([k]) => k !== 'total').reduce((n, [, v]) => n + v, 0));
    expect(costOf({ wru: 1e6, rru: 0, s3Puts: 0, emails: 0, sqsRequests: 0, lambdaRequests: 0, lambdaGbSeconds: 0 }).total).toBe(PRICES_US_EAST_1.dynamoWriteRequestUnitPerMillion);
  });

  it("one shard: the chain of transactions binds, and its wall time is the units times the stated latency (twice the latency, twice the time)", () => {
    const p = planInvoiceRun({ customers: 1_000_000, shards: 1 });
    expect(p.binding.name).toBe("one shard's chain of transactions");
    expect(p.binding.raise).toMatch(/more shards/);
    // The units one after another, and a hand-off between invocations.
    expect(p.binding.seconds).toBeCloseTo(p.units * 0.025 + (p.invocations - 1) * 0.2, 0);
    const slow = planInvoiceRun({ customers: 1_000_000, shards: 1, assumptions: { unitLatencyMs: 50 } });
    expect(slow.binding.seconds / p.binding.seconds).toBeCloseTo(2, 1);
  });

  it('10 million customers: the recommended shards fill a table quota; more shards only wait on it, and the raise names the quota', () => {
    const p = planInvoiceRun({ customers: 10_000_000 });
    expect(p.shards).toBe(p.recommendedShards);
    // At the recommended count a table's quota is (nearly) full: ≥ 95 % of what its warm throughput allows.
    const tables = p.limits.filter((l) => /table write throughput/.test(l.name));
    expect(Math.max(...tables.map((l) => l.demands / l.allows))).toBeGreaterThanOrEqual(0.95);
    const more = planInvoiceRun({ customers: 10_000_000, shards: 64 });
    expect(more.binding.name).toMatch(/table write throughput/);
    expect(more.binding.raise).toMatch(/table-level write throughput quota \(40000; Service Quotas\)/);
    expect(more.wallSeconds).toBeGreaterThanOrEqual(p.wallSeconds * 0.95);
    // Unwarmed tables serve 4,000 write units/s at once: the same run takes ten times longer.
    expect(p.wallSecondsUnwarmed).toBeGreaterThan(p.wallSeconds * 5);
    expect(p.settings.warmWriteUnits.outbox).toBeLessThanOrEqual(AWS_LIMITS.tableWriteUnitsPerSecond);
    expect(p.settings.workerMaxConcurrency).toBe(workerConcurrencyFor(p.shards));
  });

  it('100 million customers: at the default quota the table binds for hours; with the quota raised, more shards halve it, until the unsent index\'s keys bind', () => {
    const base = planInvoiceRun({ customers: 100_000_000 });
    const raised = planInvoiceRun({ customers: 100_000_000, tableWriteUnits: 400_000 });
    expect(base.wallSeconds).toBeGreaterThan(3 * 3600);
    expect(base.binding.name).toMatch(/table write throughput/);
    expect(raised.recommendedShards).toBeGreaterThan(base.recommendedShards);
    expect(raised.wallSeconds).toBeLessThan(base.wallSeconds / 2);
    // Past the recommended count the unsent index's 32 key values are full: the raise is more values, not more shards.
    const more = planInvoiceRun({ customers: 100_000_000, tableWriteUnits: 400_000, shards: 4 * raised.shards });
    expect(more.binding.name).toBe('partition outbox/unsent-by-shard key open#N');
    expect(more.binding.raise).toMatch(/more values for the key/);
    expect(more.wallSeconds).toBeGreaterThan(raised.wallSeconds * 0.95);
  });

  it('10 million customers, as planned: no table or index has a key over its partition limits, and the wall time is within 1.15x of the tables\' throughput floor', () => {
    const p = planInvoiceRun({ customers: 10_000_000 });
    for (const x of p.partitions) {
      expect(x.writeUnitsPerSecond, `${x.table}/${x.index ?? ''} ${x.key}`).toBeLessThan(x.limit.writeUnitsPerSecond);
      expect(x.readUnitsPerSecond, `${x.table}/${x.index ?? ''} ${x.key}`).toBeLessThan(x.limit.readUnitsPerSecond);
    }
    // The floor: each table's write units over the quota it may use.
    const floor = Math.max(...(['records', 'outbox', 'fences', 'jobs', 'leases'] as const).map((t) => p.writeUnits[t] / AWS_LIMITS.tableWriteUnitsPerSecond));
    expect(p.wallSeconds / floor).toBeLessThanOrEqual(1.15);
  });

  it("10 million customers: the unsent index is written faster than a new index serves (6 write units per customer over the run's chain), so the plan warms it too; an index written slower is left alone", () => {
    const p = planInvoiceRun({ customers: 10_000_000 });
    const perSecond = (6 * 10_000_000) / ((p.unitsPerShard * p.assumptions.unitLatencyMs) / 1000);
    expect(p.settings.warmIndexWriteUnits).toEqual({ outbox: { 'unsent-by-shard': Math.ceil(perSecond / 1000) * 1000 } });
    expect(p.settings.warmIndexWriteUnits.outbox!['unsent-by-shard']).toBe(15_000);
    // One shard at 100 ms a unit writes the index at 1,200 a second: a new index serves that.
    expect(planInvoiceRun({ customers: 100_000, shards: 1, assumptions: { unitLatencyMs: 100 } }).settings.warmIndexWriteUnits).toEqual({});
    expect(renderPlan(p)).toContain('warm throughput is billed when it is raised');
  });

  it('Lambda concurrency below the shards binds, in waves, and the raise names its quota; the event source ramps at 300 a minute', () => {
    const p = planInvoiceRun({ customers: 10_000_000, shards: 8, lambdaConcurrency: 2, tableWriteUnits: 1_000_000 });
    expect(p.binding.name).toBe('Lambda concurrency');
    expect(p.binding.raise).toMatch(/Lambda concurrent executions quota \(2; Service Quotas\)/);
    expect(rampSeconds(305)).toBe(60);
    expect(rampSeconds(3)).toBe(0);
  });
});

describe('npm run cli -- plan', () => {
  it('--json prints one object with the plan, its stack context, the prices with region and date, and the limits with what raises each', async () => {
    const r = await cli(['plan', '--customers', '10000000', '--json']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    const plan = JSON.parse(r.stdout);
    expect(plan).toMatchObject({ customers: 10_000_000, prices: { region: 'us-east-1', date: PRICES_US_EAST_1.date }, stackContext: expect.stringMatching(/^-c shards=\d+ -c accountConcurrency=1000 -c warmThroughput='\{"records":\{"write":\d+\},"outbox":\{"write":\d+,"indexes":\{"unsent-by-shard":\{"write":\d+\}\}\}\}'$/) });
    expect(plan.limits.map((l: { name: string }) => l.name)).toEqual(
      expect.arrayContaining(['records table write throughput', 'Lambda concurrency', 'SQS event source maximum concurrency', 'partition outbox/unsent-by-shard key open#N', 'partition fences key invoices#invoice-run#N-N#shard-N-of-N']),
    );
    expect(plan.partitions).toContainEqual(expect.objectContaining({ table: 'outbox', index: 'unsent-by-shard', key: 'open#N', limit: { writeUnitsPerSecond: 1_000, readUnitsPerSecond: 3_000 } }));
    // The unit's items and their delivery (15.5 a customer before the invoice run had steps), and
    // the payment's follow-up: its put and its parent's settle in one transaction (2 + 2, the
    // settle's 1 before), its index entry, its claim, SENT and the entry's removal (4 x 1).
    expect(plan.writeUnitsPerCustomer.total).toBeGreaterThan(22.5);
    expect(plan.writeUnitsPerCustomer.total).toBeLessThan(23.5);
    expect(plan.writeUnitsPerCustomer.breakdown.length).toBeGreaterThan(8);
    for (const l of plan.limits) expect(l.raise.length).toBeGreaterThan(10);
    const text = await cli(['plan', '--customers', '10000000']);
    expect(text.stdout).toMatch(/binds: .* raise: /);
    expect(text.stdout).toMatch(/^  alarm UnfinishedJobTooOld: fires when a job stays unfinished over 60 min \(unfinishedJobAlarmMinutes\); this run's jobs take up to .*: (it fits|it would fire during a healthy run; deploy with -c unfinishedJobAlarmMinutes=\d+)$/m);
  });

  it("UnfinishedJobTooOld against the run's own duration: a run that takes hours gets the setting that leaves it twice its time, instead of a page every run", () => {
    expect(unfinishedJobAlarmLine(29 * 60)).toMatch(/: it fits$/);
    expect(unfinishedJobAlarmLine(30 * 60)).toMatch(/: it fits$/);
    expect(unfinishedJobAlarmLine(31 * 60)).toMatch(/it would fire during a healthy run; deploy with -c unfinishedJobAlarmMinutes=62$/);
    expect(unfinishedJobAlarmLine(3 * 3600)).toMatch(/-c unfinishedJobAlarmMinutes=360$/);
  });

  it.each([
    [['plan'], /--customers: is required/],
    [['plan', '--customers', '0'], /--customers: must be an integer in \[1, 1000000000\]/],
    [['plan', '--customers', '10', '--shards', '11'], /--shards: must be an integer in \[1, 10\]/],
    [['plan', '--customers', '10', '--unit-size', '33'], /--unit-size: must be an integer in \[1, 24\]/],
    [['plan', '--customers', '10', '--frobnicate'], /Unknown option '--frobnicate'/],
  ])('%j: one line on stderr, exit 2', async (args, message) => {
    const r = await cli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stdout).toBe('');
  });
});
