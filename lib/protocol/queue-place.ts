/**
 * A waiter's place in the fair acquire's queue (fair-acquire.ts), and the arithmetic of the
 * promise that keeps it. The promise (`expiresAt`, wall clock) is what the waiter behind judges:
 * lapsed once its own wall clock is past it by more than the clock bound. The waiter itself acts
 * only before `validUntil`, counted on its monotonic clock from the send time of the write that
 * set the promise, less drift and margin, exactly like a lease's local deadline (clock.ts).
 */
import { leaseDeadline, type DeadlineRule } from './clock.js';

/** My place in the queue: my ticket, my item's token, my promise and until when I may act on it. */
export interface Place {
  readonly ticket: number;
  readonly token: string;
  expiresAt: number;
  /** Monotonic: act on a look only before this instant. */
  validUntil: number;
}

/** Until when (monotonic) a promise of `expiresAt`, written at (sendMono, sendWall), lets its waiter act. */
export function validUntil(rule: DeadlineRule, sendMono: number, sendWall: number, expiresAt: number): number {
  return leaseDeadline(sendMono, { durationMs: expiresAt - sendWall, maxDrift: rule.maxDrift, marginMs: rule.marginMs });
}

/** The earliest promise (wall) that, written at (sendMono, sendWall), is still valid at `neededMono`. */
export function leastPromise(rule: DeadlineRule, sendMono: number, sendWall: number, neededMono: number): number {
  return sendWall + Math.ceil((neededMono - sendMono + rule.marginMs) / (1 - rule.maxDrift));
}
