/** Projection expressions: the attributes (paths) a read returns, as a partial item. */
import { lex, Tokens } from './lexer.js';
import { getPath, parsePath, type Path, type Placeholders, type Resolved } from './paths.js';
import type { AV, Item } from './values.js';

const WHAT = 'ProjectionExpression';

export function parseProjection(source: string, used: Placeholders): Path[] {
  const t = new Tokens(lex(source, WHAT), source, WHAT);
  const out = [parsePath(t, used)];
  while (t.accept(',')) out.push(parsePath(t, used));
  if (t.peek().kind !== 'end') t.fail();
  return out;
}

/** The item cut down to `paths` (list elements picked keep their order, compacted, as DynamoDB returns them). */
export function project(item: Item, paths: readonly Resolved[]): Item {
  let out: Item = {};
  for (const p of paths) {
    if (getPath(item, p) === undefined) continue;
    out = merge(out, item, p) as Item;
  }
  return out;
}

/** Copies the value at `p` (and the containers leading to it) from `source` into `target`. */
function merge(target: Item, source: Item, p: Resolved): Item {
  const head = p[0] as string;
  if (p.length === 1) return { ...target, [head]: source[head]! };
  return { ...target, [head]: mergeIn(target[head], source[head]!, p, 1) };
}

function mergeIn(target: AV | undefined, source: AV, p: Resolved, i: number): AV {
  if (i === p.length) return source;
  const e = p[i]!;
  if (typeof e === 'number' && 'L' in source) {
    // Picked elements are kept by their source index, then compacted when read back.
    const picked = new Map<number, AV>(target !== undefined && 'L' in target ? ((target as unknown as { picked?: Map<number, AV> }).picked ?? []) : []);
    picked.set(e, mergeIn(picked.get(e), source.L[e]!, p, i + 1));
    const list = [...picked.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v);
    const out = { L: list } as AV;
    Object.defineProperty(out, 'picked', { value: picked, enumerable: false });
    return out;
  }
  const m = (source as { M: Item }).M;
  const prior = target !== undefined && 'M' in target ? target.M : {};
  return { M: { ...prior, [e as string]: mergeIn(prior[e as string], m[e as string]!, p, i + 1) } };
}
