// tier: quick
/**
 * The sweeper on DynamoDB Local: at-least-once safe (overlapping sweeps requeue once), a live
 * worker's progress cancels a requeue, a live lease is left alone, and in version-watch mode
 * no clock is compared at all. Interleavings are forced by parking the sweeper's conditional
 * update (SDK middleware on its own client) and by WorkerHooks; time moves by a ManualClock.
 */
import { describe, expect, it } from 'vitest';
import { createDynamo, InvalidInputError, skewedClock } from '../lib/protocol/index.js';
import { claimRequeue, JOB_ATTR, leaseKeyOf, METRIC, readJob, sweep, sweepsToCover, type SweeperDeps } from '../lib/workflow/index.js';
import { getItem, granted, manager, until } from './support/fixtures.js';
import { perTestTables, type TestTables } from './support/tables.js';
import { context, createInvoiceJob, holdRequests, invariants, invoiceInput, workflow } from './support/workflow.js';

const { tables, cleanups } = perTestTables(import.meta.filename);

/** The sweeper on a client of its own whose conditional updates of the Jobs table can be parked. */
function heldSweeper(t: TestTables, deps: SweeperDeps) {
  const own = createDynamo({ endpoint: t.endpoint });
  cleanups.push(() => own.client.destroy());
  const hold = holdRequests(own.client, (op, body) => op === 'UpdateItem' && body.TableName === t.names.jobs);
  return { deps: { ...deps, doc: own.doc }, hold };
}

const requeueMessages = (w: ReturnType<typeof workflow>) =>
  w.queue
    .receive(100)
    .map((m) => JSON.parse(m.body) as Record<string, unknown>)
    .filter((b) => b.reason === 'requeue');

describe('a sweep within its time budget', () => {
  /** Five jobs nobody ever started, their heartbeats stale: each one a requeue. */
  async function staleJobs(t: TestTables, w: ReturnType<typeof workflow>): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) {
      ids.push((await createInvoiceJob(t, w.clock, invoiceInput(`2025-0${i}`, 2, 2))).id);
      await w.clock.advance(1); // distinct heartbeats: the index orders them
    }
    await w.clock.advance(1_000);
    return ids;
  }
  /** Time left that runs out once `n` jobs are done (the sweep checks before each job after its first). */
  const budget = (n: number) => {
    let checks = 0;
    return () => (++checks < n ? 60_000 : 1_000);
  };

  it('stops taking work when the invocation runs short, reports where, and the next sweep resumes there: every job once', async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800 });
    const ids = await staleJobs(t, w);

    const first = await sweep(w.sweeperDeps, { remainingTimeMs: budget(2), pageSize: 2 });
    expect(first.requeued).toEqual(ids.slice(0, 2));
    expect(first.resumeFrom).toBeDefined();
    const second = await sweep(w.sweeperDeps, { remainingTimeMs: budget(2), pageSize: 2, resumeFrom: first.resumeFrom });
    expect(second.requeued).toEqual(ids.slice(2, 4));
    const third = await sweep(w.sweeperDeps, { remainingTimeMs: budget(100), pageSize: 2, resumeFrom: second.resumeFrom });
    expect(third.requeued).toEqual(ids.slice(4));
    expect(third.resumeFrom).toBeUndefined();
    expect(requeueMessages(w).map((m) => m.jobId)).toEqual(ids);
    // Back at the start: every job was requeued (a fresh heartbeat), none is stale now.
    expect(await sweep(w.sweeperDeps, { pageSize: 2 })).toMatchObject({ unfinished: 5, requeued: [] });
  });

  it('the scheduled handler carries the resume point from one invocation to the next (a warm container)', async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800 });
    const ids = await staleJobs(t, w);
    const first = await w.sweeper({}, context('sweep-1', budget(3)));
    expect(first.requeued).toEqual(ids.slice(0, 3));
    const second = await w.sweeper({}, context('sweep-2', budget(100)));
    expect(second.requeued).toEqual(ids.slice(3));
    expect(second.resumeFrom).toBeUndefined();
  });
});

