// tier: quick
/**
 * The Lambda handlers with the events AWS delivers: SQS batches (partial batch responses),
 * EventBridge scheduled events and EventBridge Scheduler payloads; the real handlers on
 * DynamoDB Local. Also the Lambda entries themselves (functions/*.ts): built from environment
 * variables, a missing one named in the error.
 */
import type { Context, ScheduledEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { startS3Endpoint, type S3Endpoint } from '../cli/local/s3-endpoint.js';
import { s3Client } from '../lib/workflow/adapters/index.js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, InvalidInputError, localRegion, ManualClock, systemClock } from '../lib/protocol/index.js';
import { invoiceJobId, invoiceProcessor } from '../lib/workloads/invoices/invoices.js';
import { METRIC, readJob } from '../lib/workflow/index.js';
import { createStarterHandler } from '../functions/starter-handler.js';
import { invoices, previousPeriod } from '../lib/workloads/invoices/index.js';
import { createWorkerHandler, FullBatchFailureError } from '../functions/worker-handler.js';
import { LocalQueue } from '../cli/local/queue.js';
import { LocalRuntime } from '../cli/local/runtime.js';
import { scanAll } from './support/fixtures.js';
import { perTestTables, type TestTables } from './support/tables.js';
import { context, createInvoiceJob, FENCE_PREFIX, invariants, invoiceInput, Recorder, snapshot, workflow } from './support/workflow.js';

const { tables, cleanups } = perTestTables(import.meta.filename);

/** An SQS record as the Lambda event source mapping delivers it. */
let seq = 0;
function sqsRecord(body: string): SQSRecord {
  seq++;
  const now = String(Date.now());
  return {
    messageId: `0f3c2f8e-6b1d-4f7e-9a51-${String(seq).padStart(12, '0')}`,
    receiptHandle: `AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a${seq}`,
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: now,
      SenderId: 'AROAEXAMPLE:starter',
      ApproximateFirstReceiveTimestamp: now,
    },
    messageAttributes: {},
    md5OfBody: 'e4e68fb7bd0e697a0ae8f1bb342846b3',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:fenced-work',
    awsRegion: 'eu-west-1',
  };
}

/** What an EventBridge rule (schedule expression) delivers. */
function scheduledEvent(time: string, detail: Record<string, unknown> = {}): ScheduledEvent {
  return {
    version: '0',
    id: '89d1a02d-5ec7-412e-82f5-13505f849b41',
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '123456789012',
    time,
    region: 'eu-west-1',
    resources: ['arn:aws:events:eu-west-1:123456789012:rule/fenced-starter'],
    detail,
  };
}

