/** Small statistics for noisy machines: medians and quantiles of repeated rounds, never a single run. */
const sorted = (xs: readonly number[]): number[] => [...xs].sort((a, b) => a - b);

function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = sorted(xs);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

export const median = (xs: readonly number[]): number => quantile(xs, 0.5);
export const max = (xs: readonly number[]): number => (xs.length === 0 ? Number.NaN : Math.max(...xs));

/** Rounds to `digits` decimals (for the JSON report). */
export const round = (x: number, digits = 2): number => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : x);

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