describe('wall-clock sweeper', () => {
  it('requeues a stale job whose holder died, once per staleness window: the requeue moves the heartbeat', async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800 });
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-01', 4, 2));
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const crash = w.hooks.crash('after-fence-raise', { owner: 'A' });
    w.deliver('A');
    await crash.reached;

    expect(await w.sweeper({})).toMatchObject({ unfinished: 1, requeued: [] });
    await w.clock.advance(500); // lease expired, heartbeat not yet stale
    expect(await w.sweeper({})).toMatchObject({ requeued: [] });
    await w.clock.advance(400);
    expect(await w.sweeper({})).toMatchObject({ requeued: [job.id] });
    const afterFirst = await readJob(t.dynamo.doc, t.names.jobs, job.id);
    expect(afterFirst).toMatchObject({ requeues: 1, heartbeatAt: w.clock.wallNow(), status: 'PENDING' });
    // The next sweep gives the requeued work a full staleness window.
    expect(await w.sweeper({})).toMatchObject({ requeued: [] });
    await w.clock.advance(900);
    expect(await w.sweeper({})).toMatchObject({ requeued: [job.id] });
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ requeues: 2 });
    expect(requeueMessages(w)).toEqual([
      { jobId: job.id, reason: 'requeue' },
      { jobId: job.id, reason: 'requeue' },
    ]);
    expect(w.telemetry.get(METRIC.jobsRequeued)).toBe(2);
  });

  it('two overlapping sweeps that both found the job stale requeue it once', async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800 });
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-02', 4, 2));
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const crash = w.hooks.crash('after-fence-raise', { owner: 'A' });
    w.deliver('A');
    await crash.reached;
    await w.clock.advance(1_000);

    const { deps, hold } = heldSweeper(t, w.sweeperDeps);
    const sent = w.queue.sent;
    const first = sweep(deps);
    const second = sweep(deps);
    // Both have read the job and decided to requeue it before either claim reaches DynamoDB.
    await hold.waitFor(2);
    hold.release();
    const reports = await Promise.all([first, second]);

    expect(reports.flatMap((r) => r.requeued)).toEqual([job.id]);
    expect(w.queue.sent - sent).toBe(1);
    expect(requeueMessages(w)).toEqual([{ jobId: job.id, reason: 'requeue' }]);
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ requeues: 1 });
  });

  it("a live worker's commit between the sweeper's read and its conditional update cancels the requeue", async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800 });
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-03', 6, 2)); // 3 units
    await w.queue.send({ jobId: job.id, reason: 'start' });

    // A commits unit 0 and stalls past its lease: to the sweeper it looks dead.
    const stall = w.hooks.pause('after-commit', { owner: 'A', unit: 0 });
    const a = w.deliver('A');
    await stall.reached;
    await w.clock.advance(1_000);

    const { deps, hold } = heldSweeper(t, w.sweeperDeps);
    const sent = w.queue.sent;
    const sweeping = sweep(deps);
    await hold.waitFor(1); // the sweeper read the stale heartbeat and the expired lease, and decided

    // A wakes (nobody took over, so its renewal succeeds) and commits unit 1: the heartbeat moves.
    const committed = w.hooks.pause('after-commit', { owner: 'A', unit: 1 });
    stall.release();
    await committed.reached;
    const moved = await readJob(t.dynamo.doc, t.names.jobs, job.id);
    expect(moved).toMatchObject({ cursor: 2, status: 'RUNNING' }); // still unfinished: only the heartbeat differs
    expect(moved!.heartbeatAt).toBeGreaterThan(job.heartbeatAt);

    hold.release();
    expect((await sweeping).requeued).toEqual([]);
    expect(w.queue.sent - sent).toBe(0);
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ requeues: 0, heartbeatAt: moved!.heartbeatAt });

    committed.release();
    expect(await a.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.units('A')).toEqual([0, 1, 2]);
    expect((await invariants(t)).ok).toBe(true);
  });

  it('a stale heartbeat under a live lease is skipped, within the clock-skew bound too', async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800, mode: { kind: 'wall-clock', maxClockSkewMs: 200 } });
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-04', 4, 2));
    await w.queue.send({ jobId: job.id, reason: 'start' });
    // The message waited in the queue: the heartbeat (creation) is stale when A picks it up.
    await w.clock.advance(1_000);
    const held = w.hooks.pause('after-fence-raise', { owner: 'A' });
    w.deliver('A');
    await held.reached;

    expect(await w.sweeper({})).toMatchObject({ unfinished: 1, live: 1, requeued: [] });
    // Expired by A's own clock reading, but by less than the skew bound: still treated as live.
    await w.clock.advance(500);
    expect(await w.sweeper({})).toMatchObject({ live: 1, requeued: [] });
    await w.clock.advance(200);
    expect(await w.sweeper({})).toMatchObject({ live: 0, requeued: [job.id] });
  });

  it('refuses a staleness window that does not exceed the lease', async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400 });
    await expect(sweep({ ...w.sweeperDeps, staleAfterMs: 400 })).rejects.toThrow(InvalidInputError);
  });
});