describe('worker handler: SQS batches with partial batch responses', () => {
  it('malformed bodies fail alone, the good message in the same batch runs to DONE, and nothing at all is written for the bad ones', async () => {
    const t = await tables();
    const w = workflow(t);
    const input = invoiceInput('2026-03', 4, 2);
    const good = await createInvoiceJob(t, w.clock, input);
    const bad = {
      badJson: sqsRecord('{"jobId": "bad-json", "reason": "start"'),
      missingJobId: sqsRecord('{"reason":"start"}'),
      extraField: sqsRecord('{"jobId":"bad-extra","reason":"start","priority":1}'),
      wrongType: sqsRecord('{"jobId":42}'),
      badReason: sqsRecord('{"jobId":"bad-reason","reason":"later"}'),
      badJobId: sqsRecord('{"jobId":"bad id/with spaces"}'),
      emptyVersion: sqsRecord('{"jobId":"bad-version","observedVersion":""}'),
      notAnObject: sqsRecord('"invoice-run#2026-03"'),
    };
    const goodRecord = sqsRecord(JSON.stringify({ jobId: good.id, reason: 'start' }));
    const records = Object.values(bad);
    records.splice(3, 0, goodRecord);
    const event: SQSEvent = { Records: records };

    const response = await w.worker(event, context('batch-1'));
    expect(new Set(response.batchItemFailures.map((f) => f.itemIdentifier))).toEqual(new Set(Object.values(bad).map((r) => r.messageId)));
    expect(response.batchItemFailures).toHaveLength(Object.keys(bad).length);

    // The good one ran to the end.
    expect(w.telemetry.outcomeOf(goodRecord.messageId)).toBe('done');
    expect(await readJob(t.dynamo.doc, t.names.jobs, good.id)).toMatchObject({ status: 'DONE', cursor: 2 });
    // Each bad one was refused at the edge, with the field named.
    const invalid = w.telemetry.of('record-invalid');
    expect(invalid.map((f) => f.messageId).sort()).toEqual(Object.values(bad).map((r) => r.messageId).sort());
    expect(invalid.every((f) => String(f.error).startsWith('InvalidInputError: body'))).toBe(true);
    expect(String(invalid.find((f) => f.messageId === bad.missingJobId.messageId)?.error)).toMatch(/jobId/);
    expect(String(invalid.find((f) => f.messageId === bad.extraField.messageId)?.error)).toMatch(/priority/);

    // Nothing in any table but the good job's lease, fence, job and its invoices.
    const all = await snapshot(t);
    expect(all.leases!.map((i) => i.pk)).toEqual([`job#${good.id}`]);
    expect(all.fences!.map((i) => i.pk)).toEqual([`invoices#${good.id}`]);
    expect(all.jobs!.map((i) => i.pk)).toEqual([good.id]);
    expect(all.records).toHaveLength(8);
    expect(all.records!.every((i) => i.jobId === good.id)).toBe(true);
    expect((await invariants(t)).ok).toBe(true);
  });

  it('a failed record is counted (RecordsFailed) even when its batch mates succeed, so an alarm sees failures the Errors metric never shows', async () => {
    const t = await tables();
    const w = workflow(t);
    const good = await createInvoiceJob(t, w.clock, invoiceInput('2026-05', 2, 2));
    const records = [sqsRecord(JSON.stringify({ jobId: good.id, reason: 'start' })), sqsRecord('{"jobId": 1}'), sqsRecord('not json')];
    const response = await w.worker({ Records: records }, context('partial-1'));
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([records[1]!.messageId, records[2]!.messageId]);
    expect(w.telemetry.get(METRIC.recordsFailed)).toBe(2);
  });

  it('when every record of a batch fails, the invocation fails (FullBatchFailureError) so the event source backs off; each record is counted', async () => {
    const t = await tables();
    const w = workflow(t);
    const records = [sqsRecord('{"jobId": 1}'), sqsRecord('{"reason":"start"}')];
    const failed = w.worker({ Records: records }, context('all-bad-1'));
    await expect(failed).rejects.toBeInstanceOf(FullBatchFailureError);
    await expect(failed).rejects.toMatchObject({ failedMessageIds: records.map((r) => r.messageId) });
    await expect(failed).rejects.toThrow(/all 2 records of the batch failed/);
    expect(w.telemetry.get(METRIC.recordsFailed)).toBe(2);
    // An empty batch (never sent by SQS) is not a failure.
    expect(await w.worker({ Records: [] }, context('empty-1'))).toEqual({ batchItemFailures: [] });
  });

  it('through the local queue and runtime, a malformed message is received maxReceiveCount times and then lands in the DLQ; its batch mate is deleted at once', async () => {
    const t = await tables();
    const clock = systemClock;
    const queue = new LocalQueue({ clock, visibilityTimeoutMs: 60, maxReceiveCount: 3 });
    const telemetry = new Recorder();
    const lease = { epoch: 0, durationMs: 2_000, mode: { kind: 'wall-clock' as const, maxClockSkewMs: 0 } };
    const handler = createWorkerHandler({ doc: t.dynamo.doc, tables: t.names, clock, queue, telemetry, processor: invoiceProcessor, fenceKeyPrefix: FENCE_PREFIX, lease });
    const received: string[][] = [];
    const failed: string[][] = [];
    const input = invoiceInput('2026-04', 2, 2);
    const good = await createInvoiceJob(t, clock, input);
    const poisonId = queue.sendRaw('{"jobId":"poison","reason":"start","retry":true}');
    await queue.send({ jobId: good.id, reason: 'start' });

    let dead!: () => void;
    const deadLettered = new Promise<void>((r) => (dead = r));
    const runtime = new LocalRuntime({
      clock,
      queue,
      worker: async (event, ctx) => {
        received.push(event.Records.map((r) => r.messageId));
        try {
          const r = await handler(event, ctx);
          failed.push(r.batchItemFailures.map((f) => f.itemIdentifier));
          return r;
        } catch (e) {
          // Alone in its batch, the poison message fails the whole invocation.
          if (e instanceof FullBatchFailureError) failed.push([...e.failedMessageIds]);
          throw e;
        }
      },
      concurrency: 1,
      batchSize: 10,
      invocationTimeoutMs: 30_000, // above the handler's 10 s safety margin
      sweepIntervalMs: 60_000,
      pollIdleMs: 10,
    });
    // The move to the DLQ happens inside the poller's receive after the last failure (no invocation follows): watch for it.
    const watch = setInterval(() => {
      if (queue.deadLetters.length > 0) dead();
    }, 10);
    runtime.start();
    try {
      await deadLettered;
    } finally {
      clearInterval(watch);
      await runtime.stop();
    }

    expect(queue.deadLetters.map((m) => [m.messageId, m.receiveCount])).toEqual([[poisonId, 3]]);
    expect(queue.depth).toBe(0);
    // Received three times, failed every time; the good message rode in the first batch and was deleted.
    expect(received.filter((ids) => ids.includes(poisonId))).toHaveLength(3);
    expect(failed).toEqual([[poisonId], [poisonId], [poisonId]]);
    expect(received[0]).toHaveLength(2);
    expect(telemetry.outcomes()).toEqual(['done']);
    expect(await readJob(t.dynamo.doc, t.names.jobs, good.id)).toMatchObject({ status: 'DONE' });
    const all = await snapshot(t);
    expect(all.leases!.map((i) => i.pk)).toEqual([`job#${good.id}`]);
    expect(all.fences!.map((i) => i.pk)).toEqual([`invoices#${good.id}`]);
    expect(all.records!.every((i) => i.jobId === good.id)).toBe(true);
  });

  it('a duplicate delivery while another worker holds a live lease is acknowledged and dropped: busy, not a batch failure, nothing written', async () => {
    const t = await tables();
    const w = workflow(t);
    const input = invoiceInput('2026-02', 4, 2);
    const job = await createInvoiceJob(t, w.clock, input);
    await w.queue.send({ jobId: job.id, reason: 'start' });

    const aHeld = w.hooks.pause('after-checkpoint-read', { owner: 'A' });
    const a = w.deliver('A');
    await aHeld.reached;
    const before = await snapshot(t);

    // SQS delivers the message again (at-least-once), to another invocation.
    await w.queue.send({ jobId: job.id, reason: 'start' });
    const dup = w.deliver('B');
    expect(await dup.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.outcomeOf(dup.batch[0]!.messageId)).toBe('busy');
    expect(w.telemetry.get(METRIC.leaseBusy)).toBe(1);
    expect(w.telemetry.of('lease-busy')).toEqual([expect.objectContaining({ owner: 'B/0', holder: 'A/0' })]);
    expect(await snapshot(t)).toEqual(before);
    expect(w.queue.depth).toBe(1); // only A's message, in flight

    aHeld.release();
    expect(await a.done).toEqual({ batchItemFailures: [] });
    expect(w.telemetry.units()).toEqual([0, 1]);
    expect(w.telemetry.get(METRIC.leaseAcquired)).toBe(1);
    expect((await invariants(t)).ok).toBe(true);
  });
});

