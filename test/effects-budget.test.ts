// tier: full
/**
 * Bounded work per invocation: the collector and the reconciler each take a time budget from
 * the Lambda context, work in pages and stop when it is spent; the collector resumes from its
 * durable cursor (the Jobs table) and wraps around. Real engines: DynamoDB Local and the local
 * S3 endpoint (its store filled directly: 100,000 objects through HTTP puts would take minutes; npm test
 * fills 8,000 in pages of 250, COLLECTOR_OBJECTS=100000 the full size in pages of 1,000). The budgets run on an injected clock
 * (StepClock): a listed page or a request costs a fixed step of it, so a budget is a number of
 * pages or requests on any machine, and no verdict here depends on the machine's speed.
 */
import { createHash } from 'node:crypto';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { BatchWriteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startS3Endpoint, type S3Endpoint, type StoredVersion } from '../cli/local/s3-endpoint.js';
import { createCollectorHandler, createReconcilerHandler } from '../functions/effects-handlers.js';
import { createSenderHandler } from '../functions/sender-handler.js';
import { createDynamo, ManualClock, systemClock } from '../lib/protocol/index.js';
import { cursorKeyOf, outboxEmail, readCursor, readOutboxItem, silentTelemetry, unsentKeyOf, type CollectReport, type EmailProvider, type ObjectPages, type OutboxItem, type ReconcileReport } from '../lib/workflow/index.js';
import { S3ObjectStore, s3Client } from '../lib/workflow/adapters/index.js';
import { invoiceProcessor } from '../lib/workloads/invoices/invoices.js';
import { makeTables, type TestTables } from './support/tables.js';
import { FENCE_PREFIX } from './support/workflow.js';

let s3: S3Endpoint;
let t: TestTables;
const client = () => s3Client({ endpoint: s3.url });

/** The budgets' time: it moves only by the steps the work takes (a page listed, a request sent). */
class StepClock {
  now = 0;
  step(ms: number): void {
    this.now += ms;
  }
}
/** A Lambda-like context with `budgetMs` of work left above the handlers' 10 s reserve, on `clock`. */
const context = (clock: StepClock, budgetMs: number) => {
  const deadline = clock.now + 10_000 + budgetMs;
  return { getRemainingTimeInMillis: () => deadline - clock.now };
};

beforeAll(async () => {
  [s3, t] = await Promise.all([startS3Endpoint(), makeTables(import.meta.filename)]);
  await client().send(new CreateBucketCommand({ Bucket: 'docs' }));
});
afterAll(async () => {
  await s3.close();
  t.dynamo.client.destroy();
});

