/**
 * Condition and filter expressions: parsed once into a tree (cached by text, see expressions.ts),
 * evaluated against an item. Precedence, lowest first: OR, AND, NOT, then a comparison, BETWEEN,
 * IN, a function or a parenthesized condition (DynamoDB's documented order).
 */
import { validation } from './errors.js';
import { lex, Tokens } from './lexer.js';
import { getPath, parsePath, resolvePath, type Path, type Placeholders } from './paths.js';
import { compareScalars, equalValues, payload, typeOf, type AV, type Item } from './values.js';

export type Operand = { readonly path: Path } | { readonly value: string } | { readonly size: Path };
export type Comparator = '=' | '<>' | '<' | '<=' | '>' | '>=';
export type Condition =
  | { readonly op: 'cmp'; readonly cmp: Comparator; readonly left: Operand; readonly right: Operand }
  | { readonly op: 'between'; readonly subject: Operand; readonly low: Operand; readonly high: Operand }
  | { readonly op: 'in'; readonly subject: Operand; readonly list: readonly Operand[] }
  | { readonly op: 'fn'; readonly fn: string; readonly path: Path; readonly arg?: Operand }
  | { readonly op: 'and' | 'or'; readonly left: Condition; readonly right: Condition }
  | { readonly op: 'not'; readonly inner: Condition };

const COMPARATORS = new Set(['=', '<>', '<', '<=', '>', '>=']);
const FUNCTIONS = new Set(['attribute_exists', 'attribute_not_exists', 'attribute_type', 'begins_with', 'contains']);

export function parseCondition(source: string, what: string, used: Placeholders): Condition {
  const t = new Tokens(lex(source, what), source, what);
  const c = orExpr(t, used);
  if (t.peek().kind !== 'end') t.fail();
  return c;
}

function orExpr(t: Tokens, used: Placeholders): Condition {
  let left = andExpr(t, used);
  while (t.accept('OR')) left = { op: 'or', left, right: andExpr(t, used) };
  return left;
}

function andExpr(t: Tokens, used: Placeholders): Condition {
  let left = notExpr(t, used);
  while (t.accept('AND')) left = { op: 'and', left, right: notExpr(t, used) };
  return left;
}

function notExpr(t: Tokens, used: Placeholders): Condition {
  if (t.accept('NOT')) return { op: 'not', inner: notExpr(t, used) };
  return primary(t, used);
}

function primary(t: Tokens, used: Placeholders): Condition {
  if (t.accept('(')) {
    const c = orExpr(t, used);
    t.expect(')');
    return c;
  }
  const tok = t.peek();
  if (tok.kind === 'name' && FUNCTIONS.has(tok.text) && t.is('(', 1)) return functionCall(t, used);
  const subject = operand(t, used);
  if (t.accept('BETWEEN')) {
    const low = operand(t, used);
    t.expect('AND');
    return { op: 'between', subject, low, high: operand(t, used) };
  }
  if (t.accept('IN')) {
    t.expect('(');
    const list = [operand(t, used)];
    while (t.accept(',')) list.push(operand(t, used));
    t.expect(')');
    if (list.length > 100) throw validation(`Invalid ${t.what}: The IN operator is provided with too many operands; number of operands: ${list.length}`);
    return { op: 'in', subject, list };
  }
  const c = t.peek();
  if (c.kind !== 'punct' || !COMPARATORS.has(c.text)) t.fail();
  t.next();
  return { op: 'cmp', cmp: c.text as Comparator, left: subject, right: operand(t, used) };
}

function functionCall(t: Tokens, used: Placeholders): Condition {
  const fn = t.next().text;
  t.expect('(');
  if (t.peek().kind === 'value') throw validation(`Invalid ${t.what}: Operator or function requires a document path; operator or function: ${fn}`);
  const path = parsePath(t, used);
  let arg: Operand | undefined;
  if (fn === 'attribute_type' || fn === 'begins_with' || fn === 'contains') {
    t.expect(',');
    arg = operand(t, used);
  }
  t.expect(')');
  return arg === undefined ? { op: 'fn', fn, path } : { op: 'fn', fn, path, arg };
}

export function operand(t: Tokens, used: Placeholders): Operand {
  const tok = t.peek();
  if (tok.kind === 'value') {
    t.next();
    used.values.add(tok.text);
    return { value: tok.text };
  }
  if (tok.kind === 'name' && tok.text === 'size' && t.is('(', 1)) {
    t.next();
    t.next();
    const path = parsePath(t, used);
    t.expect(')');
    return { size: path };
  }
  if (tok.kind === 'name' && t.is('(', 1)) throw validation(`Invalid ${t.what}: Invalid function name; function: ${tok.text}`);
  return { path: parsePath(t, used) };
}

