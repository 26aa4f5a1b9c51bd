// tier: quick
/**
 * The fair acquire (lib/protocol/fair-acquire.ts) on DynamoDB Local. Every interleaving is forced:
 * one ManualClock that moves only when all contenders are parked (test/support/scene.ts), gates
 * in the acquire's hooks for pauses and crashes, the fault proxy for a cut-off connection.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { AcquireTimeoutError, FairAcquirer, skewedClock, type Clock, type FairPoint, type Lease, type LeaseManager } from '../lib/protocol/index.js';
import { granted, until } from './support/fixtures.js';
import { countByTable } from './support/request-counter.js';
import { Scene, type Gate } from './support/scene.js';
import { proxiedTables, waiterTable } from './support/tables.js';

const env = proxiedTables(import.meta.filename);
const L = 1_000;
const SKEW = 100;
const mode = { kind: 'wall-clock', maxClockSkewMs: SKEW } as const;
const waiters = waiterTable(env);

type Hook = (point: FairPoint, ticket: number) => Promise<void> | void;

/** A contender on the scene's clock (or one derived from it, skewed): a lease manager and its fair acquirer. */
function contender(scene: Scene, owner: string, opts: { hook?: Hook; random?: number; doc?: DynamoDBDocumentClient; clock?: Clock } = {}): FairAcquirer {
  const random = () => opts.random ?? 0.5;
  const leases = env.leases(owner, { clock: opts.clock ?? scene.clock, mode, durationMs: L, random, ...(opts.doc ? { doc: opts.doc } : {}) });
  return new FairAcquirer(leases, { doc: opts.doc ?? env.t.dynamo.doc, table: waiters.name, random, hooks: { at: (p, info) => opts.hook?.(p, info.ticket) } });
}

interface Grant {
  who: string;
  lease: Lease;
  at: number;
}

/** A contender's life: acquire fairly, hold for `holdMs`, release (through a client of its own: request counts stay the acquire's). */
function live(scene: Scene, grants: Grant[], who: string, fair: FairAcquirer, key: string, holdMs = L / 2): Promise<void> {
  return scene.start(async () => {
    const lease = await fair.acquire(key);
    grants.push({ who, lease, at: scene.clock.monotonicNow() });
    await scene.clock.sleep(holdMs);
    await env.leases(who).release(lease);
  });
}

const queue = (key: string) => waiters.queued(key);

/** A fresh scene whose key `key` is held by H (a plain holder, released or crashed as the test says), and its grant list. */
async function behindHolder(key: string): Promise<{ scene: Scene; holder: LeaseManager; held: Lease; grants: Grant[] }> {
  const scene = new Scene();
  const holder = env.leases('H', { clock: scene.clock, mode, durationMs: L });
  return { scene, holder, held: granted(await holder.tryAcquire(key)), grants: [] };
}

