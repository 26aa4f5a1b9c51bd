/**
 * A generation is the fencing token: (epoch, sequence) in ONE DynamoDB number,
 * `epoch * 2^32 + sequence`, so a single numeric comparison orders every token, and a raised
 * epoch puts every later token above every earlier one. `0 < sequence < 2^32` is enforced by
 * the issuer's condition expression (lease.ts), so the bound is a proof, not a guess.
 */
import type { Generation } from './brand.js';
import { describeValue, InvalidInputError } from './errors.js';

export type { Generation };

/** Tokens per epoch: a generation is `epoch * SEQUENCE_SPACE + sequence`. */
export const SEQUENCE_SPACE = 2 ** 32;
/** The last sequence an epoch may issue: the issuer refuses to go past it (raise the epoch). */
export const MAX_SEQUENCE = SEQUENCE_SPACE - 1;
/** Keeps epoch * 2^32 + seq inside Number.MAX_SAFE_INTEGER (2^53 - 1), so no token loses precision. */
export const MAX_EPOCH = 2 ** 21 - 1;

/** Throws InvalidInputError unless `epoch` is an integer in [0, MAX_EPOCH]. */
export function assertEpoch(epoch: number, field = 'epoch'): void {
  if (!Number.isSafeInteger(epoch) || epoch < 0 || epoch > MAX_EPOCH) {
    throw new InvalidInputError(field, `must be an integer in [0, ${MAX_EPOCH}], got ${describeValue(epoch)}`);
  }
}

/** The generation `epoch * 2^32 + sequence`, both checked. */
export function makeGeneration(epoch: number, sequence: number): Generation {
  assertEpoch(epoch);
  if (!Number.isSafeInteger(sequence) || sequence < 0 || sequence > MAX_SEQUENCE) {
    throw new InvalidInputError('sequence', `must be an integer in [0, 2^32 - 1], got ${describeValue(sequence)}`);
  }
  return (epoch * SEQUENCE_SPACE + sequence) as Generation;
}

/** Accepts a number read from DynamoDB (or a flag) as a Generation after checking it is one. */
export function asGeneration(value: unknown, field = 'generation'): Generation {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidInputError(field, `must be a non-negative safe integer, got ${describeValue(value)}`);
  }
  return value as Generation;
}

/** The epoch part of a generation. */
export const epochOf = (g: Generation): number => Math.floor(g / SEQUENCE_SPACE);
/** The sequence part of a generation. */
export const sequenceOf = (g: Generation): number => g % SEQUENCE_SPACE;

/** The lowest value of an epoch: what `seal(epoch)` raises every fence and counter to. */
export const epochFloor = (epoch: number): Generation => makeGeneration(epoch, 0);
/** The highest token an issuer may hand out in an epoch. */
export const epochCeiling = (epoch: number): Generation => makeGeneration(epoch, MAX_SEQUENCE);

/** Orders two generations (-1, 0, 1): one numeric comparison orders epochs and sequences alike. */
export const compareGenerations = (a: Generation, b: Generation): number => (a < b ? -1 : a > b ? 1 : 0);

/** Human form `epoch:sequence`, e.g. `3:17`. */
export const formatGeneration = (g: Generation): string => `${epochOf(g)}:${sequenceOf(g)}`;

/** Reads the human form `epoch:sequence` (formatGeneration's), e.g. from a CLI flag. */
export function parseGeneration(text: string): Generation {
  if (typeof text !== 'string') throw new InvalidInputError('generation', `expected "epoch:sequence", got ${typeof text}`);
  const m = /^(\d+):(\d+)$/.exec(text.trim());
  if (m === null) throw new InvalidInputError('generation', `expected "epoch:sequence", got "${text}"`);
  return makeGeneration(Number(m[1]), Number(m[2]));
}
