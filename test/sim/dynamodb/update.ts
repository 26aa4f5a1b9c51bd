/**
 * Update expressions: SET (with + and - on numbers, if_not_exists, list_append), REMOVE, ADD
 * (numbers and sets), DELETE (sets). Every operand is read from the item as it was before the
 * update, as DynamoDB evaluates them; the result is a new item.
 */
import { addDecimal, formatDecimal, parseDecimal } from './decimal.js';
import { validation } from './errors.js';
import { lex, Tokens } from './lexer.js';
import { getPath, overlaps, parsePath, pathText, removePath, resolvePath, setPath, type Path, type Placeholders, type Resolved } from './paths.js';
import type { Scope } from './condition.js';
import { typeOf, type AV, type Item } from './values.js';

export type SetOperand =
  | { readonly path: Path }
  | { readonly value: string }
  | { readonly ifNotExists: Path; readonly fallback: SetOperand }
  | { readonly listAppend: readonly [SetOperand, SetOperand] };
export type SetValue = SetOperand | { readonly arith: '+' | '-'; readonly left: SetOperand; readonly right: SetOperand };
export interface UpdateAst {
  readonly set: readonly { readonly path: Path; readonly value: SetValue }[];
  readonly remove: readonly Path[];
  readonly add: readonly { readonly path: Path; readonly value: string }[];
  readonly delete: readonly { readonly path: Path; readonly value: string }[];
}

const WHAT = 'UpdateExpression';
const CLAUSES = ['SET', 'REMOVE', 'ADD', 'DELETE'] as const;

export function parseUpdate(source: string, used: Placeholders): UpdateAst {
  const t = new Tokens(lex(source, WHAT), source, WHAT);
  const ast = { set: [], remove: [], add: [], delete: [] } as { set: UpdateAst['set'][number][]; remove: Path[]; add: UpdateAst['add'][number][]; delete: UpdateAst['delete'][number][] };
  const seen = new Set<string>();
  if (t.peek().kind === 'end') t.fail();
  while (t.peek().kind !== 'end') {
    const clause = CLAUSES.find((c) => t.is(c));
    if (clause === undefined) return t.fail();
    t.next();
    if (seen.has(clause)) throw validation(`Invalid UpdateExpression: The "${clause}" section can only be used once in an update expression;`);
    seen.add(clause);
    do {
      const path = parsePath(t, used);
      if (clause === 'SET') {
        t.expect('=');
        ast.set.push({ path, value: setValue(t, used) });
      } else if (clause === 'REMOVE') ast.remove.push(path);
      else {
        const v = t.next();
        if (v.kind !== 'value') t.fail();
        used.values.add(v.text);
        ast[clause === 'ADD' ? 'add' : 'delete'].push({ path, value: v.text });
      }
    } while (t.accept(','));
  }
  return ast;
}

function setValue(t: Tokens, used: Placeholders): SetValue {
  const left = setOperand(t, used);
  if (t.is('+') || t.is('-')) {
    const arith = t.next().text as '+' | '-';
    return { arith, left, right: setOperand(t, used) };
  }
  return left;
}

function setOperand(t: Tokens, used: Placeholders): SetOperand {
  const tok = t.peek();
  if (tok.kind === 'value') {
    t.next();
    used.values.add(tok.text);
    return { value: tok.text };
  }
  if (tok.kind === 'name' && t.is('(', 1)) {
    t.next();
    t.next();
    let out: SetOperand;
    if (tok.text === 'if_not_exists') {
      const path = parsePath(t, used);
      t.expect(',');
      out = { ifNotExists: path, fallback: setOperand(t, used) };
    } else if (tok.text === 'list_append') {
      const a = setOperand(t, used);
      t.expect(',');
      out = { listAppend: [a, setOperand(t, used)] };
    } else throw validation(`Invalid UpdateExpression: Invalid function name; function: ${tok.text}`);
    t.expect(')');
    return out;
  }
  return { path: parsePath(t, used) };
}

const wrongType = (): never => {
  throw validation('An operand in the update expression has an incorrect data type');
};

function operandValue(o: SetOperand, item: Item, s: Scope): AV {
  if ('value' in o) return s.values[o.value]!;
  if ('path' in o) {
    const v = getPath(item, resolvePath(o.path, s.names));
    if (v === undefined) throw validation('The provided expression refers to an attribute that does not exist in the item');
    return v;
  }
  if ('ifNotExists' in o) return getPath(item, resolvePath(o.ifNotExists, s.names)) ?? operandValue(o.fallback, item, s);
  const [a, b] = o.listAppend.map((x) => operandValue(x, item, s));
  if (!('L' in a!) || !('L' in b!)) return wrongType();
  return { L: [...a.L, ...b.L] };
}

