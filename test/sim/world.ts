/**
 * The simulated world: every source of time and randomness the real code reads, owned by one
 * seeded scheduler. While a world is installed, `setTimeout`/`setInterval`/`setImmediate`,
 * `Date`, `performance.now`, `Math.random` and `crypto.randomUUID` (also the ESM named export,
 * through `syncBuiltinESMExports`) are the world's: a timer is an event on its queue, and time
 * moves only when the queue's next event is due. Between two events every runnable promise
 * chain runs to its next wait (one turn of the real event loop, with no I/O pending: a simulated
 * run opens no socket), so the order of everything that happens is a function of the seed.
 *
 * This is how the simulator runs lib/, functions/ and the local runtime unmodified: they read
 * time through `Clock` (systemClock reads the globals) and the SDK schedules its retries with
 * `setTimeout`; both become virtual. A world is one run: install, run, uninstall; never two at
 * once in one process (the globals are process-wide).
 */
import { AsyncResource } from 'node:async_hooks';
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { FencedError } from '../../lib/protocol/index.js';
import { mulberry32 } from '../../lib/workloads/invoices/invoices.js';

/** A simulated run could not go on: the world's own limits, or a second world in one process. */
export class SimWorldError extends FencedError {
  readonly code = 'SIM_WORLD';
}

interface Timer {
  at: number;
  seq: number;
  fn: (...args: unknown[]) => void;
  args: unknown[];
  every?: number;
  cancelled: boolean;
}

/** A handle like Node's: `ref`/`unref`/`hasRef` are no-ops here (a world ends when its main task does, not when no timer is left). */
class SimTimeout {
  constructor(readonly timer: Timer) {}
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
  hasRef(): boolean {
    return true;
  }
  refresh(): this {
    return this;
  }
  [Symbol.toPrimitive](): number {
    return this.timer.seq;
  }
}

/** A binary min-heap on (at, seq): the event queue. */
class TimerHeap {
  private readonly items: Timer[] = [];
  get size(): number {
    return this.items.length;
  }
  push(t: Timer): void {
    const a = this.items;
    a.push(t);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }
  pop(): Timer | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && before(a[l]!, a[m]!)) m = l;
        if (r < a.length && before(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}
const before = (x: Timer, y: Timer) => x.at < y.at || (x.at === y.at && x.seq < y.seq);

/** Where a simulated run's wall clock starts: a fixed instant, so stored timestamps replay too. */
export const SIM_EPOCH_MS = Date.UTC(2026, 0, 1);

export interface WorldLimits {
  /** Virtual milliseconds after which the run is cut off (a livelock, a protocol that never ends). */
  maxVirtualMs: number;
  /** Events after which the run is cut off. */
  maxEvents: number;
}

const DEFAULT_LIMITS: WorldLimits = { maxVirtualMs: 6 * 3_600_000, maxEvents: 5_000_000 };

let installed: World | undefined;
const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  setImmediate: globalThis.setImmediate,
  clearImmediate: globalThis.clearImmediate,
  Date: globalThis.Date,
  performanceNow: performance.now.bind(performance),
  random: Math.random,
  randomUUID: crypto.randomUUID,
  abortTimeout: AbortSignal.timeout.bind(AbortSignal),
};

export class World {
  /** Virtual milliseconds since the run began. */
  private t = 0;
  private seq = 0;
  private readonly queue = new TimerHeap();
  private readonly rand: () => number;
  private readonly limits: WorldLimits;
  /** Events fired so far. */
  events = 0;
  /** Times the run waited in real time for something outside the world (a module's first load): 0 in a warm process. */
  realWaits = 0;

