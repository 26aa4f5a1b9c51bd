/**
 * The fair acquire: a predecessor watch for many queued contenders. The article: "For many
 * queued contenders, a predecessor watch can reduce the herd, but watchers must recheck authority
 * after reconnecting." Opt-in, and built on LeaseManager's public API plus a waiter table of the
 * caller's (waiters.ts), the way etcd's Mutex is built on the plain client: the lease knows
 * nothing of the queue. The lease's conditional acquire stays the ONE serialization point; the
 * queue only orders contenders and keeps all but one of them away from the lease item.
 *
 *   enter    nobody queued: one ordinary tryAcquire (granted: done, 2 requests in all)
 *   join     take a ticket (one atomic counter per key, which also says how many tickets ahead
 *            are unserved) and write a waiter item whose `expiresAt` is a promise: "I will look
 *            again, or renew this, before then": one turn per waiter ahead (tickets ahead, at
 *            most the waiter items there: a ticket given up is no turn)
 *   look     one strongly consistent Query: my own item (gone? I was skipped: join again, at the
 *            tail) and my nearest predecessor
 *   act      only while my own promise is still valid on my monotonic clock: after a pause or a
 *            reconnect I renew it (refused: I was skipped) and look again, never acting on a
 *            look taken before the pause
 *   watch    a predecessor: sleep until its promise is due, then look again. One whose promise
 *            has lapsed (beyond the clock-offset bound) is removed, conditionally on the promise
 *            seen, and I look again: a crashed waiter is skipped
 *   head     no predecessor: re-check authority through the normal conditional acquire (its
 *            ALL_OLD reads the lease); granted: remove my item, mark my ticket served, return the
 *            lease; held: sleep until the holder's expiry, like LeaseManager.acquire
 *   promise  before every sleep my promise must cover the wake-up and half a lease more; else it
 *            is renewed, one turn behind my predecessor's promise
 *
 * A turn is the lease period plus the clock bound and the head's jitter: the queue hands the key
 * on about once per turn. A holder that releases early is noticed when the next waiter looks (at
 * the holder's promise as a waiter), not at once. What it does not do: make the lease safer (the
 * fence does that), or order contenders that use the plain acquire on the same key (they can take
 * a free lease ahead of the queue; still one holder at a time).
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { defaultBackoff, fullJitter, type BackoffPolicy, type Random } from './backoff.js';
import { isUnanswered } from './dynamo.js';
import { AcquireTimeoutError, InvalidInputError } from './errors.js';
import type { Lease, LeaseManager, Observation } from './lease.js';
import { asLeaseKey } from './lease-model.js';
import { leastPromise, validUntil, type Place } from './queue-place.js';
import { markServed, queueState, register, removeWaiter, renewPromise, takeTicket, view, waitersBefore, type Queue, type Waiter } from './waiters.js';

/** Where the fair acquire may be paused (or crashed, by never resolving) by fault injection. */
export type FairPoint = 'joined' | 'looked' | 'requeued';

/** Fault injection for the fair acquire: awaited at each FairPoint (tests, the chaos harness). */
export interface FairHooks {
  at(point: FairPoint, info: { key: string; owner: string; ticket: number }): Promise<void> | void;
}

/** Where the queue lives, and how the fair acquire judges a promise and backs off. */
export interface FairOptions {
  doc: DynamoDBDocumentClient;
  /** The waiter table (waitersTableInput): hints only, never the Leases table. */
  table: string;
  /**
   * Bound on the clock offset between contenders' hosts, for judging a waiter's promise. Default:
   * the lease's own bound in wall-clock mode, else 1000 ms. Beyond it a live waiter may be
   * skipped (it then re-queues at the tail): fairness suffers, the lease's safety does not.
   */
  maxClockSkewMs?: number;
  random?: Random;
  backoff?: BackoffPolicy;
  hooks?: FairHooks;
}

/** One acquire's state. */
interface Wait {
  readonly q: Queue;
  readonly end: number;
  readonly signal: AbortSignal | undefined;
  /** Past the first step (the direct attempt when nobody is queued). */
  entered: boolean;
  attempts: number;
  observation: Observation | undefined;
  /** What the last refused attempt said: how long until the lease can be free, counted from `refusedAt`. */
  retryAfterMs: number;
  refusedAt: number | undefined;
  /** The first waiter, as seen on entering: what a first promise counts from. */
  head: Waiter | undefined;
  place: Place | undefined;
}

