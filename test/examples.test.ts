// tier: quick
/**
 * The documentation's examples (docs/examples/*.ts), run on DynamoDB Local, and the check that the
 * docs show exactly the code tested here: docs/choosing.md and docs/library.md embed each example
 * after a `<!-- example: docs/examples/<file> -->` marker, and the block must equal the file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeGeneration, ManualClock, StaleGenerationError, type Lease } from '../lib/protocol/index.js';
import { recordPayment } from '../docs/examples/create-once.js';
import { inTurn } from '../docs/examples/fair-queue.js';
import { writeReport } from '../docs/examples/fenced-write.js';
import { saveBalance } from '../docs/examples/guarded-put.js';
import { sellSeats } from '../docs/examples/optimistic.js';
import { runIfLeader } from '../docs/examples/singleton-worker.js';
import { granted } from './support/fixtures.js';
import { Scene } from './support/scene.js';
import { proxiedTables, waiterTable } from './support/tables.js';

const env = proxiedTables(import.meta.filename);
const root = new URL('..', import.meta.url).pathname;
const waiters = waiterTable(env);
/** "A table of your own": keyed by `pk` (S), nothing of the workflow's. */
let mine: string;

beforeAll(async () => {
  mine = `${env.t.prefix}mine`;
  await env.t.dynamo.client.send(
    new CreateTableCommand({ TableName: mine, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }] }),
  );
});

const item = async (pk: string) => (await env.t.dynamo.doc.send(new GetCommand({ TableName: mine, Key: { pk }, ConsistentRead: true }))).Item;

describe('docs/choosing.md examples', () => {
  it('guarded-put: the run at generation 8 saves the balance, the paused run at 7 is refused and changes nothing', async () => {
    const { doc } = env.t.dynamo;
    expect(await saveBalance(doc, mine, 'c1', 800, makeGeneration(0, 8))).toBe('saved');
    expect(await saveBalance(doc, mine, 'c1', 700, makeGeneration(0, 7))).toBe('stale');
    expect(await item('balance#c1')).toMatchObject({ cents: 800, generation: makeGeneration(0, 8) });
  });

  it('create-once: a payment is recorded once; the same request again is a duplicate, other content under its id a conflict', async () => {
    const { doc } = env.t.dynamo;
    expect(await recordPayment(doc, mine, 'p-1', 500)).toBe('recorded');
    expect(await recordPayment(doc, mine, 'p-1', 500)).toBe('duplicate');
    expect(await recordPayment(doc, mine, 'p-1', 999)).toBe('conflict');
    expect(await item('payment#p-1')).toEqual({ pk: 'payment#p-1', cents: 500 });
  });

  it('optimistic: two sellers at once on the last two seats both sell one; then the show is sold out', async () => {
    const { doc } = env.t.dynamo;
    await doc.send(new PutCommand({ TableName: mine, Item: { pk: 'show#s1', seatsLeft: 2 } }));
    expect(await Promise.all([sellSeats(doc, mine, 's1', 1), sellSeats(doc, mine, 's1', 1)])).toEqual(['sold', 'sold']);
    expect(await sellSeats(doc, mine, 's1', 1)).toBe('sold-out');
    expect(await item('show#s1')).toMatchObject({ seatsLeft: 0 });
  });
});

describe('docs/library.md examples', () => {
  it('singleton-worker: one leader works while the other is told so; released, the other leads; a leader frozen past its deadline is stopped', async () => {
    const clock = new ManualClock();
    const a = env.leases('A', { clock, durationMs: 3_000 });
    const b = env.leases('B', { clock, durationMs: 3_000 });
    let second: string | undefined;
    expect(await runIfLeader(a, 'leader#reports', async () => void (second = await runIfLeader(b, 'leader#reports', async () => undefined)))).toBe('done');
    expect(second).toBe('not-leader');
    expect(await runIfLeader(b, 'leader#reports', async () => undefined)).toBe('done');

    // A leader whose process stalls past its lease while the other one leads: its next keep() stops it.
    let sawStop = false;
    const frozen = runIfLeader(a, 'leader#reports', async (_lease, keep) => {
      expect(await keep()).toBe(true);
      await clock.advance(5_000); // the whole lease passes at once
      expect(await runIfLeader(b, 'leader#reports', async () => undefined)).toBe('done');
      sawStop = !(await keep());
    });
    expect(await frozen).toBe('stopped');
    expect(sawStop).toBe(true);
  });

  it('fenced-write: the holder writes its report; after a takeover the old holder is refused at its first write and the new one finishes from the checkpoint', async () => {
    const { doc } = env.t.dynamo;
    const clock = new ManualClock();
    const old = granted(await env.leases('A', { clock }).tryAcquire('report#2026-11'));
    await writeReport(doc, mine, '2026-11', old, [['a0', 'a1']]);
    await clock.advance(10_001); // A pauses past its lease; B takes over
    const next = granted(await env.leases('B', { clock }).tryAcquire('report#2026-11'));
    await writeReport(doc, mine, '2026-11', next, [['b0', 'b1'], ['b2']]);

    await expect(writeReport(doc, mine, '2026-11', old, [['late'], ['late'], ['late']])).rejects.toBeInstanceOf(StaleGenerationError);
    expect(await item('line#2026-11#0#0')).toMatchObject({ text: 'a0', generation: old.generation });
    expect(await item('line#2026-11#1#0')).toMatchObject({ text: 'b2', generation: next.generation });
    expect(await item('line#2026-11#2#0')).toBeUndefined();
    expect(await item('progress#2026-11')).toMatchObject({ cursor: 2, generation: next.generation });
  });

  it('fair-queue: three contenders queued behind a holder work in the order they queued', async () => {
    const scene = new Scene();
    const mode = { kind: 'wall-clock', maxClockSkewMs: 100 } as const;
    const holder = env.leases('H', { clock: scene.clock, mode, durationMs: 1_000 });
    const held: Lease = granted(await holder.tryAcquire('fair#docs'));
    const order: string[] = [];
    for (const who of ['first', 'second', 'third']) {
      const leases = env.leases(who, { clock: scene.clock, mode, durationMs: 1_000 });
      void scene.start(() => inTurn(leases, env.t.dynamo.doc, waiters.name, 'fair#docs', async () => void order.push(who)));
      await scene.settle();
    }
    await holder.release(held);
    await scene.run(() => order.length === 3);
    expect(order).toEqual(['first', 'second', 'third']);
  });
});

describe('the docs show the tested code', () => {
  const docs = ['docs/choosing.md', 'docs/library.md'].map((path) => ({ path, text: readFileSync(root + path, 'utf8') }));
  const shown = docs.flatMap(({ path, text }) => [...text.matchAll(/<!-- example: (docs\/examples\/[\w-]+\.ts) -->\n```ts\n([\s\S]*?)```/g)].map((m) => ({ doc: path, file: m[1]!, code: m[2]! })));

  it('every example block in the docs is its file, to the character', () => {
    expect(shown.length).toBeGreaterThan(0);
    for (const s of shown) expect(s.code, `${s.doc} shows ${s.file}`).toBe(readFileSync(root + s.file, 'utf8'));
  });

  it('every example file is shown in the docs, and every example marker is followed by its code block', () => {
    const files = readdirSync(root + 'docs/examples').filter((f) => f.endsWith('.ts')).map((f) => `docs/examples/${f}`);
    expect(new Set(shown.map((s) => s.file))).toEqual(new Set(files));
    const markers = docs.flatMap(({ text }) => [...text.matchAll(/<!-- example: /g)]).length;
    expect(markers).toBe(shown.length);
  });
});
