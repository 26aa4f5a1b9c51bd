/**
 * Builders for the workflow tests (worker, sweeper, handlers on DynamoDB Local):
 * - `Script`: WorkerHooks that pause a named worker at a named point until the test releases
 *   it (a GC pause), or crash it there (a promise that never resolves: nothing after it runs).
 * - `holdRequests`: parks matching DynamoDB requests of one client (SDK middleware, the real
 *   request goes out unchanged once released), to force "both read before either writes".
 * - `Recorder`: telemetry that keeps every count and event for assertions.
 * - `workflow()`: the real handlers wired to one set of tables, a ManualClock and a LocalQueue.
 */
import type { WireReport } from '../../cli/check/wire-check.js';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSEvent } from 'aws-lambda';
import { ManualClock, systemClock, type Clock, type Generation, type LeaseMode } from '../../lib/protocol/index.js';
import { invoiceJobId, invoiceProcessor, parseInvoiceInput, type InvoiceRunInput } from '../../lib/workloads/invoices/invoices.js';
import { createJob, fenceKeyOf, type Job, type MetricName, type TableNames, type Telemetry, type WorkerHooks, type WorkerPoint } from '../../lib/workflow/index.js';
import { createSweeperHandler } from '../../functions/sweeper-handler.js';
import { createWorkerHandler, type WorkerHandler } from '../../functions/worker-handler.js';
import { checkInvariants, type InvariantReport } from '../../cli/check/invariants.js';
import { startPaymentsProvider } from '../../cli/local/payments-provider.js';
import { startSmtpSink } from '../../cli/local/smtp-sink.js';
import { FetchHttpProvider, SmtpEmailProvider } from '../../lib/workflow/adapters/index.js';
import { deliver, silentTelemetry as quiet, type OutboxItem } from '../../lib/workflow/index.js';
import { invoices } from '../../lib/workloads/invoices/index.js';
import { PAYMENTS_TARGET } from '../../lib/workloads/invoices/invoices.js';
import { LocalQueue, sqsEvent, type QueuedMessage } from '../../cli/local/queue.js';
import { streamsClient } from '../../cli/local/streams.js';
import { scanAll } from './fixtures.js';
import type { TestTables } from './tables.js';

export type HookInfo = { jobId: string; owner: string; generation?: Generation; unit?: number };

export interface Gate {
  /** Resolves when the worker arrived at the point (and is now held there). */
  readonly reached: Promise<HookInfo>;
  /** Lets the held worker go on. */
  release(): void;
}

interface Rule {
  point: WorkerPoint;
  owner?: string;
  unit?: number;
  crash: boolean;
  arrive: (info: HookInfo) => void;
  released: Promise<void>;
  fired: boolean;
}

/** Scripted faults, each firing once, matched by point, owner prefix (the request id) and unit. */
export class Script implements WorkerHooks {
  private readonly rules: Rule[] = [];

  private add(point: WorkerPoint, match: { owner?: string; unit?: number }, crash: boolean): Gate {
    let arrive!: (info: HookInfo) => void;
    let release!: () => void;
    const reached = new Promise<HookInfo>((r) => (arrive = r));
    const released = new Promise<void>((r) => (release = r));
    this.rules.push({ point, ...match, crash, arrive, released, fired: false });
    return { reached, release };
  }

  /** Hold the worker at `point` until `release()`: a pause of any length, decided by the test. */
  pause(point: WorkerPoint, match: { owner?: string; unit?: number } = {}): Gate {
    return this.add(point, match, false);
  }

  /** The worker dies at `point`: nothing after it runs, nothing is released. */
  crash(point: WorkerPoint, match: { owner?: string; unit?: number } = {}): { reached: Promise<HookInfo> } {
    const { reached } = this.add(point, match, true);
    return { reached };
  }

  async at(point: WorkerPoint, info: HookInfo): Promise<void> {
    const rule = this.rules.find(
      (r) =>
        !r.fired &&
        r.point === point &&
        (r.owner === undefined || info.owner.startsWith(r.owner)) &&
        (r.unit === undefined || r.unit === info.unit),
    );
    if (rule === undefined) return;
    rule.fired = true;
    rule.arrive(info);
    if (rule.crash) return new Promise<void>(() => undefined);
    await rule.released;
  }
}