/**
 * The fair acquire over one LeaseManager (see this module's header): `acquire(key)` waits its turn
 * in the queue, then acquires through the lease's normal conditional acquire. Release the lease
 * with the manager, as any other.
 */
export class FairAcquirer {
  private readonly skewMs: number;
  private readonly random: Random;
  private readonly backoff: BackoffPolicy;

  constructor(
    readonly leases: LeaseManager,
    private readonly opts: FairOptions,
  ) {
    if (typeof opts.table !== 'string' || opts.table.length < 3) throw new InvalidInputError('table', 'must be the waiter table name');
    const skew = opts.maxClockSkewMs ?? (leases.mode.kind === 'wall-clock' ? leases.mode.maxClockSkewMs : 1_000);
    if (!(Number.isFinite(skew) && skew >= 0)) throw new InvalidInputError('maxClockSkewMs', 'must be >= 0');
    this.skewMs = skew;
    this.random = opts.random ?? Math.random;
    this.backoff = opts.backoff ?? defaultBackoff;
  }

  /**
   * One holder's turn as a waiter counts it: the lease's full period (drift included), then the
   * clock bound and the head's jitter (at most min(100 ms, lease/20), acquire.ts `contended`)
   * before the next claim. A release is seen only when the next waiter looks. Counting less would
   * wake waiters before their turn (a read each), more would leave the key idle between holders.
   */
  get turnMs(): number {
    const { durationMs, maxDrift } = this.leases.rule;
    return durationMs * (1 + maxDrift) + this.skewMs + Math.min(100, durationMs / 20);
  }

  /**
   * How long a promise must outlast a wake-up: time to look, and to renew the promise, before the
   * waiter behind may take it as lapsed. A live waiter whose requests are slower than this is
   * skipped by mistake (it re-queues: fair to it no longer), so it is generous: half the lease
   * period, at most 5 s, at least the lease's margin. It must stay under a lease period: the
   * waiter behind reads this promise to learn that the head has gone, and must learn it before the
   * head's lease runs out. A crashed waiter costs the queue this much (plus the clock bound).
   */
  private get actMs(): number {
    const { durationMs, marginMs } = this.leases.rule;
    return Math.max(marginMs, Math.min(durationMs / 2, 5_000));
  }

