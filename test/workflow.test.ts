// tier: quick
/**
 * The worker protocol end to end on DynamoDB Local, through the real worker and sweeper
 * handlers (SQS events from the LocalQueue). Interleavings are forced: WorkerHooks hold a
 * worker at a named point (pause) or never let it go on (crash), a ManualClock moves time only
 * when the test says so (lease expiry, staleness), and the fault proxy loses responses.
 * Each test ends with the invariant checker reading the tables and their streams back.
 */
import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createDynamo, epochFloor, InvalidInputError, makeGeneration, raiseEpoch, raiseFence, seal, StaleGenerationError, systemClock } from '../lib/protocol/index.js';
import { customerId } from '../lib/workloads/invoices/invoices.js';
import {
  createJob,
  fencesOfLease,
  InvalidJobItemError,
  JOB_ATTR,
  JobNotFoundError,
  markFailed,
  MAX_UNIT_FAILURES,
  METRIC,
  readJob,
  UNFINISHED,
  UNFINISHED_INDEX,
} from '../lib/workflow/index.js';
import { FullBatchFailureError } from '../functions/worker-handler.js';
import { getItem, scanAll } from './support/fixtures.js';
import { startFaultProxy, type ProxiedRequest } from '../cli/local/fault-proxy.js';
import { WireCheck } from '../cli/check/wire-check.js';
import { NO_WIRE } from '../cli/check/invariants.js';
import { perTestTables, type TestTables } from './support/tables.js';
import { chargesOf, createInvoiceJob, FENCE_PREFIX, fenceOf, invariants, invoiceInput, wireTables, workflow } from './support/workflow.js';

const { tables, cleanups } = perTestTables(import.meta.filename);

/** One charge per customer, each of the amount the input says: no charge was repeated or lost. */
async function expectOneChargePerCustomer(t: TestTables, period: string, customers: number) {
  const charges = await chargesOf(t, period);
  expect(charges).toHaveLength(customers);
  expect(new Set(charges.map((c) => c.customerId))).toEqual(new Set(Array.from({ length: customers }, (_, i) => customerId(i))));
}

async function expectInvariantsHold(t: TestTables) {
  const report = await invariants(t);
  expect(report.invariants).toEqual({
    // These runs' requests are not recorded (their worker clients talk to the engine directly):
    // FENCE is the stream tie here and says so; the wire check is in test/wire-check.test.ts.
    FENCE: { ok: true, violations: [], unchecked: [NO_WIRE] },
    ONCE: { ok: true, violations: [] },
    PROGRESS: { ok: true, violations: [] },
    TOKENS: { ok: true, violations: [] },
    DOCS: { ok: true, violations: [] },
    DELIVERY: { ok: true, violations: [] },
    CHAIN: { ok: true, violations: [] },
    RUNS: { ok: true, violations: [] },
  });
  expect(report.ok).toBe(true);
  return report;
}