describe('the collector, bounded by its budget', () => {
  // 8,000 in npm test, listed 250 a page: the same 32 pages a pass as the full size's 1,000 a
  // page, so the same runs and budgets (the fill alone took 50-180 s of a loaded suite at
  // 100,000, 11 s at 30,000); COLLECTOR_OBJECTS=100000 for the full size.
  const N = Number(process.env.COLLECTOR_OBJECTS ?? 8_000);
  /** Keys a listed page holds: the collector asks for 1,000, and S3 may return fewer. */
  const PAGE_KEYS = Math.min(1_000, Math.ceil(N / 32));
  const period = '2026-09';
  const key = (c: number, g: number) => `invoices/${period}/cust-${String(c).padStart(7, '0')}/${g}.json`;
  const orphan = (c: number) => c % 1_000 === 7;
  const live = (k: string) => s3.buckets.get('docs')!.get(k)?.at(-1)?.deleteMarker === false;
  const put = (k: string) => {
    const body = Buffer.from(`{"key":"${k}"}`);
    const v: StoredVersion = { versionId: k, deleteMarker: false, etag: `"${createHash('md5').update(body).digest('hex')}"`, body, contentType: 'application/json', lastModified: new Date(Date.now() - 3_600_000), metadata: {} };
    s3.buckets.get('docs')!.set(k, [v]);
    return v.etag;
  };

  it(`${N} objects: every obsolete orphan is collected across runs, no run overruns its budget by more than a page, and a new orphan is reached within a pass`, { timeout: 300_000 }, async () => {
    const filled = Date.now();
    // Generation 9 of every customer; the pointer publishes it except for the orphans. The job is DONE: an unpublished object is obsolete.
    const pointers: Record<string, unknown>[] = [];
    for (let c = 0; c < N; c++) {
      const etag = put(key(c, 9));
      if (!orphan(c)) pointers.push({ pk: `invoice#${period}#cust-${String(c).padStart(7, '0')}`, generation: 9, documentKey: key(c, 9), documentEtag: etag });
    }
    const batches: Record<string, unknown>[][] = [];
    for (let i = 0; i < pointers.length; i += 25) batches.push(pointers.slice(i, i + 25));
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        for (let b = next++; b < batches.length; b = next++) {
          let items: unknown[] | undefined = batches[b]!.map((Item) => ({ PutRequest: { Item } }));
          while (items !== undefined && items.length > 0) {
            const out: { UnprocessedItems?: Record<string, unknown[]> } = await t.dynamo.doc.send(new BatchWriteCommand({ RequestItems: { [t.names.records]: items as never } }));
            items = out.UnprocessedItems?.[t.names.records];
          }
        }
      }),
    );
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.fences, Item: { pk: `invoices#invoice-run#${period}`, generation: 9 } }));
    await t.dynamo.doc.send(new PutCommand({ TableName: t.names.jobs, Item: { pk: `invoice-run#${period}`, status: 'DONE', cursor: 1, totalUnits: 1 } }));
    console.log(`filled ${N} objects and ${pointers.length} pointers in ${Date.now() - filled} ms`);

    // Each listed page costs PAGE_MS of the budget's clock.
    const clock = new StepClock();
    const PAGE_MS = 100;
    const listing = new S3ObjectStore(client(), 'docs');
    const pages: ObjectPages = { page: (p, a, m) => (clock.step(PAGE_MS), listing.page(p, a, Math.min(m, PAGE_KEYS))) };
    const handler = createCollectorHandler({
      doc: t.dynamo.doc, tables: t.names, store: new S3ObjectStore(client(), 'docs'), pages, prefix: 'invoices/',
      refOf: (k) => invoiceProcessor.documents!.refOf(k, t.names), fenceKeyPrefix: FENCE_PREFIX, clock: systemClock, telemetry: silentTelemetry, minAgeMs: 60_000,
    });
    // Three pages' worth: a run lists the page that spends its budget (the fourth) and stops, so
    // a pass of 32 pages takes several runs.
    const budgetMs = 3 * PAGE_MS;
    const run = async (): Promise<CollectReport & { ms: number }> => {
      const t0 = clock.now;
      const r = await handler(undefined, context(clock, budgetMs));
      const ms = clock.now - t0;
      // Over its budget by at most one page.
      expect(ms).toBeLessThanOrEqual(budgetMs + PAGE_MS);
      // And a run that stopped for its budget used it: it stopped at the first page past it.
      if (r.outOfTime) expect(r.pages).toBe(budgetMs / PAGE_MS + 1);
      return { ...r, ms };
    };
    const reports: (CollectReport & { ms: number })[] = [];
    do reports.push(await run());
    while (!reports.at(-1)!.wrapped && reports.length < 1_000);
    const scanned = reports.reduce((n, r) => n + r.scanned, 0);
    const ms = reports.reduce((n, r) => n + r.ms, 0);
    console.log(`one pass: ${reports.length} runs at a budget of ${budgetMs / PAGE_MS} pages, ${scanned} objects in ${ms / PAGE_MS} pages`);
    expect(reports.length).toBeGreaterThan(2);
    expect(reports.slice(0, -1).every((r) => r.outOfTime)).toBe(true);
    // The last run of the pass went on from the first key with the time it had left.
    expect(scanned).toBeGreaterThanOrEqual(N);
    expect(reports.reduce((n, r) => n + r.deleted, 0)).toBe(N / 1_000);
    for (let c = 0; c < N; c++) expect(live(key(c, 9))).toBe(!orphan(c));
    expect((await readCursor(t.dynamo.doc, t.names.jobs, 'invoices/')).passes).toBe(1);

    // Two new orphans, one just after the cursor and one before it: each is reached within one pass,
    // counted in objects listed.
    const cursor = (await readCursor(t.dynamo.doc, t.names.jobs, 'invoices/')).after;
    const ahead = cursor === '' ? key(N - 1, 10) : cursor.replace(/\/9\.json$/, '/10.json');
    const behind = key(0, 10);
    for (const k of [ahead, behind]) put(k);
    let before = 0; // objects listed by the runs before the one that reached the second orphan
    for (let last = 0; live(ahead) || live(behind); ) {
      before += last;
      expect(before).toBeLessThan(N + 2); // a pass is N + 2 objects: the last run starts within it
      last = (await run()).scanned;
    }
  });

  it("keeps its cursor as a Jobs item with a kind, so no scanner of the Jobs table mistakes it for a job", async () => {
    const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
    const item = (await t.dynamo.doc.send(new GetCommand({ TableName: t.names.jobs, Key: { pk: cursorKeyOf('invoices/') } }))).Item;
    expect(item).toMatchObject({ kind: 'collector-cursor' });
    expect(item?.status).toBeUndefined();
    expect(item?.unfinished).toBeUndefined();
  });
});

