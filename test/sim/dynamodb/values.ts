/**
 * AttributeValues in their wire form ({ S: 'x' }, { N: '1' }, ...): validated and normalized once
 * as a request enters (numbers canonical, sets without duplicates), then treated as immutable:
 * the model never mutates a stored value, it builds new containers along a changed path.
 *
 * Sets keep their insertion order here; DynamoDB returns sets in no promised order, so a caller
 * comparing answers must not rely on it.
 */
import { canonicalNumber, compareDecimal, parseDecimal } from './decimal.js';
import { validation } from './errors.js';

export type AV =
  | { S: string }
  | { N: string }
  | { B: string }
  | { BOOL: boolean }
  | { NULL: true }
  | { M: Item }
  | { L: AV[] }
  | { SS: string[] }
  | { NS: string[] }
  | { BS: string[] };
export type Item = Record<string, AV>;
export type AVType = 'S' | 'N' | 'B' | 'BOOL' | 'NULL' | 'M' | 'L' | 'SS' | 'NS' | 'BS';

const TYPES = new Set<string>(['S', 'N', 'B', 'BOOL', 'NULL', 'M', 'L', 'SS', 'NS', 'BS']);
const SET_NAMES: Record<string, string> = { SS: 'string set', NS: 'number set', BS: 'binary set' };
const MAX_DEPTH = 32;

export const typeOf = (v: AV): AVType => Object.keys(v)[0] as AVType;
/** The payload of a value, whatever its type. */
export const payload = (v: AV): unknown => (v as Record<string, unknown>)[typeOf(v)];

/** A wire value checked as DynamoDB checks it, numbers made canonical. */
export function normalizeValue(raw: unknown, depth = 0): AV {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw validation('Supplied AttributeValue is empty, must contain exactly one of the supported datatypes');
  const keys = Object.keys(raw);
  if (keys.length !== 1 || !TYPES.has(keys[0]!)) throw validation('Supplied AttributeValue is empty, must contain exactly one of the supported datatypes');
  if (depth > MAX_DEPTH) throw validation('Nesting Levels have exceeded supported limits');
  const t = keys[0] as AVType;
  const v = (raw as Record<string, unknown>)[t];
  switch (t) {
    case 'S':
    case 'B':
      if (typeof v !== 'string') throw validation(`Invalid attribute value type`);
      return t === 'S' ? { S: v } : { B: v };
    case 'N':
      if (typeof v !== 'string') throw validation('Invalid attribute value type');
      return { N: canonicalNumber(v) };
    case 'BOOL':
      if (typeof v !== 'boolean') throw validation('Invalid attribute value type');
      return { BOOL: v };
    case 'NULL':
      if (v !== true) throw validation('One or more parameter values were invalid: Null attribute value types must have the value of true');
      return { NULL: true };
    case 'M':
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw validation('Invalid attribute value type');
      return { M: normalizeItem(v as Record<string, unknown>, depth + 1) };
    case 'L':
      if (!Array.isArray(v)) throw validation('Invalid attribute value type');
      return { L: v.map((e) => normalizeValue(e, depth + 1)) };
    default:
      return normalizeSet(t, v);
  }
}

function normalizeSet(t: 'SS' | 'NS' | 'BS', v: unknown): AV {
  if (!Array.isArray(v) || v.some((e) => typeof e !== 'string')) throw validation('Invalid attribute value type');
  if (v.length === 0) throw validation(`One or more parameter values were invalid: An ${SET_NAMES[t]}  may not be empty`);
  const members = t === 'NS' ? (v as string[]).map(canonicalNumber) : (v as string[]);
  if (new Set(members).size !== members.length) {
    throw validation(t === 'NS' ? 'Input collection contains duplicates' : `One or more parameter values were invalid: Input collection [${members.join(', ')}] contains duplicates`);
  }
  return { [t]: members } as AV;
}

export function normalizeItem(raw: Record<string, unknown>, depth = 0): Item {
  const out: Item = {};
  for (const [k, v] of Object.entries(raw)) out[k] = normalizeValue(v, depth);
  return out;
}

