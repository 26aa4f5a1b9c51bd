// tier: full
/**
 * Sharded runs (lib/workflow/runs.ts, lib/workloads/invoices/shards.ts) on DynamoDB Local: the
 * starter's run record and shards, the run's DONE as a query of its shards under duplicate and
 * simultaneous completions, and the checker's RUNS invariant with its negative controls (a
 * broken starter's overlapping shards, a run record that counts a shard twice, a completion
 * counter that counts messages instead of shards); and `npm start`'s faulted sharded run, in
 * the simulator's virtual time (test/sim/demo-run.ts).
 */
import { invoices } from '../lib/workloads/invoices/index.js';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createDynamo, InvalidInputError, ManualClock } from '../lib/protocol/index.js';
import { invoiceJobId, invoiceProcessor } from '../lib/workloads/invoices/invoices.js';
import { assertShardCount, invoiceShards, shardRange, startInvoiceRun } from '../lib/workloads/invoices/shards.js';
import { createJob, METRIC, readRun, runIdOfJob, runKeyOf, runStatus, RunInputMismatchError, shardJobId, tableNames } from '../lib/workflow/index.js';
import { simDemoRun } from './sim/demo-run.js';
import { createStarterHandler } from '../functions/starter-handler.js';
import { scanAll } from './support/fixtures.js';
import { startFaultProxy } from '../cli/local/fault-proxy.js';
import { perTestTables, type TestTables } from './support/tables.js';
import { chargesOf, holdRequests, invariants, invoiceInput, Recorder, workflow } from './support/workflow.js';

const { tables, cleanups } = perTestTables(import.meta.filename);

describe('shard ranges and ids (pure)', () => {
  it('the K ranges of N customers tile [0, N): no gap, no overlap, sizes within one of each other', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 1, max: 1_000 }), (n, k) => {
        const ranges = Array.from({ length: k }, (_, i) => shardRange(n, i, k));
        expect(ranges[0]!.from).toBe(0);
        expect(ranges.at(-1)!.to).toBe(n);
        for (let i = 1; i < k; i++) expect(ranges[i]!.from).toBe(ranges[i - 1]!.to);
        const sizes = ranges.map((r) => r.to - r.from);
        expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      }),
    );
  });

  it('a shard id carries its run, index and count; a run of one shard keeps the period job id', () => {
    expect(shardJobId('invoice-run#2026-09', 0, 1)).toBe('invoice-run#2026-09');
    expect(shardJobId('invoice-run#2026-09', 3, 12)).toBe('invoice-run#2026-09#shard-03-of-12');
    for (const [i, k] of [[0, 1], [0, 2], [7, 8], [999, 1000]] as const) expect(runIdOfJob(shardJobId('invoice-run#2026-09', i, k))).toBe('invoice-run#2026-09');
  });

  it('a shard count above the customers (an empty shard) or above MAX_SHARDS is refused with a typed error', () => {
    expect(() => assertShardCount(5, 4)).toThrow(InvalidInputError);
    expect(() => assertShardCount(1_001, 10_000)).toThrow(/at most 1000/);
    expect(() => assertShardCount(0, 10)).toThrow(InvalidInputError);
    expect(() => assertShardCount(1, 0)).not.toThrow();
  });
});

/** Delivers and runs every visible message, one invocation each, until the queue is empty. */
async function drain(w: ReturnType<typeof workflow>, tag: string): Promise<void> {
  for (let i = 0; w.queue.depth > 0 && i < 50; i++) await w.deliver(`${tag}${i}`, 1).done;
}