function valueOf(v: SetValue, item: Item, s: Scope): AV {
  if (!('arith' in v)) return operandValue(v, item, s);
  const a = operandValue(v.left, item, s);
  const b = operandValue(v.right, item, s);
  if (!('N' in a) || !('N' in b)) return wrongType();
  return { N: formatDecimal(addDecimal(parseDecimal(a.N), parseDecimal(b.N), v.arith === '+' ? 1 : -1)) };
}

/** The paths an update writes, resolved, checked for overlaps and key attributes. */
export function updatedPaths(ast: UpdateAst, s: Scope, keyNames: readonly string[]): Resolved[] {
  const all = [...ast.set.map((a) => a.path), ...ast.remove, ...ast.add.map((a) => a.path), ...ast.delete.map((a) => a.path)].map((p) => resolvePath(p, s.names));
  for (let i = 0; i < all.length; i++) {
    const head = all[i]![0] as string;
    if (keyNames.includes(head)) throw validation(`One or more parameter values were invalid: Cannot update attribute ${head}. This attribute is part of the key`);
    for (let j = 0; j < i; j++) {
      if (overlaps(all[i]!, all[j]!)) {
        throw validation(`Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [${pathText(all[j]!)}], path two: [${pathText(all[i]!)}]`);
      }
    }
  }
  return all;
}

/** The item after the update (operands read from `item`, the item before it). */
export function applyUpdate(ast: UpdateAst, item: Item, s: Scope): Item {
  const sets = ast.set.map((a) => [resolvePath(a.path, s.names), valueOf(a.value, item, s)] as const);
  const adds = ast.add.map((a) => [resolvePath(a.path, s.names), s.values[a.value]!] as const);
  const dels = ast.delete.map((a) => [resolvePath(a.path, s.names), s.values[a.value]!] as const);
  let out = item;
  for (const [p, v] of sets) out = setPath(out, p, v);
  // Highest list index first: each REMOVE names an element of the list as it was.
  const removes = ast.remove.map((p) => resolvePath(p, s.names)).sort(descendingIndexes);
  for (const p of removes) out = removePath(out, p);
  for (const [p, v] of adds) out = setPath(out, p, addValue(getPath(item, p), v));
  for (const [p, v] of dels) {
    const next = deleteValue(getPath(item, p), v);
    out = next === undefined ? removePath(out, p) : setPath(out, p, next);
  }
  return out;
}

function descendingIndexes(a: Resolved, b: Resolved): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x !== y) return typeof x === 'number' && typeof y === 'number' ? y - x : 0;
  }
  return 0;
}

const SET_TYPES = new Set(['SS', 'NS', 'BS']);

function addValue(old: AV | undefined, v: AV): AV {
  const t = typeOf(v);
  if (t !== 'N' && !SET_TYPES.has(t)) throw validation(`Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, operand type: ${TYPE_WORDS[t]}, typeSet: ALLOWED_FOR_ADD_OPERAND`);
  if (old === undefined) return v;
  if (typeOf(old) !== t) return wrongType();
  if ('N' in v) return { N: formatDecimal(addDecimal(parseDecimal((old as { N: string }).N), parseDecimal(v.N))) };
  const before = (old as Record<string, string[]>)[t]!;
  const added = (v as Record<string, string[]>)[t]!.filter((e) => !before.includes(e));
  return { [t]: [...before, ...added] } as AV;
}

function deleteValue(old: AV | undefined, v: AV): AV | undefined {
  const t = typeOf(v);
  if (!SET_TYPES.has(t)) throw validation(`Invalid UpdateExpression: Incorrect operand type for operator or function; operator: DELETE, operand type: ${TYPE_WORDS[t]}, typeSet: ALLOWED_FOR_DELETE_OPERAND`);
  if (old === undefined) return undefined;
  if (typeOf(old) !== t) return wrongType();
  const gone = new Set((v as Record<string, string[]>)[t]);
  const left = (old as Record<string, string[]>)[t]!.filter((e) => !gone.has(e));
  return left.length === 0 ? undefined : ({ [t]: left } as AV);
}

const TYPE_WORDS: Record<string, string> = { S: 'STRING', N: 'NUMBER', B: 'BINARY', BOOL: 'BOOLEAN', NULL: 'NULL', M: 'MAP', L: 'LIST', SS: 'STRING SET', NS: 'NUMBER SET', BS: 'BINARY SET' };