describe('starter handler: EventBridge schedule', () => {
  it("creates the previous month's job idempotently: two invocations, one job, created=false the second time", async () => {
    const t = await tables();
    const clock = new ManualClock({ wall: Date.UTC(2027, 0, 1, 0, 5) });
    const queue = new LocalQueue({ clock, visibilityTimeoutMs: 60_000, maxReceiveCount: 5 });
    const starter = createStarterHandler({ doc: t.dynamo.doc, tables: t.names, clock, queue, telemetry: new Recorder(), unitSize: 5, workload: invoices, items: 12 });

    const event = scheduledEvent('2027-01-01T00:05:00Z');
    const first = await starter(event);
    expect(first).toMatchObject({ runId: invoiceJobId('2026-12'), jobId: invoiceJobId('2026-12'), created: true, enqueued: true, status: 'PENDING' });
    expect(first.jobs).toEqual([{ jobId: invoiceJobId('2026-12'), created: true, enqueued: true, status: 'PENDING' }]);
    const stored = await readJob(t.dynamo.doc, t.names.jobs, first.jobId);
    expect(stored).toMatchObject({ status: 'PENDING', cursor: 0, totalUnits: 3, requeues: 0 });
    expect(stored?.input).toMatchObject({ period: '2026-12', customers: 12, unitSize: 5, currency: 'EUR' });

    // The schedule fires again (at-least-once, or a retry): the same job, not a second one.
    const second = await starter(event);
    expect(second).toMatchObject({ jobId: first.jobId, created: false, enqueued: true, status: 'PENDING' });
    // One job and its run's record (lib/workflow/runs.ts), not a second job.
    expect((await scanAll(t, t.names.jobs)).map((i) => i.pk).sort()).toEqual([first.jobId, `run#${first.runId}`]);
    expect(await readJob(t.dynamo.doc, t.names.jobs, first.jobId)).toEqual(stored);
    const bodies = queue.receive(10).map((m) => JSON.parse(m.body));
    expect(bodies).toEqual([
      { jobId: first.jobId, reason: 'start' },
      { jobId: first.jobId, reason: 'start' },
    ]);

    // EventBridge Scheduler delivers its configured input as the event itself: a backfill run.
    const backfill = await starter({ period: '2026-05', customers: 3 });
    expect(backfill).toMatchObject({ jobId: invoiceJobId('2026-05'), created: true });
    expect((await readJob(t.dynamo.doc, t.names.jobs, backfill.jobId))?.input).toMatchObject({ period: '2026-05', customers: 3 });
    // Scheduler with only the scheduled time in its input.
    const timed = await starter({ time: '2026-03-01T02:00:00Z' });
    expect(timed).toMatchObject({ jobId: invoiceJobId('2026-02'), created: true });
  });

  it('a finished job is not enqueued again', async () => {
    const t = await tables();
    const w = workflow(t);
    const starter = createStarterHandler({ doc: t.dynamo.doc, tables: t.names, clock: w.clock, queue: w.queue, telemetry: w.telemetry, unitSize: 5, workload: invoices, items: 4 });
    const started = await starter(scheduledEvent('2026-10-01T00:00:00Z'));
    expect(started).toMatchObject({ jobId: invoiceJobId('2026-09'), created: true, enqueued: true });
    const a = w.deliver('A');
    expect(await a.done).toEqual({ batchItemFailures: [] });
    expect(await starter(scheduledEvent('2026-10-01T00:00:00Z'))).toMatchObject({ jobId: started.jobId, created: false, enqueued: false, status: 'DONE' });
    expect(w.queue.depth).toBe(0);
  });

  it('a bad payload is a typed error naming the field, and nothing is written or sent', async () => {
    const t = await tables();
    const clock = new ManualClock({ wall: Date.UTC(2027, 0, 1) });
    const queue = new LocalQueue({ clock, visibilityTimeoutMs: 60_000, maxReceiveCount: 5 });
    const starter = createStarterHandler({ doc: t.dynamo.doc, tables: t.names, clock, queue, telemetry: new Recorder(), unitSize: 5, workload: invoices, items: 12 });
    const cases: [Parameters<typeof starter>[0], string][] = [
      [{ period: '2026-13' }, 'payload.period'],
      [{ period: '2026-1' }, 'payload.period'],
      [{ period: 202611 }, 'payload.period'],
      [{ customers: -1 }, 'payload.customers'],
      [{ customers: 1.5 }, 'payload.customers'],
      [{ customers: '10' }, 'payload.customers'],
      [{ seed: 2 ** 31 }, 'payload.seed'],
      [{ period: '2026-11', force: true }, 'payload.force'],
      [scheduledEvent('2027-01-01T00:00:00Z', { period: 'last-month' }), 'payload.period'],
    ];
    for (const [payload, field] of cases) {
      const error = await starter(payload).catch((e: unknown) => e);
      expect(error, JSON.stringify(payload)).toBeInstanceOf(InvalidInputError);
      expect((error as InvalidInputError).field, JSON.stringify(payload)).toBe(field);
    }
    expect(await scanAll(t, t.names.jobs)).toEqual([]);
    expect(queue.sent).toBe(0);
  });

  it('previousPeriod: the month before, in UTC, across year boundaries', () => {
    expect(previousPeriod(new Date('2027-01-01T00:00:00Z'))).toBe('2026-12');
    expect(previousPeriod(new Date('2027-01-31T23:59:59.999Z'))).toBe('2026-12');
    expect(previousPeriod(new Date('2026-12-31T23:59:59.999Z'))).toBe('2026-11');
    expect(previousPeriod(new Date('2027-02-01T00:00:00Z'))).toBe('2027-01');
    expect(previousPeriod(new Date('2026-10-15T12:00:00Z'))).toBe('2026-09');
    // Midnight in Paris on New Year is still December in UTC: the run bills November.
    expect(previousPeriod(new Date('2027-01-01T00:30:00+01:00'))).toBe('2026-11');
    expect(previousPeriod(new Date('2000-01-01T00:00:00Z'))).toBe('1999-12');
  });
});