describe('fair acquire: FIFO, one contender at the lease', () => {
  it('five contenders that queue behind a holder are served in arrival order, one turn apart, generations +1 each; with the same jitter the plain acquire serves them in reverse', async () => {
    const key = 'fair#fifo';
    const { scene, holder, held: first, grants } = await behindHolder(key);
    const fairClient = env.dynamo();
    const fairRequests = countByTable(fairClient.client);
    for (let i = 0; i < 5; i++) {
      let joined = false;
      // Later arrivals draw smaller jitter: first awake at every expiry.
      const fair = contender(scene, `w${i}`, { doc: fairClient.doc, random: 0.9 - 0.2 * i, hook: (p) => void (p === 'joined' && (joined = true)) });
      void live(scene, grants, `w${i}`, fair, key);
      await until(() => joined, `w${i} queued`);
    }
    void scene.start(async () => {
      await scene.clock.sleep(L / 2);
      await holder.release(first);
    });
    await scene.run(() => grants.length === 5);

    expect(grants.map((g) => g.who)).toEqual(['w0', 'w1', 'w2', 'w3', 'w4']);
    expect(grants.map((g) => g.lease.generation)).toEqual([1, 2, 3, 4, 5].map((n) => first.generation + n));
    // Each holder is served once the one before it released (after its hold), and at the latest one
    // turn later: the lease (drift included), the clock bound and the head's largest jitter.
    const turn = contender(scene, 'probe').turnMs;
    expect(turn).toBe(L * 1.01 + SKEW + L / 20);
    const turns = grants.map((g, i) => g.at - (i === 0 ? 0 : grants[i - 1]!.at));
    for (const t of turns) expect(t).toBeGreaterThanOrEqual(L / 2);
    for (const t of turns) expect(t).toBeLessThanOrEqual(turn);
    // Only the head tries the lease: at most twice per contender (held, then granted; once when it
    // becomes first after its predecessor has already released).
    expect(fairRequests.get(env.t.names.leases)).toBeLessThanOrEqual(2 * 5);
    expect(await queue(key)).toEqual([]);

    // Control: the same five with the plain acquire and the same jitter.
    const plain = new Scene();
    const holder2 = env.leases('H', { clock: plain.clock, mode, durationMs: L });
    const held = granted(await holder2.tryAcquire('plain#fifo'));
    const order: string[] = [];
    const plainClient = env.dynamo();
    const plainRequests = countByTable(plainClient.client);
    for (let i = 0; i < 5; i++) {
      const m = env.leases(`w${i}`, { doc: plainClient.doc, clock: plain.clock, mode, durationMs: L, random: () => 0.9 - 0.2 * i });
      void plain.start(async () => {
        const l = await m.acquire('plain#fifo');
        order.push(`w${i}`);
        await plain.clock.sleep(L / 2);
        await env.leases(`w${i}`).release(l);
      });
      await plain.settle();
    }
    void plain.start(async () => {
      await plain.clock.sleep(L / 2);
      await holder2.release(held);
    });
    await plain.run(() => order.length === 5);
    expect(order).toEqual(['w4', 'w3', 'w2', 'w1', 'w0']);
    // Every waiting contender tries at every expiry: 5 + 4 + 3 + 2 + 1 attempts after the first five.
    expect(plainRequests.get(env.t.names.leases)).toBe(5 + 15);
  });
});

