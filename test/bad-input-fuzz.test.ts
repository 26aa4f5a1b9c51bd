// tier: full
/**
 * Fuzzed bad input at every edge: queue bodies (the real worker handler on DynamoDB Local, and
 * the LocalQueue + LocalRuntime to the DLQ), job inputs, environment configuration, CLI
 * arguments and fenced-unit shapes. Each case must end in a typed error (a FencedError
 * subclass, never a bare Error/TypeError) with a clear message, and write NOTHING: every table
 * of this file is scanned after each case and must still be empty.
 */
import { randomBytes } from 'node:crypto';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildFencedUnit,
  commitFencedUnit,
  ConfigError,
  FencedError,
  InvalidInputError,
  makeGeneration,
  MAX_EPOCH,
  onceOnly,
  systemClock,
  upsert,
  type Effect,
  type FencedUnit,
} from '../lib/protocol/index.js';
import { createJob, ENV, integer, leaseSettingsFromEnv, METRIC, TABLE_ROLES, tablesFromEnv, type Telemetry } from '../lib/workflow/index.js';
import { invoiceProcessor, MAX_UNIT_SIZE, parseInvoiceInput } from '../lib/workloads/invoices/invoices.js';
import { commonsFromEnv } from '../functions/commons.js';
import { createWorkerHandler, FullBatchFailureError, type WorkerHandler } from '../functions/worker-handler.js';
import { main } from '../cli/main.js';
import { OPS_COMMANDS } from '../cli/ops/ops.js';
import { LocalQueue } from '../cli/local/queue.js';
import { LocalRuntime } from '../cli/local/runtime.js';
import { makeTables, type TestTables } from './support/tables.js';
import { context, Recorder } from './support/workflow.js';

let t: TestTables;
beforeAll(async () => {
  t = await makeTables(import.meta.filename);
});
afterAll(() => t.dynamo.client.destroy());

/** Every table of this file is still empty: no partial write, whatever the input. */
async function expectNothingWritten(what: string): Promise<void> {
  const counts = await Promise.all(
    TABLE_ROLES.map(async (role) => {
      const out = await t.dynamo.doc.send(new ScanCommand({ TableName: t.names[role], ConsistentRead: true, Limit: 1 }));
      return [role, out.Items?.length ?? 0] as const;
    }),
  );
  const written = counts.filter(([, n]) => n > 0);
  if (written.length > 0) throw new Error(`${what}: items written to ${written.map(([r]) => r).join(', ')}`);
}

/** Runs `f`; it must fail with `type` (a FencedError subclass) and a non-empty message naming `field` if given. */
async function expectTyped<E extends FencedError>(f: () => unknown, type: abstract new (...a: never[]) => E, what: string): Promise<E> {
  let error: unknown;
  try {
    await f();
  } catch (e) {
    error = e;
  }
  if (!(error instanceof type)) {
    throw new Error(`${what}: expected ${type.name}, got ${error === undefined ? 'no error' : error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error)}`);
  }
  expect(error).toBeInstanceOf(FencedError);
  expect(error.message.length).toBeGreaterThan(3);
  expect(error.message).not.toMatch(/\[object Object\]|undefined: /);
  return error;
}

// ---------------------------------------------------------------------------------------------
// Queue bodies

const JOB_ID = /^[A-Za-z0-9#:._-]{1,200}$/;
const REASONS = ['start', 'continuation', 'requeue'];

/** An independent statement of the message contract (functions/messages.ts), for filtering. */
function isValidMessage(body: string): boolean {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return false;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  if (!Object.keys(o).every((k) => k === 'jobId' || k === 'observedVersion' || k === 'reason')) return false;
  if (typeof o.jobId !== 'string' || !JOB_ID.test(o.jobId)) return false;
  if (o.observedVersion !== undefined && (typeof o.observedVersion !== 'string' || o.observedVersion.length < 1 || o.observedVersion.length > 64)) return false;
  if (o.reason !== undefined && !REASONS.includes(o.reason as string)) return false;
  return true;
}

const goodJobId = fc.stringMatching(/^[A-Za-z0-9#:._-]{1,40}$/);
const badJobId = fc.oneof(
  fc.string().filter((s) => !JOB_ID.test(s)),
  fc.constantFrom('', 'a b', 'x'.repeat(201), 'job/1', 'job\u0000', 'jöb', '\ud800'),
  fc.integer(),
  fc.constant(null),
  fc.boolean(),
  fc.array(fc.string(), { maxLength: 2 }),
);
/** A message object with fields missing, extra, or of the wrong type or shape. */
const badMessageObject = fc
  .record(
    {
      jobId: fc.oneof(goodJobId, badJobId),
      observedVersion: fc.oneof(fc.string({ minLength: 1, maxLength: 64 }), fc.constantFrom('', 'v'.repeat(65)), fc.integer()),
      reason: fc.oneof(fc.constantFrom(...REASONS), fc.string(), fc.constant(null)),
      extra: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }),
    },
    { requiredKeys: [] },
  )
  .map(({ extra, ...m }) => JSON.stringify({ ...m, ...(extra ?? {}) }));

const badBodyArb: fc.Arbitrary<string> = fc
  .oneof(
    fc.string({ maxLength: 200 }),
    fc.string({ unit: 'binary', maxLength: 100 }),
    fc.json({ maxDepth: 3 }),
    fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
    badMessageObject,
    // Valid messages cut short: malformed JSON.
    fc.tuple(goodJobId, fc.nat()).map(([id, n]) => {
      const s = JSON.stringify({ jobId: id, reason: 'start' });
      return s.slice(0, n % (s.length - 1));
    }),
    fc.constantFrom(
      '',
      ' ',
      'null',
      '[]',
      '{}',
      '"job-1"',
      '{"jobId":"job-1","__proto__":{"reason":"start"}}',
      '{"jobId":"job-1","constructor":{"prototype":{}}}',
      '{"jobId":"job-1","jobId":"job 2"}',
      '{"JOBID":"job-1"}',
      `{"jobId":"${'j'.repeat(300_000)}"}`,
      '\ufeff{"jobId":"job-1"}',
      '{"jobId":"job-1"}garbage',
    ),
  )
  .filter((b) => !isValidMessage(b));

let recordSeq = 0;
function sqsRecord(body: string): SQSRecord {
  const id = `fuzz-${++recordSeq}-${randomBytes(4).toString('hex')}`;
  return {
    messageId: id,
    receiptHandle: `rh-${id}`,
    body,
    attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'fuzz', ApproximateFirstReceiveTimestamp: '0' },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:local:000000000000:work',
    awsRegion: 'local',
  };
}

