// tier: quick
/**
 * The ops CLI against a deployed stack's `cdk deploy --outputs-file` JSON: which stack's outputs
 * it reads (on DynamoDB Local), and pause/resume of the worker's event source mapping, sent by
 * the real Lambda client (SigV4, REST-JSON) to a local endpoint that speaks Lambda's
 * UpdateEventSourceMapping and GetEventSourceMapping.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError, systemClock } from '../lib/protocol/index.js';
import { silentTelemetry, type WorkQueue } from '../lib/workflow/index.js';
import { workloadNamed } from '../lib/workloads/index.js';
import { createStarterHandler } from '../functions/starter-handler.js';
import { OUTPUTS } from '../infra/outputs.js';
import { opsCommand, progressOf, tablesFromOutputs } from '../cli/ops/ops.js';
import { tempDir } from './support/temp-dir.js';
import { makeTables, type TestTables } from './support/tables.js';

let t: TestTables;
beforeAll(async () => {
  t = await makeTables(import.meta.filename);
});
afterEach(() => {
  vi.restoreAllMocks();
});

const outputsOf = (names: Record<'leases' | 'fences' | 'jobs' | 'records' | 'outbox', string>, extra: Record<string, string> = {}) => ({
  [OUTPUTS.leases]: names.leases,
  [OUTPUTS.fences]: names.fences,
  [OUTPUTS.jobs]: names.jobs,
  [OUTPUTS.records]: names.records,
  [OUTPUTS.outbox]: names.outbox,
  [OUTPUTS.queueUrl]: 'https://sqs.eu-west-1.amazonaws.com/111111111111/q',
  ...extra,
});
const other = { leases: 'Other-Leases-1', fences: 'Other-Fences-1', jobs: 'Other-Jobs-1', records: 'Other-Invoices-1', outbox: 'Other-Outbox-1' };

/** Runs an ops command and returns what it printed on stdout. */
async function ops(command: Parameters<typeof opsCommand>[0], argv: string[]): Promise<{ code: number; stdout: string }> {
  const chunks: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  });
  const code = await opsCommand(command, argv);
  vi.restoreAllMocks();
  return { code, stdout: chunks.join('') };
}

