/**
 * DynamoDB numbers: decimals of up to 38 significant digits, magnitude 1E-130 to 9.99E+125,
 * compared and added exactly (a float would lose a 17th digit silently). A value is a BigInt
 * mantissa and a power-of-ten exponent; strings in and out are DynamoDB's canonical form.
 */
import { validation } from './errors.js';

export interface Decimal {
  /** value = mantissa × 10^exponent, mantissa without trailing zeros (0 has exponent 0). */
  readonly mantissa: bigint;
  readonly exponent: number;
}

const NUMBER = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
const cache = new Map<string, Decimal>();

/** Parses a number as DynamoDB accepts it on the wire; a ValidationException otherwise. */
export function parseDecimal(text: string): Decimal {
  const hit = cache.get(text);
  if (hit !== undefined) return hit;
  const m = NUMBER.exec(text.trim());
  if (m === null || (m[2] === '' && (m[3] ?? '') === '')) throw validation('A value provided cannot be converted into a number');
  const digits = `${m[2]}${m[3] ?? ''}`.replace(/^0+/, '');
  let exponent = Number(m[4] ?? 0) - (m[3] ?? '').length;
  let mantissa = digits === '' ? 0n : BigInt(digits);
  if (mantissa === 0n) exponent = 0;
  while (mantissa !== 0n && mantissa % 10n === 0n) {
    mantissa /= 10n;
    exponent++;
  }
  if (m[1] === '-') mantissa = -mantissa;
  const d = { mantissa, exponent };
  checkRange(d, text);
  if (cache.size > 10_000) cache.clear();
  cache.set(text, d);
  return d;
}

function checkRange(d: Decimal, text: string): void {
  if (d.mantissa === 0n) return;
  const digits = (d.mantissa < 0n ? -d.mantissa : d.mantissa).toString().length;
  if (digits > 38) throw validation('DynamoDB only supports precision up to 38 digits');
  const magnitude = digits - 1 + d.exponent;
  if (magnitude > 125) throw validation(`Number overflow. Attempting to store a number with magnitude larger than supported range`);
  if (magnitude < -130) throw validation(`Number underflow. Attempting to store a number with magnitude smaller than supported range`);
  void text;
}

/** The canonical string: no exponent, no leading or trailing zeros, as DynamoDB returns numbers. */
export function formatDecimal(d: Decimal): string {
  if (d.mantissa === 0n) return '0';
  const neg = d.mantissa < 0n;
  const digits = (neg ? -d.mantissa : d.mantissa).toString();
  let body: string;
  if (d.exponent >= 0) body = digits + '0'.repeat(d.exponent);
  else if (-d.exponent < digits.length) body = `${digits.slice(0, digits.length + d.exponent)}.${digits.slice(digits.length + d.exponent)}`;
  else body = `0.${'0'.repeat(-d.exponent - digits.length)}${digits}`;
  return neg ? `-${body}` : body;
}

/** The canonical form of a wire number (validated). */
export const canonicalNumber = (text: string): string => formatDecimal(parseDecimal(text));

function aligned(a: Decimal, b: Decimal): [bigint, bigint, number] {
  const e = Math.min(a.exponent, b.exponent);
  return [a.mantissa * 10n ** BigInt(a.exponent - e), b.mantissa * 10n ** BigInt(b.exponent - e), e];
}

export function compareDecimal(a: Decimal, b: Decimal): number {
  if (a.exponent === b.exponent) return a.mantissa < b.mantissa ? -1 : a.mantissa > b.mantissa ? 1 : 0;
  const [x, y] = aligned(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** a + sign·b, exact; a result past 38 digits is refused, as DynamoDB refuses it. */
export function addDecimal(a: Decimal, b: Decimal, sign: 1 | -1 = 1): Decimal {
  const [x, y, e] = aligned(a, b);
  return parseDecimal(formatDecimal({ mantissa: x + BigInt(sign) * y, exponent: e }));
}