const lease = { epoch: 0, durationMs: 2_000, mode: { kind: 'wall-clock' as const, maxClockSkewMs: 0 } };

function workerHandler(telemetry: Telemetry, queue: LocalQueue): WorkerHandler {
  return createWorkerHandler({ doc: t.dynamo.doc, tables: t.names, clock: systemClock, queue, telemetry, processor: invoiceProcessor, lease });
}

/** Runs the handler on a batch of bad records: every one fails, so the invocation fails as a whole, naming them all. */
async function failedIds(handler: WorkerHandler, records: SQSRecord[], requestId: string): Promise<string[]> {
  const error = await handler({ Records: records }, context(requestId)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FullBatchFailureError);
  return [...(error as FullBatchFailureError).failedMessageIds];
}

describe('queue bodies: random and malformed → the record fails with an InvalidInputError, nothing written', () => {
  it('one bad body per event, through the real worker handler', async () => {
    const queue = new LocalQueue({ clock: systemClock, visibilityTimeoutMs: 1_000, maxReceiveCount: 3 });
    let cases = 0;
    await fc.assert(
      fc.asyncProperty(badBodyArb, async (body) => {
        cases++;
        const telemetry = new Recorder();
        const record = sqsRecord(body);
        expect(await failedIds(workerHandler(telemetry, queue), [record], `bad-${cases}`)).toEqual([record.messageId]);
        // Refused at the edge as invalid (never an unexpected error), the field named, the reason clear.
        expect(telemetry.events.map((e) => e.name)).toEqual(['record-invalid']);
        const error = String(telemetry.events[0]!.fields.error);
        expect(error).toMatch(/^InvalidInputError: body[^:]*: \S/);
        expect(error.length).toBeLessThan(2_000);
        await expectNothingWritten(`body ${JSON.stringify(body.slice(0, 80))}`);
      }),
      { numRuns: 300 },
    );
    expect(queue.sent).toBe(0);
  }, 120_000);

  it('batches of bad bodies: every record fails (the whole invocation), nothing written', async () => {
    const queue = new LocalQueue({ clock: systemClock, visibilityTimeoutMs: 1_000, maxReceiveCount: 3 });
    await fc.assert(
      fc.asyncProperty(fc.array(badBodyArb, { minLength: 2, maxLength: 10 }), async (bodies) => {
        const telemetry = new Recorder();
        const records = bodies.map(sqsRecord);
        const failed = await failedIds(workerHandler(telemetry, queue), records, 'batch');
        expect(new Set(failed)).toEqual(new Set(records.map((r) => r.messageId)));
        expect(failed).toHaveLength(records.length);
        expect(telemetry.get(METRIC.recordsFailed)).toBe(records.length);
        expect(telemetry.events.every((e) => e.name === 'record-invalid')).toBe(true);
        await expectNothingWritten('batch');
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it('through LocalQueue + LocalRuntime: each malformed message is received maxReceiveCount times, then sits in the DLQ', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(badBodyArb, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 3 }), async (bodies, maxReceiveCount) => {
        const queue = new LocalQueue({ clock: systemClock, visibilityTimeoutMs: 25, maxReceiveCount });
        const telemetry = new Recorder();
        const handler = workerHandler(telemetry, queue);
        const ids = bodies.map((b) => queue.sendRaw(b));
        const errors: unknown[] = [];
        let invocations = 0;
        const runtime = new LocalRuntime({
          clock: systemClock,
          queue,
          worker: (event, c) => {
            invocations++;
            return handler(event, c);
          },
          concurrency: 2,
          batchSize: 10,
          invocationTimeoutMs: 30_000,
          sweepIntervalMs: 3_600_000,
          pollIdleMs: 5,
          onError: (e) => errors.push(e),
        });
        runtime.start();
        const until = Date.now() + 10_000;
        try {
          while (queue.deadLetters.length < ids.length && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
        } finally {
          await runtime.stop();
        }
        // Every batch held only bad messages: each invocation failed as a whole, nothing else went wrong.
        expect(errors.every((e) => e instanceof FullBatchFailureError)).toBe(true);
        expect(queue.deadLetters.map((m) => m.messageId).sort()).toEqual([...ids].sort());
        expect(queue.deadLetters.every((m) => m.receiveCount === maxReceiveCount)).toBe(true);
        expect(queue.depth).toBe(0);
        expect(invocations).toBeGreaterThanOrEqual(maxReceiveCount);
        expect(telemetry.events.filter((e) => e.name === 'record-invalid')).toHaveLength(ids.length * maxReceiveCount);
        expect(telemetry.events.filter((e) => e.name !== 'record-invalid')).toEqual([]);
        await expectNothingWritten('DLQ run');
      }),
      { numRuns: 6 },
    );
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------
// Job inputs

const PERIOD = /^\d{4}-(0[1-9]|1[0-2])$/;
const intIn = (v: unknown, min: number, max: number) => typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max;

/** The first field parseInvoiceInput must refuse (its documented order), or undefined if valid. */
function badInvoiceField(raw: unknown): string | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'input';
  const r = raw as Record<string, unknown>;
  if (typeof r.period !== 'string' || !PERIOD.test(r.period)) return 'input.period';
  const currency = r.currency ?? 'EUR';
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) return 'input.currency';
  if (!intIn(r.customers, 0, 10_000_000)) return 'input.customers';
  if (!intIn(r.seed, 0, 2 ** 31 - 1)) return 'input.seed';
  if (!intIn(r.unitSize, 1, MAX_UNIT_SIZE)) return 'input.unitSize';
  return undefined;
}

/** Anything at all, including what JSON cannot express and what breaks naive error messages. */
const hostile = fc.oneof(
  fc.anything({ withBigInt: true, withBoxedValues: true, withMap: true, withSet: true, withNullPrototype: true, withObjectString: true, withTypedArray: true, withSparseArray: true, withDate: true }),
  fc.constantFrom(Symbol('s'), () => 1, Number.NaN, Number.POSITIVE_INFINITY, -0, 2 ** 53, 10n, Object.create(null), new Date(Number.NaN)),
  fc.constant(null).map(() => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    return cyclic;
  }),
);
const invoiceInputArb = fc.oneof(
  hostile,
  fc.record(
    {
      period: fc.oneof(fc.constantFrom('2026-01', '2026-12', '1999-07'), fc.constantFrom('2026-13', '2026-00', '2026-1', '26-01', ' 2026-01', '2026-01\n'), fc.string(), hostile),
      customers: fc.oneof(fc.integer({ min: 0, max: 10_000_000 }), fc.constantFrom(-1, 10_000_001, 1.5, '10', Number.NaN), hostile),
      seed: fc.oneof(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.constantFrom(-1, 2 ** 31, 0.5), hostile),
      unitSize: fc.oneof(fc.integer({ min: 1, max: MAX_UNIT_SIZE }), fc.constantFrom(0, MAX_UNIT_SIZE + 1, 2.5, '5'), hostile),
      currency: fc.oneof(fc.constantFrom('EUR', 'USD'), fc.constantFrom('eur', 'EURO', '', 'E1R'), hostile),
      extra: hostile,
    },
    { requiredKeys: [] },
  ),
);

describe('job inputs: parseInvoiceInput and createJob', () => {
  it('parseInvoiceInput: anything at all → a valid input or an InvalidInputError naming the first bad field', async () => {
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(invoiceInputArb, async (raw) => {
        const field = badInvoiceField(raw);
        if (field === undefined) {
          const parsed = parseInvoiceInput(raw);
          expect(intIn(parsed.customers, 0, 10_000_000) && intIn(parsed.unitSize, 1, MAX_UNIT_SIZE) && PERIOD.test(parsed.period)).toBe(true);
          return;
        }
        refused++;
        const e = await expectTyped(() => parseInvoiceInput(raw), InvalidInputError, `parseInvoiceInput(${fc.stringify(raw).slice(0, 100)})`);
        expect(e.field).toBe(field);
        expect(e.message.length).toBeLessThan(400);
      }),
      { numRuns: 600 },
    );
    expect(refused).toBeGreaterThan(300);
  });

  it('createJob: a bad id, unit count or input → InvalidInputError and no item', async () => {
    const jsonObject = fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4, noNullPrototype: true }).map((v) => ({ v, ok: true }));
    const badInput = fc.oneof(
      fc.constantFrom(null, undefined, 'input', 42, [], [1, 2], true),
      fc.constantFrom<Record<string, unknown>>({ n: Number.NaN }, { s: Symbol('x') }, { f: () => 1 }, { big: 'x'.repeat(410 * 1024) }),
      fc.constant(null).map(() => {
        const c: Record<string, unknown> = {};
        c.c = c;
        return c;
      }),
    );
    const spec = fc
      .record({
        id: fc.oneof(goodJobId, badJobId, hostile),
        totalUnits: fc.oneof(fc.nat({ max: 1_000 }), fc.constantFrom(-1, 1.5, Number.NaN, 2 ** 53, '3', null), hostile),
        input: fc.oneof(jsonObject, badInput.map((v) => ({ v, ok: false }))),
      })
      .map(({ input, ...s }) => {
        const idOk = typeof s.id === 'string' && JOB_ID.test(s.id);
        const unitsOk = typeof s.totalUnits === 'number' && Number.isSafeInteger(s.totalUnits) && s.totalUnits >= 1;
        const field = !idOk ? 'jobId' : !unitsOk ? 'totalUnits' : input.ok ? undefined : 'input';
        return { spec: { ...s, input: input.v }, field };
      })
      // Every case is bad somewhere (a good one would rightly write a job).
      .filter((c) => c.field !== undefined);
    await fc.assert(
      fc.asyncProperty(spec, async ({ spec: s, field }) => {
        const e = await expectTyped(() => createJob(t.dynamo.doc, t.names.jobs, s as never, systemClock), InvalidInputError, `createJob(${fc.stringify(s).slice(0, 100)})`);
        expect(e.field).toBe(field);
        await expectNothingWritten('createJob');
      }),
      { numRuns: 200 },
    );
  }, 60_000);
});

