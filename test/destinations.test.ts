// tier: quick
/**
 * The per-recipient destination (an http item's own path below its target's endpoint: the
 * reports workload's tenant webhooks), run end to end by `npm start -- --workload reports`'s
 * faulted run in the simulator's virtual time, and its negative control: a sender whose provider drops the item's path (every
 * tenant's report posted to the endpoint itself) must be caught by DELIVERY, from the
 * provider's own record of the path each key was posted to, never from the sender's code.
 */
import { describe, expect, it } from 'vitest';
import { tableNames, type HttpProvider } from '../lib/workflow/index.js';
import { reports } from '../lib/workloads/reports/index.js';
import { simDemoRun } from './sim/demo-run.js';

/** The faulted run of `npm start -- --workload reports`, in virtual time (test/sim/demo-run.ts): what it delivers where, not how fast. */
async function reportsRun(prefix: string, http?: (honest: HttpProvider) => HttpProvider, faults = true) {
  const out = await simDemoRun(2, {
    tables: tableNames(prefix),
    workload: reports,
    items: 30,
    workers: 3,
    seed: 2,
    set: prefix.replace(/-$/, ''),
    periods: 1,
    faults,
    effects: { httpTargets: reports.outbox.http },
    ...(http ? { http: (e) => ({ webhooks: http(e.http.webhooks!) }) } : {}),
  });
  expect(out.unsupported).toEqual([]);
  return out;
}

describe('per-recipient destinations, checked from the provider\'s record', () => {
  it("the reports run: every tenant's webhook is called at its own path once, and every invariant passes", async () => {
    const { run, effects } = await reportsRun('dest-ok-');
    for (const [name, r] of Object.entries(run.invariants.invariants)) expect(r, name).toEqual({ ok: true, violations: [] });
    expect(run.invariants.stats.effects.payments).toMatchObject({ items: 30, sent: 30, performed: 30 });
    const paths = new Set([...effects.payments.records.values()].map((r) => r.path));
    for (let i = 0; i < 30; i++) expect(paths).toContain(`/tenants/tenant-${String(i).padStart(6, '0')}/reports`);
  }, 90_000);

  it('negative control: a provider that drops the path delivers every report to the endpoint itself, and DELIVERY names each', async () => {
    const pathless = (honest: HttpProvider): HttpProvider => ({ name: 'pathless', ...(honest.keyRetentionMs === undefined ? {} : { keyRetentionMs: honest.keyRetentionMs }), post: ({ path: _dropped, ...call }) => honest.post(call) });
    // A quiet run (no worker or provider faults): where a call went is all this control changes.
    const { run } = await reportsRun('dest-bad-', pathless, false);
    const delivery = run.invariants.invariants.DELIVERY;
    expect(delivery.ok).toBe(false);
    expect(delivery.violations.filter((v) => / delivered to \/, its destination is \/tenants\/tenant-\d{6}\/reports$/.test(v)).length).toBeGreaterThanOrEqual(Math.min(20, delivery.violations.length - 1));
    // Only DELIVERY: the fence, the records and the documents are untouched by where a call went.
    for (const name of ['FENCE', 'ONCE', 'PROGRESS', 'TOKENS', 'DOCS', 'RUNS'] as const) expect(run.invariants.invariants[name].ok, name).toBe(true);
  }, 90_000);
});
