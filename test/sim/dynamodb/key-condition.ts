/**
 * A Query's KeyConditionExpression, read as DynamoDB allows it: the partition key equal to a
 * value, and at most one condition on the sort key (= < <= > >= BETWEEN begins_with).
 */
import { compare, type Condition, type Operand, type Scope } from './condition.js';
import { validation } from './errors.js';
import { resolvePath, type Path } from './paths.js';
import type { KeySpec, KeyType } from './schema.js';
import { compareScalars, typeOf, type AV } from './values.js';

export interface KeyRange {
  readonly hash: AV;
  /** Does a sort key value fall in the range (true when there is no sort condition)? */
  readonly inRange: (v: AV | undefined) => boolean;
}

// DynamoDB Local's words for a condition on a non-key attribute (AWS: "Query key condition not supported").
const unsupported = (): never => {
  throw validation('Query condition missed key schema element');
};

function conjuncts(c: Condition): Condition[] {
  return c.op === 'and' ? [...conjuncts(c.left), ...conjuncts(c.right)] : [c];
}

function attribute(o: Operand, s: Scope): string | undefined {
  if (!('path' in o) || o.path.length !== 1) return undefined;
  return resolvePath(o.path as Path, s.names)[0] as string;
}

const valueOf = (o: Operand, s: Scope): AV => ('value' in o ? s.values[o.value]! : unsupported());

export function keyRange(c: Condition, s: Scope, key: KeySpec, types: Readonly<Record<string, KeyType>>): KeyRange {
  let hash: AV | undefined;
  let inRange: KeyRange['inRange'] = () => true;
  let sortConditions = 0;
  const typed = (v: AV, name: string): AV => {
    if (typeOf(v) !== types[name]) throw validation('One or more parameter values were invalid: Condition parameter type does not match schema type');
    return v;
  };
  for (const part of conjuncts(c)) {
    if (part.op === 'cmp') {
      const name = attribute(part.left, s) ?? unsupported();
      const v = typed(valueOf(part.right, s), name);
      if (name === key.hash && part.cmp === '=' && hash === undefined) hash = v;
      else if (name === key.range && part.cmp !== '<>') {
        sortConditions++;
        inRange = (x) => compare(part.cmp, x, v);
      } else unsupported();
    } else if (part.op === 'between') {
      const name = attribute(part.subject, s);
      if (name !== key.range) unsupported();
      const lo = typed(valueOf(part.low, s), name!);
      const hi = typed(valueOf(part.high, s), name!);
      if (compareScalars(lo, hi)! > 0) {
        throw validation(`Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {${typeOf(lo)}:${Object.values(lo)[0] as string}}, upper bound operand: AttributeValue: {${typeOf(hi)}:${Object.values(hi)[0] as string}}`);
      }
      sortConditions++;
      inRange = (x) => compare('>=', x, lo) && compare('<=', x, hi);
    } else if (part.op === 'fn' && part.fn === 'begins_with' && part.arg !== undefined) {
      const name = resolvePath(part.path, s.names);
      if (name.length !== 1 || name[0] !== key.range) unsupported();
      const prefix = typed(valueOf(part.arg, s), key.range!);
      if (!('S' in prefix) && !('B' in prefix)) throw validation(`Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: ${typeOf(prefix)}`);
      sortConditions++;
      inRange = (x) => x !== undefined && ('S' in x && 'S' in prefix ? x.S.startsWith(prefix.S) : 'B' in x && 'B' in prefix && Buffer.from(x.B, 'base64').subarray(0, Buffer.from(prefix.B, 'base64').length).equals(Buffer.from(prefix.B, 'base64')));
    } else unsupported();
  }
  if (hash === undefined) throw validation('Query condition missed key schema element');
  if (sortConditions > 1) unsupported();
  return { hash, inRange };
}
