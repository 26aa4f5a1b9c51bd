// tier: quick
/**
 * Generations as numbers (pure, no DynamoDB): (epoch, sequence) packed into one safe integer so a
 * single numeric comparison orders every token, and every token of a later epoch is greater.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  asGeneration,
  compareGenerations,
  epochCeiling,
  epochFloor,
  epochOf,
  formatGeneration,
  InvalidInputError,
  makeGeneration,
  MAX_EPOCH,
  MAX_SEQUENCE,
  parseGeneration,
  SEQUENCE_SPACE,
  sequenceOf,
} from '../lib/protocol/index.js';

const epochs = fc.integer({ min: 0, max: MAX_EPOCH });
const sequences = fc.integer({ min: 0, max: MAX_SEQUENCE });

describe('generation encoding', () => {
  it('encodes epoch * 2^32 + sequence and decodes both parts back', () => {
    expect(SEQUENCE_SPACE).toBe(2 ** 32);
    expect(makeGeneration(0, 7)).toBe(7);
    expect(makeGeneration(3, 17)).toBe(3 * 2 ** 32 + 17);
    fc.assert(
      fc.property(epochs, sequences, (e, s) => {
        const g = makeGeneration(e, s);
        return Number.isSafeInteger(g) && epochOf(g) === e && sequenceOf(g) === s;
      }),
    );
  });

  it('the largest token is exactly Number.MAX_SAFE_INTEGER: no token loses precision', () => {
    expect(makeGeneration(MAX_EPOCH, MAX_SEQUENCE)).toBe(Number.MAX_SAFE_INTEGER);
    expect(epochCeiling(MAX_EPOCH)).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => makeGeneration(MAX_EPOCH + 1, 0)).toThrow(InvalidInputError);
    expect(() => makeGeneration(0, MAX_SEQUENCE + 1)).toThrow(InvalidInputError);
    expect(() => makeGeneration(0, -1)).toThrow(InvalidInputError);
  });

  it('numeric order is (epoch, sequence) order: every token of a later epoch is greater than every token of an earlier one', () => {
    expect(makeGeneration(1, 0)).toBeGreaterThan(makeGeneration(0, MAX_SEQUENCE));
    expect(epochFloor(1)).toBe(epochCeiling(0) + 1);
    fc.assert(
      fc.property(epochs, sequences, epochs, sequences, (e1, s1, e2, s2) => {
        const lexical = e1 !== e2 ? Math.sign(e1 - e2) : Math.sign(s1 - s2);
        const a = makeGeneration(e1, s1);
        const b = makeGeneration(e2, s2);
        return compareGenerations(a, b) === lexical && Math.sign(a - b) === lexical;
      }),
    );
  });

  it('compareGenerations is a total order consistent with equality', () => {
    const a = makeGeneration(2, 5);
    expect(compareGenerations(a, makeGeneration(2, 5))).toBe(0);
    expect(compareGenerations(a, makeGeneration(2, 6))).toBe(-1);
    expect(compareGenerations(makeGeneration(3, 0), a)).toBe(1);
  });

  it('format is "epoch:sequence" and parse(format(g)) round-trips', () => {
    expect(formatGeneration(makeGeneration(3, 17))).toBe('3:17');
    expect(formatGeneration(makeGeneration(0, 0))).toBe('0:0');
    expect(parseGeneration('3:17')).toBe(makeGeneration(3, 17));
    expect(parseGeneration('  3:17 ')).toBe(makeGeneration(3, 17));
    expect(parseGeneration(`${MAX_EPOCH}:${MAX_SEQUENCE}`)).toBe(Number.MAX_SAFE_INTEGER);
    fc.assert(
      fc.property(epochs, sequences, (e, s) => {
        const g = makeGeneration(e, s);
        return parseGeneration(formatGeneration(g)) === g;
      }),
    );
  });

  it('asGeneration accepts only non-negative safe integers (what DynamoDB hands back)', () => {
    expect(asGeneration(0)).toBe(0);
    expect(asGeneration(Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
    for (const bad of [-1, 1.5, Number.MAX_SAFE_INTEGER + 1, Number.NaN, Number.POSITIVE_INFINITY, '7', undefined, null]) {
      const e = (() => {
        try {
          asGeneration(bad, 'fence.generation');
        } catch (error) {
          return error;
        }
      })();
      expect(e, String(bad)).toBeInstanceOf(InvalidInputError);
      expect((e as InvalidInputError).field).toBe('fence.generation');
    }
  });

  it('epochFloor and epochCeiling bound each epoch', () => {
    expect(epochFloor(0)).toBe(0);
    expect(epochFloor(5)).toBe(5 * 2 ** 32);
    expect(epochCeiling(5)).toBe(6 * 2 ** 32 - 1);
    expect(epochOf(epochCeiling(5))).toBe(5);
    expect(sequenceOf(epochFloor(5))).toBe(0);
  });
});
