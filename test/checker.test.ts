// tier: quick
/**
 * The invariant checker has teeth: each case writes, with the library's own requests, a history
 * that breaks exactly one rule the old checker could not see, and the checker must name it. It
 * reads only the tables and their streams (cli/check/invariants.ts), never the worker's code paths.
 */
import { TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { createDynamo, makeGeneration, prepareFencedUnit, raiseFence, systemClock } from '../lib/protocol/index.js';
import { startFaultProxy } from '../cli/local/fault-proxy.js';
import { WireCheck } from '../cli/check/wire-check.js';
import { invoiceProcessor } from '../lib/workloads/invoices/invoices.js';
import { fenceKeyOf, tableNames, ensureTables } from '../lib/workflow/index.js';
import { replayIncident } from '../cli/demo/incident.js';
import { perTestTables } from './support/tables.js';
import { createInvoiceJob, fenceOf, invariants, invoiceInput, wireTables, workflow } from './support/workflow.js';

const { tables } = perTestTables(import.meta.filename);

describe('FENCE: every effect is tied to a fence write of its generation and updatedAt', () => {
  it('a stale commit that bypasses the fence after the successor raised it and crashed before any unit is a FENCE violation', async () => {
    const t = await tables();
    const w = workflow(t);
    const input = invoiceInput('2026-03', 4, 2);
    const job = await createInvoiceJob(t, w.clock, input);
    const fence = { table: t.names.fences, resource: fenceOf(job.id) };
    const stale = makeGeneration(0, 1);
    await raiseFence({ doc: t.dynamo.doc, clock: w.clock }, fence, stale);
    // The successor raises the fence and crashes before its first unit.
    await w.clock.advance(5);
    await raiseFence({ doc: t.dynamo.doc, clock: w.clock }, fence, makeGeneration(0, 2));
    // The stale holder's unit 0, its fence item dropped: the checkpoint still says 0, so it lands.
    await w.clock.advance(5);
    const now = w.clock.wallNow();
    const effects = invoiceProcessor.unitEffects(input, { jobId: job.id, generation: stale, unit: 0, tables: t.names, now });
    const prepared = prepareFencedUnit(
      { fence, generation: stale, checkpoint: { table: t.names.jobs, key: job.id, expected: 0, next: 1 }, effects, token: { job: job.id, unit: 0 } },
      now,
    );
    await t.dynamo.client.send(new TransactWriteItemsCommand({ TransactItems: prepared.items.slice(1) }));

    const report = await invariants(t);
    expect(report.invariants.FENCE.ok).toBe(false);
    expect(report.invariants.FENCE.violations[0]).toMatch(/^(invoice|charge)#2026-03#cust-\d+: written at generation 1 \(updatedAt \d+\) with no fence write of that generation and updatedAt on invoices#invoice-run#2026-03/);
  });

  it('the incident replay (fenced) ties every effect to its fence write: all invariants hold on its tables', async () => {
    const t = await tables();
    const incident = tableNames(`${t.prefix}incident-`);
    await ensureTables(t.dynamo.client, incident);
    const wire = new WireCheck(wireTables(incident));
    const proxy = await startFaultProxy(t.endpoint, { onExchange: (ex) => wire.observe(ex) });
    const via = createDynamo({ endpoint: proxy.endpoint });
    try {
      const r = await replayIncident({ doc: via.doc, tables: incident, clock: systemClock, fenced: true });
      expect(r.aRejected).toBe(true);
    } finally {
      via.client.destroy();
      await proxy.close();
    }
    const report = await invariants({ ...t, names: incident }, wire.report());
    expect(report.invariants.FENCE).toEqual({ ok: true, violations: [] });
    expect(report.stats.wire?.effectWritesChecked).toBeGreaterThan(0);
    expect(report.ok).toBe(true);
  });
});
