/**
 * A request's expressions, parsed once per text (the cache: a simulation sends the same few
 * expressions thousands of times) and checked together against the request's placeholders,
 * as DynamoDB checks them: every placeholder used is defined, every one defined is used.
 */
import { parseCondition, type Condition, type Scope } from './condition.js';
import { SimUnsupportedError, validation } from './errors.js';
import type { Path, Placeholders } from './paths.js';
import { parseProjection } from './projection.js';
import { parseUpdate, type UpdateAst } from './update.js';
import { checkCondition, checkProjection, checkUpdate } from './static-checks.js';
import { normalizeItem, type AV } from './values.js';

export type ExpressionKind = 'ConditionExpression' | 'FilterExpression' | 'KeyConditionExpression' | 'UpdateExpression' | 'ProjectionExpression';
type Ast = Condition | UpdateAst | Path[];
interface Parsed {
  readonly ast: Ast;
  readonly used: Placeholders;
}

const cache = new Map<string, Parsed | Error>();

function parse(kind: ExpressionKind, source: string): Parsed {
  const id = `${kind}\u0000${source}`;
  let hit = cache.get(id);
  if (hit === undefined) {
    const used: Placeholders = { names: new Set(), values: new Set() };
    try {
      if (source.trim() === '') throw validation(`Invalid ${kind}: The expression can not be empty;`);
      const ast = kind === 'UpdateExpression' ? parseUpdate(source, used) : kind === 'ProjectionExpression' ? parseProjection(source, used) : parseCondition(source, kind, used);
      hit = { ast, used };
    } catch (e) {
      if (!(e instanceof Error)) throw e;
      hit = e;
    }
    cache.set(id, hit);
  }
  if (hit instanceof Error) throw hit;
  return hit;
}

/** The parsed expressions of one request, by kind, and the scope they evaluate in. */
export interface RequestExpressions {
  readonly scope: Scope;
  readonly condition?: Condition;
  readonly filter?: Condition;
  readonly keyCondition?: Condition;
  readonly update?: UpdateAst;
  readonly projection?: Path[];
}

const KINDS: readonly ExpressionKind[] = ['KeyConditionExpression', 'UpdateExpression', 'ConditionExpression', 'FilterExpression', 'ProjectionExpression'];
const FIELD: Record<ExpressionKind, keyof Omit<RequestExpressions, 'scope'>> = {
  ConditionExpression: 'condition',
  FilterExpression: 'filter',
  KeyConditionExpression: 'keyCondition',
  UpdateExpression: 'update',
  ProjectionExpression: 'projection',
};

/** Parses the expressions `input` carries (only `allowed` kinds) and checks its placeholders. */
export function requestExpressions(input: Record<string, unknown>, allowed: readonly ExpressionKind[]): RequestExpressions {
  const out: Record<string, unknown> = {};
  const names = new Set<string>();
  const values = new Set<string>();
  const givenNames = (input.ExpressionAttributeNames ?? {}) as Record<string, unknown>;
  const givenValues = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
  let any = false;
  for (const kind of KINDS) {
    const source = input[kind];
    if (source === undefined) continue;
    if (!allowed.includes(kind)) throw new SimUnsupportedError(`${kind} here`);
    if (typeof source !== 'string') throw validation(`${kind} must be a string`);
    any = true;
    const p = parse(kind, source);
    for (const n of p.used.names) if (givenNames[n] === undefined) throw validation(`Invalid ${kind}: An expression attribute name used in the document path is not defined; attribute name: ${n}`);
    for (const v of p.used.values) if (givenValues[v] === undefined) throw validation(`Invalid ${kind}: An expression attribute value used in expression is not defined; attribute value: ${v}`);
    out[FIELD[kind]] = p.ast;
    p.used.names.forEach((n) => names.add(n));
    p.used.values.forEach((v) => values.add(v));
  }
  const scope = { names: checkNames(input.ExpressionAttributeNames, names, any), values: checkValues(input.ExpressionAttributeValues, values, any) };
  // Operand types the values alone decide: refused before any item is read (static-checks.ts).
  if (out.update !== undefined) checkUpdate(out.update as UpdateAst, scope);
  if (out.condition !== undefined) checkCondition(out.condition as Condition, scope, 'ConditionExpression');
  if (out.filter !== undefined) checkCondition(out.filter as Condition, scope, 'FilterExpression');
  if (out.projection !== undefined) checkProjection(out.projection as Path[], scope);
  return { ...out, scope } as RequestExpressions;
}

function checkNames(raw: unknown, used: Set<string>, any: boolean): Record<string, string> {
  if (raw !== undefined && !any) throw validation('ExpressionAttributeNames can only be specified when using expressions');
  const given = (raw ?? {}) as Record<string, string>;
  if (raw !== undefined && Object.keys(given).length === 0) throw validation('ExpressionAttributeNames must not be empty');
  for (const n of used) if (given[n] === undefined) throw validation(`An expression attribute name used in the document path is not defined; attribute name: ${n}`);
  const unused = Object.keys(given).filter((n) => !used.has(n));
  if (unused.length > 0) throw validation(`Value provided in ExpressionAttributeNames unused in expressions: keys: {${unused.join(', ')}}`);
  return given;
}

function checkValues(raw: unknown, used: Set<string>, any: boolean): Record<string, AV> {
  if (raw !== undefined && !any) throw validation('ExpressionAttributeValues can only be specified when using expressions');
  const given = raw === undefined ? {} : normalizeItem(raw as Record<string, unknown>);
  if (raw !== undefined && Object.keys(given).length === 0) throw validation('ExpressionAttributeValues must not be empty');
  for (const v of used) if (given[v] === undefined) throw validation(`An expression attribute value used in expression is not defined; attribute value: ${v}`);
  const unused = Object.keys(given).filter((v) => !used.has(v));
  if (unused.length > 0) throw validation(`Value provided in ExpressionAttributeValues unused in expressions: keys: {${unused.join(', ')}}`);
  return given;
}
