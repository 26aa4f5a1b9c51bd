/**
 * Pacing and backoff of sends. A provider's rate limit (SES's MaxSendRate, an API's operations
 * per second) is the account's, shared by every invocation that sends: each invocation is given
 * its share (`ratePerSecond`) and spaces its sends by it, so a burst of stream records does not
 * become a burst of throttled calls. What is throttled anyway (another sender on the account, a
 * share set too high) is deferred with a jittered exponential backoff stored on the item, and an
 * item held by the account's state waits a fixed, jittered while: a person has to act, and a
 * resend every few seconds would only be refused again.
 */
import type { Clock } from '../../protocol/index.js';
import type { SendResult } from './providers.js';

/** Spaces calls `1 / ratePerSecond` apart on the clock's monotonic time (the first call at once). */
export class Pacer {
  private next = Number.NEGATIVE_INFINITY;
  constructor(
    private readonly clock: Clock,
    private readonly ratePerSecond: number,
  ) {}

  /** How long the next call would wait now. */
  delayMs(): number {
    return Math.max(0, this.next - this.clock.monotonicNow());
  }

  /** Resolves when the next call may go. */
  async take(): Promise<void> {
    const now = this.clock.monotonicNow();
    const at = Math.max(now, this.next);
    this.next = at + 1000 / this.ratePerSecond;
    if (at > now) await this.clock.sleep(at - now);
  }
}

export interface BackoffSettings {
  /** A throttled item's first wait; doubled per deferral, capped at `maxMs`, full jitter. @default 1 s */
  readonly throttleBaseMs?: number;
  /** @default 15 min */
  readonly maxMs?: number;
  /** How long an item held by the account's state waits before it is tried again (±25 % jitter). @default 5 min */
  readonly heldRetryMs?: number;
}

/**
 * When an item deferred for `result` may be sent again. `deferrals`: how often it was deferred
 * before (the exponent). Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"):
 * deferred items of one burst do not come back as one burst. Never before the provider's own
 * Retry-After.
 */
export function notBeforeOf(result: Extract<SendResult, { kind: 'throttled' | 'held' }>, deferrals: number, now: number, random: () => number, s: BackoffSettings = {}): number {
  if (result.kind === 'held') return now + Math.round((s.heldRetryMs ?? 300_000) * (0.75 + random() * 0.5));
  const ceiling = Math.min(s.maxMs ?? 900_000, (s.throttleBaseMs ?? 1_000) * 2 ** Math.min(deferrals, 30));
  return now + Math.max(result.retryAfterMs ?? 0, Math.round(random() * ceiling));
}
