// tier: quick
/**
 * `status` lists leases, fences and jobs in key order (a scan returns them in hash order), and
 * `status --prefixes` lists the table prefixes present at an endpoint, so that a prefix need
 * not be remembered from what npm start printed.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { prefixesOf } from '../cli/ops/prefixes.js';
import { runCli } from './support/cli.js';
import { makeTables, type TestTables } from './support/tables.js';

let a: TestTables;
let b: TestTables;
const JOBS = Array.from({ length: 12 }, (_, i) => `invoice-run#2026-${String(i + 1).padStart(2, '0')}`);

beforeAll(async () => {
  [a, b] = await Promise.all([makeTables(import.meta.filename), makeTables(import.meta.filename)]);
  for (const pk of [...JOBS].reverse()) {
    await a.dynamo.doc.send(new PutCommand({ TableName: a.names.jobs, Item: { pk, status: 'PENDING', cursor: 0, totalUnits: 1, generation: 0 } }));
    await a.dynamo.doc.send(new PutCommand({ TableName: a.names.fences, Item: { pk: pk.replace(/^invoice-run/, 'invoices#job'), generation: 1 } }));
  }
}, 60_000);

describe('status', () => {
  it('lists jobs and fences sorted by key', async () => {
    const r = await runCli(['status', '--endpoint', a.endpoint, '--table-prefix', a.prefix, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { jobs: { pk: string }[]; fences: { pk: string }[] };
    expect(out.jobs.map((j) => j.pk)).toEqual(JOBS);
    expect(out.fences.map((f) => f.pk)).toEqual([...out.fences.map((f) => f.pk)].sort());
    const text = await runCli(['status', '--endpoint', a.endpoint, '--table-prefix', a.prefix]);
    const listed = text.stdout.split('\n').filter((l) => l.trim().startsWith('invoice-run#')).map((l) => l.trim().split(/\s+/)[0]);
    expect(listed).toEqual(JOBS);
  });

  it('--prefixes lists the table prefixes present at the endpoint', async () => {
    const r = await runCli(['status', '--endpoint', a.endpoint, '--prefixes', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const { prefixes } = JSON.parse(r.stdout) as { prefixes: { prefix: string; tables: number }[] };
    const names = prefixes.map((p) => p.prefix);
    expect(names).toEqual(expect.arrayContaining([a.prefix, b.prefix]));
    expect(names).toEqual([...names].sort());
    expect(prefixes.find((p) => p.prefix === a.prefix)?.tables).toBeGreaterThanOrEqual(5);
    const text = await runCli(['status', '--endpoint', a.endpoint, '--prefixes']);
    expect(text.stdout).toContain(`  ${a.prefix}\n`);
  });

  it('a prefix with part of its tables says how many', () => {
    expect(prefixesOf(['fw-1-leases', 'fw-1-fences', 'x'])).toEqual([{ prefix: 'fw-1-', tables: 2 }]);
  });
});