describe('recovery: crashes, pauses, time running out', () => {
  // The outbox items are effects of the unit's own transaction: a process that dies the moment
  // the commit is answered (before anything after it, e.g. a put of its own) leaves every one.
  it("a crash right after the commit's answer leaves every outbox item of that unit in place, created by the unit's transaction", async () => {
    const t = await tables();
    const wire = new WireCheck(wireTables(t.names));
    const proxy = await startFaultProxy(t.endpoint, { onExchange: (ex) => wire.observe(ex) });
    const via = createDynamo({ endpoint: proxy.endpoint });
    cleanups.push(() => via.client.destroy(), () => proxy.close());
    const w = workflow(t, { workerDoc: via.doc });
    const input = invoiceInput('2026-04', 6, 3); // 2 units
    const job = await createInvoiceJob(t, w.clock, input);
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const crashed = w.hooks.crash('after-commit', { unit: 0 });
    w.deliver('A');
    const info = await crashed.reached;
    // On the wire: one unit transaction carried all 12 effects (3 invoices, 3 charges, 6 outbox items) with its fence action.
    expect(wire.report()).toMatchObject({ transactions: 1, effectWritesChecked: 12, violations: [] });
    const outbox = await scanAll(t, t.names.outbox);
    const unit0 = [0, 1, 2].map((i) => customerId(i));
    expect(outbox.map((o) => String(o.pk)).sort()).toEqual(unit0.flatMap((c) => [`email#2026-04#${c}`, `payment#2026-04#${c}`]).sort());
    const fence = await getItem(t, t.names.fences, `invoices#${job.id}`);
    for (const o of outbox) expect(o).toMatchObject({ jobId: job.id, unit: 0, generation: info.generation, updatedAt: fence?.updatedAt, status: 'PENDING' });
  });

  it('B raises the fence and crashes before any unit: the sweeper requeues, C resumes from the checkpoint, no charge is repeated', async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800 });
    const input = invoiceInput('2026-05', 8, 2); // 4 units
    const job = await createInvoiceJob(t, w.clock, input);
    await w.queue.send({ jobId: job.id, reason: 'start' });

    // A commits units 0 and 1, then its process dies.
    const aCrash = w.hooks.crash('after-commit', { owner: 'A', unit: 1 });
    const a = w.deliver('A');
    expect(a.bodies).toEqual([{ jobId: job.id, reason: 'start' }]);
    const aInfo = await aCrash.reached;
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ cursor: 2, status: 'RUNNING' });

    // Heartbeat fresh: the sweeper leaves it. Past the lease and the staleness window: requeued.
    expect((await w.sweeper({})).requeued).toEqual([]);
    await w.clock.advance(1_000);
    expect((await w.sweeper({})).requeued).toEqual([job.id]);

    // B gets the requeue (A's start message is still invisible: its invocation never returned),
    // takes the lease over, raises the fence, and dies before its first unit.
    const bCrash = w.hooks.crash('after-fence-raise', { owner: 'B' });
    const b = w.deliver('B');
    expect(b.bodies).toEqual([{ jobId: job.id, reason: 'requeue' }]);
    const bInfo = await bCrash.reached;
    expect(bInfo.generation).toBeGreaterThan(aInfo.generation!);
    expect(await getItem(t, t.names.fences, `invoices#${job.id}`)).toMatchObject({ generation: bInfo.generation });
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ cursor: 2, generation: aInfo.generation });

    // The requeue moved the heartbeat and B's lease is live: nothing to do. Then B's lease lapses.
    expect((await w.sweeper({})).requeued).toEqual([]);
    await w.clock.advance(1_000);
    expect((await w.sweeper({})).requeued).toEqual([job.id]);

    const c = w.deliver('C');
    expect(c.bodies).toEqual([{ jobId: job.id, reason: 'requeue' }]);
    expect(await c.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(c.batch[0]!.messageId)).toBe('done');

    // C resumed at the checkpoint B never moved: units 2 and 3 only.
    expect(w.telemetry.units('A')).toEqual([0, 1]);
    expect(w.telemetry.units('B')).toEqual([]);
    expect(w.telemetry.units('C')).toEqual([2, 3]);
    const [cAcquired] = w.telemetry.of('lease-acquired', 'C');
    expect(cAcquired).toMatchObject({ takeoverFrom: 'B/0' });
    expect(Number(cAcquired!.generation)).toBeGreaterThan(bInfo.generation!);
    expect(w.telemetry.get(METRIC.leaseTakeover)).toBe(2);
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ status: 'DONE', cursor: 4, requeues: 2, generation: cAcquired!.generation });

    await expectOneChargePerCustomer(t, input.period, 8);
    await expectInvariantsHold(t);
  });

  it("a worker paused past its lease inside a unit: the successor raises the fence, the paused worker's commit is rejected by the fence alone, the run completes once", async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800 });
    const input = invoiceInput('2026-06', 8, 2); // 4 units
    const job = await createInvoiceJob(t, w.clock, input);
    await w.queue.send({ jobId: job.id, reason: 'start' });

    // A commits unit 0, builds unit 1 (its lease was safe when it checked), and stalls.
    const aStall = w.hooks.pause('before-commit', { owner: 'A', unit: 1 });
    const a = w.deliver('A');
    const aInfo = await aStall.reached;

    // The stall outlasts A's lease (400 ms) and the staleness window: the sweeper requeues.
    await w.clock.advance(1_000);
    expect((await w.sweeper({})).requeued).toEqual([job.id]);
    // B takes over and raises the fence, then is held before reading the checkpoint.
    const bHeld = w.hooks.pause('after-fence-raise', { owner: 'B' });
    const b = w.deliver('B');
    const bInfo = await bHeld.reached;
    expect(bInfo.generation).toBeGreaterThan(aInfo.generation!);

    // A wakes and commits unit 1. The checkpoint still says 1, so only the fence can refuse it.
    aStall.release();
    expect(await a.done).toEqual({ batchItemFailures: [] }); // superseded: acknowledged, the newer holder continues
    expect(w.telemetry.outcomeOf(a.batch[0]!.messageId)).toBe('superseded');
    expect(w.telemetry.get(METRIC.staleGenerationRejected)).toBe(1);
    expect(w.telemetry.of('commit-rejected', 'A')).toEqual([
      expect.objectContaining({ unit: 1, generation: aInfo.generation, fenceAt: bInfo.generation }),
    ]);
    // Nothing of A's unit 1 landed.
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ cursor: 1, generation: aInfo.generation });
    for (const c of [customerId(2), customerId(3)]) {
      expect(await getItem(t, t.names.records, `invoice#${input.period}#${c}`)).toBeUndefined();
      expect(await getItem(t, t.names.records, `charge#${input.period}#${c}`)).toBeUndefined();
    }
    // A's late release changed nothing: B still holds the lease.
    expect(await getItem(t, t.names.leases, `job#${job.id}`)).toMatchObject({ owner: 'B/0', generation: bInfo.generation });

    bHeld.release();
    expect(await b.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.units('A')).toEqual([0]);
    expect(w.telemetry.units('B')).toEqual([1, 2, 3]);
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ status: 'DONE', cursor: 4, generation: bInfo.generation });
    await expectOneChargePerCustomer(t, input.period, 8);
    await expectInvariantsHold(t);
  });

  it("the successor raises the fence BEFORE it reads the checkpoint: at the proxy its fence UpdateItem precedes its Jobs read, and a stale holder's commit between that read and the successor's commit is rejected", async () => {
    const t = await tables();
    const proxy = await startFaultProxy(t.endpoint);
    cleanups.push(() => proxy.close());
    const via = createDynamo({ endpoint: proxy.endpoint });
    cleanups.push(() => via.client.destroy());
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800, workerDoc: via.doc });
    const input = invoiceInput('2026-07', 6, 2); // 3 units
    const job = await createInvoiceJob(t, w.clock, input);
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const aStall = w.hooks.pause('before-commit', { owner: 'A', unit: 0 });
    const a = w.deliver('A');
    await aStall.reached;
    await w.clock.advance(1_000);
    expect((await w.sweeper({})).requeued).toEqual([job.id]);

    const seen: string[] = [];
    proxy.inject({ times: Infinity, when: (q) => (seen.push(`${q.operation} ${String(q.json?.TableName ?? '')}`), false) }, { kind: 'delay', ms: 0 });
    const bRead = w.hooks.pause('after-checkpoint-read', { owner: 'B' });
    const b = w.deliver('B');
    await bRead.reached;
    const fenceRaise = seen.indexOf(`UpdateItem ${t.names.fences}`);
    const checkpointRead = seen.lastIndexOf(`GetItem ${t.names.jobs}`);
    expect(seen).toEqual([`GetItem ${t.names.jobs}`, `UpdateItem ${t.names.leases}`, `UpdateItem ${t.names.fences}`, `GetItem ${t.names.jobs}`]);
    expect(fenceRaise).toBeLessThan(checkpointRead);

    // B holds what it read; A wakes and commits unit 0 against the checkpoint B read.
    aStall.release();
    expect(await a.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(a.batch[0]!.messageId)).toBe('superseded');
    expect(w.telemetry.of('commit-rejected', 'A')).toHaveLength(1);
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ cursor: 0 });
    bRead.release();
    expect(await b.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.units('B')).toEqual([0, 1, 2]);
    await expectInvariantsHold(t);
  });

  it("a stale holder's late fence raise cannot lower the fence: it is superseded, and the fence stays at the successor's generation", async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800 });
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-08', 4, 2));
    await w.queue.send({ jobId: job.id, reason: 'start' });
    // A acquires and stalls before raising its fence; B takes over, raises and finishes.
    const aStall = w.hooks.pause('after-acquire', { owner: 'A' });
    const a = w.deliver('A');
    const aInfo = await aStall.reached;
    await w.clock.advance(1_000);
    expect((await w.sweeper({})).requeued).toEqual([job.id]);
    const b = w.deliver('B');
    expect(await b.done).toEqual({ batchItemFailures: [] });
    const bGeneration = Number(w.telemetry.of('lease-acquired', 'B')[0]!.generation);
    expect(bGeneration).toBeGreaterThan(aInfo.generation!);

    aStall.release();
    expect(await a.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.of('superseded', 'A')).toEqual([expect.objectContaining({ why: 'fence-raise', by: bGeneration })]);
    expect(await getItem(t, t.names.fences, `invoices#${job.id}`)).toMatchObject({ generation: bGeneration });
    await expectInvariantsHold(t);
  });

  it('a rerun of committed units (the Jobs table restored from an older backup) repeats no charge: the once-only keys stop it, the invoices are upserted', async () => {
    const t = await tables();
    const w = workflow(t);
    const input = invoiceInput('2026-09', 6, 2);
    const job = await createInvoiceJob(t, w.clock, input);
    await w.queue.send({ jobId: job.id, reason: 'start' });
    expect(await w.deliver('A').done).toEqual({ batchItemFailures: [] });
    const charges = await chargesOf(t, input.period);

    // The restore brings back the job as it was before the run (cursor 0, PENDING, unfinished).
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.jobs, Item: { ...(await getItem(t, t.names.jobs, job.id)), cursor: 0, status: 'PENDING', unfinished: UNFINISHED } }));
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const rerun = w.deliver('B');
    expect(await rerun.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(rerun.batch[0]!.messageId)).toBe('done');
    // Three once-only effects per customer: the charge, the email and the payment notification.
    expect(w.telemetry.get(METRIC.duplicatesSuppressed)).toBe(18);
    expect(await chargesOf(t, input.period)).toEqual(charges); // not one charge rewritten
    await expectOneChargePerCustomer(t, input.period, 6);
    await expectInvariantsHold(t);
  });

  it('an invocation running out of time hands off through a continuation message; the next invocation resumes from the checkpoint', async () => {
    const t = await tables();
    const w = workflow(t, { safetyMarginMs: 1_000 });
    const input = invoiceInput('2026-07', 10, 2); // 5 units
    const job = await createInvoiceJob(t, w.clock, input);
    await w.queue.send({ jobId: job.id, reason: 'start' });

    // Enough time for two units, then less than the safety margin (the first ask sizes the margin).
    let asked = 0;
    const a = w.deliver('A', 10, () => (++asked <= 3 ? 30_000 : 900));
    expect(await a.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(a.batch[0]!.messageId)).toBe('handed-off');
    expect(w.telemetry.units('A')).toEqual([0, 1]);
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ cursor: 2, status: 'RUNNING' });
    // The lease was released (generation kept), not left to expire.
    const lease = await getItem(t, t.names.leases, `job#${job.id}`);
    expect(lease?.owner).toBeUndefined();
    expect(lease?.generation).toBe(w.telemetry.of('lease-acquired', 'A')[0]?.generation);

    // The clock has not moved: the next invocation gets the lease only because A released it.
    const b = w.deliver('B');
    expect(b.bodies).toEqual([{ jobId: job.id, reason: 'continuation' }]);
    expect(await b.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(b.batch[0]!.messageId)).toBe('done');
    expect(w.telemetry.units('B')).toEqual([2, 3, 4]);
    expect(w.telemetry.of('lease-acquired', 'B')[0]?.takeoverFrom).toBeUndefined();
    expect(w.queue.depth).toBe(0);
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ status: 'DONE', cursor: 5 });
    await expectOneChargePerCustomer(t, input.period, 10);
    await expectInvariantsHold(t);
  });
});