/** What an expression is evaluated with: the request's placeholders. */
export interface Scope {
  readonly names: Readonly<Record<string, string>>;
  readonly values: Readonly<Record<string, AV>>;
}

export function evalOperand(o: Operand, item: Item, s: Scope): AV | undefined {
  if ('value' in o) return s.values[o.value];
  if ('path' in o) return getPath(item, resolvePath(o.path, s.names));
  const v = getPath(item, resolvePath(o.size, s.names));
  return v === undefined ? undefined : sizeOf(v);
}

function sizeOf(v: AV): AV | undefined {
  if ('S' in v) return { N: String(v.S.length) };
  if ('B' in v) return { N: String(Buffer.from(v.B, 'base64').length) };
  if ('M' in v) return { N: String(Object.keys(v.M).length) };
  const p = payload(v);
  return Array.isArray(p) ? { N: String(p.length) } : undefined;
}

export function evaluate(c: Condition, item: Item, s: Scope): boolean {
  switch (c.op) {
    case 'and':
      return evaluate(c.left, item, s) && evaluate(c.right, item, s);
    case 'or':
      return evaluate(c.left, item, s) || evaluate(c.right, item, s);
    case 'not':
      return !evaluate(c.inner, item, s);
    case 'cmp':
      return compare(c.cmp, evalOperand(c.left, item, s), evalOperand(c.right, item, s));
    case 'between': {
      const x = evalOperand(c.subject, item, s);
      return compare('>=', x, evalOperand(c.low, item, s)) && compare('<=', x, evalOperand(c.high, item, s));
    }
    case 'in': {
      const x = evalOperand(c.subject, item, s);
      return x !== undefined && c.list.some((o) => compare('=', x, evalOperand(o, item, s)));
    }
    case 'fn':
      return callFunction(c.fn, getPath(item, resolvePath(c.path, s.names)), c.arg === undefined ? undefined : evalOperand(c.arg, item, s), c.arg !== undefined && 'value' in c.arg);
  }
}

/** A missing operand or operands of different types: false, except `<>` (they differ). */
export function compare(cmp: Comparator, a: AV | undefined, b: AV | undefined): boolean {
  if (a === undefined || b === undefined) return cmp === '<>';
  if (cmp === '=') return equalValues(a, b);
  if (cmp === '<>') return !equalValues(a, b);
  const order = compareScalars(a, b);
  if (order === undefined) return false;
  return cmp === '<' ? order < 0 : cmp === '<=' ? order <= 0 : cmp === '>' ? order > 0 : order >= 0;
}

const TYPE_NAMES = new Set(['S', 'SS', 'N', 'NS', 'B', 'BS', 'BOOL', 'NULL', 'L', 'M']);

/** `literal`: the argument is a value placeholder, whose type DynamoDB checks before evaluating (an attribute's is only compared). */
function callFunction(fn: string, v: AV | undefined, arg: AV | undefined, literal: boolean): boolean {
  switch (fn) {
    case 'attribute_exists':
      return v !== undefined;
    case 'attribute_not_exists':
      return v === undefined;
    case 'attribute_type':
      if (arg === undefined || !('S' in arg) || !TYPE_NAMES.has(arg.S)) {
        throw validation(`Invalid ConditionExpression: Invalid attribute type name found; type: ${arg !== undefined && 'S' in arg ? arg.S : String(arg && typeOf(arg))}, valid types: {N,BS,L,B,NULL,M,S,SS,NS,BOOL}`);
      }
      return v !== undefined && typeOf(v) === arg.S;
    case 'begins_with':
      if (literal && arg !== undefined && !('S' in arg) && !('B' in arg)) throw validation(`Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: ${typeOf(arg)}`);
      if (v === undefined || arg === undefined) return false;
      if ('S' in v && 'S' in arg) return v.S.startsWith(arg.S);
      if ('B' in v && 'B' in arg) return Buffer.from(v.B, 'base64').subarray(0, Buffer.from(arg.B, 'base64').length).equals(Buffer.from(arg.B, 'base64'));
      return false;
    default:
      return contains(v, arg);
  }
}

function contains(v: AV | undefined, arg: AV | undefined): boolean {
  if (v === undefined || arg === undefined) return false;
  if ('S' in v) return 'S' in arg && v.S.includes(arg.S);
  if ('SS' in v) return 'S' in arg && v.SS.includes(arg.S);
  if ('NS' in v) return 'N' in arg && v.NS.includes(arg.N);
  if ('BS' in v) return 'B' in arg && v.BS.includes(arg.B);
  if ('L' in v) return v.L.some((e) => equalValues(e, arg));
  return false;
}