// ---------------------------------------------------------------------------------------------
// Environment configuration

type Category = 'missing' | 'blank' | 'good' | 'bad';
interface VarSpec {
  name: string;
  good: fc.Arbitrary<string>;
  bad: fc.Arbitrary<string>;
  /** What a missing or blank value means: the default, or an error. */
  optional: boolean;
}

const notANumber = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.trim() !== '' && Number.isNaN(Number(s)));
const intVar = (name: string, min: number, max: number, optional: boolean): VarSpec => ({
  name,
  optional,
  good: fc.integer({ min, max }).map(String),
  bad: fc.oneof(
    notANumber,
    fc.constantFrom(`${min - 1}`, `${max + 1}`, '1.5', 'NaN', 'Infinity', '-Infinity', '1e400', `${2 ** 53}`, '12abc', 'twelve'),
  ),
});
const tableVar = (name: string): VarSpec => ({
  name,
  optional: false,
  good: fc.stringMatching(/^[a-zA-Z0-9_.-]{3,40}$/),
  bad: fc.oneof(fc.constantFrom('ab', 'my table', 'tbl/1', 'x'.repeat(256), 'täble', 'a:b'), fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim() !== '' && !/^[a-zA-Z0-9_.-]{3,255}$/.test(s))),
});
const urlVar = (name: string, optional: boolean): VarSpec => ({
  name,
  optional,
  good: fc.constantFrom('https://sqs.eu-west-1.amazonaws.com/123456789012/work', 'http://127.0.0.1:8000', 'http://localhost:4566/q'),
  bad: fc.constantFrom('not a url', 'ftp://x.example', 'localhost:8000', '127.0.0.1:8000', 'http://', 'https://exa mple.com', ':::', 'file:///etc/passwd', 'http//x'),
});