describe('fair acquire: crashed and paused waiters', () => {
  it('a waiter that crashed in the queue is skipped once its promise lapses: the one behind it removes it and is served in the crashed one\'s turn, a clock bound late', async () => {
    const key = 'fair#crash';
    const { scene, holder, held: first, grants } = await behindHolder(key);
    const crash = scene.gate(); // never opened
    const tickets = new Map<string, number>();
    for (const who of ['w0', 'w1', 'w2']) {
      const fair = contender(scene, who, {
        hook: async (p, ticket) => {
          if (p === 'joined') tickets.set(who, ticket);
          // w1 dies right after its first look, its item left in the queue.
          if (who === 'w1' && p === 'looked') await crash.pass();
        },
      });
      void live(scene, grants, who, fair, key);
      await until(() => tickets.has(who), `${who} queued`);
    }
    void scene.start(async () => {
      await scene.clock.sleep(L / 2);
      await holder.release(first);
    });
    await scene.run(() => grants.length === 2);

    expect(crash.holding).toBe(true);
    expect(grants.map((g) => g.who)).toEqual(['w0', 'w2']);
    expect(grants.map((g) => g.lease.generation)).toEqual([first.generation + 1, first.generation + 2]);
    // w1's promise was its turn (one turn after w0's); past it and the clock bound, w2 skips it.
    const turn = contender(scene, 'probe').turnMs;
    expect(grants[1]!.at).toBeGreaterThanOrEqual(2 * turn + SKEW);
    expect(grants[1]!.at).toBeLessThanOrEqual(2 * turn + SKEW + L / 20);
    expect((await queue(key)).map((w) => w.sk)).not.toContain(tickets.get('w1'));
  });

  it('a paused waiter that wakes after being skipped re-checks and does not barge in, though the lease is free when it wakes: it re-queues behind the waiter that skipped it', async () => {
    const key = 'fair#paused';
    const { scene, held: crashed, grants } = await behindHolder(key); // H crashes: never renews, never releases
    const points: string[] = [];
    const tickets = new Map<string, number[]>();
    const pauseW0 = scene.gate();
    const pauseW1 = scene.gate();
    let w0Looks = 0;
    const w0 = contender(scene, 'w0', {
      hook: async (p, ticket) => {
        points.push(`w0:${p}:${ticket}`);
        if (p === 'joined') tickets.set('w0', [...(tickets.get('w0') ?? []), ticket]);
        // Its second look, at the holder's expiry: first in the queue, about to try. It stalls there.
        if (p === 'looked' && ++w0Looks === 2) await pauseW0.pass();
      },
    });
    const w1 = contender(scene, 'w1', {
      hook: async (p, ticket) => {
        if (p === 'joined') tickets.set('w1', [ticket]);
        // Stop w1 right where it becomes first (w0's item gone), before it tries the lease.
        if (p === 'looked' && pauseW0.holding && (await queue(key)).every((w) => w.sk === ticket)) await pauseW1.pass();
      },
    });
    void live(scene, grants, 'w0', w0, key);
    await until(() => tickets.has('w0'), 'w0 queued');
    void live(scene, grants, 'w1', w1, key);
    await until(() => tickets.has('w1'), 'w1 queued');
    await scene.run(() => pauseW1.holding);

    // w1 skipped w0 (its promise lapsed while it stalled). The lease is free: H's expiry plus the
    // clock bound has passed, so a tryAcquire from w0 now, on the strength of its old look, would win.
    expect(await queue(key)).toEqual([expect.objectContaining({ owner: 'w1' })]);
    const lease = (await env.t.dynamo.doc.send(new GetCommand({ TableName: env.t.names.leases, Key: { pk: key }, ConsistentRead: true }))).Item;
    expect(lease).toMatchObject({ owner: 'H', generation: crashed.generation });
    expect((lease?.expiresAt as number) + SKEW).toBeLessThan(scene.clock.wallNow());

    pauseW0.open();
    await scene.run(() => points.includes(`w0:requeued:${tickets.get('w0')![0]}`) && tickets.get('w0')!.length === 2);
    await scene.settle();
    expect(grants).toEqual([]); // w0 did not act on its old look
    const [again] = tickets.get('w0')!.slice(1);
    expect(again).toBeGreaterThan(tickets.get('w1')![0]!);

    pauseW1.open();
    await scene.run(() => grants.length === 2);
    expect(grants.map((g) => g.who)).toEqual(['w1', 'w0']);
    expect(grants.map((g) => g.lease.generation)).toEqual([crashed.generation + 1, crashed.generation + 2]);
  });

  it('a waiter paused past its own promise that nobody skipped renews it before acting, then is served', async () => {
    const key = 'fair#paused-alone';
    const scene = new Scene();
    const holder = env.leases('H', { clock: scene.clock, mode, durationMs: L });
    const held = granted(await holder.tryAcquire(key));
    const { doc, client } = env.dynamo();
    const requests: string[] = [];
    client.middlewareStack.add(
      (next, c) => async (args) => {
        requests.push(`${c.commandName?.replace(/Command$/, '')} ${String((args.input as { TableName?: string }).TableName).endsWith('waiters') ? 'waiters' : 'leases'}`);
        return next(args);
      },
      { step: 'initialize', name: 'log' },
    );
    const pause = scene.gate();
    let looks = 0;
    const points: string[] = [];
    const w0 = contender(scene, 'w0', {
      doc,
      hook: async (p) => {
        points.push(p);
        if (p === 'looked' && ++looks === 2) await pause.pass();
      },
    });
    const grants: Grant[] = [];
    void live(scene, grants, 'w0', w0, key);
    await scene.run(() => pause.holding);
    await scene.clock.advance(3 * L); // stalled far past its promise
    requests.length = 0;
    pause.open();
    await scene.run(() => grants.length === 1);
    expect(points).not.toContain('requeued');
    // Renewed its promise first, looked again, then tried the lease.
    expect(requests.slice(0, 3)).toEqual(['UpdateItem waiters', 'Query waiters', 'UpdateItem leases']);
    expect(grants[0]!.lease.generation).toBe(held.generation + 1);
  });

  it('a waiter whose every look is slower than its promise allows (a slow network) still gets its turn: it renews for a whole turn and acts on the next look', async () => {
    const key = 'fair#slow';
    const { scene, held, grants } = await behindHolder(key);
    const points: string[] = [];
    // Each look answers 700 ms late: past the half lease (500 ms) a promise keeps for acting.
    const slow = contender(scene, 'w0', { hook: async (p) => void (points.push(p), p === 'looked' && (await scene.clock.sleep(700))) });
    void live(scene, grants, 'w0', slow, key);
    await scene.run(() => grants.length === 1);
    expect(grants[0]!.lease.generation).toBe(held.generation + 1);
    // The holder's expiry, the clock bound and jitter, then two slow looks: one found the promise
    // spent and renewed it for a turn, the next one acted.
    expect(grants[0]!.at).toBeLessThanOrEqual(L + SKEW + L / 20 + 2 * 700);
    expect(points).not.toContain('requeued');
  });

  it('a waiter whose connection is cut re-checks when it comes back: skipped meanwhile, it re-queues behind the one that skipped it, though the lease is free then', async () => {
    const key = 'fair#reconnect';
    const { scene, held, grants } = await behindHolder(key); // H crashes
    const cut = env.dynamo({ viaProxy: true, maxAttempts: 1 });
    const w0Points: string[] = [];
    const w1Tickets: number[] = [];
    const pauseW1 = scene.gate();
    let outage: ReturnType<typeof env.proxy.drop> | undefined;
    const w0 = contender(scene, 'w0', { doc: cut.doc, hook: (p, t) => void w0Points.push(`${p}:${t}`) });
    const w1 = contender(scene, 'w1', {
      hook: async (p, t) => {
        if (p === 'joined') w1Tickets.push(t);
        // Stop w1 where it becomes first (w0 removed) while w0 is still cut off, before it tries.
        if (p === 'looked' && outage !== undefined && (await queue(key)).every((w) => w.sk === t)) await pauseW1.pass();
      },
    });
    void live(scene, grants, 'w0', w0, key);
    await until(() => w0Points.length > 0, 'w0 queued');
    void live(scene, grants, 'w1', w1, key);
    await until(() => w1Tickets.length > 0, 'w1 queued');
    await scene.settle();

    // w0, first in line, loses its connection: every request it sends goes unanswered.
    outage = env.proxy.drop({ times: Infinity });
    await scene.run(() => pauseW1.holding);
    expect(outage.hits).toBeGreaterThan(0);
    expect(await queue(key)).toEqual([expect.objectContaining({ owner: 'w1' })]);

    // Back online, with the lease free (H's expiry and the clock bound long past).
    outage.remove();
    await scene.run(() => w0Points.filter((p) => p.startsWith('joined')).length === 2);
    await scene.settle();
    expect(grants).toEqual([]);
    expect(w0Points.filter((p) => p.startsWith('requeued'))).toHaveLength(1);

    pauseW1.open();
    await scene.run(() => grants.length === 2);
    expect(grants.map((g) => g.who)).toEqual(['w1', 'w0']);
    expect(grants.map((g) => g.lease.generation)).toEqual([held.generation + 1, held.generation + 2]);
  });
});

