/**
 * Contention without a thundering herd: exponential backoff with full jitter, and contenders
 * that know when the holder's lease ends sleep until then instead of polling.
 */
/** A source of uniform numbers in [0, 1), injected so tests and the model can fix the jitter. */
export type Random = () => number;

/** Exponential backoff: the first ceiling (`baseMs`), doubled per attempt up to `capMs`. */
export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
}

/** 25 ms doubling up to 2 s: for contention on one item, where a round trip is a few ms. */
export const defaultBackoff: BackoffPolicy = { baseMs: 25, capMs: 2_000 };

/** "Full jitter": uniform in [0, min(cap, base * 2^attempt)). attempt counts from 0. */
export function fullJitter(attempt: number, policy: BackoffPolicy = defaultBackoff, random: Random = Math.random): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt, 30));
  return random() * ceiling;
}

/**
 * How long a contender sleeps when it learned the holder's expiry: until the expiry (plus the
 * skew the acquire condition allows for), plus jitter so N contenders don't arrive together.
 */
export function untilExpiry(
  expiresAtWall: number,
  nowWall: number,
  opts: { maxClockSkewMs: number; jitterMs: number },
  random: Random = Math.random,
): number {
  return Math.max(0, expiresAtWall + opts.maxClockSkewMs - nowWall) + random() * opts.jitterMs;
}