  constructor(
    readonly seed: number,
    limits: Partial<WorldLimits> = {},
  ) {
    this.rand = mulberry32(seed ^ 0x9e3779b9);
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /** Virtual ms since the start (what `performance.now()` reads). */
  get now(): number {
    return this.t;
  }

  /** The world's wall clock (what `Date.now()` reads). */
  get wallNow(): number {
    return SIM_EPOCH_MS + Math.floor(this.t);
  }

  /** The world's random source, in [0, 1). Everything that draws in a run draws from it, in event order. */
  random(): number {
    return this.rand();
  }

  /** A v4-shaped UUID from the world's random source. */
  uuid(): `${string}-${string}-${string}-${string}-${string}` {
    const hex = (n: number) => Array.from({ length: n }, () => Math.floor(this.rand() * 16).toString(16)).join('');
    return `${hex(8)}-${hex(4)}-4${hex(3)}-${((8 + Math.floor(this.rand() * 4)) as number).toString(16)}${hex(3)}-${hex(12)}`;
  }

  /**
   * Schedules `fn` after `ms` virtual milliseconds, in the async context it was scheduled from
   * (as Node's own timers do): a callback inside a function's invocation stays that function's
   * for the AWS call recorder's AsyncLocalStorage, instead of the world's run loop's context.
   */
  schedule(ms: number, fn: (...args: unknown[]) => void, args: unknown[] = [], every?: number): SimTimeout {
    // AsyncLocalStorage.snapshot() is this, through a deprecation wrapper that costs more than the rest of scheduling.
    const scope = new AsyncResource('SimTimer');
    const call = (...a: unknown[]) => scope.runInAsyncScope(fn, undefined, ...a);
    const timer: Timer = { at: this.t + Math.max(0, Number.isFinite(ms) ? ms : 0), seq: this.seq++, fn: call, args, cancelled: false, ...(every === undefined ? {} : { every }) };
    this.queue.push(timer);
    return new SimTimeout(timer);
  }

  /** A promise that resolves after `ms` virtual milliseconds. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.schedule(ms, () => resolve()));
  }

  /** Replaces the process's clocks, timers and random sources with this world's. */
  install(): void {
    if (installed !== undefined) throw new SimWorldError('a simulated world is already installed in this process: one run at a time');
    installed = this;
    const w = this;
    // A handle the world did not make (a real timer armed before the run, e.g. by Node's own fetch)
    // goes to the real clear: left armed, it would fire after its owner is gone.
    const canceller = (clear: (h: never) => void) => (h: unknown) => {
      if (h instanceof SimTimeout) h.timer.cancelled = true;
      else clear(h as never);
    };
    const g = globalThis as Record<string, unknown>;
    g.setTimeout = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => w.schedule(ms ?? 0, fn, args);
    g.clearTimeout = canceller(real.clearTimeout);
    g.setInterval = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => w.schedule(Math.max(1, ms ?? 1), fn, args, Math.max(1, ms ?? 1));
    g.clearInterval = canceller(real.clearInterval);
    g.setImmediate = (fn: (...a: unknown[]) => void, ...args: unknown[]) => w.schedule(0, fn, args);
    g.clearImmediate = canceller(real.clearImmediate);
    g.Date = simDate(() => w.wallNow);
    performance.now = () => w.now;
    Math.random = () => w.random();
    crypto.randomUUID = () => w.uuid();
    // fetch's timeout signal: Node arms a real timer for it, which would fire in real time.
    AbortSignal.timeout = (ms: number) => {
      const c = new AbortController();
      w.schedule(ms, () => c.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')));
      return c.signal;
    };
    syncBuiltinESMExports();
  }

  /** Puts the process's own clocks and random sources back. */
  uninstall(): void {
    if (installed !== this) return;
    installed = undefined;
    const g = globalThis as Record<string, unknown>;
    g.setTimeout = real.setTimeout;
    g.clearTimeout = real.clearTimeout;
    g.setInterval = real.setInterval;
    g.clearInterval = real.clearInterval;
    g.setImmediate = real.setImmediate;
    g.clearImmediate = real.clearImmediate;
    g.Date = real.Date;
    performance.now = real.performanceNow;
    Math.random = real.random;
    crypto.randomUUID = real.randomUUID;
    AbortSignal.timeout = real.abortTimeout;
    syncBuiltinESMExports();
  }

  /**
   * Runs `main` to its end in virtual time: let every runnable chain run, then fire the next due
   * event, until `main` settles. Throws SimWorldError when a limit is reached (the run is then
   * judged by what it left behind, never waited on in real time).
   */
  async run<T>(main: () => Promise<T>): Promise<T> {
    let settled = false;
    let value: T | undefined;
    let failure: { error: unknown } | undefined;
    void main().then(
      (v) => ((settled = true), (value = v)),
      (e: unknown) => ((settled = true), (failure = { error: e })),
    );
    for (;;) {
      await drain();
      if (settled) break;
      let next = this.nextTimer();
      // Nothing queued: something real may still be under way (a module's first load). Wait for it in real time, briefly.
      for (let graceFrom = real.performanceNow(); next === undefined && !settled && real.performanceNow() - graceFrom < 2_000; next = this.nextTimer()) {
        await new Promise<void>((resolve) => real.setTimeout(resolve, 1));
        this.realWaits++;
      }
      if (settled && next !== undefined) this.queue.push(next);
      if (settled) break;
      if (next === undefined) throw new SimWorldError(`deadlock at ${Math.round(this.t)} virtual ms: the run waits and no event is queued`);
      if (next.at > this.limits.maxVirtualMs) throw new SimWorldError(`cut off at ${this.limits.maxVirtualMs} virtual ms (${this.events} events): the run did not end`);
      if (++this.events > this.limits.maxEvents) throw new SimWorldError(`cut off after ${this.limits.maxEvents} events at ${Math.round(this.t)} virtual ms`);
      this.t = Math.max(this.t, next.at);
      // The same timer object again: its handle's clearInterval must still reach it.
      if (next.every !== undefined) {
        next.at = this.t + next.every;
        next.seq = this.seq++;
        this.queue.push(next);
      }
      next.fn(...next.args);
    }
    if (failure !== undefined) throw failure.error;
    return value as T;
  }

  private nextTimer(): Timer | undefined {
    for (;;) {
      const t = this.queue.pop();
      if (t === undefined || !t.cancelled) return t;
    }
  }
}

/** One turn of the real event loop: every promise chain and nextTick that can run, runs. */
const drain = () => new Promise<void>((resolve) => real.setImmediate(resolve));

/** `Date` whose "now" is the world's: `new Date()` and `Date.now()`; every other use is the real Date. */
function simDate(now: () => number): DateConstructor {
  const RealDate = real.Date;
  class SimDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(now());
      else super(...(args as [number]));
    }
    static override now(): number {
      return now();
    }
  }
  return SimDate as unknown as DateConstructor;
}

/** Runs `main` inside a fresh world of `seed`, installed for the run's duration only. */
export async function inWorld<T>(seed: number, main: (world: World) => Promise<T>, limits: Partial<WorldLimits> = {}): Promise<T> {
  const world = new World(seed, limits);
  world.install();
  try {
    return await world.run(() => main(world));
  } finally {
    world.uninstall();
  }
}