/** Telemetry that remembers everything. */
export class Recorder implements Telemetry {
  readonly counts = new Map<MetricName, number>();
  readonly events: { name: string; fields: Record<string, unknown> }[] = [];
  count(metric: MetricName, n = 1): void {
    this.counts.set(metric, (this.counts.get(metric) ?? 0) + n);
  }
  gauge(): void {}
  event(name: string, fields: Record<string, unknown>): void {
    this.events.push({ name, fields });
  }
  get(metric: MetricName): number {
    return this.counts.get(metric) ?? 0;
  }
  /** Events named `name` whose owner starts with `owner` (when given). */
  of(name: string, owner?: string): Record<string, unknown>[] {
    return this.events
      .filter((e) => e.name === name && (owner === undefined || String(e.fields.owner ?? '').startsWith(owner)))
      .map((e) => e.fields);
  }
  /** Units committed by workers whose owner starts with `owner`, in order. */
  units(owner?: string): number[] {
    return this.of('unit-committed', owner).map((f) => Number(f.unit));
  }
  /** Outcome kinds the handler reported per record (`record-done`), in order. */
  outcomes(): string[] {
    return this.of('record-done').map((f) => String(f.outcome));
  }
  /** The outcome the handler reported for one SQS message (undefined: none, e.g. it was invalid). */
  outcomeOf(messageId: string): string | undefined {
    const e = this.of('record-done').find((f) => f.messageId === messageId);
    return e === undefined ? undefined : String(e.outcome);
  }
}

export interface Hold {
  /** Resolves once `n` matching requests are parked. */
  waitFor(n: number): Promise<void>;
  /** Sends every parked request (and every later one) on. */
  release(): void;
}

/**
 * Parks the HTTP requests of `client` that match `when` (operation, parsed JSON body) until
 * `release()`. SDK middleware: the request itself is not changed, only when it leaves.
 */
export function holdRequests(client: DynamoDBClient, when: (operation: string, body: Record<string, any>) => boolean): Hold {
  let open = false;
  let parked = 0;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const waiters: { n: number; resolve: () => void }[] = [];
  client.middlewareStack.add(
    (next) => async (args) => {
      const req = args.request as { headers?: Record<string, string>; body?: unknown };
      const target = String(req.headers?.['x-amz-target'] ?? '');
      const operation = target.slice(target.lastIndexOf('.') + 1);
      let body: Record<string, any> = {};
      try {
        const raw = req.body;
        const text = typeof raw === 'string' ? raw : raw instanceof Uint8Array ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8') : '';
        body = text === '' ? {} : JSON.parse(text);
      } catch {
        body = {};
      }
      if (!open && when(operation, body)) {
        parked++;
        for (const w of waiters.filter((w) => parked >= w.n)) w.resolve();
        await released;
      }
      return next(args);
    },
    { step: 'finalizeRequest', name: `hold-${Math.random()}`, priority: 'low' },
  );
  return {
    waitFor: (n) => (parked >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve }))),
    release: () => {
      open = true;
      release();
    },
  };
}

export const invoiceInput = (period: string, customers: number, unitSize: number, seed = 7): InvoiceRunInput =>
  parseInvoiceInput({ period, customers, seed, unitSize, currency: 'EUR' });

/** Creates a period's invoice run as the starter would (same id, same total units). */
export async function createInvoiceJob(t: TestTables, clock: Clock, input: InvoiceRunInput): Promise<Job> {
  const { job } = await createJob(
    t.dynamo.doc,
    t.names.jobs,
    { id: invoiceJobId(input.period), totalUnits: invoiceProcessor.totalUnits(input), input: { ...input } },
    clock,
  );
  return job;
}

/** A Lambda-like context: the request id names the invocation (and the lease owner prefix). */
export const context = (requestId: string, remaining: () => number = () => 60_000) => ({
  awsRequestId: requestId,
  getRemainingTimeInMillis: remaining,
});

export interface WorkflowOptions {
  leaseMs?: number;
  mode?: LeaseMode;
  staleAfterMs?: number;
  sweepIntervalMs?: number;
  /** The worker's DynamoDB client (e.g. one through the fault proxy); default the tables' client. */
  workerDoc?: TestTables['dynamo']['doc'];
  safetyMarginMs?: number;
}

/** The invoice workload's fence key prefix: the tests run its processor with it, as its stack does. */
export const FENCE_PREFIX = invoices.fenceKeyPrefix!;
/** The fence of an invoice job, as the tests' workers raise it. */
export const fenceOf = (jobId: string): string => fenceKeyOf(jobId, FENCE_PREFIX);
/** The wire check's tables with that prefix. */
export const wireTables = (names: TableNames) => ({ ...names, fencePrefix: FENCE_PREFIX });