describe('version-watch sweeper: compares no clocks', () => {
  const leaseMs = 400;
  const sweepIntervalMs = 200;
  const needed = sweepsToCover(leaseMs, sweepIntervalMs);

  it('triggers a requeue only after sweepsToCover() consecutive unchanged observations stored on the job; the worker that gets it watches the lease a full duration on its own clock, then claims', async () => {
    expect(needed).toBe(4);
    const t = await tables();
    const w = workflow(t, { leaseMs, sweepIntervalMs, mode: { kind: 'version-watch' } });
    const input = invoiceInput('2026-05', 6, 2);
    const job = await createInvoiceJob(t, w.clock, input);
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const crash = w.hooks.crash('after-fence-raise', { owner: 'A' });
    w.deliver('A');
    await crash.reached;
    const lease = await getItem(t, t.names.leases, leaseKeyOf(job.id));
    const version = String(lease?.version);

    // The sweeper's wall clock is ten days off, one way and then the other: it never looks.
    const days = 10 * 86_400_000;
    const clocks = [skewedClock(w.clock, days), skewedClock(w.clock, -days)];
    for (let i = 0; i < needed; i++) {
      const report = await sweep({ ...w.sweeperDeps, clock: clocks[i % 2]! });
      expect(report).toMatchObject({ requeued: [], watching: 1 });
      const item = await getItem(t, t.names.jobs, job.id);
      expect(item?.[JOB_ATTR.sweepObservation]).toBe(`${version}|0|${job.heartbeatAt}`);
      expect(item?.[JOB_ATTR.sweepUnchanged]).toBe(i);
    }
    // A duplicate start message finds the lease held: acknowledged at once, nothing taken.
    await w.queue.send({ jobId: job.id, reason: 'start' });

    expect(await sweep({ ...w.sweeperDeps, clock: clocks[0]! })).toMatchObject({ requeued: [job.id] });
    const item = await getItem(t, t.names.jobs, job.id);
    expect(item).toMatchObject({ requeues: 1, [JOB_ATTR.sweepUnchanged]: 0 });
    expect(item?.[JOB_ATTR.sweepObservation]).toBeUndefined();

    const blind = w.deliver('X', 1);
    expect(blind.bodies).toEqual([{ jobId: job.id, reason: 'start' }]);
    expect(await blind.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(blind.batch[0]!.messageId)).toBe('busy');

    const c = w.deliver('C', 1);
    expect(c.bodies).toEqual([{ jobId: job.id, reason: 'requeue' }]);
    await until(() => w.clock.pendingSleepers > 0, 'C watching the lease');
    expect(w.telemetry.of('lease-watch', 'C')).toEqual([expect.objectContaining({ version, holder: 'A/0' })]);
    await w.clock.advance(leaseMs * 1.01 + 50);
    expect(await c.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(c.batch[0]!.messageId)).toBe('done');
    expect(w.telemetry.of('lease-acquired', 'C')).toEqual([expect.objectContaining({ takeoverFrom: 'A/0' })]);
    expect(w.telemetry.units('C')).toEqual([0, 1, 2]);
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ status: 'DONE' });
    expect((await invariants(t)).ok).toBe(true);
  });

  it('a job whose lease version keeps changing (a live holder renewing) is never requeued, and a worker watching it gives up busy', async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs, sweepIntervalMs, mode: { kind: 'version-watch' } });
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-06', 4, 2));
    const holder = manager(t, 'holder', { durationMs: leaseMs, mode: { kind: 'version-watch' }, clock: w.clock });
    const acquired = await holder.tryAcquire(leaseKeyOf(job.id));
    if (!acquired.ok) throw new Error('expected the lease');
    let lease = acquired.value;

    // A long unit: no commit, no heartbeat, but the lease is renewed between sweeps.
    for (let i = 0; i < needed * 3; i++) {
      expect(await w.sweeper({})).toMatchObject({ requeued: [], watching: 1 });
      expect(await getItem(t, t.names.jobs, job.id)).toMatchObject({
        [JOB_ATTR.sweepObservation]: `${lease.version}|0|${job.heartbeatAt}`,
        [JOB_ATTR.sweepUnchanged]: 0,
      });
      lease = await holder.renew(lease);
    }
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ requeues: 0 });
    expect(w.queue.sent).toBe(0);

    // A requeue that arrives anyway (a manual one): the worker watches, the holder renews meanwhile.
    await w.queue.send({ jobId: job.id, reason: 'requeue' });
    const late = w.deliver('L');
    await until(() => w.clock.pendingSleepers > 0, 'L watching the lease');
    await w.clock.advance(leaseMs / 2);
    lease = await holder.renew(lease);
    await w.clock.advance(leaseMs);
    expect(await late.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(late.batch[0]!.messageId)).toBe('busy');
    expect(await getItem(t, t.names.leases, leaseKeyOf(job.id))).toMatchObject({ owner: 'holder', generation: lease.generation, version: lease.version });
  });

  it('a commit stamped in the same millisecond as the observed heartbeat still cancels a requeue: the cursor moved', async () => {
    const t = await tables();
    const w = workflow(t); // a ManualClock that is never advanced: every heartbeat is the same instant
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-05', 8, 2));
    const observed = (await readJob(t.dynamo.doc, t.names.jobs, job.id))!;
    const crashed = w.hooks.crash('after-commit', { unit: 0 });
    await w.queue.send({ jobId: job.id, reason: 'start' });
    void w.deliver('A');
    await crashed.reached;
    const after = (await readJob(t.dynamo.doc, t.names.jobs, job.id))!;
    expect(after.cursor).toBe(1);
    expect(after.heartbeatAt).toBe(observed.heartbeatAt);
    expect(await claimRequeue(t.dynamo.doc, t.names.jobs, observed, w.clock)).toBe(false);
    expect((await readJob(t.dynamo.doc, t.names.jobs, job.id))!.requeues).toBe(0);
  });
});

