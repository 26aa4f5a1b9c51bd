/** Command-line flag parsing shared by the CLIs (npm start, chaos, bench, fuzz). */
import { InvalidInputError } from '../../lib/errors.js';

/** An integer flag in [min, max], or the fallback when absent; anything else is an InvalidInputError naming the flag. */
export function intFlag(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isSafeInteger(v) || v < min || v > max) {
    throw new InvalidInputError(`--${name}`, `must be an integer in [${min}, ${max}], got "${raw}"`);
  }
  return v;
}

/**
 * An http(s) URL flag (an endpoint, a queue URL), or undefined when absent. Checked here: the
 * SDK accepts any string and fails only at the first request, with a bare TypeError.
 */
export function urlFlag(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let ok = false;
  try {
    const u = new URL(raw);
    ok = (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '' && !/\s/.test(raw);
  } catch {
    ok = false;
  }
  if (!ok) throw new InvalidInputError(`--${name}`, `must be an http(s) URL, got "${raw}"`);
  return raw;
}