/** The real handlers on one set of tables, a ManualClock and a LocalQueue (visibility 60 s: no redelivery unless a test advances that far). */
export function workflow(t: TestTables, opts: WorkflowOptions = {}) {
  const clock = new ManualClock({ wall: Date.UTC(2026, 11, 1) });
  const leaseMs = opts.leaseMs ?? 400;
  const mode: LeaseMode = opts.mode ?? { kind: 'wall-clock', maxClockSkewMs: 0 };
  const queue = new LocalQueue({ clock, visibilityTimeoutMs: 60_000, maxReceiveCount: 5 });
  const telemetry = new Recorder();
  const hooks = new Script();
  const lease = { epoch: 0, durationMs: leaseMs, mode };
  const worker: WorkerHandler = createWorkerHandler(
    { doc: opts.workerDoc ?? t.dynamo.doc, tables: t.names, clock, queue, telemetry, processor: invoiceProcessor, fenceKeyPrefix: FENCE_PREFIX, lease, hooks },
    opts.safetyMarginMs === undefined ? {} : { safetyMarginMs: opts.safetyMarginMs },
  );
  const sweeperDeps = {
    doc: t.dynamo.doc,
    tables: t.names,
    clock,
    queue,
    telemetry,
    lease: { mode, durationMs: leaseMs },
    staleAfterMs: opts.staleAfterMs ?? leaseMs * 2,
    sweepIntervalMs: opts.sweepIntervalMs ?? leaseMs / 2,
  };
  const sweeper = createSweeperHandler(sweeperDeps);

  /** Receives up to `max` visible messages and invokes the worker with them, as the event source mapping would. */
  const deliver = (requestId: string, max = 10, remaining?: () => number) => {
    const batch = queue.receive(max);
    const event: SQSEvent = sqsEvent(batch);
    const done = worker(event, context(requestId, remaining)).then((r) => {
      const failed = new Set(r.batchItemFailures.map((f) => f.itemIdentifier));
      for (const m of batch) if (!failed.has(m.messageId) && m.receiptHandle) queue.delete(m.receiptHandle);
      return r;
    });
    return { batch, done, bodies: batch.map((m: QueuedMessage) => JSON.parse(m.body) as Record<string, unknown>) };
  };

  return { clock, queue, telemetry, hooks, worker, sweeper, sweeperDeps, deliver };
}

/**
 * Every invariant, after the outbox items the units created are delivered the way the sender
 * does it (claim, send, mark) to a real SMTP sink and payment provider: the worker tests run no
 * sender of their own, and DELIVERY is then checked on what they created.
 */
/** The checker on `t`'s tables, after delivering what the outbox holds; `wire`: what a recording proxy saw (else FENCE says the wire was not checked). */
export async function invariants(t: TestTables, wire?: WireReport): Promise<InvariantReport> {
  const streams = streamsClient(t.endpoint);
  const sink = await startSmtpSink();
  const payments = await startPaymentsProvider();
  try {
    const deps = {
      doc: t.dynamo.doc,
      table: t.names.outbox,
      clock: systemClock,
      telemetry: quiet,
      email: new SmtpEmailProvider({ host: sink.host, port: sink.port }),
      http: { [PAYMENTS_TARGET]: new FetchHttpProvider(`${payments.url}/charges`) },
      from: 'billing@fenced-workflow.example',
      steps: invoices.steps,
    };
    // Each pass delivers what is PENDING, the follow-ups the last pass's settles created among it.
    for (let pass = 0; pass < 4; pass++) {
      const pending = (await scanAll(t, t.names.outbox)).filter((i) => i.status === 'PENDING');
      for (const item of pending) await deliver(deps, item as unknown as OutboxItem);
    }
    return await checkInvariants({ client: t.dynamo.client, doc: t.dynamo.doc, streams }, t.names, { mails: sink.received, payments: [...payments.records.values()] }, wire);
  } finally {
    streams.destroy();
    await Promise.all([sink.close(), payments.close()]);
  }
}

/** Every charge item for a period: exactly one per customer is the ONCE property. */
export async function chargesOf(t: TestTables, period: string): Promise<Record<string, unknown>[]> {
  return (await scanAll(t, t.names.records)).filter((i) => String(i.pk).startsWith(`charge#${period}#`));
}

/** Everything in the four tables, for "nothing was written" comparisons. */
export async function snapshot(t: TestTables): Promise<Record<string, Record<string, unknown>[]>> {
  const roles = ['leases', 'fences', 'jobs', 'records'] as const;
  const sorted = (items: Record<string, unknown>[]) => items.sort((a, b) => String(a.pk).localeCompare(String(b.pk)));
  return Object.fromEntries(await Promise.all(roles.map(async (r) => [r, sorted(await scanAll(t, t.names[r]))] as const)));
}