const TABLE_VARS = [ENV.leasesTable, ENV.fencesTable, ENV.jobsTable, ENV.recordsTable, ENV.outboxTable].map(tableVar);
const EPOCH = intVar(ENV.epoch, 0, MAX_EPOCH, false);
const DURATION = intVar(ENV.leaseDurationMs, 100, 3_600_000, true);
const SKEW = intVar(ENV.maxClockSkewMs, 0, 600_000, true);
const QUEUE = urlVar(ENV.queueUrl, false);
const ENDPOINT = urlVar(ENV.dynamoEndpoint, true);
const UNIT_SIZE = intVar(ENV.unitSize, 1, MAX_UNIT_SIZE, true);

const categoryArb = fc.constantFrom<Category>('good', 'good', 'good', 'good', 'missing', 'blank', 'bad');
const valueOf = (v: VarSpec) =>
  categoryArb.chain((c) =>
    (c === 'missing' ? fc.constant(undefined) : c === 'blank' ? fc.constantFrom('', ' ', '\t') : c === 'good' ? v.good : v.bad).map((value) => ({ c, value })),
  );
const modeArb = fc.oneof(
  fc.constantFrom({ c: 'missing' as Category, value: undefined }, { c: 'good' as Category, value: 'wall-clock' }, { c: 'good' as Category, value: 'version-watch' }),
  fc.oneof(fc.string({ maxLength: 15 }), fc.constantFrom('', 'Wall-Clock', ' wall-clock', 'versionwatch', 'both')).filter((s) => s !== 'wall-clock' && s !== 'version-watch').map((value) => ({ c: 'bad' as Category, value })),
);