describe('fair acquire: what it costs, what it does not protect', () => {
  it('on a free key with nobody queued it is two requests (a Query of the queue, the conditional acquire) and leaves nothing in the waiter table', async () => {
    const key = 'fair#free';
    const { doc, client } = env.dynamo();
    const counts = countByTable(client);
    const fair = new FairAcquirer(env.leases('solo', { doc }), { doc, table: waiters.name });
    const lease = await fair.acquire(key);
    expect(Object.fromEntries(counts)).toEqual({ [waiters.name]: 1, [env.t.names.leases]: 1 });
    expect(lease.owner).toBe('solo');
    expect(await queue(key)).toEqual([]);
  });

  it('gives up with AcquireTimeoutError at its timeout or on abort, and leaves the queue', async () => {
    const key = 'fair#give-up';
    const scene = new Scene();
    granted(await env.leases('H', { clock: scene.clock, mode, durationMs: L }).tryAcquire(key));
    const outcomes: unknown[] = [];
    const stop = new AbortController();
    let joined = 0;
    const hook = (p: FairPoint) => void (p === 'joined' && joined++);
    void scene.start(() => contender(scene, 'timeout', { hook }).acquire(key, { timeoutMs: L / 2 }).catch((e: unknown) => outcomes.push(e)));
    void scene.start(() => contender(scene, 'abort', { hook }).acquire(key, { signal: stop.signal }).catch((e: unknown) => outcomes.push(e)));
    await until(() => joined === 2, 'both queued');
    await scene.run(() => outcomes.length === 1);
    expect(scene.clock.monotonicNow()).toBe(L / 2);
    stop.abort();
    await until(() => outcomes.length === 2, 'the aborted one');
    expect(outcomes.map((e) => e instanceof AcquireTimeoutError)).toEqual([true, true]);
    expect(await queue(key)).toEqual([]);
  });

  it('the race it loses: a plain acquirer takes a lease released early ahead of the sleeping queue; still one holder at a time, generations still +1', async () => {
    const key = 'fair#barge';
    const { scene, holder, held, grants } = await behindHolder(key);
    let joined = false;
    void live(scene, grants, 'w0', contender(scene, 'w0', { hook: (p) => void (p === 'joined' && (joined = true)) }), key);
    await until(() => joined, 'w0 queued');
    await scene.settle();
    await scene.clock.advance(L / 2);
    await holder.release(held);
    // The queue head sleeps until H's expiry; a contender that does not use the queue walks in.
    const barger = granted(await env.leases('plain', { clock: scene.clock, mode, durationMs: L }).tryAcquire(key));
    await scene.run(() => grants.length === 1);
    expect(barger.generation).toBe(held.generation + 1);
    expect(grants[0]!.lease.generation).toBe(held.generation + 2);
    // w0 got the lease only once the barger's had run out: never two holders.
    expect(grants[0]!.at).toBeGreaterThanOrEqual(L / 2 + L + SKEW);
  });

  it('a registration whose response was lost is recognised by its token on the SDK\'s resend', async () => {
    const key = 'fair#lost-put';
    const { scene, held, grants } = await behindHolder(key);
    const { doc } = env.dynamo({ viaProxy: true, maxAttempts: 3 });
    const lost = env.proxy.drop({ target: 'PutItem', when: (q) => q.json?.Item?.pk?.S === key });
    const points: string[] = [];
    void live(scene, grants, 'w0', contender(scene, 'w0', { doc, hook: (p) => void points.push(p) }), key);
    await scene.settle();
    expect(lost.hits).toBe(1);
    expect(await queue(key)).toEqual([expect.objectContaining({ owner: 'w0' })]);
    await scene.run(() => grants.length === 1);
    expect(points).not.toContain('requeued');
    expect(grants[0]!.lease.generation).toBe(held.generation + 1);
  });
});