describe('the reconciler, bounded by its budget', () => {
  it('works through 200 stuck items across several runs, each in its budget, none keeping where the last stopped', { timeout: 240_000 }, async () => {
    const old = Date.now() - 3_600_000;
    const n = 200;
    // Each DynamoDB request of the reconciler costs REQUEST_MS of the budget's clock. A run first
    // asks every unsent key for its oldest entry (33 queries) and each key holding due entries for
    // its newest (32 here), then reads and settles items (a few requests each): a budget of 100
    // requests works some items and leaves the 200 to several runs.
    const clock = new StepClock();
    const REQUEST_MS = 10;
    const budgetMs = 100 * REQUEST_MS;
    const counted = createDynamo({ endpoint: inject('dynamoEndpoint') });
    counted.client.middlewareStack.add((next) => (args) => (clock.step(REQUEST_MS), next(args)), { step: 'initialize', name: 'budgetStep' });
    const items = Array.from({ length: n }, (_, i) => ({ pk: `email#stuck#${i}`, kind: 'email', jobId: 'j', generation: 1, unit: i, updatedAt: old + i, status: 'SENDING', claimToken: 'dead', claimedAt: old + i, attempts: 1, unsent: unsentKeyOf(`email#stuck#${i}`), to: 'c@customers.example', subject: 's', body: 'b', providerEvents: [`SEND:m-${i}`] }));
    for (let i = 0; i < n; i += 25) await t.dynamo.doc.send(new BatchWriteCommand({ RequestItems: { [t.names.outbox]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) } }));
    // The provider's record answers every item: nothing may be sent again.
    let sent = 0;
    const never = { send: async () => void sent++ } as unknown as EmailProvider;
    const handler = createReconcilerHandler({ doc: counted.doc, table: t.names.outbox, clock: systemClock, telemetry: silentTelemetry, email: never, from: 'billing@fenced-workflow.example', pendingAfterMs: 60_000, claimTimeoutMs: 60_000, recordLagMs: 60_000 });
    const reports: ReconcileReport[] = [];
    let overrun = 0;
    do {
      const t0 = clock.now;
      reports.push(await handler(undefined, context(clock, budgetMs)));
      overrun = Math.max(overrun, clock.now - t0 - budgetMs);
      // A run that stopped for its budget made progress first.
      if (reports.at(-1)!.outOfTime) expect(reports.at(-1)!.fromRecord).toBeGreaterThanOrEqual(1);
    } while (reports.at(-1)!.outOfTime && reports.length < n);
    counted.client.destroy();
    console.log(`reconciler: ${n} stuck items in ${reports.length} runs at a budget of ${budgetMs / REQUEST_MS} requests, over it by at most ${overrun / REQUEST_MS}`);
    // Over by at most one item's work and one index page (measured: 3 requests, a read and an update of the item and a page).
    expect(overrun).toBeLessThanOrEqual(4 * REQUEST_MS);
    expect(reports.length).toBeGreaterThan(1);
    expect(reports.reduce((s, r) => s + r.fromRecord, 0)).toBe(n);
    expect(sent).toBe(0);
    // A run that starts mid-index still reports the oldest unsent item's age (the alarm's metric).
    for (const r of reports) expect(r.oldestUnsentAgeMs).toBeGreaterThan(3_500_000);
  });

  it('reaches a due item behind more waiting items than one run can read, though every run is a new container', { timeout: 120_000 }, async () => {
    // One key of the index: 60 payments deferred for a day (each costs the run a read and is
    // left), then one email whose sender died after the provider took it (the record settles it).
    const key = unsentKeyOf('email#behind#0');
    const inKey = (prefix: string, n: number) => Array.from({ length: 5_000 }, (_, i) => `${prefix}#${i}`).filter((pk) => unsentKeyOf(pk) === key).slice(0, n);
    const old = Date.UTC(2026, 8, 1);
    const waiting = inKey('pay#waiting', 60).map((pk, i) => ({ pk, kind: 'http', target: 'pay', jobId: 'j', generation: 1, unit: i, updatedAt: old + i, status: 'PENDING', attempts: 1, deferrals: 1, notBefore: old + 86_400_000 * 365, unsent: key, request: { amountCents: 1 } }));
    const email = { pk: 'email#behind#0', kind: 'email', jobId: 'j', generation: 1, unit: 99, updatedAt: old + 100, status: 'SENDING', claimToken: 'dead', claimedAt: old + 100, attempts: 1, unsent: key, to: 'c@customers.example', subject: 's', body: 'b', providerEvents: ['SEND:m-behind'] };
    expect(waiting).toHaveLength(60);
    for (const batch of [waiting.slice(0, 25), waiting.slice(25, 50), [...waiting.slice(50), email]]) await t.dynamo.doc.send(new BatchWriteCommand({ RequestItems: { [t.names.outbox]: batch.map((Item) => ({ PutRequest: { Item } })) } }));
    // A budget of 34 index queries (every key's oldest entry, the one due key's newest), a page or two and 20 items.
    const clock = new StepClock();
    const REQUEST_MS = 10;
    const counted = createDynamo({ endpoint: inject('dynamoEndpoint') });
    counted.client.middlewareStack.add((next) => (args) => (clock.step(REQUEST_MS), next(args)), { step: 'initialize', name: 'budgetStep' });
    const never = { send: async () => expect.fail('nothing is sent') } as unknown as EmailProvider;
    const runs: ReconcileReport[] = [];
    // Scheduled a minute apart (and a few ms late, as schedules are), each in a new container: a new handler.
    for (let run = 0; run < 20 && !runs.some((r) => r.fromRecord > 0); run++) {
      const wall = new ManualClock({ wall: old + 3_600_000 + run * 60_000 + ((run * 37) % 250) });
      const handler = createReconcilerHandler({ doc: counted.doc, table: t.names.outbox, clock: wall, telemetry: silentTelemetry, email: never, from: 'billing@fenced-workflow.example', pendingAfterMs: 60_000, claimTimeoutMs: 60_000, recordLagMs: 60_000 });
      runs.push(await handler(undefined, context(clock, (34 + 2 + 20) * REQUEST_MS)));
    }
    counted.client.destroy();
    console.log(`reconciler: the email behind 60 waiting payments, ${runs.at(-1)!.fromRecord === 1 ? `settled in run ${runs.length}` : 'never settled'} (at most 20 runs; examined ${runs.map((r) => r.examined).join(' ')})`);
    expect(runs.at(-1)!.fromRecord).toBe(1);
    // Each run before it was cut short by its budget: the email was reached by where the run began, not by time to spare.
    expect(runs.slice(0, -1).every((r) => r.outOfTime)).toBe(true);
  });
});

