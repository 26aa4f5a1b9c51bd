/**
 * Time, injected. Two clocks with different jobs:
 * - monotonic: durations and local deadlines. Never jumps, never compared across hosts.
 * - wall: only written to the store (`expiresAt`) and compared with another host's wall clock
 *   under an explicit bound on clock offset (`maxClockSkewMs`).
 * Nothing else in lib/ reads `Date.now()` or `performance.now()`.
 */
import { InvalidInputError } from './errors.js';

/** Time, injected: a monotonic clock for durations and deadlines, a wall clock only for what is stored, and a sleep. */
export interface Clock {
  monotonicNow(): number;
  wallNow(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('aborted', 'AbortError');
}

/** The process's clocks: `performance.now()`, `Date.now()`, `setTimeout`. The only place lib/ reads them. */
export const systemClock: Clock = {
  monotonicNow: () => performance.now(),
  wallNow: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortReason(signal!));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, Math.max(0, ms));
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** A clock whose wall time is off by `wallOffsetMs`: how tests model skewed hosts. */
export function skewedClock(base: Clock, wallOffsetMs: number): Clock {
  return {
    monotonicNow: () => base.monotonicNow(),
    wallNow: () => base.wallNow() + wallOffsetMs,
    // bound call: `base.sleep` detached from a ManualClock would lose `this`
    sleep: (ms, signal) => base.sleep(ms, signal),
  };
}

/**
 * A clock whose monotonic time runs `rate` faster than `base` (0.01: 1 % fast; negative: slow),
 * from the moment it is made: how the simulator models a host's oscillator drift. Its wall clock
 * stays `base`'s (NTP disciplines it; its offset is what skewedClock models), and its sleeps end
 * when its own clock says so.
 */
export function driftedClock(base: Clock, rate: number): Clock {
  const from = base.monotonicNow();
  return {
    monotonicNow: () => from + (base.monotonicNow() - from) * (1 + rate),
    wallNow: () => base.wallNow(),
    sleep: (ms, signal) => base.sleep(ms / (1 + rate), signal),
  };
}

/**
 * A clock that only moves when told to. Sleepers wake in deadline order as `advance` passes them.
 * For pure-logic tests; protocol tests on DynamoDB Local use it too, since the store only sees
 * the wall-clock numbers we write.
 */
export class ManualClock implements Clock {
  private mono: number;
  private wall: number;
  private sleepers: { at: number; resolve: () => void }[] = [];

  constructor(start: { monotonic?: number; wall?: number } = {}) {
    this.mono = start.monotonic ?? 0;
    this.wall = start.wall ?? 1_700_000_000_000;
  }

  monotonicNow(): number {
    return this.mono;
  }

  wallNow(): number {
    return this.wall;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== entry);
        reject(abortReason(signal!));
      };
      // Unsubscribe on wake, as systemClock does: a long-lived signal (a keeper's stop signal)
      // would otherwise collect one listener per sleep.
      const entry = {
        at: this.mono + Math.max(0, ms),
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.sleepers.push(entry);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Moves both clocks forward; wakes every sleeper whose time has come, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.mono + ms;
    for (;;) {
      this.sleepers.sort((a, b) => a.at - b.at);
      const next = this.sleepers[0];
      if (next === undefined || next.at > target) break;
      this.sleepers.shift();
      this.wall += next.at - this.mono;
      this.mono = next.at;
      next.resolve();
      // let the woken task run up to its next await before waking the next one
      await new Promise((r) => setImmediate(r));
    }
    this.wall += target - this.mono;
    this.mono = target;
  }

  /** How many sleepers are waiting: lets a test wait until a task has parked itself. */
  get pendingSleepers(): number {
    return this.sleepers.length;
  }

  /** When the earliest sleeper wakes (monotonic), if any: lets a test move time to the next event exactly. */
  get nextWakeAt(): number | undefined {
    return this.sleepers.reduce<number | undefined>((min, s) => (min === undefined || s.at < min ? s.at : min), undefined);
  }
}

/** How a holder turns a granted duration into a local deadline (leaseDeadline). */
export interface DeadlineRule {
  /** Lease duration granted by the authority. */
  durationMs: number;
  /** Bound on how much faster the holder's clock may run than real time, e.g. 0.01 for 1 %. */
  maxDrift: number;
  /** Safety margin subtracted from every deadline: time to stop protected work. */
  marginMs: number;
}

/**
 * The holder's local deadline on its monotonic clock. `sendTime` is read *before* the request
 * leaves: the authority may have started the lease any time after it, never before, so
 * counting from the response would let the holder act for up to a round trip too long.
 */
export function leaseDeadline(sendTime: number, rule: DeadlineRule): number {
  return sendTime + rule.durationMs * (1 - rule.maxDrift) - rule.marginMs;
}

/** Throws InvalidInputError unless the rule leaves a positive usable time: duration > 0, drift in [0, 1), margin >= 0. */
export function validateDeadlineRule(rule: DeadlineRule): void {
  if (!(Number.isFinite(rule.durationMs) && rule.durationMs > 0)) {
    throw new InvalidInputError('durationMs', `must be a positive number of milliseconds, got ${rule.durationMs}`);
  }
  if (!(rule.maxDrift >= 0 && rule.maxDrift < 1)) {
    throw new InvalidInputError('maxDrift', `must be in [0, 1), got ${rule.maxDrift}`);
  }
  if (!(rule.marginMs >= 0)) throw new InvalidInputError('marginMs', `must be >= 0, got ${rule.marginMs}`);
  if (leaseDeadline(0, rule) <= 0) {
    throw new InvalidInputError('marginMs', 'leaves no usable time: duration * (1 - maxDrift) - margin must be > 0');
  }
}