describe('sweeper handler: EventBridge schedule', () => {
  it('a scheduled event runs one sweep and returns its report', async () => {
    const t = await tables();
    const w = workflow(t, { leaseMs: 400, staleAfterMs: 800 });
    const job = await createInvoiceJob(t, w.clock, invoiceInput('2026-01', 4, 2));
    expect(await w.sweeper(scheduledEvent(new Date(w.clock.wallNow()).toISOString()))).toMatchObject({ unfinished: 1, requeued: [], live: 0 });
    await w.clock.advance(1_000);
    expect(await w.sweeper(scheduledEvent(new Date(w.clock.wallNow()).toISOString()))).toMatchObject({ unfinished: 1, requeued: [job.id] });
    expect(w.queue.receive(10).map((m) => JSON.parse(m.body))).toEqual([{ jobId: job.id, reason: 'requeue' }]);
    expect(w.telemetry.get(METRIC.jobsRequeued)).toBe(1);
  });
});

/** The context object Lambda passes to a handler (plain data and one function). */
const lambdaContext = (awsRequestId: string, functionName: string): Context => ({
  awsRequestId,
  functionName,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${functionName}`,
  memoryLimitInMB: '512',
  logGroupName: `/aws/lambda/${functionName}`,
  logStreamName: '2026/12/01/[$LATEST]0123456789abcdef',
  callbackWaitsForEmptyEventLoop: true,
  getRemainingTimeInMillis: () => 60_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
});

describe('Lambda entries (functions/*.ts): configuration from the environment', () => {
  // The worker entry puts its documents: a bucket on the local S3 endpoint.
  let s3: S3Endpoint;
  let s3Url = '';
  beforeAll(async () => {
    s3 = await startS3Endpoint();
    s3Url = s3.url;
    const client = s3Client({ endpoint: s3.url });
    await client.send(new CreateBucketCommand({ Bucket: 'documents' }));
    client.destroy();
  });
  afterAll(async () => s3.close());
  const stubEnv = (t: TestTables, overrides: Record<string, string | undefined> = {}) => {
    const env: Record<string, string | undefined> = {
      LEASES_TABLE: t.names.leases,
      FENCES_TABLE: t.names.fences,
      JOBS_TABLE: t.names.jobs,
      RECORDS_TABLE: t.names.records,
      OUTBOX_TABLE: t.names.outbox,
      DOCUMENTS_BUCKET: 'documents',
      S3_ENDPOINT: s3Url,
      QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/fenced-work',
      FENCE_EPOCH: '0',
      LEASE_DURATION_MS: '5000',
      DYNAMODB_ENDPOINT: t.endpoint,
      // The region of this file's DynamoDB Local database (one per key and region).
      AWS_REGION: localRegion(),
      POWERTOOLS_METRICS_NAMESPACE: 'FencedWorkflowTest',
      ...overrides,
    };
    for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
    vi.resetModules();
  };
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });

  it('a missing or malformed variable stops the module load with an error that names it', async () => {
    const t = await tables();
    stubEnv(t, { JOBS_TABLE: undefined });
    // (a fresh module graph: a ConfigError, but not this file's ConfigError class)
    await expect(import('../functions/worker.js')).rejects.toMatchObject({ name: ConfigError.name, variable: 'JOBS_TABLE' });
    await expect(import('../functions/worker.js')).rejects.toThrow(/JOBS_TABLE/);
    stubEnv(t, { FENCE_EPOCH: undefined });
    await expect(import('../functions/sweeper.js')).rejects.toThrow(/FENCE_EPOCH/);
    stubEnv(t, { LEASE_MODE: 'sometimes' });
    await expect(import('../functions/starter.js')).rejects.toThrow(/LEASE_MODE/);
    stubEnv(t, { LEASE_DURATION_MS: '30s' });
    await expect(import('../functions/worker.js')).rejects.toThrow(/LEASE_DURATION_MS/);
  });

  it('the worker and sweeper entries run against the tables the environment names, with JSON logs and EMF metrics', async () => {
    const t = await tables();
    const clock = new ManualClock({ wall: Date.now() });
    const job = await createInvoiceJob(t, clock, invoiceInput('2026-01', 3, 5));
    stubEnv(t);
    const out: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk));
      return true;
    });
    const { handler: worker } = await import('../functions/worker.js');
    const { handler: sweeper } = await import('../functions/sweeper.js');
    const record = sqsRecord(JSON.stringify({ jobId: job.id, reason: 'start' }));
    expect(await worker({ Records: [record] }, lambdaContext('entry-1', 'Worker'))).toEqual({ batchItemFailures: [] });
    expect(await readJob(t.dynamo.doc, t.names.jobs, job.id)).toMatchObject({ status: 'DONE', cursor: 1 });
    expect(await sweeper(scheduledEvent(new Date().toISOString()), lambdaContext('entry-2', 'Sweeper'))).toMatchObject({ unfinished: 0, requeued: [] });
    vi.restoreAllMocks();

    const lines = out.join('').split('\n').filter((l) => l.trim().startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({ level: 'INFO', message: 'unit-committed', service: 'worker', jobId: job.id }));
    expect(lines).toContainEqual(expect.objectContaining({ message: 'record-done', outcome: 'done', messageId: record.messageId }));
    const emf = lines.filter((l) => l._aws !== undefined);
    expect(emf.some((l) => l.UnitsCommitted === 1 && l.JobsCompleted === 1)).toBe(true);
    expect(lines).toContainEqual(expect.objectContaining({ message: 'sweep-done', service: 'sweeper', unfinished: 0 }));
    // The Lambda context on every line (Powertools injectLambdaContext). Cold start is asserted by
    // test/infra/artifact.test.ts, in a fresh process: here Powertools' module state outlives resetModules.
    expect(lines).toContainEqual(expect.objectContaining({ message: 'record-done', function_request_id: 'entry-1', function_name: 'Worker' }));
    expect(lines).toContainEqual(expect.objectContaining({ message: 'sweep-done', function_request_id: 'entry-2', function_name: 'Sweeper' }));
  });
});