const envArb = fc
  .record({
    tables: fc.tuple(...TABLE_VARS.map(valueOf)),
    epoch: valueOf(EPOCH),
    duration: valueOf(DURATION),
    mode: modeArb,
    skew: valueOf(SKEW),
    queue: valueOf(QUEUE),
    endpoint: valueOf(ENDPOINT),
    unitSize: valueOf(UNIT_SIZE),
    noise: fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }).filter((k) => !Object.values(ENV).includes(k as never)), fc.string({ maxLength: 10 }), { maxKeys: 3 }),
  })
  .map((r) => {
    const env: Record<string, string | undefined> = { ...r.noise };
    const order: [VarSpec | { name: string; optional: boolean }, { c: Category; value: string | undefined }][] = [
      ...TABLE_VARS.map((v, i) => [v, r.tables[i]!] as [VarSpec, { c: Category; value: string | undefined }]),
      [EPOCH, r.epoch],
      [DURATION, r.duration],
      [{ name: ENV.leaseMode, optional: true }, r.mode],
      [SKEW, r.skew],
      [QUEUE, r.queue],
      [ENDPOINT, r.endpoint],
      [UNIT_SIZE, r.unitSize],
    ];
    for (const [v, { value }] of order) if (value !== undefined) env[v.name] = value;
    const wallClock = r.mode.value === undefined || r.mode.value === 'wall-clock';
    /** The first variable the loader must name, in the order it reads them; undefined if none. */
    const firstBad = (names: string[]) =>
      order.find(([v, { c }]) => {
        if (!names.includes(v.name)) return false;
        if (v.name === ENV.maxClockSkewMs && !wallClock) return false; // only read in wall-clock mode
        if (v.name === ENV.leaseMode) return c === 'bad';
        return c === 'bad' || ((c === 'missing' || c === 'blank') && !v.optional);
      })?.[0].name;
    return { env, firstBad };
  });