describe('fair acquire: abandoned tickets', () => {
  it('abandoned tickets never delay a grant by more than one turn: 20 waiters that gave up before the first in line, and 20 between it and the next, cost the queue nothing while the lease is free', async () => {
    const key = 'fair#abandoned';
    const { scene, holder, held: first, grants } = await behindHolder(key);
    const gaveUp: unknown[] = [];
    // Twenty contenders take a ticket each behind whoever is queued, then give up: their items
    // leave the queue, their tickets stay unserved on the counter.
    const abandon = async () => {
      const done = gaveUp.length + 20;
      for (let i = 0; i < 20; i++) {
        void scene.start(() => contender(scene, `gone${done - 20 + i}`).acquire(key, { timeoutMs: L / 4 }).catch((e: unknown) => void gaveUp.push(e)));
      }
      await scene.run(() => gaveUp.length === done);
    };
    const join = async (who: string) => {
      let joined = false;
      void live(scene, grants, who, contender(scene, who, { hook: (p) => void (p === 'joined' && (joined = true)) }), key);
      await until(() => joined, `${who} queued`);
      await scene.settle();
    };
    await abandon(); // with nobody else queued: x's first promise counts from the counter
    await join('x');
    await abandon(); // behind x: y's first promise counts from x, the first waiter it saw
    await join('y');
    await join('z'); // watches y, so y's promise is what it sleeps on
    expect(gaveUp.filter((e) => e instanceof AcquireTimeoutError)).toHaveLength(40);
    expect((await queue(key)).map((w) => w.owner)).toEqual(['x', 'y', 'z']);

    const releasedAt = scene.clock.monotonicNow();
    await holder.release(first);
    await scene.run(() => grants.length === 3);
    expect(grants.map((g) => g.who)).toEqual(['x', 'y', 'z']);
    expect(grants.map((g) => g.lease.generation)).toEqual([1, 2, 3].map((n) => first.generation + n));
    // The lease is free from H's release on, each holder keeps it L/2: every grant comes at most
    // one turn after the lease was free to take (H's expiry, as x saw it; the release before).
    const turn = contender(scene, 'probe').turnMs;
    expect(grants[0]!.at).toBeLessThanOrEqual(releasedAt + turn);
    const idle = grants.slice(1).map((g, i) => g.at - (grants[i]!.at + L / 2));
    expect(Math.max(...idle), `free before each next grant: ${idle.join(', ')} ms`).toBeLessThanOrEqual(turn);
    expect(await queue(key)).toEqual([]);
  });
});