describe('ambiguous commits', () => {

  it('a commit whose response is lost after DynamoDB applied it is resent with the same ClientRequestToken: harmless, no double charge', async () => {
    const t = await tables();
    const proxy = await startFaultProxy(t.endpoint);
    cleanups.push(() => proxy.close());
    // No SDK retries: the worker itself sees the lost response and resends.
    const flaky = createDynamo({ endpoint: proxy.endpoint, maxAttempts: 1 });
    cleanups.push(() => flaky.client.destroy());
    const w = workflow(t, { workerDoc: flaky.doc });
    const input = invoiceInput('2026-08', 6, 2); // 3 units
    const job = await createInvoiceJob(t, w.clock, input);

    const unitOf = (r: ProxiedRequest) => Number(r.json?.TransactItems?.[1]?.Update?.ExpressionAttributeValues?.[':expected']?.N);
    const sent: { unit: number; token: string }[] = [];
    proxy.inject(
      { target: 'TransactWriteItems', times: Infinity, when: (r) => (sent.push({ unit: unitOf(r), token: String(r.json?.ClientRequestToken) }), false) },
      { kind: 'delay', ms: 0 },
    );
    // Lose the responses of unit 1 and of the last unit (the one that sets DONE).
    const lost1 = proxy.drop({ target: 'TransactWriteItems', when: (r) => unitOf(r) === 1 });
    const lost2 = proxy.drop({ target: 'TransactWriteItems', when: (r) => unitOf(r) === 2 });

    await w.queue.send({ jobId: job.id, reason: 'start' });
    const a = w.deliver('A');
    expect(await a.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(a.batch[0]!.messageId)).toBe('done');
    expect([lost1.hits, lost2.hits]).toEqual([1, 1]);

    // Each lost unit was sent twice, with one token; DynamoDB answered the resend as the same request.
    expect(sent.map((s) => s.unit)).toEqual([0, 1, 1, 2, 2]);
    expect(sent[1]!.token).toBe(sent[2]!.token);
    expect(sent[3]!.token).toBe(sent[4]!.token);
    expect(new Set(sent.map((s) => s.token)).size).toBe(3);
    expect(w.telemetry.of('unit-committed').map((f) => [f.unit, f.status])).toEqual([
      [0, 'committed'],
      [1, 'committed'],
      [2, 'committed'],
    ]);
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ status: 'DONE', cursor: 3 });
    await expectOneChargePerCustomer(t, input.period, 6);
    const report = await expectInvariantsHold(t);
    expect(report.stats).toMatchObject({ records: 12, expectedRecords: 12, figures: { charges: 6, invoices: 6 } });
  });
});