/** UTF-8 byte order, as DynamoDB orders strings (JS's < orders UTF-16 units: differs above U+D7FF). */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  // eslint-disable-next-line no-control-regex
  if (/^[\u0000-\ud7ff]*$/.test(a) && /^[\u0000-\ud7ff]*$/.test(b)) return a < b ? -1 : 1;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

export const compareBinary = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'base64'), Buffer.from(b, 'base64'));

/** Order of two scalars of one type (S, N, B); undefined when they cannot be ordered. */
export function compareScalars(a: AV, b: AV): number | undefined {
  if ('S' in a && 'S' in b) return compareStrings(a.S, b.S);
  if ('N' in a && 'N' in b) return compareDecimal(parseDecimal(a.N), parseDecimal(b.N));
  if ('B' in a && 'B' in b) return compareBinary(a.B, b.B);
  return undefined;
}

/** DynamoDB equality: same type and same value (sets regardless of order). */
export function equalValues(a: AV, b: AV): boolean {
  const t = typeOf(a);
  if (t !== typeOf(b)) return false;
  switch (t) {
    case 'S':
    case 'N':
    case 'B':
      return compareScalars(a, b) === 0;
    case 'BOOL':
      return (a as { BOOL: boolean }).BOOL === (b as { BOOL: boolean }).BOOL;
    case 'NULL':
      return true;
    case 'L': {
      const x = (a as { L: AV[] }).L;
      const y = (b as { L: AV[] }).L;
      return x.length === y.length && x.every((e, i) => equalValues(e, y[i]!));
    }
    case 'M':
      return equalItems((a as { M: Item }).M, (b as { M: Item }).M);
    default: {
      const x = payload(a) as string[];
      const y = new Set(payload(b) as string[]);
      return x.length === y.size && x.every((e) => y.has(e));
    }
  }
}

export function equalItems(a: Item, b: Item): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => b[k] !== undefined && equalValues(a[k]!, b[k]!));
}

/** A value's size as DynamoDB bills and limits it (docs: "Item sizes and formats"). */
export function valueSize(v: AV): number {
  if ('S' in v) return Buffer.byteLength(v.S, 'utf8');
  if ('N' in v) return numberSize(v.N);
  if ('B' in v) return Buffer.from(v.B, 'base64').length;
  if ('BOOL' in v || 'NULL' in v) return 1;
  if ('M' in v) return 3 + Object.entries(v.M).reduce((n, [k, e]) => n + Buffer.byteLength(k, 'utf8') + valueSize(e) + 1, 0);
  if ('L' in v) return 3 + v.L.reduce((n, e) => n + valueSize(e) + 1, 0);
  if ('SS' in v) return v.SS.reduce((n, e) => n + Buffer.byteLength(e, 'utf8'), 0);
  if ('NS' in v) return v.NS.reduce((n, e) => n + numberSize(e), 0);
  return (v as { BS: string[] }).BS.reduce((n, e) => n + Buffer.from(e, 'base64').length, 0);
}

/** "1 byte per two significant digits, plus 1 byte". */
const numberSize = (n: string): number => Math.ceil(n.replace(/^-|\.|^0+|0+$/g, '').replace(/^0+/, '').length / 2) + 1;

/** Items are never mutated once built, so a size is computed once per item object. */
const sizes = new WeakMap<Item, number>();

export function itemSize(item: Item): number {
  let n = sizes.get(item);
  if (n !== undefined) return n;
  n = 0;
  for (const k in item) n += Buffer.byteLength(k, 'utf8') + valueSize(item[k]!);
  sizes.set(item, n);
  return n;
}

/** A key's text, for maps: type and value of each key attribute, in key-schema order. */
export function keyString(item: Item, names: readonly string[]): string {
  let s = '';
  for (const n of names) {
    const v = item[n]!;
    s += `${typeOf(v)}:${payload(v) as string}\u0000`;
  }
  return s;
}
