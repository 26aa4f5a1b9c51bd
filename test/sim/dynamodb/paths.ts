/**
 * Document paths (`a.b[2].#c`): parsed from tokens, resolved against ExpressionAttributeNames,
 * read from an item, and written or removed by copying only the containers along the path.
 */
import { validation } from './errors.js';
import type { Tokens } from './lexer.js';
import { RESERVED_WORDS } from './reserved-words.js';
import type { AV, Item } from './values.js';

/** An element as written: an attribute name, a `#name` placeholder, or a list index. */
export type PathElement = { readonly name: string } | { readonly index: number };
export type Path = readonly PathElement[];
/** A path with its names resolved: strings are map keys, numbers list indexes. */
export type Resolved = readonly (string | number)[];

export interface Placeholders {
  names: Set<string>;
  values: Set<string>;
}

export function parsePath(t: Tokens, used: Placeholders): Path {
  const out: PathElement[] = [attributeElement(t, used)];
  for (;;) {
    if (t.accept('.')) out.push(attributeElement(t, used));
    else if (t.accept('[')) {
      const n = t.next();
      if (n.kind !== 'index') t.fail();
      t.expect(']');
      out.push({ index: Number(n.text) });
    } else return out;
  }
}

function attributeElement(t: Tokens, used: Placeholders): PathElement {
  const tok = t.peek();
  if (tok.kind === 'placeholder') used.names.add(tok.text);
  else if (tok.kind !== 'name') t.fail();
  else if (RESERVED_WORDS.has(tok.text.toLowerCase())) throw validation(`Invalid ${t.what}: Attribute name is a reserved keyword; reserved keyword: ${tok.text}`);
  t.next();
  return { name: tok.text };
}

export function resolvePath(path: Path, names: Readonly<Record<string, string>>): Resolved {
  return path.map((e) => {
    if ('index' in e) return e.index;
    if (!e.name.startsWith('#')) return e.name;
    const n = names[e.name];
    if (n === undefined) throw validation(`An expression attribute name used in the document path is not defined; attribute name: ${e.name}`);
    return n;
  });
}

export const pathText = (p: Resolved): string => p.map((e, i) => (typeof e === 'number' ? `[${e}]` : i === 0 ? e : `.${e}`)).join('');

export function getPath(item: Item, path: Resolved): AV | undefined {
  let cur: AV | undefined = item[path[0] as string];
  for (let i = 1; i < path.length && cur !== undefined; i++) {
    const e = path[i]!;
    if (typeof e === 'number') cur = 'L' in cur ? cur.L[e] : undefined;
    else cur = 'M' in cur ? cur.M[e] : undefined;
  }
  return cur;
}

const invalidPath = (): never => {
  throw validation('The document path provided in the update expression is invalid for update');
};

/** A copy of `item` with `value` at `path`; a missing intermediate container is an error, as in DynamoDB. */
export function setPath(item: Item, path: Resolved, value: AV): Item {
  return { ...item, [path[0] as string]: setIn(item[path[0] as string], path, 1, value) } as Item;
}

function setIn(cur: AV | undefined, path: Resolved, i: number, value: AV): AV {
  if (i === path.length) return value;
  const e = path[i]!;
  if (cur === undefined) return invalidPath();
  if (typeof e === 'number') {
    if (!('L' in cur)) return invalidPath();
    const list = cur.L.slice();
    // SET past a list's end appends, as DynamoDB does.
    const at = Math.min(e, list.length);
    list[at] = setIn(list[at], path, i + 1, value);
    return { L: list };
  }
  if (!('M' in cur)) return invalidPath();
  return { M: { ...cur.M, [e]: setIn(cur.M[e], path, i + 1, value) } };
}

/**
 * A copy of `item` without `path`. A missing last element leaves it as it is; a missing or
 * mistyped container on the way is the same error as for SET, as DynamoDB Local answers it.
 */
export function removePath(item: Item, path: Resolved): Item {
  if (path.length === 1) {
    const copy = { ...item };
    delete copy[path[0] as string];
    return copy;
  }
  const head = item[path[0] as string];
  if (head === undefined) return invalidPath();
  const next = removeIn(head, path, 1);
  return next === head ? item : { ...item, [path[0] as string]: next };
}

function removeIn(cur: AV, path: Resolved, i: number): AV {
  const e = path[i]!;
  const last = i === path.length - 1;
  if (typeof e === 'number') {
    if (!('L' in cur)) return invalidPath();
    if (e >= cur.L.length) return last ? cur : invalidPath();
    const list = cur.L.slice();
    if (last) list.splice(e, 1);
    else list[e] = removeIn(list[e]!, path, i + 1);
    return { L: list };
  }
  if (!('M' in cur)) return invalidPath();
  if (cur.M[e] === undefined) return last ? cur : invalidPath();
  const m = { ...cur.M };
  if (last) delete m[e];
  else m[e] = removeIn(m[e]!, path, i + 1);
  return { M: m };
}

/** Do two paths overlap (one is a prefix of the other)? DynamoDB refuses that in one update. */
export function overlaps(a: Resolved, b: Resolved): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}
