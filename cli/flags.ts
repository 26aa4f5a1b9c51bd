/** Command-line flag parsing shared by the CLIs (npm start, chaos, bench, fuzz). */
import { isHttpUrl } from '../lib/workflow/index.js';
import { InvalidInputError } from '../lib/protocol/index.js';

/** An integer flag in [min, max], or the fallback when absent; anything else is an InvalidInputError naming the flag. */
export function intFlag(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isSafeInteger(v) || v < min || v > max) {
    throw new InvalidInputError(`--${name}`, `must be an integer in [${min}, ${max}], got "${raw}"`);
  }
  return v;
}

/** An http(s) URL flag (an endpoint, a queue URL: lib/workflow/config.ts isHttpUrl), or undefined when absent. */
export function urlFlag(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (!isHttpUrl(raw)) throw new InvalidInputError(`--${name}`, `must be an http(s) URL, got "${raw}"`);
  return raw;
}
