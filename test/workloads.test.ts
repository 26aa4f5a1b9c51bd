// tier: quick
/**
 * The registry and every workload in it, held against its own processor: a descriptor's numbers
 * (its effects per item, which cap the unit size everywhere) and its checks (what the checker
 * says a finished job must have written) are computed apart from the processor, so a descriptor
 * that disagrees with its processor fails here, before a synth or a cold start would.
 * Pure: no engine. The runs themselves: `npm start -- --workload NAME` (test/main-job.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, InvalidInputError, makeGeneration } from '../lib/protocol/index.js';
import { assertWorkload, outboxHttp, tableNames, type Workload } from '../lib/workflow/index.js';
import { destinationUrl } from '../lib/workflow/adapters/index.js';
import { DEFAULT_WORKLOAD, WORKLOADS, workloadFromEnv, workloadNamed } from '../lib/workloads/index.js';
import { invoices } from '../lib/workloads/invoices/index.js';
import { runCli } from './support/cli.js';
import { describeAgainstProcessor } from './support/workload-checks.js';
import { reports } from '../lib/workloads/reports/index.js';

const tables = tableNames('wl-');
const startOf = (w: Workload<any>, items: number) => w.start.runOf({ payload: w.local.payloads(items, 7)[0]!, time: new Date('2026-10-02T03:00:00Z'), items, unitSize: w.local.unitSize });
const unitOf = (w: Workload<any>, input: unknown, unit: number) => w.processor.unitEffects(input, { jobId: 'j', generation: makeGeneration(0, 1), unit, tables, now: 1 });

describe('the registry', () => {
  it('holds both samples under unique names, the invoice run the default; an unknown name is one typed line naming the registered ones', () => {
    // A fork adds its own beside these (docs/fork.md): nothing here names only these two.
    expect(WORKLOADS.map((w) => w.name).slice(0, 2)).toEqual(['invoices', 'reports']);
    expect(new Set(WORKLOADS.map((w) => w.name)).size).toBe(WORKLOADS.length);
    expect(DEFAULT_WORKLOAD).toBe('invoices');
    expect(workloadNamed('reports')).toBe(reports);
    expect(() => workloadNamed('no-such-workload')).toThrow(InvalidInputError);
    expect(() => workloadNamed('no-such-workload')).toThrow(/no workload "no-such-workload" is registered .*invoices, reports/);
    expect(workloadFromEnv({})).toBe(invoices);
    expect(workloadFromEnv({ WORKLOAD: 'reports' })).toBe(reports);
    expect(() => workloadFromEnv({ WORKLOAD: 'no-such-workload' })).toThrow(ConfigError);
  });

  it('refuses a descriptor whose unit size its effects cannot take, a zero effect count, a bad target or fence prefix', () => {
    expect(() => assertWorkload({ ...reports, defaultUnitSize: 50 })).toThrow(/defaultUnitSize: must be in \[1, 49\]/);
    expect(() => assertWorkload({ ...invoices, defaultUnitSize: 25 })).toThrow(/must be in \[1, 24\]/);
    expect(() => assertWorkload({ ...reports, effectsPerItem: 0 })).toThrow(/effectsPerItem/);
    expect(() => assertWorkload({ ...reports, outbox: { email: false, http: [{ target: 'Web Hooks', description: '' }] } })).toThrow(/outbox.http/);
    expect(() => assertWorkload({ ...reports, fenceKeyPrefix: 'x' })).toThrow(/fenceKeyPrefix/);
  });

  it('`npm run cli -- workloads --json` lists each with its cap, effects and commands, read from its descriptor', async () => {
    const r = await runCli(['workloads', '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { name: string; unitSize: { max: number }; email: boolean; run: string }[];
    expect(out.map((w) => w.name)).toEqual(WORKLOADS.map((w) => w.name));
    expect(out.slice(0, 2).map((w) => [w.name, w.unitSize.max, w.email, w.run])).toEqual([
      ['invoices', 24, true, 'npm start'],
      ['reports', 49, false, 'npm start -- --workload reports'],
    ]);
  });
});

describe.each(WORKLOADS.map((w) => [w.name, w] as const))('the %s workload against its own processor', (_, w) => describeAgainstProcessor(w));

describe('per-recipient destinations (the reports webhooks)', () => {
  it("each tenant's call names its own path below the endpoint, and the URL keeps the endpoint's host", () => {
    const { input } = startOf(reports, 3);
    const calls = unitOf(reports, input, 0).filter((e) => e.table === tables.outbox).map((e) => e.item.path);
    expect(calls).toEqual(['/tenants/tenant-000000/reports', '/tenants/tenant-000001/reports', '/tenants/tenant-000002/reports']);
    expect(destinationUrl('https://hooks.example/v1/', '/tenants/t-1/reports')).toBe('https://hooks.example/v1/tenants/t-1/reports');
    expect(destinationUrl('https://hooks.example', undefined)).toBe('https://hooks.example');
  });

  it('refuses a path that would leave the endpoint: another host, a parent segment, a query', () => {
    const origin = { jobId: 'j', unit: 0 };
    for (const path of ['//evil.example/x', '/a/../b', '/a?x=1', 'https://evil.example/x', '/']) {
      expect(() => outboxHttp('o', 'k', origin, { target: 'webhooks', path, request: {} }), path).toThrow(InvalidInputError);
    }
    expect(() => destinationUrl('https://hooks.example', '//evil.example/x')).toThrow(InvalidInputError);
  });
});
