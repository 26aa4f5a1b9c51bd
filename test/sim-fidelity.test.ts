// tier: full
/**
 * Fidelity, proven: random operation sequences (test/sim/fidelity/ops.ts) run against DynamoDB
 * Local and against the in-memory model the simulator uses, through the real SDK, and must give
 * identical answers, error types, cancellation reasons and stream records, up to the listed
 * normalisations. A model with a planted mistake must be caught by the same comparison.
 */
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { streamsClient } from '../cli/local/streams.js';
import { localCredentials } from '../lib/protocol/index.js';
import { simDynamo, simStreams } from './sim/dynamodb/clients.js';
import { answer, type SimTransport, type SimWireAnswer } from './sim/dynamodb/handler.js';
import { DynamoModel } from './sim/dynamodb/model.js';
import { differential, NORMALISATIONS, type Engine, type Outcome } from './sim/fidelity/differential.js';
import { sequence, type Op } from './sim/fidelity/ops.js';
import { replay, slice, TRACED_NORMALISATIONS, type TracedRequest } from './sim/fidelity/traced.js';
import { comparedShapes, COMPARED_SHAPES_FILE, requestShapes, writeComparedShapes } from './sim/dynamodb/shape.js';
import { simulateOne } from './sim/run.js';
import { recordAfterRelease } from './sim/fidelity/outbox-record.js';

const endpoint = inject('dynamoEndpoint');
const client = new DynamoDBClient({ endpoint, region: 'us-east-1', ...localCredentials(), maxAttempts: 1 });
const streams = streamsClient(endpoint);
afterAll(() => {
  client.destroy();
  streams.destroy();
});

const fresh = () => `fid-${randomBytes(4).toString('hex')}-`;
const localEngine = (prefix: string): Engine => ({ client, streams, prefix });
function modelEngine(prefix: string, plant?: (model: DynamoModel) => SimTransport): Engine {
  const model = new DynamoModel();
  const transport = plant?.(model);
  return { client: simDynamo(model, transport).client, streams: simStreams(model, transport), prefix };
}

const dropRemoves = (a: SimWireAnswer): SimWireAnswer => {
  const body = JSON.parse(a.body) as { Records?: { eventName?: string }[] };
  return body.Records ? { ...a, body: JSON.stringify({ ...body, Records: body.Records.filter((r) => r.eventName !== 'REMOVE') }) } : a;
};

/** Sequences per run in `npm test`; a longer run: `SIM_FIDELITY_RUNS=2000 SIM_FIDELITY_SEED=9 npx vitest run test/sim-fidelity.test.ts`. */
const RUNS = Number(process.env.SIM_FIDELITY_RUNS ?? 60);
const SEED = Number(process.env.SIM_FIDELITY_SEED ?? 2026);

/** Every request shape this file compared against DynamoDB Local (the committed list must be among them). */
const compared = new Set<string>();
/** The streams API the random sequences read their stream records with (differential.ts streamOf): compared with every sequence. */
const STREAM_READS = ['DescribeStream', 'GetShardIterator', 'GetRecords'];

type Traced = (onRequest: (service: 'dynamodb' | 'streams', operation: string, input: Record<string, unknown>) => void) => Promise<unknown>;
/**
 * The simulated runs whose requests are replayed: a greedy cover of every request shape (50) that
 * 117 simulated runs send, measured: the chaos file's seeds and controls, the load profile, and
 * seeds 1-6 of the small and sharded shapes under the real protocol, every control and the
 * reports workload (seeds 7 and on of the long runs showed no other).
 */
const TRACED: [string, Traced][] = [
  ['seed 305, shape chaos (a DR drill in version-watch mode)', (onRequest) => simulateOne(305, 'fenced', { shape: 'chaos', shapes: 'any', onRequest })],
  ['checkThenAct, seed 6, shape small', (onRequest) => simulateOne(6, 'checkThenAct', { shape: 'small', shapes: 'any', onRequest })],
  ['heldAsFailed, seed 103, shape chaos', (onRequest) => simulateOne(103, 'heldAsFailed', { shape: 'chaos', shapes: 'any', onRequest })],
  ['counterReset, seed 3, shape small', (onRequest) => simulateOne(3, 'counterReset', { shape: 'small', shapes: 'any', onRequest })],
  // A new epoch's first grant on a lease whose claim is free by expiry (a drill between a shard's units): seed 184 of the long run sent it first.
  ['seed 184, shape sharded (a new epoch granted over an expired claim)', (onRequest) => simulateOne(184, 'fenced', { shape: 'sharded', shapes: 'any', onRequest })],
  // The outbox alone: what a schedule sends only when SES's record comes after a claim was given back.
  ['an email record that came after its claim was given back (the outbox alone)', recordAfterRelease],
];

