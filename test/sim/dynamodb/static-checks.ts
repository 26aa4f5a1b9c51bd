/**
 * What DynamoDB refuses in an expression before it reads any item: operand types it can tell from
 * the placeholders' values alone. These are ValidationExceptions whatever the item holds (so they
 * come before a condition's verdict, and a transaction refuses them as a whole), where evaluating
 * them against the item would answer ConditionalCheckFailed or succeed.
 */
import type { Condition, Operand, Scope } from './condition.js';
import { validation } from './errors.js';
import { overlaps, pathText, resolvePath, type Path } from './paths.js';
import type { SetOperand, SetValue, UpdateAst } from './update.js';
import { compareScalars, typeOf, type AV } from './values.js';

const ORDERED = new Set(['N', 'S', 'B']);
const TYPE_NAMES = new Set(['S', 'SS', 'N', 'NS', 'B', 'BS', 'BOOL', 'NULL', 'L', 'M']);
const show = (v: AV): string => `AttributeValue: {${typeOf(v)}:${String(Object.values(v)[0])}}`;

const constant = (o: Operand, s: Scope): AV | undefined => ('value' in o ? s.values[o.value] : undefined);
// Two sizes of one path pass (DynamoDB Local compares them); only the same path twice is refused.
const sameOperand = (a: Operand, b: Operand, s: Scope): boolean => 'path' in a && 'path' in b && pathText(resolvePath(a.path, s.names)) === pathText(resolvePath(b.path, s.names));

function operandText(o: Operand, s: Scope): string {
  if ('path' in o) return `[${pathText(resolvePath(o.path, s.names)).replace(/\./g, ', ')}]`;
  if ('size' in o) return `size([${pathText(resolvePath(o.size, s.names))}])`;
  return o.value;
}

/** Throws the ValidationException DynamoDB answers for `c`, if any (`kind`: ConditionExpression, FilterExpression). */
export function checkCondition(c: Condition, s: Scope, kind: string): void {
  const fail = (m: string): never => {
    throw validation(`Invalid ${kind}: ${m}`);
  };
  const ordered = (o: Operand, op: string) => {
    const v = constant(o, s);
    if (v !== undefined && !ORDERED.has(typeOf(v))) fail(`Incorrect operand type for operator or function; operator or function: ${op}, operand type: ${typeOf(v)}`);
  };
  switch (c.op) {
    case 'and':
    case 'or':
      checkCondition(c.left, s, kind);
      checkCondition(c.right, s, kind);
      return;
    case 'not':
      checkCondition(c.inner, s, kind);
      return;
    case 'cmp':
      if (c.cmp !== '=' && c.cmp !== '<>') {
        ordered(c.left, c.cmp);
        ordered(c.right, c.cmp);
      }
      if (sameOperand(c.left, c.right, s)) fail(`The first operand must be distinct from the remaining operands for this operator or function; operator: ${c.cmp}, first operand: ${operandText(c.left, s)}`);
      return;
    case 'between': {
      ordered(c.subject, 'BETWEEN');
      ordered(c.low, 'BETWEEN');
      ordered(c.high, 'BETWEEN');
      const lo = constant(c.low, s);
      const hi = constant(c.high, s);
      if (lo !== undefined && hi !== undefined) {
        if (typeOf(lo) !== typeOf(hi)) fail(`The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: ${show(lo)}, upper bound operand: ${show(hi)}`);
        if ((compareScalars(lo, hi) ?? 0) > 0) fail(`The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: ${show(lo)}, upper bound operand: ${show(hi)}`);
      }
      return;
    }
    case 'in':
      return;
    case 'fn': {
      const arg = c.arg === undefined ? undefined : constant(c.arg, s);
      if (c.fn === 'attribute_type' && arg !== undefined && (!('S' in arg) || !TYPE_NAMES.has(arg.S))) fail(`Invalid attribute type name found; type: ${'S' in arg ? arg.S : typeOf(arg)}, valid types: {N,BS,L,B,NULL,M,S,SS,NS,BOOL}`);
      if (c.fn === 'begins_with' && arg !== undefined && !('S' in arg) && !('B' in arg)) fail(`Incorrect operand type for operator or function; operator or function: begins_with, operand type: ${typeOf(arg)}`);
      return;
    }
  }
}

const TYPE_WORDS: Record<string, string> = { S: 'STRING', N: 'NUMBER', B: 'BINARY', BOOL: 'BOOLEAN', NULL: 'NULL', M: 'MAP', L: 'LIST', SS: 'STRING SET', NS: 'NUMBER SET', BS: 'BINARY SET' };
const SETS = new Set(['SS', 'NS', 'BS']);

// Only a constant operand is refused up front; an if_not_exists fallback is typed when it is used.
function checkArith(v: SetOperand, op: string, s: Scope): void {
  if (!('value' in v)) return;
  const x = s.values[v.value];
  if (x !== undefined && !('N' in x)) throw validation(`Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: ${op}, operand type: ${typeOf(x)}`);
}

/** Overlapping projected paths (`m` and `m.b`) are refused, as in an update. */
export function checkProjection(paths: readonly Path[], s: Scope): void {
  const all = paths.map((p) => resolvePath(p, s.names));
  for (let i = 0; i < all.length; i++)
    for (let j = 0; j < i; j++)
      if (overlaps(all[i]!, all[j]!)) throw validation(`Invalid ProjectionExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [${pathText(all[j]!)}], path two: [${pathText(all[i]!)}]`);
}

/** Throws the ValidationException DynamoDB answers for an update whose constants have the wrong type. */
export function checkUpdate(u: UpdateAst, s: Scope): void {
  for (const a of u.add) {
    const v = s.values[a.value];
    if (v !== undefined && typeOf(v) !== 'N' && !SETS.has(typeOf(v))) throw validation(`Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, operand type: ${TYPE_WORDS[typeOf(v)]}, typeSet: ALLOWED_FOR_ADD_OPERAND`);
  }
  for (const d of u.delete) {
    const v = s.values[d.value];
    if (v !== undefined && !SETS.has(typeOf(v))) throw validation(`Invalid UpdateExpression: Incorrect operand type for operator or function; operator: DELETE, operand type: ${TYPE_WORDS[typeOf(v)]}, typeSet: ALLOWED_FOR_DELETE_OPERAND`);
  }
  for (const a of u.set) {
    const v: SetValue = a.value;
    if ('arith' in v) {
      checkArith(v.left, v.arith, s);
      checkArith(v.right, v.arith, s);
    }
  }
}
