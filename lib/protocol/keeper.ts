/**
 * Renews a lease in the background and tells protected work when to stop.
 *
 * `signal` aborts when a renewal is refused (LeaseLostError) or when the last confirmed
 * deadline passes with no renewal confirmed (LeaseExpiredError: renewal uncertain). Protected
 * work must check it before each effect; the fence still rejects whatever was already in flight.
 */
import { fullJitter, type Random } from './backoff.js';
import type { Clock } from './clock.js';
import { InvalidInputError, LeaseExpiredError, LeaseLostError } from './errors.js';
import type { Lease, LeaseManager } from './lease.js';

/** How a LeaseKeeper renews. */
export interface KeeperOptions {
  /** Time between renewals; at most duration/3 so two renewals can fail before the deadline. */
  intervalMs: number;
  random?: Random;
  onRenewed?: (lease: Lease) => void;
}

/** Throws InvalidInputError unless 0 < interval <= duration / 3 (two renewals may fail before the deadline). */
export function validateRenewInterval(intervalMs: number, durationMs: number): void {
  if (!(Number.isFinite(intervalMs) && intervalMs > 0 && intervalMs <= durationMs / 3)) {
    throw new InvalidInputError(
      'intervalMs',
      `renew interval must be > 0 and <= duration/3 (${durationMs / 3} ms), got ${intervalMs}`,
    );
  }
}

/**
 * Keeps a granted lease renewed every `intervalMs`, and aborts `signal` when protected work must
 * stop: a refused renewal (LeaseLostError) or no confirmed renewal by the local deadline
 * (LeaseExpiredError). `stop()` ends the renewals; it does not release.
 */
export class LeaseKeeper {
  private current: Lease;
  private readonly controller = new AbortController();
  private readonly stopController = new AbortController();
  private deadlineWatch = new AbortController();
  private readonly clock: Clock;
  private readonly loop: Promise<void>;

  constructor(
    private readonly manager: LeaseManager,
    lease: Lease,
    private readonly opts: KeeperOptions,
  ) {
    validateRenewInterval(opts.intervalMs, manager.rule.durationMs);
    this.current = lease;
    this.clock = manager.clock;
    this.armDeadline();
    this.loop = this.run();
  }

  get lease(): Lease {
    return this.current;
  }

  /** The local deadline (monotonic) of the last confirmed renewal. */
  get deadline(): number {
    return this.current.deadline;
  }

  /** Aborts when protected work must stop. `signal.reason` is the typed error. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Stops renewing (does not release). Resolves when the background loop has ended. */
  async stop(): Promise<Lease> {
    this.stopController.abort();
    this.deadlineWatch.abort();
    await this.loop;
    return this.current;
  }

  private fail(error: Error): void {
    if (!this.controller.signal.aborted) this.controller.abort(error);
    this.deadlineWatch.abort();
  }

  /** A timer at the deadline, re-armed by every confirmed renewal. */
  private armDeadline(): void {
    this.deadlineWatch.abort();
    const watch = new AbortController();
    this.deadlineWatch = watch;
    const lease = this.current;
    this.clock.sleep(lease.deadline - this.clock.monotonicNow(), watch.signal).then(
      () => this.fail(new LeaseExpiredError(lease.key, lease.generation)),
      () => undefined,
    );
  }

  private async run(): Promise<void> {
    let failures = 0;
    const stop = this.stopController.signal;
    while (!stop.aborted && !this.controller.signal.aborted) {
      const wait = failures === 0 ? this.opts.intervalMs : Math.min(this.opts.intervalMs, fullJitter(failures, undefined, this.opts.random));
      try {
        await this.clock.sleep(wait, stop);
      } catch {
        return;
      }
      // Don't let one renewal hang past the deadline: after it, the answer no longer matters.
      // (AbortSignal.timeout throws RangeError on a fractional delay: performance.now() is fractional.)
      const budget = Math.max(1, Math.ceil(this.current.deadline - this.clock.monotonicNow()));
      const attempt = AbortSignal.any([stop, AbortSignal.timeout(budget)]);
      try {
        this.current = await this.manager.renew(this.current, { abortSignal: attempt });
        failures = 0;
        this.armDeadline();
        this.opts.onRenewed?.(this.current);
      } catch (e) {
        if (e instanceof LeaseLostError) return this.fail(e);
        // Timeout or network error: uncertain. Keep trying; the deadline watch decides.
        failures++;
      }
    }
  }
}
