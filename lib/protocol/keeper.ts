/**
 * Keeps a lease: renews it when its remaining time falls below a threshold, and says when
 * protected work must stop. The holder calls `keep()` between pieces of protected work (the
 * workflow's worker calls it before every unit), so nothing runs in the background: a frozen or
 * killed process renews nothing, a Lambda container thawed for the next invocation has no stray
 * timer renewing an old lease, and what the tests drive is what runs.
 *
 *   held        the lease is safe to use until `lease.deadline` (renewed if it was due)
 *   lost        the renewal was refused: someone else holds it; stop (nothing to release)
 *   uncertain   the renewal was not confirmed before the deadline; stop issuing protected work
 *               (the fence still rejects whatever was already in flight)
 */
import { InvalidInputError, LeaseLostError } from './errors.js';
import type { Lease, LeaseManager } from './lease.js';

/** What `keep()` found: the lease held (renewed or not), lost to someone else, or uncertain. */
export type KeepResult =
  | { readonly kind: 'held'; readonly lease: Lease; readonly renewed: boolean }
  | { readonly kind: 'lost'; readonly error: LeaseLostError }
  | { readonly kind: 'uncertain'; readonly cause: unknown };

/** How a LeaseKeeper renews. */
export interface KeeperOptions {
  /** Renew when less than this remains before the local deadline. Default: half the duration. */
  renewBelowMs?: number;
  /** Awaited before each renewal request: where fault injection delays a renewal. */
  beforeRenew?: () => Promise<void>;
}

/** Throws InvalidInputError unless 0 < renewBelowMs < the lease duration. */
export function validateRenewBelow(renewBelowMs: number, durationMs: number): void {
  if (!(Number.isFinite(renewBelowMs) && renewBelowMs > 0 && renewBelowMs < durationMs)) {
    throw new InvalidInputError('renewBelowMs', `must be > 0 and < the lease duration (${durationMs} ms), got ${renewBelowMs}`);
  }
}

/** Keeps one granted lease: `keep()` before each piece of protected work (see the module comment). */
export class LeaseKeeper {
  private current: Lease;
  private readonly renewBelowMs: number;

  constructor(
    private readonly manager: LeaseManager,
    lease: Lease,
    private readonly opts: KeeperOptions = {},
  ) {
    this.renewBelowMs = opts.renewBelowMs ?? manager.rule.durationMs / 2;
    validateRenewBelow(this.renewBelowMs, manager.rule.durationMs);
    this.current = lease;
  }

  /** The lease as last confirmed (its deadline moves with every confirmed renewal). */
  get lease(): Lease {
    return this.current;
  }

  /** True while the local deadline has not passed: protected work may still be issued. */
  isSafe(): boolean {
    return this.manager.isSafe(this.current);
  }

  /** Renews when due; see the module comment for what each result means. */
  async keep(): Promise<KeepResult> {
    const clock = this.manager.clock;
    if (this.current.deadline - clock.monotonicNow() >= this.renewBelowMs) return { kind: 'held', lease: this.current, renewed: false };
    await this.opts.beforeRenew?.();
    // A renewal sent before the deadline is abandoned AT the deadline (on the lease's own injected
    // clock): after it the answer no longer matters. One sent after the deadline (a paused holder)
    // may still succeed: its condition on owner AND generation proves nobody took the lease
    // meanwhile, and its new deadline counts from its own send time.
    const budget = this.current.deadline - clock.monotonicNow();
    const atDeadline = new AbortController();
    const done = new AbortController();
    if (budget > 0) {
      clock.sleep(budget, done.signal).then(
        () => atDeadline.abort(new Error('the local deadline passed during the renewal')),
        () => undefined,
      );
    }
    try {
      this.current = await this.manager.renew(this.current, { abortSignal: atDeadline.signal });
      return { kind: 'held', lease: this.current, renewed: true };
    } catch (e) {
      if (e instanceof LeaseLostError) return { kind: 'lost', error: e };
      // Timeout or network error: the renewal may or may not have applied.
      return { kind: 'uncertain', cause: e };
    } finally {
      done.abort();
    }
  }
}
