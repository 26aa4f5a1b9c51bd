// tier: quick
/**
 * The lease protocol on DynamoDB Local: the article's claims about who may start, until when,
 * with which token. Interleavings are forced with ManualClocks (time only moves when the test
 * says so) and the fault proxy (delayed and lost responses), not with sleeps.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  AcquireTimeoutError,
  EpochBehindError,
  epochCeiling,
  leaseDeadline,
  LeaseLostError,
  makeGeneration,
  ManualClock,
  MAX_EPOCH,
  MAX_SEQUENCE,
  SEQUENCE_SPACE,
  SequenceExhaustedError,
  skewedClock,
  type Contended,
  type Lease,
  type Result,
} from '../lib/protocol/index.js';
import { getItem, granted, until } from './support/fixtures.js';
import { countRequests } from './support/request-counter.js';
import { proxiedTables } from './support/tables.js';

const env = proxiedTables(import.meta.filename);
const dynamo = env.dynamo;

const mgr = env.leases;

function contended(r: Result<Lease, Contended>): Contended {
  if (r.ok) throw new Error(`expected contention, but was granted generation ${r.value.generation}`);
  return r.error;
}

const lease = (key: string) => getItem(env.t, env.t.names.leases, key);

const targets = (key: string) => (req: { json: any }) => req.json?.Key?.pk?.S === key;

describe('renew and release are conditional on owner AND generation', () => {
  it("a late release or renew from obsolete holder A leaves successor B's lease intact", async () => {
    const key = 'job#late-release';
    const clock = new ManualClock();
    const a = mgr('A', { clock });
    const b = mgr('B', { clock });
    const la = granted(await a.tryAcquire(key));
    await clock.advance(10_001); // A paused past its lease
    const lb = granted(await b.tryAcquire(key));
    const before = await lease(key);
    expect(before).toMatchObject({ owner: 'B', generation: la.generation + 1 });

    expect(await a.release(la)).toEqual({ released: false });
    expect(await lease(key)).toEqual(before);

    const lost = await a.renew(la).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect((lost as LeaseLostError).holder).toMatchObject({ owner: 'B', generation: lb.generation, expiresAt: lb.expiresAt });
    expect(await lease(key)).toEqual(before);
    expect(await b.renew(lb)).toMatchObject({ generation: lb.generation });
  });

  it("a late release of an old generation by the SAME owner leaves that owner's newer lease intact", async () => {
    const key = 'job#late-release-same-owner';
    const clock = new ManualClock();
    const a = mgr('A', { clock });
    const b = mgr('B', { clock });
    const old = granted(await a.tryAcquire(key));
    await clock.advance(10_001);
    await b.release(granted(await b.tryAcquire(key)));
    const current = granted(await a.tryAcquire(key)); // A again, two generations later
    expect(current.generation).toBe(old.generation + 2);
    const before = await lease(key);

    // Owner identity alone would match here: only the generation tells the two grants apart.
    expect(await a.release(old)).toEqual({ released: false });
    expect(await lease(key)).toEqual(before);
    const lost = await a.renew(old).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect((lost as LeaseLostError).holder).toMatchObject({ owner: 'A', generation: current.generation });
    expect(await lease(key)).toEqual(before);
  });
});

describe('local deadlines', () => {
  it('a renewal deadline counts from the send time: a response delayed by D yields a deadline about D earlier than counting from arrival', async () => {
    const key = 'job#deadline-from-send';
    const { doc } = dynamo({ viaProxy: true, maxAttempts: 1 });
    const rule = { durationMs: 5_000, maxDrift: 0.01, marginMs: 200 };
    const m = mgr('A', { doc, ...rule }); // system clock: the proxy delays in real time
    const l = granted(await m.tryAcquire(key));
    const D = 400;
    const slow = env.proxy.delay({ target: 'DynamoDB_20120810.UpdateItem', when: targets(key) }, D);

    const sendTime = performance.now();
    const renewed = await m.renew(l);
    const arrival = performance.now();

    expectDeadlineFromSend(renewed.deadline, { sendTime, arrival, hits: slow.hits, D, rule });
    // Counting from the response would have granted D more than that.
    expect(arrival + rule.durationMs - rule.marginMs - renewed.deadline).toBeGreaterThanOrEqual(D - 5);
  });
});

describe('local deadlines of a grant', () => {
  it("an acquire's deadline counts from the send time: a grant whose response is delayed by D yields a deadline about D earlier than counting from arrival", async () => {
    const key = 'job#acquire-deadline-from-send';
    const { doc } = dynamo({ viaProxy: true, maxAttempts: 1 });
    const rule = { durationMs: 5_000, maxDrift: 0.01, marginMs: 200 };
    const m = mgr('A', { doc, ...rule });
    const D = 400;
    const slow = env.proxy.delay({ target: 'DynamoDB_20120810.UpdateItem', when: targets(key) }, D);

    const sendTime = performance.now();
    const grant = granted(await m.tryAcquire(key));
    const arrival = performance.now();

    const usable = expectDeadlineFromSend(grant.deadline, { sendTime, arrival, hits: slow.hits, D, rule });
    expect(arrival + usable - grant.deadline).toBeGreaterThanOrEqual(D - 5);
  });
});

describe('ambiguous renewal', () => {
  it('a renewal whose response was lost after DynamoDB applied it succeeds on retry and the lease is kept', async () => {
    const key = 'job#ambiguous-renew';
    const { doc, client } = dynamo({ viaProxy: true, maxAttempts: 3 });
    const counter = countRequests(client);
    const m = mgr('A', { doc });
    const l = granted(await m.tryAcquire(key));
    const lost = env.proxy.drop({ target: 'UpdateItem', when: targets(key) });
    counter.reset();

    const renewed = await m.renew(l);

    expect(lost.hits).toBe(1);
    // The first attempt was applied (its response destroyed), the SDK's retry then matched again.
    // A renew conditioned on the version it rotates (`version = :previous`) would fail here: the
    // lost first attempt already replaced that version, so the retry finds a "foreign" version and
    // the holder declares its own, perfectly valid, lease lost. Owner AND generation do not rotate.
    expect(counter.counts.get('UpdateItem')).toBe(2);
    expect(await lease(key)).toMatchObject({ owner: 'A', generation: l.generation, version: renewed.version });
    const again = await m.renew(renewed);
    expect(again.generation).toBe(l.generation);
    expect(await lease(key)).toMatchObject({ owner: 'A', generation: l.generation, version: again.version });
  });
});

describe('generations', () => {
  it('generations strictly increase by one across many acquire/release/takeover cycles by several owners, never reused', async () => {
    const key = 'job#generations';
    const clock = new ManualClock();
    const owners = ['A', 'B', 'C'].map((o) => mgr(o, { clock, durationMs: 1_000 }));
    const issued: number[] = [];
    for (let i = 0; i < 30; i++) {
      const m = owners[(i * 7) % 3]!;
      const l = granted(await m.tryAcquire(key));
      issued.push(l.generation);
      if (i % 4 === 3) {
        await clock.advance(1_001); // abandoned: the next owner takes over after expiry
        continue;
      }
      expect(await m.release(l)).toEqual({ released: true });
      const item = await lease(key);
      // Release keeps the generation and frees the key.
      expect(item).toMatchObject({ generation: l.generation });
      expect(item).not.toHaveProperty('owner');
      expect(item).not.toHaveProperty('expiresAt');
    }
    expect(issued).toEqual(issued.map((_, i) => i + 1));
    expect(new Set(issued).size).toBe(issued.length);
  });

  it('sequence exhaustion: at epoch*2^32 + (2^32 - 1) tryAcquire throws SequenceExhaustedError and writes nothing', async () => {
    const epoch = 3;
    const full = 'job#exhausted';
    await env.t.dynamo.doc.send(new PutCommand({ TableName: env.t.names.leases, Item: { pk: full, generation: epochCeiling(epoch), version: 'v0' } }));
    const m = mgr('A', { epoch });
    const before = await lease(full);
    await expect(m.tryAcquire(full)).rejects.toBeInstanceOf(SequenceExhaustedError);
    expect(await lease(full)).toEqual(before);

    const almost = 'job#almost-exhausted';
    await env.t.dynamo.doc.send(new PutCommand({ TableName: env.t.names.leases, Item: { pk: almost, generation: epochCeiling(epoch) - 1 } }));
    const last = granted(await m.tryAcquire(almost));
    expect(last.generation).toBe(makeGeneration(epoch, MAX_SEQUENCE));
    await m.release(last);
    await expect(m.tryAcquire(almost)).rejects.toBeInstanceOf(SequenceExhaustedError);
    expect(await lease(almost)).toMatchObject({ generation: makeGeneration(epoch, MAX_SEQUENCE) });
    expect(await lease(almost)).not.toHaveProperty('owner');
  });

  it('epoch raise without seal: epoch 1 over a counter at 0:5 issues exactly 1:1, and an epoch-0 process then gets EpochBehindError', async () => {
    const key = 'job#epoch-raise';
    await env.t.dynamo.doc.send(new PutCommand({ TableName: env.t.names.leases, Item: { pk: key, generation: 5 } }));
    const { doc, client } = dynamo();
    const counter = countRequests(client);
    const raised = mgr('new', { doc, epoch: 1 });

    const first = granted(await raised.tryAcquire(key));
    expect(first.generation).toBe(SEQUENCE_SPACE + 1);
    expect(first.generation).toBeGreaterThan(epochCeiling(0)); // above every epoch-0 token ever possible
    expect(counter.total()).toBe(2); // the documented one-off: the plain claim, then the epoch start
    await raised.release(first);
    counter.reset();
    const second = granted(await raised.tryAcquire(key));
    expect(second.generation).toBe(SEQUENCE_SPACE + 2);
    expect(counter.total()).toBe(1);
    await raised.release(second);

    const before = await lease(key);
    await expect(mgr('stale-config', { epoch: 0 }).tryAcquire(key)).rejects.toBeInstanceOf(EpochBehindError);
    expect(await lease(key)).toEqual(before);
  });
});

describe('the highest epoch and the new-epoch claim', () => {
  it('at the highest epoch (2^21 - 1) the first acquire over an unsealed counter is granted MAX_EPOCH:1, and an exhausted sequence throws SequenceExhaustedError', async () => {
    const key = 'job#max-epoch';
    await env.t.dynamo.doc.send(new PutCommand({ TableName: env.t.names.leases, Item: { pk: key, generation: 5 } }));
    const top = mgr('top', { epoch: MAX_EPOCH });
    const first = granted(await top.tryAcquire(key));
    expect(first.generation).toBe(makeGeneration(MAX_EPOCH, 1));
    await top.release(first);

    const full = 'job#max-epoch-exhausted';
    await env.t.dynamo.doc.send(new PutCommand({ TableName: env.t.names.leases, Item: { pk: full, generation: epochCeiling(MAX_EPOCH) } }));
    const before = await lease(full);
    await expect(top.tryAcquire(full)).rejects.toBeInstanceOf(SequenceExhaustedError);
    expect(await lease(full)).toEqual(before);
  });

  it("a lost response on the new-epoch claim: the SDK's retry finds its own grant and returns it, not a busy lease held by itself", async () => {
    const key = 'job#new-epoch-lost';
    await env.t.dynamo.doc.send(new PutCommand({ TableName: env.t.names.leases, Item: { pk: key, generation: 7 } }));
    const { doc } = env.dynamo({ viaProxy: true, maxAttempts: 3 });
    const lost = env.proxy.drop({ target: 'UpdateItem', when: (q) => targets(key)(q) && String(q.json?.UpdateExpression).includes(':first') });
    const raised = mgr('new-epoch', { doc, epoch: 2 });
    const r = await raised.tryAcquire(key);
    expect(lost.hits).toBe(1);
    const grant = granted(r);
    expect(grant.generation).toBe(makeGeneration(2, 1));
    expect(await lease(key)).toMatchObject({ owner: 'new-epoch', generation: makeGeneration(2, 1), version: grant.version });
  });
});

describe('request economy', () => {
  it('acquire on a free key, renew and release are exactly one DynamoDB request each', async () => {
    const key = 'job#one-request-each';
    const { doc, client } = dynamo();
    const counter = countRequests(client);
    const m = mgr('A', { doc });

    const l = await m.acquire(key);
    expect(Object.fromEntries(counter.counts)).toEqual({ UpdateItem: 1 });
    counter.reset();
    const r = await m.renew(l);
    expect(Object.fromEntries(counter.counts)).toEqual({ UpdateItem: 1 });
    counter.reset();
    expect(await m.release(r)).toEqual({ released: true });
    expect(Object.fromEntries(counter.counts)).toEqual({ UpdateItem: 1 });
  });

  it('tryAcquire on a held key returns a Result error naming the holder (from ALL_OLD), in one request', async () => {
    const key = 'job#held';
    const held = granted(await mgr('H').tryAcquire(key));
    const { doc, client } = dynamo();
    const counter = countRequests(client);

    const r = await mgr('C', { doc }).tryAcquire(key);

    const c = contended(r);
    expect(c.holder).toMatchObject({ owner: 'H', generation: held.generation, expiresAt: held.expiresAt, version: held.version });
    expect(Object.fromEntries(counter.counts)).toEqual({ UpdateItem: 1 });
    expect(await lease(key)).toMatchObject({ owner: 'H', generation: held.generation, version: held.version });
  });
});

describe('version-watch mode', () => {
  it("a renewing holder keeps a contender out indefinitely; after a crash the contender waits a full duration on ITS OWN monotonic clock, whatever the wall clocks say", async () => {
    const key = 'job#version-watch';
    const D = 10_000;
    const mode = { kind: 'version-watch' } as const;
    // Two hosts: different monotonic origins, wall clocks 10 minutes apart.
    const holderBase = new ManualClock({ monotonic: 0 });
    const contenderBase = new ManualClock({ monotonic: 987_654 });
    const holderClock = skewedClock(holderBase, -5 * 60_000);
    const contenderClock = skewedClock(contenderBase, +5 * 60_000);
    const advance = async (ms: number) => {
      await holderBase.advance(ms);
      await contenderBase.advance(ms);
    };
    const holder = mgr('holder', { mode, clock: holderClock, durationMs: D });
    const contender = mgr('contender', { mode, clock: contenderClock, durationMs: D });
    let l = granted(await holder.tryAcquire(key));

    // 1. The holder renews every D/4: the contender never gets in, though by ITS wall clock the
    //    holder's expiresAt is ten minutes in the past.
    let outcome: unknown;
    let done = false;
    const attempt = contender.acquire(key, { timeoutMs: 4 * D }).then(
      (v) => ((outcome = v), (done = true)),
      (e: unknown) => ((outcome = e), (done = true)),
    );
    const parked = () => done || contenderBase.pendingSleepers === 1;
    await until(parked, 'contender parked');
    for (let i = 0; i < 24 && !done; i++) {
      await advance(D / 4);
      l = await holder.renew(l);
      await until(parked, 'contender parked');
    }
    await attempt;
    expect(outcome).toBeInstanceOf(AcquireTimeoutError);
    const item = await lease(key);
    expect(item).toMatchObject({ owner: 'holder', generation: l.generation, version: l.version });
    expect(item?.expiresAt as number).toBeLessThan(contenderClock.wallNow() - 5 * 60_000);

    // 2. The holder crashes right after its last renewal.
    const lastChange = contenderClock.monotonicNow();
    let won: Lease | undefined;
    const take = contender.acquire(key).then((v) => (won = v));
    const parkedOrWon = () => won !== undefined || contenderBase.pendingSleepers === 1;
    await until(parkedOrWon, 'contender parked');
    for (let i = 0; i < 200 && won === undefined; i++) {
      await advance(100);
      await until(parkedOrWon, 'contender parked');
    }
    await take;
    expect(won).toBeDefined();
    const claimSentAt = won!.deadline - leaseDeadline(0, contender.rule);
    expect(claimSentAt - lastChange).toBeGreaterThanOrEqual(D);
    expect(claimSentAt - lastChange).toBeLessThanOrEqual(D * 1.01 + 250 + 100); // and not much later
    expect(won!.generation).toBe(l.generation + 1);
    await expect(holder.renew(l)).rejects.toBeInstanceOf(LeaseLostError);
  });
});

describe('wall-clock mode and the clock-offset bound', () => {
  const M = 5_000; // maxClockSkewMs
  const mode = { kind: 'wall-clock', maxClockSkewMs: M } as const;

  it('a contender whose wall clock runs ahead by less than maxClockSkewMs cannot take a lease the holder still considers live', async () => {
    const key = 'job#skew-inside-bound';
    const clock = new ManualClock();
    const holder = mgr('holder', { mode, clock });
    const contender = mgr('contender', { mode, clock: skewedClock(clock, M - 100) });
    const l = granted(await holder.tryAcquire(key));
    expect(l.deadline).toBe(leaseDeadline(0, holder.rule)); // 8900 ms after the send

    for (const at of [0, 4_000, 8_000, l.deadline - 1]) {
      await clock.advance(at - clock.monotonicNow());
      expect(holder.isSafe(l)).toBe(true);
      contended(await contender.tryAcquire(key));
    }
    expect(await lease(key)).toMatchObject({ owner: 'holder', generation: l.generation });
    // Liveness: once the holder's expiry plus the bound has passed on the contender's clock, it gets in.
    await clock.advance(10_000 + M - (M - 100) + 1 - clock.monotonicNow());
    expect(granted(await contender.tryAcquire(key)).generation).toBe(l.generation + 1);
  });

  it('documentation of the bound: with skew beyond maxClockSkewMs a contender CAN take a lease the holder still considers live', async () => {
    const key = 'job#skew-beyond-bound';
    const clock = new ManualClock();
    const holder = mgr('holder', { mode, clock });
    const contender = mgr('contender', { mode, clock: skewedClock(clock, M + 3_000) });
    const l = granted(await holder.tryAcquire(key));
    await clock.advance(8_000);
    expect(holder.isSafe(l)).toBe(true);
    // Two holders at once: only the fence can save the resource now. The bound is a real assumption.
    const intruder = granted(await contender.tryAcquire(key));
    expect(intruder.generation).toBe(l.generation + 1);
  });
});

describe('contention', () => {
  it('16 contenders sleep until the observed expiry (+jitter) instead of polling: at most 2 requests each over one lease period', async () => {
    const key = 'job#herd';
    const D = 5_000;
    const M = 200;
    const mode = { kind: 'wall-clock', maxClockSkewMs: M } as const;
    const clock = new ManualClock();
    const held = granted(await mgr('holder', { mode, clock, durationMs: D }).tryAcquire(key));

    const contenders = Array.from({ length: 16 }, (_, i) => {
      const { doc, client } = dynamo();
      const counter = countRequests(client);
      const m = mgr(`c${i}`, { doc, mode, clock, durationMs: D });
      const state: { lease?: Lease; done: boolean } = { done: false };
      const stop = new AbortController();
      const run = m.acquire(key, { signal: stop.signal }).then(
        (l) => {
          state.lease = l;
          state.done = true;
        },
        () => {
          state.done = true;
        },
      );
      return { counter, state, run, stop };
    });
    const quiet = () => clock.pendingSleepers === contenders.filter((c) => !c.state.done).length;
    await until(quiet, 'all contenders parked');
    expect(contenders.map((c) => c.counter.total())).toEqual(contenders.map(() => 1));

    // One lease period (expiry + skew bound + max jitter), in 50 ms steps.
    const end = D + M + 250 + 100;
    while (clock.monotonicNow() < end) {
      await clock.advance(50);
      await until(quiet, 'contenders parked');
    }

    const winners = contenders.filter((c) => c.state.lease !== undefined);
    expect(winners).toHaveLength(1);
    expect(winners[0]!.state.lease!.generation).toBe(held.generation + 1);
    for (const c of contenders) expect(c.counter.total()).toBeLessThanOrEqual(2);
    for (const c of contenders) c.stop.abort();
    await Promise.all(contenders.map((c) => c.run));
  });
});

/**
 * A deadline counted from (just after) the send time of a request whose response the proxy held
 * for D ms: at most a few ms of bookkeeping later. Returns the usable duration of the rule.
 */
function expectDeadlineFromSend(
  deadline: number,
  at: { sendTime: number; arrival: number; hits: number; D: number; rule: { durationMs: number; maxDrift: number; marginMs: number } },
): number {
  expect(at.hits).toBe(1);
  expect(at.arrival - at.sendTime).toBeGreaterThanOrEqual(at.D - 5);
  const usable = at.rule.durationMs * (1 - at.rule.maxDrift) - at.rule.marginMs;
  expect(deadline).toBeGreaterThanOrEqual(at.sendTime + usable);
  expect(deadline).toBeLessThanOrEqual(at.sendTime + usable + 50);
  return usable;
}