  /**
   * Waits its turn, then acquires through the lease's normal conditional acquire. Gives up with
   * AcquireTimeoutError (and leaves the queue) when `timeoutMs` passes or `signal` aborts.
   */
  async acquire(key: string, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Lease> {
    const clock = this.leases.clock;
    const w: Wait = {
      q: { doc: this.opts.doc, table: this.opts.table, key: asLeaseKey(key) },
      end: clock.monotonicNow() + (opts.timeoutMs ?? Number.POSITIVE_INFINITY),
      signal: opts.signal,
      entered: false,
      attempts: 0,
      observation: undefined,
      retryAfterMs: 0,
      refusedAt: undefined,
      head: undefined,
      place: undefined,
    };
    try {
      const lease = await this.wait(w);
      await this.leave(w, true);
      return lease;
    } catch (e) {
      await this.leave(w);
      throw e;
    }
  }

  /** Nobody queued: try at once, as the plain acquire would. Otherwise (or held) the next step joins the queue. */
  private async enter(w: Wait): Promise<Lease | undefined> {
    const { counter, head } = await queueState(w.q);
    w.head = head;
    if (head !== undefined) return undefined;
    const lease = await this.attempt(w);
    if (lease === undefined && this.remaining(w) <= 0) throw new AcquireTimeoutError(w.q.key, w.attempts);
    // Granted with nobody queued: every ticket handed out so far is gone. Say so, so that the next
    // crowd does not count them as waiters ahead (best effort, like every queue write).
    if (lease !== undefined && counter !== undefined && counter.last > counter.served) await markServed(w.q, counter.last).catch(() => false);
    return lease;
  }

  /**
   * Enter, join, then look and act on the look, until granted. A request that gets no answer
   * (network, throttling, a server error) ends the step: back off, then look again, so nothing
   * seen before the cut is acted on after it: a waiter that reconnects re-checks its place first.
   */
  private async wait(w: Wait): Promise<Lease> {
    let failures = 0;
    for (;;) {
      if (w.signal?.aborted) throw new AcquireTimeoutError(w.q.key, w.attempts, { cause: w.signal.reason });
      try {
        const lease = await this.step(w);
        failures = 0;
        if (lease !== undefined) return lease;
      } catch (e) {
        if (!isUnanswered(e)) throw e;
        if (this.remaining(w) <= 0) throw new AcquireTimeoutError(w.q.key, w.attempts, { cause: e });
        await this.sleep(w, fullJitter(failures++, this.backoff, this.random));
      }
    }
  }

  private async step(w: Wait): Promise<Lease | undefined> {
    if (!w.entered) {
      w.entered = true; // cut off while entering: join (always safe) rather than enter again
      return this.enter(w);
    }
    const place = w.place;
    if (place === undefined) {
      await this.join(w); // first time, or a join that was cut off half-way
      return undefined;
    }
    const seen = await view(w.q, place.ticket, place.token);
    await this.hook('looked', w);
    if (seen.me === undefined) return this.rejoin(w);
    if (this.leases.clock.monotonicNow() >= place.validUntil) {
      // Paused (or cut off, or slow) past my own promise: the waiter behind me may act on it.
      // Renew first, for a whole turn (refused: I was skipped), then look again: never act on
      // the look from before the pause.
      return (await this.promise(w, this.turnMs)) ? undefined : this.rejoin(w);
    }
    if (seen.predecessor !== undefined) return this.watch(w, seen.predecessor);
    return this.head(w);
  }

  /** A predecessor is there: skip it if its promise lapsed, else sleep until its promise is due. */
  private async watch(w: Wait, predecessor: Waiter): Promise<undefined> {
    const now = this.leases.clock.wallNow();
    if (predecessor.expiresAt + this.skewMs < now) {
      // Removed only as seen: if it renewed meanwhile the delete is refused, and I look again.
      await removeWaiter(w.q, predecessor);
      return undefined;
    }
    if (this.remaining(w) <= 0) throw new AcquireTimeoutError(w.q.key, w.attempts);
    // Due: its promise; already due but within the clock bound: just past the bound.
    const wakeIn = predecessor.expiresAt > now ? predecessor.expiresAt - now : predecessor.expiresAt + this.skewMs + 1 - now;
    if (!(await this.promise(w, wakeIn, predecessor.expiresAt + this.turnMs))) return this.rejoin(w);
    await this.sleep(w, wakeIn);
    return undefined;
  }

  /** First in the queue: the normal conditional acquire decides. */
  private async head(w: Wait): Promise<Lease | undefined> {
    const clock = this.leases.clock;
    // Just refused (the attempt on entering, a moment ago): its answer still holds; no second request.
    const fresh = w.refusedAt !== undefined && clock.monotonicNow() - w.refusedAt < this.leases.rule.marginMs;
    if (!fresh) {
      const lease = await this.attempt(w);
      if (lease !== undefined) return lease;
    }
    const remaining = this.remaining(w);
    if (remaining <= 0) throw new AcquireTimeoutError(w.q.key, w.attempts);
    const retryAfter = w.retryAfterMs - (clock.monotonicNow() - (w.refusedAt ?? 0));
    const wait = Math.min(remaining, Math.max(retryAfter, fullJitter(Math.min(w.attempts, 4), this.backoff, this.random)));
    w.refusedAt = undefined;
    if (!(await this.promise(w, wait))) return this.rejoin(w);
    await this.sleep(w, wait);
    return undefined;
  }

  /** One tryAcquire; remembers what the holder told us (version-watch observation, expiry). */
  private async attempt(w: Wait): Promise<Lease | undefined> {
    w.attempts++;
    const r = await this.leases.tryAcquire(w.q.key, w.observation === undefined ? {} : { observation: w.observation });
    if (r.ok) return r.value;
    w.observation = r.error.observation;
    w.retryAfterMs = r.error.retryAfterMs;
    w.refusedAt = this.leases.clock.monotonicNow();
    return undefined;
  }

  /**
   * Takes a ticket and writes my waiter item. Its first promise is one turn per waiter ahead,
   * counted from the first waiter seen on entering, or else from the last ticket served: a crowd
   * that arrives at once is spread over the turns it will wait at once, instead of each waiter
   * looking every turn until the spacing settles. Tickets overcount: one given up stays unserved,
   * and the waiter behind me sleeps on my promise, a turn per abandoned ticket with the lease
   * free. So they are capped by the items there (one counting Query when the tickets say more
   * than one turn). Watching only live predecessors (etcd's mutex) is what `view` does already;
   * the promise was what overshot, and a short promise costs a renewal, never a turn.
   */
  private async join(w: Wait): Promise<void> {
    const clock = this.leases.clock;
    const { ticket, served } = await takeTicket(w.q);
    const token = randomUUID();
    const tickets = w.head !== undefined && w.head.ticket < ticket ? ticket - w.head.ticket + 1 : ticket - served;
    w.head = undefined; // a later join (after being skipped) counts from the counter
    const ahead = tickets <= 1 ? tickets : Math.min(tickets, (await waitersBefore(w.q, ticket)) + 1);
    const sendMono = clock.monotonicNow();
    const sendWall = clock.wallNow();
    const expiresAt = sendWall + Math.max(1, ahead) * this.turnMs;
    await register(w.q, { ticket, owner: this.leases.owner, token, expiresAt });
    w.place = { ticket, token, expiresAt, validUntil: validUntil(this.leases.rule, sendMono, sendWall, expiresAt) };
    await this.hook('joined', w);
  }

  /** I was skipped (my promise lapsed and the waiter behind me removed me): back to the tail. */
  private async rejoin(w: Wait): Promise<undefined> {
    await this.hook('requeued', w);
    w.place = undefined;
    await this.join(w);
    return undefined;
  }

  /**
   * Makes my promise cover a wake-up `wakeInMs` from now (and at least `spaced`, one turn behind
   * my predecessor's, so the waiter behind me sleeps as long as it should). No request when the
   * promise already covers it. False when the renewal is refused: I was skipped.
   */
  private async promise(w: Wait, wakeInMs: number, spaced = 0): Promise<boolean> {
    const clock = this.leases.clock;
    const place = w.place!;
    // Valid past the wake-up: time to look and act before the promise runs out.
    const needed = clock.monotonicNow() + wakeInMs + this.actMs;
    if (place.validUntil >= needed) return true;
    const sendMono = clock.monotonicNow();
    const sendWall = clock.wallNow();
    const expiresAt = Math.max(leastPromise(this.leases.rule, sendMono, sendWall, needed), spaced);
    if (!(await renewPromise(w.q, place, expiresAt))) return false;
    place.expiresAt = expiresAt;
    place.validUntil = validUntil(this.leases.rule, sendMono, sendWall, expiresAt);
    return true;
  }

  private remaining(w: Wait): number {
    return w.end - this.leases.clock.monotonicNow();
  }

  private async sleep(w: Wait, ms: number): Promise<void> {
    try {
      await this.leases.clock.sleep(Math.min(ms, Math.max(0, this.remaining(w))), w.signal);
    } catch (e) {
      throw new AcquireTimeoutError(w.q.key, w.attempts, { cause: e });
    }
  }

  /**
   * Leaves the queue (granted, gave up, failed). Best effort on purpose: an item left behind is a
   * hint whose promise lapses and which the waiter behind it removes; an error here must not
   * cost the caller a lease it was granted.
   */
  private async leave(w: Wait, granted = false): Promise<void> {
    const place = w.place;
    w.place = undefined;
    if (place === undefined) return;
    await removeWaiter(w.q, place).catch(() => false);
    if (granted) await markServed(w.q, place.ticket).catch(() => false);
  }

  private async hook(point: FairPoint, w: Wait): Promise<void> {
    await this.opts.hooks?.at(point, { key: w.q.key, owner: this.leases.owner, ticket: w.place?.ticket ?? 0 });
  }
}