describe('bad job input', () => {
  it('a job whose input can never succeed (period "2026-13") ends FAILED with the reason, leaves the sweeper index, and is not retried', async () => {
    const t = await tables();
    const w = workflow(t);
    const { job } = await createJob(
      t.dynamo.doc,
      t.names.jobs,
      { id: 'invoice-run#2026-13', totalUnits: 3, input: { period: '2026-13', customers: 6, seed: 1, unitSize: 2, currency: 'EUR' } },
      w.clock,
    );
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const a = w.deliver('A');
    expect(await a.done).toEqual({ batchItemFailures: [] }); // acknowledged: retrying cannot help
    expect(w.telemetry.outcomeOf(a.batch[0]!.messageId)).toBe('failed');
    expect(w.telemetry.get(METRIC.jobsFailed)).toBe(1);

    const item = await getItem(t, t.names.jobs, job.id);
    expect(item).toMatchObject({ status: 'FAILED', cursor: 0 });
    expect(String(item?.failureReason)).toMatch(/input\.period/);
    expect(item?.[JOB_ATTR.unfinished]).toBeUndefined();
    const indexed = await t.dynamo.doc.send(
      new QueryCommand({
        TableName: t.names.jobs,
        IndexName: UNFINISHED_INDEX,
        KeyConditionExpression: '#u = :open',
        ExpressionAttributeNames: { '#u': JOB_ATTR.unfinished },
        ExpressionAttributeValues: { ':open': UNFINISHED },
      }),
    );
    expect(indexed.Items).toEqual([]);

    // However long nobody touches it, the sweeper never requeues it.
    await w.clock.advance(3_600_000);
    expect(await w.sweeper({})).toMatchObject({ unfinished: 0, requeued: [] });
    expect(w.queue.depth).toBe(0);

    // A stray duplicate is acknowledged too; nothing of the run is ever written.
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const dup = w.deliver('B');
    expect(await dup.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(dup.batch[0]!.messageId)).toBe('failed');
    expect(await scanAll(t, t.names.records)).toEqual([]);
    expect(await getItem(t, t.names.jobs, job.id)).toMatchObject({ status: 'FAILED', failureReason: item?.failureReason });
    expect((await invariants(t)).ok).toBe(true);
  });
  it('a well-formed message for a job that does not exist writes nothing: no lease, no fence item (they could never be deleted)', async () => {
    const t = await tables();
    const w = workflow(t);
    await w.queue.send({ jobId: 'invoice-run#2031-01', reason: 'start' });
    const a = w.deliver('A');
    expect(await a.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(a.batch[0]!.messageId)).toBe('not-found');
    expect(await scanAll(t, t.names.leases)).toEqual([]);
    expect(await scanAll(t, t.names.fences)).toEqual([]);
  });

  it('a redelivered message for a DONE job is acknowledged without taking the lease again', async () => {
    const t = await tables();
    const w = workflow(t);
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-08', 4, 2));
    await w.queue.send({ jobId: job.id, reason: 'start' });
    expect(await w.deliver('A').done).toEqual({ batchItemFailures: [] });
    const lease = await getItem(t, t.names.leases, `job#${job.id}`);
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const b = w.deliver('B');
    expect(await b.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(b.batch[0]!.messageId)).toBe('done');
    expect(await getItem(t, t.names.leases, `job#${job.id}`)).toEqual(lease);
  });
});