describe('the sender, bounded by its invocation\'s time', () => {
  it('claims no item it has no time left to send and settle: the rest of the batch is reported failed from there (the stream retries it), and a retry with a fresh invocation sends it', async () => {
    // A provider that takes 5 s a send (on the budget's clock): 60 s of invocation fit 10 sends
    // of 15 with one send's timeout (10 s) and its settle (2 s) still left before each claim.
    const clock = new StepClock();
    const sent: string[] = [];
    const slow = { name: 'slow', send: async (m: { headers: Record<string, string> }) => (clock.step(5_000), sent.push(m.headers['X-Outbox-Id']!), { kind: 'accepted' as const, providerMessageId: `m-${sent.length}` }) } as unknown as EmailProvider;
    const pks = Array.from({ length: 15 }, (_, i) => `email#slow#${i}`);
    for (const pk of pks) await t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item: { ...outboxEmail('', pk, { jobId: 'j', unit: 0 }, { to: 'c@customers.example', subject: 's', body: 'b' }).item, generation: 1, updatedAt: Date.now() } }));
    const records = async (of: readonly string[]) => Promise.all(of.map(async (pk, i) => ({ eventID: String(i), eventName: 'INSERT' as const, dynamodb: { SequenceNumber: `seq-${pk}`, NewImage: marshall((await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)) as OutboxItem, { removeUndefinedValues: true }) } })));
    const handler = createSenderHandler({ doc: t.dynamo.doc, table: t.names.outbox, clock: systemClock, telemetry: silentTelemetry, email: slow, from: 'billing@fenced-workflow.example', sendTimeoutMs: 10_000, claimTimeoutMs: 300_000 });
    const invocation = () => {
      const deadline = clock.now + 60_000;
      return { getRemainingTimeInMillis: () => deadline - clock.now };
    };
    const first = await handler({ Records: (await records(pks)) as never }, invocation());
    expect(sent).toEqual(pks.slice(0, 10));
    expect(first.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(pks.slice(10).map((pk) => `seq-${pk}`));
    // Nothing it left was claimed: the retry finds the rest PENDING and sends each once.
    for (const pk of pks.slice(10)) expect((await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))?.status).toBe('PENDING');
    const retry = await handler({ Records: (await records(pks.slice(10))) as never }, invocation());
    expect(retry.batchItemFailures).toEqual([]);
    expect(sent).toEqual(pks);
  });
});