describe('an outputs file with several stacks', () => {
  it('one stack: its outputs are used without --stack', () => {
    expect(tablesFromOutputs({ FencedWorkflow: outputsOf(other) }).tables).toEqual(other);
  });

  it('several stacks and no --stack: refused, naming them, instead of mixing their outputs', () => {
    const json = { FencedWorkflow: outputsOf(t.names), Staging: outputsOf(other) };
    expect(() => tablesFromOutputs(json)).toThrow(InvalidInputError);
    expect(() => tablesFromOutputs(json)).toThrow(/--stack: the outputs file holds 2 stacks \(FencedWorkflow, Staging\); pick one with --stack NAME/);
  });

  it('several stacks and --stack: that stack only; an unknown name is refused', () => {
    const json = { FencedWorkflow: outputsOf(t.names), Staging: outputsOf(other) };
    expect(tablesFromOutputs(json, 'Staging').tables).toEqual(other);
    expect(tablesFromOutputs(json, 'FencedWorkflow').tables).toEqual(t.names);
    expect(() => tablesFromOutputs(json, 'Prod')).toThrow(/--stack: no stack "Prod" in the outputs file \(FencedWorkflow, Staging\)/);
  });

  it('status --outputs FILE --stack NAME reads that stack\'s tables', async () => {
    const file = join(tempDir('fenced-ops-'), 'cdk-outputs.json');
    writeFileSync(file, JSON.stringify({ Staging: outputsOf(other), FencedWorkflow: outputsOf(t.names) }));
    await expect(opsCommand('status', ['--outputs', file, '--endpoint', t.endpoint, '--json'])).rejects.toThrow(/--stack/);
    const r = await ops('status', ['--outputs', file, '--stack', 'FencedWorkflow', '--endpoint', t.endpoint, '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ epoch: null, leases: [], fences: [], jobs: [], runs: [] });
  });
});

/** Lambda's event source mapping API, as much as pause/resume use: a mapping settles one GET after each update. */
class LocalLambda {
  readonly requests: { method: string; path: string; body: unknown; signed: boolean }[] = [];
  readonly state = new Map<string, string>();
  /** Functions it invokes by name (Invoke, RequestResponse): a handler that throws answers as Lambda does, 200 with X-Amz-Function-Error. */
  readonly functions = new Map<string, (event: unknown) => Promise<unknown>>();
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer(
      (req, res) =>
        void this.handle(req).then(([status, body, headers]) =>
          // Lambda names the error in x-amzn-ErrorType; the SDK builds the typed exception from it.
          res.writeHead(status, { 'content-type': 'application/json', ...(status === 404 ? { 'x-amzn-errortype': 'ResourceNotFoundException' } : {}), ...headers }).end(JSON.stringify(body)),
        ),
    );
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  stop(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }

  /** Points the SDK's Lambda client here (its own endpoint setting), with a region and made-up keys. */
  use(): void {
    vi.stubEnv('AWS_ENDPOINT_URL_LAMBDA', this.url);
    vi.stubEnv('AWS_REGION', 'eu-west-1');
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
  }

  private async handle(req: IncomingMessage): Promise<[number, unknown, Record<string, string>?]> {
    let text = '';
    for await (const chunk of req) text += String(chunk);
    const body = text === '' ? undefined : (JSON.parse(text) as { Enabled?: boolean });
    this.requests.push({ method: req.method ?? '', path: req.url ?? '', body, signed: String(req.headers.authorization).startsWith('AWS4-HMAC-SHA256') });
    const invoke = /^\/2015-03-31\/functions\/([^/?]+)\/invocations/.exec(req.url ?? '');
    if (invoke !== null) {
      const fn = this.functions.get(decodeURIComponent(invoke[1]!));
      if (fn === undefined) return [404, { Type: 'User', Message: `Function not found: ${invoke[1]}` }];
      try {
        return [200, await fn(body)];
      } catch (e) {
        return [200, { errorType: (e as Error).name, errorMessage: (e as Error).message }, { 'x-amz-function-error': 'Unhandled' }];
      }
    }
    const m = /^\/2015-03-31\/event-source-mappings\/([^/?]+)$/.exec(req.url ?? '');
    const uuid = m?.[1];
    if (uuid === undefined || !this.state.has(uuid)) return [404, { Type: 'User', Message: 'The resource you requested does not exist.' }];
    if (req.method === 'PUT') {
      this.state.set(uuid, body?.Enabled ? 'Enabling' : 'Disabling');
      return [202, { UUID: uuid, State: this.state.get(uuid) }];
    }
    const now = this.state.get(uuid)!;
    if (now === 'Enabling' || now === 'Disabling') this.state.set(uuid, now === 'Enabling' ? 'Enabled' : 'Disabled');
    return [200, { UUID: uuid, State: now }];
  }
}

describe('status: a job\'s progress and the time it has left', () => {
  it('the share done, and while it runs the time left at the pace kept since it was created; nothing to estimate before its first unit or after its end', () => {
    const created = 1_000_000;
    expect(progressOf({ status: 'RUNNING', cursor: 40, totalUnits: 100, createdAt: created }, created + 60_000)).toBe(' (40 %, ~90 s left)');
    expect(progressOf({ status: 'RUNNING', cursor: 10, totalUnits: 1000, createdAt: created }, created + 60_000)).toBe(' (1 %, ~99 min left)');
    expect(progressOf({ status: 'PENDING', cursor: 0, totalUnits: 100, createdAt: created }, created + 60_000)).toBe(' (0 %)');
    expect(progressOf({ status: 'DONE', cursor: 100, totalUnits: 100, createdAt: created }, created + 60_000)).toBe(' (100 %)');
    expect(progressOf({ status: 'RUNNING', cursor: 1, totalUnits: 100_000, createdAt: created }, created + 60_000)).toBe(' (0 %, ~1666.7 h left)');
    expect(progressOf({ status: 'RUNNING' }, created)).toBe('');
  });
});

describe('status --outbox: what the outbox came to, per target', () => {
  it('counts each target\'s items by state, the declines among the FAILED, and the bounces and complaints the provider reported', async () => {
    const put = (Item: Record<string, unknown>) => t.dynamo.doc.send(new PutCommand({ TableName: t.names.outbox, Item }));
    await put({ pk: 'email#1', kind: 'email', status: 'SENT', providerEvents: new Set(['SEND:m1', 'BOUNCE:m1']) });
    await put({ pk: 'email#2', kind: 'email', status: 'SENT', providerEvents: new Set(['SEND:m2', 'COMPLAINT:m2']) });
    await put({ pk: 'email#3', kind: 'email', status: 'PENDING' });
    await put({ pk: 'payment#1', kind: 'http', target: 'payments', status: 'SENT' });
    await put({ pk: 'payment#2', kind: 'http', target: 'payments', status: 'FAILED', refusal: 'effect' });
    await put({ pk: 'payment#3', kind: 'http', target: 'payments', status: 'FAILED', refusal: 'request' });
    const file = join(tempDir('fenced-ops-'), 'cdk-outputs.json');
    writeFileSync(file, JSON.stringify({ FencedWorkflow: outputsOf(t.names) }));
    const r = await ops('status', ['--outputs', file, '--endpoint', t.endpoint, '--outbox']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Outbox (6 items):\n  email        PENDING 1, SENT 2  (1 bounced, 1 complaint(s))\n  payments     FAILED 2, SENT 1  (1 declined)');
    const json = await ops('status', ['--outputs', file, '--endpoint', t.endpoint, '--outbox', '--json']);
    expect(JSON.parse(json.stdout).outbox).toEqual([
      { target: 'email', items: 3, byStatus: { SENT: 2, PENDING: 1 }, declined: 0, bounced: 1, complaints: 1 },
      { target: 'payments', items: 3, byStatus: { SENT: 1, FAILED: 2 }, declined: 1, bounced: 0, complaints: 0 },
    ]);
  });
});

describe("redrive: the work DLQ's messages back to the work queue, by SQS's own move task", () => {
  const DLQ = 'arn:aws:sqs:eu-west-1:111122223333:FencedWorkflow-WorkflowDeadLetterQueue-abc';
  const calls: { target: string; body: Record<string, unknown> }[] = [];
  let server: Server;
  let url = '';
  let polls = 0;
  beforeAll(async () => {
    // SQS's JSON protocol for the two calls redrive makes: a task starts, is RUNNING once, then COMPLETED.
    server = createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += String(c)));
      req.on('end', () => {
        const target = String(req.headers['x-amz-target'] ?? '');
        const body = JSON.parse(text || '{}') as Record<string, unknown>;
        calls.push({ target, body });
        res.setHeader('content-type', 'application/x-amz-json-1.0');
        if (body.SourceArn !== DLQ) return res.writeHead(400).end(JSON.stringify({ __type: 'com.amazonaws.sqs#ResourceNotFoundException', message: 'The specified queue does not exist.' }));
        if (target === 'AmazonSQS.StartMessageMoveTask') return res.writeHead(200).end(JSON.stringify({ TaskHandle: 'task-1' }));
        const done = ++polls > 1;
        return res.writeHead(200).end(JSON.stringify({ Results: [{ TaskHandle: 'task-1', Status: done ? 'COMPLETED' : 'RUNNING', SourceArn: DLQ, ApproximateNumberOfMessagesMoved: done ? 3 : 1, ApproximateNumberOfMessagesToMove: 3 }] }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  const useLocalSqs = () => {
    vi.stubEnv('AWS_ENDPOINT_URL_SQS', url);
    vi.stubEnv('AWS_REGION', 'eu-west-1');
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
  };
  afterEach(() => vi.unstubAllEnvs());

  it("starts the move of the DLQ named in the outputs and, with --wait, follows it until SQS says it completed", async () => {
    useLocalSqs();
    const file = join(tempDir('fenced-ops-'), 'cdk-outputs.json');
    writeFileSync(file, JSON.stringify({ FencedWorkflow: outputsOf(t.names, { [OUTPUTS.deadLetterQueueArn]: DLQ }) }));
    const { redriveDeadLetters } = await import('../cli/ops/redrive.js');
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    expect(await redriveDeadLetters(DLQ, { wait: true, json: false, pollMs: 1 })).toBe(0);
    vi.restoreAllMocks();
    expect(calls.map((c) => c.target)).toEqual(['AmazonSQS.StartMessageMoveTask', 'AmazonSQS.ListMessageMoveTasks', 'AmazonSQS.ListMessageMoveTasks']);
    const r = await ops('redrive', ['--outputs', file, '--json']);
    expect(JSON.parse(r.stdout)).toEqual({ dlq: DLQ, taskHandle: 'task-1' });
  });

  it('a queue that is not there, a malformed ARN, or none at all: one line, nothing moved', async () => {
    useLocalSqs();
    await expect(opsCommand('redrive', ['--dlq-arn', 'arn:aws:sqs:eu-west-1:111122223333:gone'])).rejects.toThrow(/^--dlq-arn: no queue arn:aws:sqs:eu-west-1:111122223333:gone/);
    await expect(opsCommand('redrive', ['--dlq-arn', 'not-an-arn'])).rejects.toThrow(/^--dlq-arn: must be an SQS queue ARN/);
    await expect(opsCommand('redrive', [])).rejects.toThrow(/redrive needs the work queue's dead-letter queue/);
  });
});

describe("start: a run now, through the stack's own starter, as the schedule would start it", () => {
  const lambda = new LocalLambda();
  const STARTER = 'FencedWorkflow-WorkflowStarter-abc';
  const enqueued: string[] = [];
  let file: string;
  beforeAll(async () => {
    await lambda.start();
    // The real starter handler on this file's tables, behind the local Lambda's Invoke.
    const handler = createStarterHandler({ doc: t.dynamo.doc, tables: t.names, clock: systemClock, queue: { send: async (m: { jobId: string }) => void enqueued.push(m.jobId) } as unknown as WorkQueue, telemetry: silentTelemetry, workload: workloadNamed('invoices'), unitSize: 20, items: 1000 });
    lambda.functions.set(STARTER, (event) => handler(event));
    file = join(tempDir('fenced-ops-'), 'cdk-outputs.json');
    writeFileSync(file, JSON.stringify({ FencedWorkflow: outputsOf(t.names, { [OUTPUTS.starterFunction]: STARTER }) }));
  });
  afterAll(() => lambda.stop());
  const useLocalLambda = () => lambda.use();
  afterEach(() => vi.unstubAllEnvs());

  it('--items 50 starts a run of 50 items (the workload\'s own payload field names none) and enqueues its job; the same slot again finds it and starts nothing new', async () => {
    useLocalLambda();
    const first = await ops('start', ['--items', '50', '--payload', '{"period":"2026-02"}', '--outputs', file]);
    expect(first.code).toBe(0);
    expect(first.stdout).toBe('started run invoice-run#2026-02: 1 shard job(s), 1 enqueued (PENDING).\n');
    const job = (await t.dynamo.doc.send(new GetCommand({ TableName: t.names.jobs, Key: { pk: 'invoice-run#2026-02' }, ConsistentRead: true }))).Item;
    expect(job).toMatchObject({ status: 'PENDING' });
    expect(JSON.stringify(job)).toContain('"customers":50');
    expect(enqueued).toEqual(['invoice-run#2026-02']);
    const again = await ops('start', ['--items', '50', '--payload', '{"period":"2026-02"}', '--outputs', file, '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ runId: 'invoice-run#2026-02', created: false });
    expect(lambda.requests.filter((r) => r.path.includes('/invocations')).every((r) => r.signed)).toBe(true);
  });

  it('bad input is one line, nothing started: --items out of range, a payload the starter refuses, no starter named', async () => {
    useLocalLambda();
    await expect(opsCommand('start', ['--items', 'many', '--outputs', file])).rejects.toThrow(InvalidInputError);
    await expect(opsCommand('start', ['--items', '50', '--payload', '{"period":"Feb"}', '--outputs', file])).rejects.toThrow(/^payload: the starter refused it: payload.period: /);
    await expect(opsCommand('start', ['--items', '50', '--payload', '[1]', '--outputs', file])).rejects.toThrow(/--payload: must be a JSON object/);
    await expect(opsCommand('start', ['--items', '50'])).rejects.toThrow(/start needs the stack's starter/);
  });
});

describe('pause and resume: the worker stops receiving without a single receive counted toward the DLQ', () => {
  const MAPPING = '1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d';
  const lambda = new LocalLambda();
  let file: string;
  beforeAll(async () => {
    await lambda.start();
    file = join(tempDir('fenced-ops-'), 'cdk-outputs.json');
    writeFileSync(file, JSON.stringify({ FencedWorkflow: outputsOf(t.names, { [OUTPUTS.workerEventSourceMapping]: MAPPING }), Other: outputsOf(other) }));
  });
  afterAll(() => lambda.stop());
  const useLocalLambda = () => lambda.use();
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('pause disables the mapping named in the outputs and waits until Lambda reports it Disabled; resume enables it again', async () => {
    useLocalLambda();
    lambda.state.set(MAPPING, 'Enabled');
    lambda.requests.length = 0;
    const paused = await ops('pause', ['--outputs', file, '--stack', 'FencedWorkflow', '--json']);
    expect(paused.code).toBe(0);
    expect(JSON.parse(paused.stdout)).toEqual({ mapping: MAPPING, enabled: false, state: 'Disabled' });
    expect(lambda.requests.map((r) => [r.method, r.path, r.body])).toEqual([
      ['PUT', `/2015-03-31/event-source-mappings/${MAPPING}`, { Enabled: false }],
      ['GET', `/2015-03-31/event-source-mappings/${MAPPING}`, undefined],
      ['GET', `/2015-03-31/event-source-mappings/${MAPPING}`, undefined],
    ]);
    expect(lambda.requests.every((r) => r.signed)).toBe(true);
    expect(lambda.state.get(MAPPING)).toBe('Disabled');

    const resumed = await ops('resume', ['--mapping-id', MAPPING]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/resumed: the worker's event source mapping 1b2c3d4e-.* is Enabled/);
    expect(lambda.requests.filter((r) => r.method === 'PUT').map((r) => r.body)).toEqual([{ Enabled: false }, { Enabled: true }]);
    expect(lambda.state.get(MAPPING)).toBe('Enabled');
  });

  it('pause says what it did not stop: running invocations finish, messages wait', async () => {
    useLocalLambda();
    lambda.state.set(MAPPING, 'Enabled');
    const paused = await ops('pause', ['--mapping-id', MAPPING]);
    expect(paused.stdout).toMatch(/paused: the worker's event source mapping .* is Disabled/);
    expect(paused.stdout).toMatch(/messages wait in the work queue/);
    expect(paused.stdout).toMatch(/already running finish/);
  });

  it('without a mapping id (none in the outputs, no --mapping-id, or a malformed one) nothing is sent', async () => {
    useLocalLambda();
    lambda.requests.length = 0;
    await expect(opsCommand('pause', ['--outputs', file, '--stack', 'Other'])).rejects.toThrow(/--mapping-id: pause needs the worker's event source mapping: --outputs FILE .*WorkerEventSourceMappingId.* or --mapping-id UUID/);
    await expect(opsCommand('pause', ['--table-prefix', 'x-'])).rejects.toThrow(/--mapping-id/);
    await expect(opsCommand('resume', ['--mapping-id', 'not-a-uuid'])).rejects.toThrow(/--mapping-id: must be an event source mapping UUID/);
    expect(lambda.requests).toEqual([]);
  });

  it('a mapping Lambda does not know is reported as such', async () => {
    useLocalLambda();
    await expect(opsCommand('pause', ['--mapping-id', '00000000-0000-4000-8000-000000000000'])).rejects.toThrow(/no event source mapping 00000000-.* in this account and region/);
  });
});

describe("seal raises the fences of the stack's own workload", () => {
  it('reads the workload from the outputs (WorkloadName): the invoice stack\'s fences are invoices#<job>, a reports stack\'s fence#<job>; a --workload that contradicts the outputs is refused before anything is written', async () => {
    const own = await makeTables(import.meta.filename);
    const { PutCommand, GetCommand } = await import('@aws-sdk/lib-dynamodb');
    await own.dynamo.doc.send(new PutCommand({ TableName: own.names.leases, Item: { pk: 'job#r-1', generation: 5 } }));
    const file = join(tempDir('fenced-ops-'), 'outputs.json');
    const fence = async (pk: string) => (await own.dynamo.doc.send(new GetCommand({ TableName: own.names.fences, Key: { pk }, ConsistentRead: true }))).Item;
    const withWorkload = (name: string) => writeFileSync(file, JSON.stringify({ FencedWorkflow: outputsOf(own.names, { [OUTPUTS.workload]: name }) }));

    withWorkload('reports');
    await expect(opsCommand('seal', ['--outputs', file, '--endpoint', own.endpoint, '--epoch', '1', '--workload', 'invoices'])).rejects.toThrow(/the stack's outputs name workload "reports", not "invoices"/);
    expect((await ops('raise-epoch', ['--outputs', file, '--endpoint', own.endpoint, '--epoch', '1', '--json'])).code).toBe(0);
    expect((await ops('seal', ['--outputs', file, '--endpoint', own.endpoint, '--epoch', '1', '--json'])).code).toBe(0);
    expect(await fence('fence#r-1')).toMatchObject({ generation: 2 ** 32 });
    expect(await fence('invoices#r-1')).toBeUndefined();

    withWorkload('invoices');
    expect((await ops('seal', ['--outputs', file, '--endpoint', own.endpoint, '--epoch', '1', '--json'])).code).toBe(0);
    expect(await fence('invoices#r-1')).toMatchObject({ generation: 2 ** 32 });
  });
});

/** A renewals stack's tables of its own (its outputs file naming them), with `items` in its outbox: how to read an item back, and the flags that name the stack. */
async function renewalsStackWith(items: Record<string, unknown>[]): Promise<{ read: (pk: string) => Promise<Record<string, unknown> | undefined>; where: string[] }> {
  const own = await makeTables(import.meta.filename);
  const { PutCommand, GetCommand } = await import('@aws-sdk/lib-dynamodb');
  const file = join(tempDir('fenced-ops-'), 'outputs.json');
  writeFileSync(file, JSON.stringify({ FencedWorkflow: outputsOf(own.names, { [OUTPUTS.workload]: 'renewals' }) }));
  for (const Item of items) await own.dynamo.doc.send(new PutCommand({ TableName: own.names.outbox, Item }));
  const read = async (pk: string) => (await own.dynamo.doc.send(new GetCommand({ TableName: own.names.outbox, Key: { pk }, ConsistentRead: true }))).Item;
  return { read, where: ['--outputs', file, '--endpoint', own.endpoint] };
}

describe("decide: a person's decision on an UNKNOWN outbox item, with the stack's workload's steps", () => {
  it("settles it as told, creates the step of that outcome once, prints what it did; bad flags and an item not UNKNOWN are refused, nothing written", async () => {
    const id = 'charge#2026-11#sub-0000007';
    const request = { subscription: 'sub-0000007', merchant: 'm-03', plan: 'pro', amountCents: 1900, currency: 'EUR', card: 'tok_visa', reference: `renewal#2026-11#sub-0000007` };
    const { read, where } = await renewalsStackWith([{ pk: id, kind: 'http', target: 'charges', path: '/merchants/m-03/charges', request, context: { subscriber: 'sub-0000007@subscribers.example', month: '2026-11' }, status: 'UNKNOWN', failureReason: 'past the provider key retention', jobId: 'renewal-run#2026-11' }]);

    await expect(opsCommand('decide', [id, '--accepted', '--declined', '--note', 'x', ...where])).rejects.toThrow(/give exactly one/);
    await expect(opsCommand('decide', [id, '--accepted', '--note', 'x', ...where])).rejects.toThrow(/--provider-id/);
    await expect(opsCommand('decide', [id, '--declined', ...where])).rejects.toThrow(/--note/);
    await expect(opsCommand('decide', [id, '--declined', '--provider-id', 'ch_1', '--note', 'x', ...where])).rejects.toThrow(InvalidInputError);
    await expect(opsCommand('decide', ['--declined', '--note', 'x', ...where])).rejects.toThrow(/exactly one outbox item id/);
    expect(await read(id)).toMatchObject({ status: 'UNKNOWN' });

    const r = await ops('decide', [id, '--accepted', '--provider-id', 'ch_3Pq', '--note', 'charged, per the dashboard', ...where]);
    expect(r).toEqual({ code: 0, stdout: `${id}: SENT (accepted, an operator's decision); follow-ups created: ${id}>receipt\n` });
    expect(await read(id)).toMatchObject({ status: 'SENT', providerMessageId: 'ch_3Pq', decidedBy: 'operator', decisionNote: 'charged, per the dashboard', followUps: [`${id}>receipt`] });
    expect(await read(`${id}>receipt`)).toMatchObject({ kind: 'email', status: 'PENDING', to: 'sub-0000007@subscribers.example', parent: id, step: 'receipt' });
    expect(String((await read(`${id}>receipt`))?.body)).toContain('(charge ch_3Pq)');

    await expect(opsCommand('decide', [id, '--declined', '--note', 'changed my mind', ...where])).rejects.toThrow(`outbox item ${id} is SENT, not UNKNOWN`);
    expect(await read(`${id}>card-declined`)).toBeUndefined();
  });
});

describe('retry: a new attempt of a declined outbox item, under a new key', () => {
  it('creates <id>#attempt-2 with what the item said and marks the item retriedBy it, printing what it did; without a note, or an item not declined, refused, nothing written', async () => {
    const id = 'charge#2026-11#sub-0000009';
    const request = { subscription: 'sub-0000009', merchant: 'm-03', plan: 'pro', amountCents: 1900, currency: 'EUR', card: 'tok_visa' };
    const { read, where } = await renewalsStackWith([
      { pk: id, kind: 'http', target: 'charges', path: '/merchants/m-03/charges', request, status: 'FAILED', refusal: 'effect', failureReason: 'card_declined', jobId: 'renewal-run#2026-11', unit: 0 },
      { pk: 'sent-one', kind: 'http', target: 'charges', request, status: 'SENT', jobId: 'renewal-run#2026-11', unit: 0 },
    ]);

    await expect(opsCommand('retry', [id, ...where])).rejects.toThrow(/--note: say why/);
    await expect(opsCommand('retry', ['--note', 'x', ...where])).rejects.toThrow(/exactly one outbox item id/);
    await expect(opsCommand('retry', ['sent-one', '--note', 'x', ...where])).rejects.toThrow('outbox item sent-one is SENT');
    expect(await read(id)).not.toHaveProperty('retriedBy');

    const r = await ops('retry', [id, '--note', 'card updated', ...where]);
    expect(r).toEqual({ code: 0, stdout: `${id}: retried as ${id}#attempt-2 (a new attempt under a new key; the sender sends it)\n` });
    expect(await read(id)).toMatchObject({ status: 'FAILED', retriedBy: [`${id}#attempt-2`], retryNote: 'card updated' });
    expect(await read(`${id}#attempt-2`)).toMatchObject({ status: 'PENDING', request, path: '/merchants/m-03/charges', attemptOf: id, attempt: 2 });
  });
});