describe('jobs that can never progress end, and say why', () => {
  it('a job with no units is refused at creation with a typed error and nothing written; one stored with totalUnits 0 ends FAILED instead of "done" forever', async () => {
    const t = await tables();
    const w = workflow(t);
    const refused = await createJob(t.dynamo.doc, t.names.jobs, { id: 'empty-run', totalUnits: 0, input: {} }, w.clock).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidInputError);
    expect((refused as InvalidInputError).field).toBe('totalUnits');
    expect(await scanAll(t, t.names.jobs)).toEqual([]);

    // An item written by an older version (or by hand) with no units.
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-09', 4, 2));
    await t.dynamo.doc.send(new UpdateCommand({ TableName: t.names.jobs, Key: { pk: job.id }, UpdateExpression: 'SET totalUnits = :z', ExpressionAttributeValues: { ':z': 0 } }));
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const a = w.deliver('A');
    expect(await a.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(a.batch[0]!.messageId)).toBe('failed');
    const item = await getItem(t, t.names.jobs, job.id);
    expect(item).toMatchObject({ status: 'FAILED' });
    expect(String(item?.failureReason)).toMatch(/totalUnits/);
    expect(item?.[JOB_ATTR.unfinished]).toBeUndefined();
  });

  it('markFailed decodes its cancellation: a missing job is JobNotFoundError, a newer fence StaleGenerationError with its generation, a conflict is retried', async () => {
    const t = await tables();
    const w = workflow(t);
    const g = makeGeneration(0, 3);
    const fences = { doc: t.dynamo.doc, clock: w.clock };
    // The invoice job's fence, as its workers raise it: markFailed conditions on that one.
    const fenced = { ...t.names, fencePrefix: FENCE_PREFIX };
    await raiseFence(fences, { table: t.names.fences, resource: fenceOf('no-such-job') }, g);
    const missing = await markFailed(t.dynamo.doc, fenced, 'no-such-job', g, 'bad input', w.clock).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(JobNotFoundError);
    expect(await scanAll(t, t.names.jobs)).toEqual([]);

    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-10', 4, 2));
    await raiseFence(fences, { table: t.names.fences, resource: fenceOf(job.id) }, makeGeneration(0, 4));
    const stale = await markFailed(t.dynamo.doc, fenced, job.id, g, 'bad input', w.clock).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(StaleGenerationError);
    expect((stale as StaleGenerationError).current).toBe(makeGeneration(0, 4));
    expect(await getItem(t, t.names.jobs, job.id)).toMatchObject({ status: 'PENDING' });

    const proxy = await startFaultProxy(t.endpoint);
    cleanups.push(() => proxy.close());
    const via = createDynamo({ endpoint: proxy.endpoint, maxAttempts: 1 });
    cleanups.push(() => via.client.destroy());
    const conflict = proxy.error({ target: 'TransactWriteItems' }, 'TransactionCanceledException', {
      CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }],
    });
    // The retry backs off on the clock it is given: a real one here, the ManualClock never moves.
    await markFailed(via.doc, fenced, job.id, makeGeneration(0, 4), 'bad input', systemClock);
    expect(conflict.hits).toBe(1);
    expect(await getItem(t, t.names.jobs, job.id)).toMatchObject({ status: 'FAILED', failureReason: 'bad input' });
  });

  it('a unit that keeps failing with a non-condition error (ValidationException) ends the job FAILED with the reason after MAX_UNIT_FAILURES attempts recorded on the job, releasing the lease each time', async () => {
    const t = await tables();
    const proxy = await startFaultProxy(t.endpoint);
    cleanups.push(() => proxy.close());
    const via = createDynamo({ endpoint: proxy.endpoint, maxAttempts: 1 });
    cleanups.push(() => via.client.destroy());
    const w = workflow(t, { workerDoc: via.doc });
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-11', 6, 2)); // 3 units
    const unitOf = (r: ProxiedRequest) => Number(r.json?.TransactItems?.[1]?.Update?.ExpressionAttributeValues?.[':expected']?.N);
    const refused = proxy.error({ target: 'TransactWriteItems', times: Infinity, when: (r) => unitOf(r) === 1 }, 'ValidationException');

    const outcomes: (string | undefined)[] = [];
    for (let i = 0; i < MAX_UNIT_FAILURES; i++) {
      await w.queue.send({ jobId: job.id, reason: 'start' });
      const d = w.deliver(`A${i}`);
      await d.done.catch(() => undefined); // a one-record batch whose record is retried fails as a whole
      outcomes.push(w.telemetry.outcomeOf(d.batch[0]!.messageId));
      expect(await getItem(t, t.names.leases, `job#${job.id}`)).not.toHaveProperty('owner'); // released every time
    }
    expect(outcomes).toEqual([...Array(MAX_UNIT_FAILURES - 1).fill('uncertain'), 'failed']);
    expect(refused.hits).toBe(MAX_UNIT_FAILURES);
    const item = await getItem(t, t.names.jobs, job.id);
    expect(item).toMatchObject({ status: 'FAILED', cursor: 1, [JOB_ATTR.failures]: MAX_UNIT_FAILURES, [JOB_ATTR.failedUnit]: 1 });
    expect(String(item?.failureReason)).toMatch(/unit 1 .*ValidationException/);
    expect(item?.[JOB_ATTR.unfinished]).toBeUndefined();
    expect(await w.sweeper({})).toMatchObject({ unfinished: 0, requeued: [] });
    const report = await invariants(t);
    expect(report.invariants.PROGRESS.violations).toEqual([expect.stringMatching(/FAILED/)]);
    expect([report.invariants.FENCE.ok, report.invariants.ONCE.ok, report.invariants.TOKENS.ok]).toEqual([true, true, true]);
  });

  it('a unit cancelled for throttling (reason ThrottlingError, as an on-demand GSI may answer) is retried, never counted as a failure: the job goes on once the throttling stops', async () => {
    const t = await tables();
    const proxy = await startFaultProxy(t.endpoint);
    cleanups.push(() => proxy.close());
    const via = createDynamo({ endpoint: proxy.endpoint, maxAttempts: 1 });
    cleanups.push(() => via.client.destroy());
    const w = workflow(t, { workerDoc: via.doc, leaseMs: 10_000 }); // a long lease: the backoff below moves the clock
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2027-03', 6, 2)); // 3 units
    const unitOf = (r: ProxiedRequest) => Number(r.json?.TransactItems?.[1]?.Update?.ExpressionAttributeValues?.[':expected']?.N);
    const throttled = (times: number) =>
      proxy.error({ target: 'TransactWriteItems', times, when: (r) => unitOf(r) === 1 }, 'TransactionCanceledException', {
        CancellationReasons: [{ Code: 'None' }, { Code: 'None' }, { Code: 'ThrottlingError', Message: 'Throughput exceeds the current capacity for one or more global secondary indexes' }],
      });
    // The commit backs off on the worker's (manual) clock: move it until the invocation ends.
    const settle = async (done: Promise<unknown>) => {
      let over = false;
      void done.finally(() => (over = true)).catch(() => undefined);
      while (!over) {
        await w.clock.advance(10);
        await new Promise((r) => setTimeout(r, 2));
      }
    };
    // Throttled for longer than one commit's retries, in MAX_UNIT_FAILURES + 1 invocations in a row.
    const always = throttled(Infinity);
    const outcomes: (string | undefined)[] = [];
    for (let i = 0; i <= MAX_UNIT_FAILURES; i++) {
      await w.queue.send({ jobId: job.id, reason: 'start' });
      const d = w.deliver(`T${i}`, 1);
      await settle(d.done);
      outcomes.push(w.telemetry.outcomeOf(d.batch[0]!.messageId));
      expect(await getItem(t, t.names.leases, `job#${job.id}`)).not.toHaveProperty('owner');
    }
    expect(outcomes.every((o) => o === 'uncertain')).toBe(true);
    const item = await getItem(t, t.names.jobs, job.id);
    expect(item).toMatchObject({ status: 'RUNNING', cursor: 1 });
    expect(item?.[JOB_ATTR.failures]).toBeUndefined();
    always.remove();
    // A short burst is absorbed by the commit's own backoff.
    throttled(2);
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const last = w.deliver('U', 1);
    await settle(last.done);
    expect(await last.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(last.batch[0]!.messageId)).toBe('done');
    await expectInvariantsHold(t);
  });

  it('a job item with an unknown status is a typed error: the worker writes nothing, and the sweeper skips it and sweeps the others', async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800 });
    const odd = await createInvoiceJob(t, w.clock, invoiceInput('2026-12', 4, 2));
    await t.dynamo.doc.send(new UpdateCommand({ TableName: t.names.jobs, Key: { pk: odd.id }, UpdateExpression: 'SET #s = :s', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':s': 'PAUSED' } }));
    await expect(readJob(t.dynamo.doc, t.names.jobs, odd.id)).rejects.toBeInstanceOf(InvalidJobItemError);

    await w.queue.send({ jobId: odd.id, reason: 'start' });
    const a = w.deliver('A');
    await expect(a.done).rejects.toThrow(FullBatchFailureError); // its only record failed: the whole batch is retried
    expect(w.telemetry.of('record-error')).toEqual([expect.objectContaining({ error: expect.stringMatching(/InvalidJobItemError.*status/) })]);
    expect(await scanAll(t, t.names.leases)).toEqual([]);
    expect(await scanAll(t, t.names.fences)).toEqual([]);

    const stale = await createInvoiceJob(t, w.clock, invoiceInput('2027-01', 4, 2));
    await w.clock.advance(1_000);
    const report = await w.sweeper({});
    expect(report).toMatchObject({ unfinished: 2, unreadable: [odd.id], requeued: [stale.id] });
  });
});