describe('fair acquire: clocks further apart than the bound', () => {
  it('a live waiter skipped by one whose wall clock runs ahead beyond the bound notices its own item is gone on its next look and re-queues behind it, though its promise is still valid on its own clock and the lease is free', async () => {
    const key = 'fair#skewed';
    const { scene, grants } = await behindHolder(key); // H crashes: its lease runs out at L
    const points: string[] = [];
    const tickets = new Map<string, number[]>();
    const note = (who: string, p: FairPoint, ticket: number) => {
      points.push(`${who}:${p}:${ticket}`);
      if (p === 'joined') tickets.set(who, [...(tickets.get(who) ?? []), ticket]);
    };
    const pauseW1 = scene.gate();
    const w0 = contender(scene, 'w0', { hook: (p, t) => note('w0', p, t) });
    // w1's wall clock is 10 lease periods ahead: to it, every promise of w0's has long lapsed.
    const w1 = contender(scene, 'w1', {
      clock: skewedClock(scene.clock, 10 * L),
      hook: async (p, t) => {
        note('w1', p, t);
        // Stop w1 where it becomes first (w0 removed), before it tries the lease.
        if (p === 'looked' && (await queue(key)).every((w) => w.sk === t)) await pauseW1.pass();
      },
    });
    void live(scene, grants, 'w0', w0, key);
    await until(() => tickets.has('w0'), 'w0 queued');
    await scene.settle(); // w0 is first in line, asleep until H's lease has run out
    const w0Promise = (await queue(key))[0]!.expiresAt as number;
    void live(scene, grants, 'w1', w1, key);
    await scene.run(() => pauseW1.holding);
    // w1 removed w0 at once, by its own clock; by w0's, w0 still has its promise.
    expect(await queue(key)).toEqual([expect.objectContaining({ owner: 'w1' })]);
    expect(scene.clock.wallNow()).toBeLessThan(w0Promise);

    // w0 wakes at H's expiry, the lease free and its own promise still valid: only its own item,
    // gone from its look, tells it that it was skipped.
    const [first] = tickets.get('w0')!;
    await scene.run(() => points.includes(`w0:requeued:${first}`) || grants.length > 0);
    await scene.settle();
    expect(grants.map((g) => g.who), 'granted ahead of the waiter that skipped it').toEqual([]);
    expect(scene.clock.wallNow()).toBeLessThan(w0Promise);
    const lease = (await env.t.dynamo.doc.send(new GetCommand({ TableName: env.t.names.leases, Key: { pk: key }, ConsistentRead: true }))).Item;
    expect((lease?.expiresAt as number) + SKEW).toBeLessThan(scene.clock.wallNow()); // free: a tryAcquire by w0 would have won
    expect(tickets.get('w0')![1]).toBeGreaterThan(tickets.get('w1')![0]!);
    expect((await queue(key)).map((w) => w.owner)).toEqual(['w1', 'w0']);

    pauseW1.open();
    await scene.run(() => grants.length === 2);
    expect(grants.map((g) => g.who)).toEqual(['w1', 'w0']);
    expect(grants[1]!.at).toBeGreaterThanOrEqual(grants[0]!.at + L / 2); // after w1 released: one holder at a time
  });
});