describe('environment configuration → ConfigError naming the variable', () => {
  const tableNamesList = TABLE_VARS.map((v) => v.name);
  const leaseNames = [ENV.epoch, ENV.leaseDurationMs, ENV.leaseMode, ENV.maxClockSkewMs];
  const commonsNames = [...tableNamesList, ...leaseNames, ENV.queueUrl, ENV.dynamoEndpoint, ENV.unitSize];

  async function check(load: () => unknown, expected: string | undefined, what: string): Promise<void> {
    if (expected === undefined) {
      load();
      return;
    }
    const e = await expectTyped(load, ConfigError, what);
    expect(e.variable).toBe(expected);
    expect(e.message).toContain(expected);
  }

  it('tablesFromEnv, leaseSettingsFromEnv and commonsFromEnv', async () => {
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(envArb, async ({ env, firstBad }) => {
        const bad = firstBad(commonsNames);
        if (bad !== undefined) refused++;
        await check(() => tablesFromEnv(env), firstBad(tableNamesList), 'tablesFromEnv');
        await check(() => leaseSettingsFromEnv(env), firstBad(leaseNames), 'leaseSettingsFromEnv');
        await check(() => commonsFromEnv(env), bad, 'commonsFromEnv');
        if (firstBad(leaseNames) === undefined) {
          const s = leaseSettingsFromEnv(env);
          expect(Number.isSafeInteger(s.epoch) && s.epoch >= 0 && s.epoch <= MAX_EPOCH).toBe(true);
          expect(Number.isSafeInteger(s.durationMs) && s.durationMs >= 100).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
    expect(refused).toBeGreaterThan(150);
  });

  it('integer(): any string → the value in range, the fallback when blank, or a ConfigError quoting it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 12 }), fc.integer().map(String), fc.double().map(String), fc.constant(undefined)),
        fc.integer({ min: -1_000, max: 1_000 }),
        fc.nat({ max: 5_000 }),
        fc.option(fc.integer({ min: -1_000, max: 6_000 }), { nil: undefined }),
        async (raw, min, span, fallback) => {
          const env = raw === undefined ? {} : { X_VAR: raw };
          const blank = raw === undefined || raw.trim() === '';
          const n = Number(raw);
          const ok = blank ? fallback !== undefined : Number.isSafeInteger(n) && n >= min && n <= min + span;
          if (ok) {
            expect(integer(env, 'X_VAR', fallback, min, min + span)).toBe(blank ? fallback : n);
          } else {
            const e = await expectTyped(() => integer(env, 'X_VAR', fallback, min, min + span), ConfigError, `integer(${JSON.stringify(raw)})`);
            expect(e.variable).toBe('X_VAR');
            expect(e.message).toContain('X_VAR');
            if (!blank) expect(e.message).toContain(`"${raw}"`);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// CLI arguments (cli/main.ts)

/** Runs main(argv) with stdout and stderr captured. */
async function runCli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = process.stdout.write;
  const err = process.stderr.write;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    const code = await main(argv);
    return { code, stdout, stderr };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
}

const DEMO_FLAGS = ['--endpoint', '--table-prefix', '--customers', '--workers', '--seed', '--out', '--json', '--help'];
const OPS_FLAGS = ['--endpoint', '--table-prefix', '--outputs', '--region', '--leases-table', '--fences-table', '--jobs-table', '--invoices-table', '--queue-url', '--epoch', '--json', '--help'];
const word = fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/);
const badNumber = fc.oneof(notANumber.filter((s) => !s.startsWith('-')), fc.constantFrom('', ' ', '1.5', '1e400', 'NaN', 'Infinity', '99999999999', 'x1'));
const badEndpoint = fc.constantFrom('not a url', 'localhost:8000', 'ftp://x.example', 'http://', 'http://:::', 'https://exa mple.com', '127.0.0.1', 'file:///tmp', 'http//x');
const badPrefix = fc.oneof(fc.constantFrom('my prefix-', 'p/q-', 'x'.repeat(260), 'ünï-', 'a:b-', 'tab\t-'), fc.string({ minLength: 1, maxLength: 10 }).filter((s) => /[^a-zA-Z0-9_.-]/.test(s) && !s.startsWith('-')));

describe('CLI arguments → exit code 2, one clear line on stderr, no stack trace, no table created', () => {
  let tablesBefore: string[];
  const listTables = async () => (await t.dynamo.client.send(new ListTablesCommand({}))).TableNames ?? [];
  beforeAll(async () => {
    tablesBefore = await listTables();
  });

  const goodDemo = () =>
    fc.subarray([
      ['--endpoint', t.endpoint],
      ['--table-prefix', `cli-${randomBytes(3).toString('hex')}-`],
      ['--customers', '5'],
      ['--workers', '2'],
      ['--seed', '3'],
      ['--json'],
      ['--out', '/tmp/fuzz-timeline.svg'],
    ]);
  /** Demo flags with at least one defect that parseDemoFlags must catch before anything runs. */
  const demoArgs = () =>
    fc
      .tuple(
        goodDemo(),
        fc.array(
          fc.oneof(
            word.filter((w) => !DEMO_FLAGS.includes(`--${w}`)).map((w) => [`--${w}`]),
            fc.tuple(fc.constantFrom('--customers', '--workers', '--seed'), badNumber).map(([f, v]) => [f, v]),
            fc.constantFrom(['--workers', '0'], ['--workers', '65'], ['--customers', '-5'], ['--seed', '-1']),
            badEndpoint.map((v) => ['--endpoint', v]),
            badPrefix.map((v) => ['--table-prefix', v]),
            fc.constantFrom(['--json=maybe'], ['--help=yes'], ['--json', 'stray'], ['-x'], ['--', 'stray'], ['---customers', '1']),
          ),
          { minLength: 1, maxLength: 3 },
        ),
        fc.boolean(),
      )
      .map(([good, bad, missingValueLast]) => {
        const args = [...good, ...bad].flat();
        // A value-taking flag at the very end, without its value.
        return ['demo', ...(missingValueLast ? [...args, '--seed'] : args)];
      });
  const opsArgs = () =>
    fc.oneof(
      // Without tables.
      fc.tuple(fc.constantFrom(...OPS_COMMANDS), fc.subarray([['--json'], ['--endpoint', 'http://127.0.0.1:1'], ['--region', 'eu-west-1'], ['--leases-table', 'only-leases']])).map(([c, f]) => [
        c,
        ...(c === 'requeue' ? ['job-1'] : []),
        ...(c === 'raise-epoch' || c === 'seal' ? ['--epoch', '1'] : []),
        ...f.flat(),
      ]),
      // A bad or missing epoch.
      fc.tuple(fc.constantFrom('raise-epoch', 'seal'), fc.option(fc.oneof(badNumber, fc.constantFrom('-1', `${MAX_EPOCH + 1}`, '0x1', '1e1', ' 1')), { nil: undefined })).map(([c, e]) => [
        c,
        ...(e === undefined ? [] : ['--epoch', e]),
        '--endpoint',
        t.endpoint,
        '--table-prefix',
        'nx-',
      ]),
      // A bad endpoint, region, prefix, table name or queue URL, with otherwise usable flags.
      fc
        .tuple(
          fc.constantFrom(...OPS_COMMANDS),
          fc.oneof(
            badEndpoint.map((v) => ['--endpoint', v, '--table-prefix', 'nx-']),
            fc.constantFrom('eu west 1', 'EU_WEST', 'a/b', '').map((v) => ['--endpoint', t.endpoint, '--table-prefix', 'nx-', '--region', v]),
            badPrefix.map((v) => ['--endpoint', t.endpoint, '--table-prefix', v]),
            fc.constantFrom('a b', 'x', 't/1').map((v) => ['--endpoint', t.endpoint, '--leases-table', v, '--fences-table', 'f1x', '--jobs-table', 'j1x', '--invoices-table', 'i1x']),
            badEndpoint.map((v) => ['--endpoint', t.endpoint, '--table-prefix', 'nx-', '--queue-url', v]),
            fc.constant(['--outputs', `/nonexistent/${randomBytes(3).toString('hex')}.json`]),
          ),
        )
        .map(([c, f]) => [c, ...(c === 'requeue' ? ['job-1'] : []), ...(c === 'raise-epoch' || c === 'seal' ? ['--epoch', '1'] : []), ...f]),
      // Tables that do not exist at this endpoint: read-only attempts, refused as a usage error.
      fc.constantFrom(...OPS_COMMANDS).map((c) => [
        c,
        ...(c === 'requeue' ? ['job-1', '--queue-url', 'http://127.0.0.1:1/q'] : []),
        ...(c === 'raise-epoch' || c === 'seal' ? ['--epoch', '1'] : []),
        '--endpoint',
        t.endpoint,
        '--table-prefix',
        `nx-${randomBytes(3).toString('hex')}-`,
      ]),
      // Positionals where none or exactly one is allowed, an unknown flag.
      fc.constantFrom(
        ['requeue', '--table-prefix', 'nx-'],
        ['requeue', 'a', 'b', '--table-prefix', 'nx-'],
        ['requeue', 'bad job id', '--endpoint', 'http://127.0.0.1:1', '--table-prefix', 'nx-', '--queue-url', 'http://127.0.0.1:1/q'],
        ['status', 'extra', '--table-prefix', 'nx-'],
        ['seal', '1'],
        ['status', '--bogus'],
        ['status', '--json=1', '--table-prefix', 'nx-'],
      ),
    );
  const unknownCommand = word.filter((w) => !(OPS_COMMANDS as readonly string[]).includes(w) && !['help', 'demo', 'dynamodb', 's3-endpoint', 'smtp-sink'].includes(w)).map((w) => [w]);

  it('random bad arguments for the demo, the ops commands and unknown commands', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(demoArgs(), opsArgs().map((a): string[] => [...a]), fc.tuple(unknownCommand, fc.array(fc.constantFrom('--json', '--table-prefix', 'p-'), { maxLength: 3 })).map(([c, r]) => [...c, ...r])), async (argv) => {
        const r = await runCli(argv);
        const what = `main(${JSON.stringify(argv).slice(0, 200)})`;
        expect(r.code, `${what}: ${r.stderr}`).toBe(2);
        expect(r.stdout, what).toBe('');
        expect(r.stderr, what).toMatch(/^error: \S[^\n]*\(--help for usage\)\n$/);
        // A message, not a crash: no stack frames, no "TypeError: ...", no [object Object].
        expect(r.stderr, what).not.toMatch(/^\s+at |^\w*Error: |\[object Object\]/m);
        expect(r.stderr.length, what).toBeLessThan(700);
      }),
      { numRuns: 250 },
    );
    expect((await listTables()).sort()).toEqual([...tablesBefore].sort());
    await expectNothingWritten('CLI');
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------
// Fenced-unit shapes

describe('fenced-unit shapes → InvalidInputError before anything is sent', () => {
  const g = makeGeneration(0, 3);
  const base = (): FencedUnit => ({
    fence: { table: t.names.fences, resource: 'invoices#shape-job' },
    generation: g,
    checkpoint: { table: t.names.jobs, key: 'shape-job', expected: 0, next: 1, set: { heartbeatAt: 1, status: 'RUNNING' } },
    effects: [
      upsert(t.names.records, { pk: 'invoice#p#c1', amountCents: 1, generation: g }),
      onceOnly(t.names.records, { pk: 'charge#p#c1', amountCents: 1, generation: g }),
    ],
    token: { job: 'shape-job', unit: 0 },
  });
  const deep = (n: number): unknown => (n === 0 ? 1 : { d: deep(n - 1) });
  const cyclic = () => {
    const c: Record<string, unknown> = {};
    c.c = c;
    return c;
  };
  type U = Record<string, unknown> & { checkpoint: Record<string, unknown>; effects: unknown[]; fence: Record<string, unknown> };
  // Mutations compose: each tolerates what an earlier one did to the unit.
  // Adds an effect without repairing an earlier defect (a non-array stays a non-array).
  const add = (u: U, e: unknown) => void (Array.isArray(u.effects) ? u.effects.push(e) : undefined);
  const cpOf = (u: U): Record<string, unknown> => (typeof u.checkpoint === 'object' && u.checkpoint !== null ? u.checkpoint : {});
  const fenceOf = (u: U): Record<string, unknown> => (typeof u.fence === 'object' && u.fence !== null ? u.fence : {});
  const inv = (i: number, extra: Record<string, unknown> = {}) => upsert(t.names.records, { pk: `invoice#p#x${i}`, generation: g, ...extra });

  /** Mutations that each make a unit invalid. */
  const mutation: fc.Arbitrary<[string, (u: U) => void]> = fc.oneof(
    fc.integer({ min: 99, max: 140 }).map((n) => [`${n} effects`, (u: U) => void (u.effects = Array.from({ length: n }, (_, i) => inv(i)))] as [string, (u: U) => void]),
    fc.constantFrom<[string, (u: U) => void]>(
      ['duplicate effect key', (u) => add(u, onceOnly(t.names.records, { pk: 'invoice#p#c1' }))],
      ['effect on the checkpoint item', (u) => add(u, upsert(t.names.jobs, { pk: 'shape-job', cursor: 9 }))],
      ['effect on the fence item', (u) => add(u, upsert(t.names.fences, { pk: 'invoices#shape-job', generation: 99 }))],
      ['unknown kind', (u) => add(u, { kind: 'delete', table: t.names.records, item: { pk: 'invoice#p#z' } })],
      ['no kind', (u) => add(u, { table: t.names.records, item: { pk: 'invoice#p#z' } })],
      ['null effect', (u) => add(u, null)],
      ['effect table too short', (u) => add(u, upsert('ab', { pk: 'z' }))],
      ['item not an object', (u) => add(u, { kind: 'upsert', table: t.names.records, item: 'pk' })],
      ['item without pk', (u) => add(u, { kind: 'upsert', table: t.names.records, item: { amountCents: 1 } })],
      ['numeric pk', (u) => add(u, { kind: 'once', table: t.names.records, item: { pk: 7 } })],
      ['empty pk', (u) => add(u, upsert(t.names.records, { pk: '' }))],
      ['item over 400 KB', (u) => add(u, inv(1, { blob: 'x'.repeat(401 * 1024) }))],
      ['transaction over 4 MB', (u) => void (u.effects = Array.from({ length: 11 }, (_, i) => inv(i, { blob: 'x'.repeat(390 * 1024) })))],
      ['set of 60 x 8 KB strings', (u) => add(u, inv(2, { tags: new Set(Array.from({ length: 60 }, (_, i) => `${i}${'y'.repeat(8 * 1024)}`)) }))],
      ['NaN value', (u) => add(u, inv(3, { amountCents: Number.NaN }))],
      ['Infinity value', (u) => add(u, inv(3, { amountCents: Number.POSITIVE_INFINITY }))],
      ['symbol value', (u) => add(u, inv(3, { s: Symbol('s') }))],
      ['function value', (u) => add(u, inv(3, { f: () => 1 }))],
      ['cyclic value', (u) => add(u, inv(3, { c: cyclic() }))],
      ['nested 40 deep', (u) => add(u, inv(3, { d: deep(40) }))],
      ['effects not an array', (u) => void (u.effects = 'effects' as never)],
      ['negative expected', (u) => void (cpOf(u).expected = -1)],
      ['fractional expected', (u) => void (cpOf(u).expected = 0.5)],
      ['next == expected', (u) => void (cpOf(u).next = 0)],
      ['checkpoint without table', (u) => void delete cpOf(u).table],
      ['checkpoint null', (u) => void (u.checkpoint = null as never)],
      ['set cursor', (u) => void (cpOf(u).set = { cursor: 5 })],
      ['set generation', (u) => void (cpOf(u).set = { generation: 5 })],
      ['set pk', (u) => void (cpOf(u).set = { pk: 'other' })],
      ['set with empty name', (u) => void (cpOf(u).set = { '': 1 })],
      ['set not an object', (u) => void (cpOf(u).set = 'abc')],
      ['set array', (u) => void (cpOf(u).set = [1, 2])],
      ['set bigint-and-cycle', (u) => void (cpOf(u).set = { n: 1n, c: cyclic() })],
      ['set NaN', (u) => void (cpOf(u).set = { heartbeatAt: Number.NaN })],
      ['remove not an array', (u) => void (cpOf(u).remove = 'unfinished')],
      ['remove a number', (u) => void (cpOf(u).remove = [7])],
      ['remove cursor', (u) => void (cpOf(u).remove = ['cursor'])],
      ['remove what is set', (u) => void (cpOf(u).remove = ['status'])],
      ['remove pk', (u) => void (cpOf(u).remove = ['pk'])],
      ['fence resource empty', (u) => void (fenceOf(u).resource = '')],
      ['fence table short', (u) => void (fenceOf(u).table = 'f')],
      ['fence missing', (u) => void (u.fence = undefined as never)],
      ['negative generation', (u) => void (u.generation = -1)],
      ['fractional generation', (u) => void (u.generation = 1.5)],
      ['string generation', (u) => void (u.generation = '3')],
      ['NaN generation', (u) => void (u.generation = Number.NaN)],
      ['no token', (u) => void delete u.token],
      ['token without job', (u) => void (u.token = { unit: 0 })],
      ['token unit a string', (u) => void (u.token = { job: 'shape-job', unit: '0' })],
      ['token variant a number', (u) => void (u.token = { job: 'shape-job', unit: 0, variant: 5 })],
    ),
  );

  it('valid units with 1-3 random defects', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 3 }), async (mutations) => {
        const u = base() as unknown as U;
        for (const [, m] of mutations) m(u);
        const what = mutations.map(([name]) => name).join(' + ');
        const e = await expectTyped(() => buildFencedUnit(u as unknown as FencedUnit, 1), InvalidInputError, what);
        expect(e.field.length, what).toBeGreaterThan(0);
        await expectTyped(() => commitFencedUnit({ doc: t.dynamo.doc }, u as unknown as FencedUnit), InvalidInputError, `commit: ${what}`);
        await expectNothingWritten(what);
      }),
      { numRuns: 300 },
    );
  }, 120_000);

  it('anything at all as a unit, or as any of its parts → InvalidInputError, never a TypeError', async () => {
    const part = fc.oneof(hostile, fc.constant(undefined));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          hostile,
          fc.record({ fence: part, generation: part, checkpoint: part, effects: part, token: part }, { requiredKeys: [] }),
          fc
            .tuple(fc.constantFrom('fence', 'generation', 'checkpoint', 'effects', 'token'), part)
            .map(([k, v]) => ({ ...base(), [k]: v })),
          fc.tuple(fc.constantFrom('table', 'key', 'expected', 'next', 'set', 'remove'), part).map(([k, v]) => {
            const u = base();
            return { ...u, checkpoint: { ...u.checkpoint, [k]: v } };
          }),
          fc.tuple(fc.constantFrom('kind', 'table', 'item'), part).map(([k, v]) => ({ ...base(), effects: [{ ...base().effects[0]!, [k]: v } as Effect] })),
        ),
        async (u) => {
          let built = false;
          try {
            buildFencedUnit(u as FencedUnit, 1);
            built = true;
          } catch (e) {
            if (!(e instanceof InvalidInputError)) throw new Error(`${fc.stringify(u).slice(0, 200)}: ${e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e)}`);
          }
          // Only a part that happens to be valid (an undefined optional, say) builds; nothing is sent here.
          if (built) expect(u).toMatchObject({ token: { job: 'shape-job' } });
        },
      ),
      { numRuns: 500 },
    );
    await expectNothingWritten('anything');
  });
});