describe('version-watch takeover: the claimant waits a full duration on its own clock, the sweeper only triggers', () => {
  it('a paused live holder is never taken over however the sweeps are spaced: three sweeps in one millisecond trigger a requeue, and the claimant still waits its full duration', async () => {
    const t = await tables();
    const leaseMs = 10_000;
    const w = workflow(t, { leaseMs, sweepIntervalMs: 60_000, mode: { kind: 'version-watch' } });
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-07', 4, 2)); // 2 units
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const paused = w.hooks.pause('before-commit', { owner: 'A', unit: 0 });
    const a = w.deliver('A', 1);
    await paused.reached;

    // Back to back (Lambda's async retries, a backlog after a pause): no time passes between them.
    const reports = [await w.sweeper({}), await w.sweeper({}), await w.sweeper({})];
    expect(reports.flatMap((r) => r.requeued)).toEqual([job.id]);
    const c = w.deliver('C', 1);
    expect(c.bodies).toEqual([{ jobId: job.id, reason: 'requeue' }]);
    await until(() => w.clock.pendingSleepers > 0, 'C watching the lease');
    expect(w.telemetry.of('lease-watch', 'C')).toEqual([expect.objectContaining({ waitMs: expect.any(Number) })]);
    expect(Number(w.telemetry.of('lease-watch', 'C')[0]!.waitMs)).toBeGreaterThanOrEqual(leaseMs);
    expect(await getItem(t, t.names.leases, leaseKeyOf(job.id))).toMatchObject({ owner: 'A/0' });

    // Half a lease later A wakes, renews (its version moves) and finishes; C's watch then fails.
    await w.clock.advance(leaseMs / 2);
    expect(await getItem(t, t.names.leases, leaseKeyOf(job.id))).toMatchObject({ owner: 'A/0' });
    paused.release();
    expect(await a.done).toEqual({ batchItemFailures: [] });
    await w.clock.advance(leaseMs);
    expect(await c.done).toEqual({ batchItemFailures: [] });

    expect(w.telemetry.of('lease-acquired').filter((e) => e.takeoverFrom !== undefined)).toEqual([]);
    expect(w.telemetry.of('superseded')).toEqual([]);
    expect(w.telemetry.units('A')).toEqual([0, 1]);
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ status: 'DONE' });
    expect((await invariants(t)).ok).toBe(true);
  });

  it("a holder's longer recorded duration is respected: the sweeper's window and the claimant's wait are the holder's 300 s, not their own 120 s", async () => {
    const t = await tables();
    const own = 120_000;
    const sweepIntervalMs = 60_000;
    const w = workflow(t, { leaseMs: own, sweepIntervalMs, mode: { kind: 'version-watch' } });
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-08', 4, 2));
    // A holder configured with a 300 s lease acquires and dies without a release.
    const holder = manager(t, 'long-holder', { durationMs: 300_000, mode: { kind: 'version-watch' }, clock: w.clock });
    granted(await holder.tryAcquire(leaseKeyOf(job.id)));

    const requeuedAt: number[] = [];
    for (let elapsed = 0; elapsed <= 600_000 && requeuedAt.length === 0; elapsed += sweepIntervalMs) {
      if ((await w.sweeper({})).requeued.length > 0) requeuedAt.push(elapsed);
      await w.clock.advance(sweepIntervalMs);
    }
    expect(requeuedAt[0]).toBeGreaterThanOrEqual(300_000 * 1.01);

    // However early a trigger comes, the claimant's own wait is the holder's duration (a 15-minute invocation has the time).
    const c = w.deliver('C', 1, () => 900_000);
    await until(() => w.clock.pendingSleepers > 0, 'C watching the lease');
    expect(Number(w.telemetry.of('lease-watch', 'C')[0]!.waitMs)).toBeGreaterThanOrEqual(300_000 * 1.01);
    await w.clock.advance(300_000);
    expect(await getItem(t, t.names.leases, leaseKeyOf(job.id))).toMatchObject({ owner: 'long-holder' });
    await w.clock.advance(5_000);
    expect(await c.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.of('lease-acquired', 'C')).toEqual([expect.objectContaining({ takeoverFrom: 'long-holder' })]);
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ status: 'DONE' });
  });

  it('a duplicate start message (not a requeue) finds the lease held and is acknowledged at once: only the sweeper\'s trigger makes a worker wait', async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 10_000, mode: { kind: 'version-watch' } });
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-09', 4, 2));
    const holder = manager(t, 'holder', { durationMs: 10_000, mode: { kind: 'version-watch' }, clock: w.clock });
    granted(await holder.tryAcquire(leaseKeyOf(job.id)));
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const d = w.deliver('D', 1);
    expect(await d.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(d.batch[0]!.messageId)).toBe('busy');
    expect(w.clock.pendingSleepers).toBe(0);
  });
});