describe('the in-memory DynamoDB model against DynamoDB Local', () => {
  it(`gives the same answers on ${RUNS} random sequences, and the sequences reach every outcome`, async () => {
    const seen = new Map<string, number>();
    const tally = (o: Outcome) => {
      const k = 'ok' in o ? 'ok' : o.error;
      seen.set(k, (seen.get(k) ?? 0) + 1);
    };
    await fc.assert(
      fc.asyncProperty(sequence(), async (ops) => {
        const prefix = fresh(); // one name on both engines: answers name their tables
        const m = await differential(localEngine(prefix), modelEngine(prefix), ops, tally);
        if (m === undefined) for (const op of STREAM_READS) compared.add(op);
        if (m !== undefined) expect.soft(m, JSON.stringify(m)).toBeUndefined();
        return m === undefined;
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // A generator that never reaches a refusal proves little: each kind of answer is met.
    for (const k of ['ok', 'ConditionalCheckFailedException', 'TransactionCanceledException', 'ValidationException', 'IdempotentParameterMismatchException']) expect(seen.get(k) ?? 0, `${k} met`).toBeGreaterThan(0);
  }, 120_000 + RUNS * 1_000);

  // The model's mistakes the random sequences found (seed 1, 500 sequences), each as the sequence that showed it:
  // red against the model before its fix, and held here against DynamoDB Local.
  const S = (s: string) => ({ S: s });
  const N = (n: string) => ({ N: n });
  const put = (item: Record<string, unknown>, extra: Record<string, unknown> = {}): Op => ({ op: 'PutItem', input: { TableName: 'plain', Item: item, ...extra } });
  const txUpdate = (key: Record<string, unknown>, table: string, expr: string, names: Record<string, string>, values: Record<string, unknown>, token?: string): Op => ({
    op: 'TransactWriteItems',
    input: { TransactItems: [{ Update: { TableName: table, Key: key, UpdateExpression: expr, ExpressionAttributeNames: names, ExpressionAttributeValues: values } }], ...(token ? { ClientRequestToken: token } : {}) },
  });
  const found: [string, Op[]][] = [
    ['begins_with of a BOOL value, behind a false AND', [put({ pk: S('a') }, { ConditionExpression: 'attribute_exists(#m) AND begins_with(#s, :b)', ExpressionAttributeNames: { '#m': 'm', '#s': 's' }, ExpressionAttributeValues: { ':b': { BOOL: true } } })]],
    ['an ordering of a BOOL value', [put({ pk: S('a') }, { ConditionExpression: '#a < :b', ExpressionAttributeNames: { '#a': 'a' }, ExpressionAttributeValues: { ':b': { BOOL: true } } })]],
    ['BETWEEN bounds out of order, in a filter of an empty Query', [{ op: 'Query', input: { TableName: 'sorted', KeyConditionExpression: '#pk = :p', FilterExpression: '#s BETWEEN :hi AND :lo', ExpressionAttributeNames: { '#pk': 'pk', '#s': 's' }, ExpressionAttributeValues: { ':p': S('a'), ':hi': S('y'), ':lo': S('xy') } } }]],
    ['BETWEEN bounds of two types', [put({ pk: S('a') }, { ConditionExpression: 'NOT #l BETWEEN :n AND :l', ExpressionAttributeNames: { '#l': 'l' }, ExpressionAttributeValues: { ':n': N('1'), ':l': { L: [N('1')] } } })]],
    ['a reused token with another request of overlapping paths', [txUpdate({ pk: S('a') }, 'plain', 'SET #s = :v', { '#s': 's' }, { ':v': S('x') }, 'tok'), txUpdate({ pk: S('a') }, 'plain', 'REMOVE #m SET #m.#k = :v', { '#m': 'm', '#k': 'k' }, { ':v': N('7') }, 'tok')]],
    ['a reused token with another request that would fail on the item', [txUpdate({ pk: S('a') }, 'plain', 'SET #s = :v', { '#s': 's' }, { ':v': S('x') }, 'tok'), txUpdate({ pk: S('a') }, 'plain', 'SET #m.#k = :v', { '#m': 'm', '#k': 'k' }, { ':v': N('7') }, 'tok')]],
    ['an index key set to a string in a transaction', [txUpdate({ pk: S('b'), sk: N('3') }, 'sorted', 'SET #gk = :g, #n = :s', { '#gk': 'gk', '#n': 'n' }, { ':g': S('g1'), ':s': S('1') })]],
    ['an index key set to a list in a transaction', [txUpdate({ pk: S('b'), sk: N('3') }, 'sorted', 'SET #gk = :l', { '#gk': 'gk' }, { ':l': { L: [N('1')] } })]],
  ];
  it.each(found)('agrees on %s', async (_name, ops) => {
    const prefix = fresh();
    expect(await differential(localEngine(prefix), modelEngine(prefix), ops)).toBeUndefined();
  });

  it('lists every normalisation it applies, each with its reason', () => {
    expect(NORMALISATIONS.length).toBeGreaterThan(0);
    for (const n of [...NORMALISATIONS, ...TRACED_NORMALISATIONS]) expect(n.why.length).toBeGreaterThan(20);
  });

  const traceOf = async (run: Traced): Promise<TracedRequest[]> => {
    const trace: TracedRequest[] = [];
    await run((service, operation, input) => {
      if (service === 'dynamodb') trace.push({ operation, input: structuredClone(input) });
    });
    return trace;
  };

  it.each(TRACED)('answers the requests of a simulated run alike: %s', async (_name, run) => {
    const trace = await traceOf(run);
    const requests = slice(trace);
    const { mismatch, shapes } = await replay(client, simDynamo(new DynamoModel()).client, requests, fresh());
    expect(mismatch, JSON.stringify(mismatch)).toBeUndefined();
    for (const s of shapes) compared.add(s);
    // The slice carries every shape of the run.
    expect(shapes).toEqual(new Set(trace.flatMap((r) => requestShapes(r.operation, r.input))));
  }, 60_000);

  it('catches, on a traced run, a model that answers a refused conditional UpdateItem as done', async () => {
    const plant: SimTransport = async (req, apply) => {
      const a = apply();
      return req.operation === 'UpdateItem' && a.body.includes('ConditionalCheckFailedException') ? { status: 200, body: '{}' } : a;
    };
    const trace = await traceOf(TRACED.find(([n]) => n.startsWith('heldAsFailed'))![1]);
    const { mismatch } = await replay(client, simDynamo(new DynamoModel(), plant).client, slice(trace), fresh());
    expect(mismatch?.request.operation).toBe('UpdateItem');
  }, 60_000);

  // Last: what the simulator may send is what this file compared (SIM_FIDELITY_WRITE_SHAPES=1 writes the list anew).
  it('compared every request shape the simulator answers (test/sim/dynamodb/compared-shapes.json)', () => {
    if (process.env.SIM_FIDELITY_WRITE_SHAPES === '1') writeComparedShapes(compared);
    expect([...comparedShapes()].filter((s) => !compared.has(s)), `shapes in ${COMPARED_SHAPES_FILE.pathname} this run did not compare`).toEqual([]);
  });

  // Teeth: the comparison must see a model that is wrong in a way the protocol would notice.
  const planted: [string, (model: DynamoModel) => SimTransport][] = [
    ['cancellation reasons in reverse order', () => async (_req, apply) => {
      const a = apply();
      const body = JSON.parse(a.body) as { CancellationReasons?: unknown[] };
      return body.CancellationReasons ? { ...a, body: JSON.stringify({ ...body, CancellationReasons: [...body.CancellationReasons].reverse() }) } : a;
    }],
    ['attribute_not_exists read as attribute_exists', (model) => async (req, apply) => (req.body.includes('attribute_not_exists') ? answer(model, { ...req, body: req.body.replaceAll('attribute_not_exists', 'attribute_exists') }) : apply())],
    ['no stream record for a delete', (model) => async (req, apply) => (req.operation === 'GetRecords' ? dropRemoves(apply()) : apply())],
  ];
  it.each(planted)('catches a model with %s', async (_name, plant) => {
    let caught = 0;
    await fc.assert(
      fc.asyncProperty(sequence(20), async (ops: Op[]) => {
        const prefix = fresh();
        if ((await differential(localEngine(prefix), modelEngine(prefix, plant), ops)) !== undefined) caught++;
        return true;
      }),
      { seed: 7, numRuns: 30 },
    );
    expect(caught).toBeGreaterThan(0);
  }, 120_000);
});