describe('a sharded run on DynamoDB Local', () => {
  it('the starter creates the run record and K shards once; a second start with another K builds the stored run and re-enqueues only unfinished shards', async () => {
    const t = await tables();
    const w = workflow(t);
    const start = (shards: number) =>
      createStarterHandler({ doc: t.dynamo.doc, tables: t.names, clock: w.clock, queue: w.queue, telemetry: w.telemetry, unitSize: 5, workload: invoices, items: 23, shards });
    const first = await start(4)({ period: '2026-09', seed: 3 });
    expect(first).toMatchObject({ runId: invoiceJobId('2026-09'), created: true, enqueued: true });
    expect(first.jobs.map((j) => j.jobId)).toEqual([0, 1, 2, 3].map((i) => `invoice-run#2026-09#shard-${i}-of-4`));
    const run = await readRun(t.dynamo.doc, t.names.jobs, first.runId);
    expect(run).toMatchObject({ shardCount: 4, shards: first.jobs.map((j) => j.jobId), input: { period: '2026-09', customers: 23 } });
    const jobs = (await scanAll(t, t.names.jobs)).filter((j) => j.kind !== 'run');
    expect(jobs.map((j) => [j.pk, (j.input as { from: number }).from, (j.input as { to: number }).to, j.totalUnits]).sort()).toEqual([
      ['invoice-run#2026-09#shard-0-of-4', 0, 5, 1],
      ['invoice-run#2026-09#shard-1-of-4', 5, 11, 2],
      ['invoice-run#2026-09#shard-2-of-4', 11, 17, 2],
      ['invoice-run#2026-09#shard-3-of-4', 17, 23, 2],
    ]);
    expect(w.queue.depth).toBe(4);
    await w.deliver('A', 1).done; // shard 0 runs to DONE

    // Retried with another setting: the stored run's 4 shards, nothing new; shard 0 is not enqueued again.
    const again = await start(2)({ period: '2026-09', seed: 3 });
    expect(again).toMatchObject({ created: false });
    expect(again.jobs.map((j) => [j.jobId, j.created, j.enqueued])).toEqual(first.jobs.map((j, i) => [j.jobId, false, i !== 0]));
    expect((await scanAll(t, t.names.jobs)).length).toBe(5);
  });

  it('a period whose unsharded job was created before runs is adopted as a run of one shard, whatever the shard setting: no shard bills its customers again', async () => {
    const t = await tables();
    const w = workflow(t);
    const input = invoiceInput('2026-08', 12, 5);
    await createJob(t.dynamo.doc, t.names.jobs, { id: invoiceJobId('2026-08'), totalUnits: invoiceProcessor.totalUnits(input), input: { ...input } }, w.clock);
    const { run, created, shards } = await startInvoiceRun(t.dynamo.doc, t.names.jobs, input, 4, w.clock);
    expect(created).toBe(true);
    expect(run).toMatchObject({ shardCount: 1, shards: [invoiceJobId('2026-08')] });
    expect(shards.map((s) => [s.job.id, s.created])).toEqual([[invoiceJobId('2026-08'), false]]);
    expect((await scanAll(t, t.names.jobs)).map((j) => j.pk).sort()).toEqual([invoiceJobId('2026-08'), runKeyOf(invoiceJobId('2026-08'))]);
  });

  // A start that wrote the record and shards 0-1, then failed (its PutItems of shards 2-3 refused
  // by a throttle), retried for the same period with another customer count: before the fix the
  // retry built shards 2-3 from ITS input, over [40, 80) after [0, 20) (customers 20-39 billed by
  // nobody) or over [20, 40) after [0, 40) (20-39 billed by two shards with their own fences).
  it.each([
    [40, 80],
    [80, 40],
  ])('a start for %i customers that failed after shards 0-1, retried for %i: refused with RunInputMismatchError naming both, nothing written; the stored input completes the run', async (first, second) => {
    const t = await tables();
    const proxy = await startFaultProxy(t.endpoint);
    const viaProxy = createDynamo({ endpoint: proxy.endpoint, maxAttempts: 1 });
    cleanups.push(() => viaProxy.client.destroy(), () => proxy.close());
    const clock = new ManualClock({ wall: Date.UTC(2026, 9, 1) });
    const stored = invoiceInput('2026-09', first, 5);
    const refused = proxy.error({ target: 'PutItem', times: 2, when: (q) => /#shard-[23]-of-4$/.test(String(q.json?.Item?.pk?.S)) }, 'ThrottlingException');
    await expect(startInvoiceRun(viaProxy.doc, t.names.jobs, stored, 4, clock)).rejects.toThrow(/ThrottlingException|injected/);
    await refused.waitForHits(2);
    // The four PutItems went out together: the first refusal ends the call before shards 0-1 are answered.
    const jobKeys = async () => (await scanAll(t, t.names.jobs)).map((j) => String(j.pk)).sort();
    for (let i = 0; i < 100 && (await jobKeys()).length < 3; i++) await new Promise((r) => setTimeout(r, 10));
    const before = await jobKeys();
    expect(before).toEqual([runKeyOf(invoiceJobId('2026-09')), ...[0, 1].map((i) => `invoice-run#2026-09#shard-${i}-of-4`)].sort());

    const retry = startInvoiceRun(t.dynamo.doc, t.names.jobs, invoiceInput('2026-09', second, 5), 4, clock);
    await expect(retry).rejects.toBeInstanceOf(RunInputMismatchError);
    await expect(retry).rejects.toThrow(new RegExp(`"customers":${first}.*"customers":${second}`));
    expect((await scanAll(t, t.names.jobs)).map((j) => j.pk).sort()).toEqual(before);

    // The same start again (the stored input): shards 2-3 from it, the four ranges tile [0, first).
    const done = await startInvoiceRun(t.dynamo.doc, t.names.jobs, stored, 4, clock);
    expect(done.shards.map((s) => s.created)).toEqual([false, false, true, true]);
    const ranges = (await scanAll(t, t.names.jobs)).filter((j) => j.kind !== 'run').map((j) => j.input as { from: number; to: number }).sort((a, b) => a.from - b.from);
    expect(ranges.map((r) => [r.from, r.to])).toEqual([0, 1, 2, 3].map((i) => [shardRange(first, i, 4).from, shardRange(first, i, 4).to]));
  });

  it('K shards run to DONE; the run is recorded done once, by the check after the last shard; every invariant holds', async () => {
    const t = await tables();
    const w = workflow(t);
    await startInvoiceRun(t.dynamo.doc, t.names.jobs, invoiceInput('2026-10', 30, 4), 3, w.clock);
    for (const s of invoiceShards(invoiceInput('2026-10', 30, 4), 3)) await w.queue.send({ jobId: s.id, reason: 'start' });
    await drain(w, 'W');
    const run = await readRun(t.dynamo.doc, t.names.jobs, invoiceJobId('2026-10'));
    expect(run?.doneAt).toBeTypeOf('number');
    expect(w.telemetry.get(METRIC.runsCompleted)).toBe(1);
    const report = await invariants(t);
    expect(report.invariants).toMatchObject({ RUNS: { ok: true }, ONCE: { ok: true }, FENCE: { ok: true }, PROGRESS: { ok: true } });
    expect(report.stats.runs).toEqual({ runs: 1, shards: 3, completeRuns: 1 });
    expect(await chargesOf(t, '2026-10')).toHaveLength(30);
  });

  it("a duplicate completion (a DONE shard's message redelivered while another shard runs) does not make the run DONE; the last shard does, and later duplicates leave doneAt as it was", async () => {
    const t = await tables();
    const w = workflow(t);
    const input = invoiceInput('2026-11', 10, 5);
    const [s0, s1] = invoiceShards(input, 2).map((s) => s.id) as [string, string];
    await startInvoiceRun(t.dynamo.doc, t.names.jobs, input, 2, w.clock);
    await w.queue.send({ jobId: s0, reason: 'start' });
    await drain(w, 'A');
    // Shard 0 again, twice (a redelivery, a duplicate start): each check reads shard 1 PENDING.
    for (const tag of ['dup1', 'dup2']) {
      await w.queue.send({ jobId: s0, reason: 'start' });
      await drain(w, tag);
    }
    const before = await readRun(t.dynamo.doc, t.names.jobs, invoiceJobId('2026-11'));
    expect(before?.doneAt).toBeUndefined();
    expect((await runStatus(t.dynamo.doc, t.names.jobs, before!)).status).toBe('RUNNING');
    await w.queue.send({ jobId: s1, reason: 'start' });
    await drain(w, 'B');
    const done = await readRun(t.dynamo.doc, t.names.jobs, invoiceJobId('2026-11'));
    expect(done?.doneAt).toBeTypeOf('number');
    w.clock.advance(5_000);
    for (const id of [s0, s1]) await w.queue.send({ jobId: id, reason: 'start' });
    await drain(w, 'late');
    expect((await readRun(t.dynamo.doc, t.names.jobs, invoiceJobId('2026-11')))?.doneAt).toBe(done?.doneAt);
    expect(w.telemetry.get(METRIC.runsCompleted)).toBe(1);
    expect((await invariants(t)).invariants.RUNS).toEqual({ ok: true, violations: [] });
  });

  it('two checks that both saw every shard DONE (their reads of the shards held until both are in flight) record the run once', async () => {
    const t = await tables();
    const w = workflow(t);
    const input = invoiceInput('2026-12', 8, 4);
    const [s0, s1] = invoiceShards(input, 2).map((s) => s.id) as [string, string];
    await startInvoiceRun(t.dynamo.doc, t.names.jobs, input, 2, w.clock);
    for (const id of [s0, s1]) await w.queue.send({ jobId: id, reason: 'start' });
    // Both checks' reads of the shards are parked until both are in flight: each check has read the
    // run record (no doneAt) and, released, reads both shards DONE, so both write. (Parking the
    // writes instead would depend on timing: a check that runs before the other shard is DONE
    // reads it RUNNING and never writes.)
    const hold = holdRequests(t.dynamo.client, (op) => op === 'BatchGetItem');
    const a = w.deliver('A', 1);
    const b = w.deliver('B', 1);
    await hold.waitFor(2);
    hold.release();
    expect(await a.done).toEqual({ batchItemFailures: [] });
    expect(await b.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.get(METRIC.runsCompleted)).toBe(1);
    expect(w.telemetry.of('run-done')).toHaveLength(1);
    expect((await invariants(t)).invariants.RUNS.ok).toBe(true);
  });
});

describe('the faulted run of npm start, sharded (in virtual time)', () => {
  it('--shards 4: three periods of four shards each, with the pause, the crashes and the duplicate, pass every invariant, RUNS included', async () => {
    const { run, unsupported } = await simDemoRun(5, { tables: tableNames('sharded-'), items: 40, workers: 4, seed: 5, shards: 4, set: 'sharded' });
    expect(unsupported).toEqual([]);
    expect(run.gaveUp).toBeUndefined();
    expect(run.jobs).toHaveLength(12);
    expect(run.runs).toEqual(['2026-09', '2026-10', '2026-11'].map((p) => ({ id: invoiceJobId(p), shards: 4, done: true })));
    expect(run.faults.map((f) => f.name)).toEqual(expect.arrayContaining(['paused between read and write', 'crash after fence raise, before the first unit']));
    for (const [name, r] of Object.entries(run.invariants.invariants)) expect(r, name).toEqual({ ok: true, violations: [] });
    expect(run.invariants.stats).toMatchObject({ records: 240, expectedRecords: 240, figures: { invoices: 120, charges: 120 }, runs: { runs: 3, shards: 12, completeRuns: 3 } });
    // Every invoice's document referenced once, every email sent once, across all the shards.
    expect(run.invariants.stats.effects.documents.referenced).toBe(120);
  }, 60_000);
});

/** A shard job written by hand, as a broken starter would (input with its own range). */
async function putShard(t: TestTables, clock: ManualClock, id: string, range: { from: number; to: number }, customers: number, period: string): Promise<void> {
  const input = { ...invoiceInput(period, customers, 5), ...range };
  await createJob(t.dynamo.doc, t.names.jobs, { id, totalUnits: invoiceProcessor.totalUnits(input), input: { ...input } }, clock);
}

const putRun = (t: TestTables, runId: string, shards: string[], customers: number, period: string) =>
  t.dynamo.doc.send(
    new PutCommand({
      TableName: t.names.jobs,
      Item: { pk: runKeyOf(runId), kind: 'run', shardCount: shards.length, shards, input: { ...invoiceInput(period, customers, 5) }, createdAt: 0 },
    }),
  );

describe('negative controls: the checker catches what a broken starter or completion check does', () => {
  it('overlapping shard ranges: every charge is still written once (operation keys), but RUNS names the overlap and the shard whose range lost its charges', async () => {
    const t = await tables();
    const w = workflow(t);
    const runId = invoiceJobId('2027-01');
    const ids = [shardJobId(runId, 0, 2), shardJobId(runId, 1, 2)];
    await putRun(t, runId, ids, 10, '2027-01');
    await putShard(t, w.clock, ids[0]!, { from: 0, to: 6 }, 10, '2027-01');
    await putShard(t, w.clock, ids[1]!, { from: 4, to: 10 }, 10, '2027-01');
    for (const id of ids) await w.queue.send({ jobId: id, reason: 'start' });
    await drain(w, 'W');
    expect(await chargesOf(t, '2027-01')).toHaveLength(10);
    const runs = (await invariants(t)).invariants.RUNS;
    expect(runs.ok).toBe(false);
    // Shard 0 ran first and charged customers 4 and 5, which shard 1's range holds: shard 1 lost those charges.
    expect(runs.violations).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/shard .*shard-1-of-2 \[4, 10\) overlaps the items before 6/),
        expect.stringMatching(/charge#2027-01#cust-0000004 written by .*shard-0-of-2, held by shard .*shard-1-of-2$/),
        expect.stringMatching(/charge#2027-01#cust-0000005 written by .*shard-0-of-2, held by shard .*shard-1-of-2$/),
        expect.stringMatching(/its shards demand 24 records, the run 20/),
      ]),
    );
  });

  it('a run record that lists a shard twice (and so never the third): RUNS names the duplicate, the customers in no shard, and the run recorded done while that shard never ran', async () => {
    const t = await tables();
    const w = workflow(t);
    const runId = invoiceJobId('2027-02');
    const ids = [0, 1, 2].map((i) => shardJobId(runId, i, 3));
    for (const [i, id] of ids.entries()) await putShard(t, w.clock, id, shardRange(9, i, 3), 9, '2027-02');
    await putRun(t, runId, [ids[0]!, ids[1]!, ids[1]!], 9, '2027-02');
    // The library refuses such a record: each shard commits to DONE, then its completion check throws and the record fails (redelivered).
    for (const id of ids.slice(0, 2)) {
      await w.queue.send({ jobId: id, reason: 'start' });
      await expect(w.deliver(`W-${id}`, 1).done).rejects.toThrow(/all 1 records of the batch failed/);
    }
    expect(w.telemetry.of('record-error').map((e) => e.error)).toEqual([expect.stringMatching(/InvalidRunItemError: .*lists a shard more than once/), expect.stringMatching(/lists a shard more than once/)]);
    // What a completion check that trusts the list would do: the two listed shards are DONE, so it marks the run.
    await t.dynamo.doc.send(new UpdateCommand({ TableName: t.names.jobs, Key: { pk: runKeyOf(runId) }, UpdateExpression: 'SET doneAt = :n', ExpressionAttributeValues: { ':n': 1 } }));
    const runs = (await invariants(t)).invariants.RUNS;
    expect(runs.violations).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/shard .*shard-1-of-3 listed more than once/),
        expect.stringMatching(/job .*shard-2-of-3 claims the run but is not one of its shards/),
        expect.stringMatching(/items \[6, 9\) are in no shard/),
      ]),
    );
  });

  it('a completion counter (one increment per DONE message) marks the run done after a duplicate of shard 0; RUNS catches it, the query-based check does not do it', async () => {
    const t = await tables();
    const w = workflow(t);
    const input = invoiceInput('2027-03', 10, 5);
    const [s0] = invoiceShards(input, 2).map((s) => s.id) as [string, string];
    await startInvoiceRun(t.dynamo.doc, t.names.jobs, input, 2, w.clock);
    const counter = new Recorder();
    const countCompletion = async () => {
      // The naive check: count completion messages, done at shardCount.
      const out = await t.dynamo.doc.send(
        new UpdateCommand({ TableName: t.names.jobs, Key: { pk: runKeyOf(invoiceJobId('2027-03')) }, UpdateExpression: 'ADD completions :one', ExpressionAttributeValues: { ':one': 1 }, ReturnValues: 'ALL_NEW' }),
      );
      if (Number(out.Attributes?.completions) >= Number(out.Attributes?.shardCount)) {
        await t.dynamo.doc.send(new UpdateCommand({ TableName: t.names.jobs, Key: { pk: runKeyOf(invoiceJobId('2027-03')) }, UpdateExpression: 'SET doneAt = :n', ExpressionAttributeValues: { ':n': 1 } }));
        counter.count(METRIC.runsCompleted);
      }
    };
    for (const tag of ['first', 'duplicate']) {
      await w.queue.send({ jobId: s0, reason: 'start' });
      await drain(w, tag);
      await countCompletion();
    }
    expect(w.telemetry.get(METRIC.runsCompleted)).toBe(0); // the library's own check read shard 1 PENDING, twice
    expect(counter.get(METRIC.runsCompleted)).toBe(1); // the counter did not
    const runs = (await invariants(t)).invariants.RUNS;
    expect(runs.violations).toEqual([expect.stringMatching(/marked done while 1 shard\(s\) are not DONE .*shard-1-of-2: PENDING/)]);
  });
});
