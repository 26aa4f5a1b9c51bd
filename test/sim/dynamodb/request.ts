/**
 * What every operation needs from the model, and the checks every request gets: known fields
 * only (anything else is SimUnsupported, never silently ignored), a known table.
 */
import { SimAwsError, SimUnsupportedError, validation } from './errors.js';
import type { Table } from './table.js';

export interface Db {
  table(name: unknown): Table;
}

/** Refuses any field outside `known`, and legacy parameters by name. */
export function checkFields(op: string, input: Record<string, unknown>, known: readonly string[]): void {
  for (const k of Object.keys(input)) {
    if (input[k] === undefined) continue;
    if (!known.includes(k)) throw new SimUnsupportedError(`${op}.${k}`);
  }
}

export function oneOf<T extends string>(op: string, field: string, v: unknown, allowed: readonly T[], fallback: T): T {
  if (v === undefined) return fallback;
  if (!allowed.includes(v as T)) {
    if (typeof v === 'string' && /^[A-Z_]+$/.test(v)) throw validation(`1 validation error detected: Value '${v}' at '${field}' failed to satisfy constraint: Member must satisfy enum value set: [${allowed.join(', ')}]`);
    throw new SimUnsupportedError(`${op}.${field}=${String(v)}`);
  }
  return v as T;
}

export const conditionFailed = (item?: Record<string, unknown>): SimAwsError =>
  new SimAwsError('ConditionalCheckFailedException', 'The conditional request failed', item === undefined ? {} : { Item: item });