describe('disaster recovery', () => {
  it('an old-epoch holder paused between its acquire and its first fence raise cannot commit after the seal: the seal created the fence its lease key protects', async () => {
    const t = await tables();
    const w = workflow(t); // workers configured with epoch 0
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2027-02', 4, 2));
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const paused = w.hooks.pause('after-acquire', { owner: 'A' });
    const a = w.deliver('A');
    await paused.reached;
    expect(await getItem(t, t.names.fences, fenceOf(job.id))).toBeUndefined(); // A never raised it

    // The restore happened; the operator raises the epoch and seals while A is paused.
    await raiseEpoch(t.dynamo.doc, t.names.leases, 1);
    const reports = await seal(t.dynamo.doc, t.names, 1, { fencesOf: (k) => fencesOfLease(k, FENCE_PREFIX) });
    // The fence exists now, at the floor, before A wakes: what A meets is the table, not a report.
    expect(await getItem(t, t.names.fences, fenceOf(job.id))).toMatchObject({ generation: epochFloor(1) });

    paused.release();
    expect(await a.done).toEqual({ batchItemFailures: [] });
    // A's own fence raise is what refused it (a seal that skipped the missing fence lets A create
    // it at its old generation and commit every unit: checked by hand with that line removed).
    expect(w.telemetry.of('superseded', 'A')).toEqual([expect.objectContaining({ why: 'fence-raise', by: epochFloor(1) })]);
    expect(w.telemetry.outcomeOf(a.batch[0]!.messageId)).toBe('superseded');
    expect(await scanAll(t, t.names.records)).toEqual([]);
    expect(reports.find((r) => r.table === t.names.fences)).toMatchObject({ created: 1 });
  });
});
