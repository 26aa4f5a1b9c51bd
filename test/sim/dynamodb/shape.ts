/**
 * A request's shape: its operation and the skeleton of its expressions, with attribute names and
 * values abstracted (`#n`, `:v` and bare names alike), keywords, functions, operators and the
 * structure kept. Two requests of one shape differ only in what they name and compare, so the
 * model answering one shape alike with DynamoDB Local (test/sim-fidelity.test.ts) is evidence for
 * every request of that shape. The simulator refuses, as unsupported, a shape the fidelity test
 * did not compare (compared-shapes.json beside this file).
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** The words an expression keeps: DynamoDB's functions and keywords (any case). */
const KEPT = new Set(['and', 'or', 'not', 'between', 'in', 'set', 'remove', 'add', 'delete', 'attribute_exists', 'attribute_not_exists', 'attribute_type', 'begins_with', 'contains', 'size', 'if_not_exists', 'list_append']);

/** Skeletons by expression: a simulation sends the same few expressions thousands of times. */
const skeletons = new Map<string, string>();

/** An expression's skeleton: names, values and list indexes abstracted (`#`, `:`, `[0]`), spacing normalised. */
export function skeleton(expr: string): string {
  let s = skeletons.get(expr);
  if (s === undefined) {
    // Bounded whatever a workload's expressions are (bare attribute names make each a new key).
    if (skeletons.size > 10_000) skeletons.clear();
    s = abstracted(expr);
    skeletons.set(expr, s);
  }
  return s;
}

function abstracted(expr: string): string {
  return expr
    .replace(/#[A-Za-z0-9_]+/g, '#')
    .replace(/:[A-Za-z0-9_]+/g, ':')
    .replace(/\[\d+\]/g, '[0]')
    .replace(/[A-Za-z_][A-Za-z0-9_]*/g, (w) => (KEPT.has(w.toLowerCase()) ? w.toUpperCase() : 'a'))
    .replace(/\s*([(),=<>+-]|<>|<=|>=)\s*/g, '$1')
    .replace(/\s+/g, ' ')
    .trim();
}

const EXPRESSIONS = ['KeyConditionExpression', 'ConditionExpression', 'UpdateExpression', 'FilterExpression', 'ProjectionExpression'] as const;

/** The skeletons of one request's (or one transaction action's) expressions, in a fixed order. */
function expressions(input: Record<string, unknown>): string {
  return EXPRESSIONS.filter((k) => typeof input[k] === 'string')
    .map((k) => `${k.replace('Expression', '')}[${skeleton(input[k] as string)}]`)
    .join(' ');
}

/**
 * The shapes of one request: `Operation expr…`; for a transaction or a batch, one per distinct
 * action (`TransactWriteItems/Update Condition[…] Update[…]`), since which actions a unit's
 * transaction carries varies with its items, while the model's transaction semantics (all or
 * nothing, the cancellation reasons, tokens) are compared by the random sequences.
 */
export function requestShapes(operation: string, input: Record<string, unknown>): string[] {
  const each = (xs: string[]) => [...new Set(xs)].sort();
  if (Array.isArray(input.TransactItems)) {
    return each((input.TransactItems as Record<string, Record<string, unknown>>[]).flatMap((a) => Object.entries(a).map(([kind, body]) => `${operation}/${kind} ${expressions(body)}`.trim())));
  }
  if (operation === 'BatchGetItem' && input.RequestItems !== null && typeof input.RequestItems === 'object') {
    return each(Object.values(input.RequestItems as Record<string, Record<string, unknown>>).map((t) => `${operation} ${expressions(t)}`.trim()));
  }
  if (operation === 'BatchWriteItem' && input.RequestItems !== null && typeof input.RequestItems === 'object') {
    return each(Object.values(input.RequestItems as Record<string, Record<string, unknown>[]>).flatMap((t) => t.map((r) => `${operation}/${Object.keys(r).join('')}`)));
  }
  return [`${operation} ${expressions(input)}`.trim()];
}

/** The committed list of shapes the fidelity test compared against DynamoDB Local. */
export const COMPARED_SHAPES_FILE = new URL('./compared-shapes.json', import.meta.url);

let compared: ReadonlySet<string> | undefined;

/** The committed shapes (read once a process). */
export function comparedShapes(): ReadonlySet<string> {
  compared ??= new Set(JSON.parse(readFileSync(COMPARED_SHAPES_FILE, 'utf8')) as string[]);
  return compared;
}

export function writeComparedShapes(shapes: Iterable<string>): void {
  writeFileSync(COMPARED_SHAPES_FILE, `${JSON.stringify([...new Set(shapes)].sort(), null, 1)}\n`);
}
