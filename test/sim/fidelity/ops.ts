/**
 * Random DynamoDB operation sequences for the differential fidelity test: a small key space (so
 * conditions collide), attributes of mixed types (so comparisons cross types), and the
 * expression shapes the project's code sends and more — conditions with every comparator and
 * function, updates with arithmetic, if_not_exists, list_append, nested paths, ADD and DELETE,
 * transactions with conflicting conditions, two actions on one item, token replays and
 * mismatches, queries on the table and its index with filters, limits and paging, and the
 * invalid inputs a coding mistake produces. Low-level wire shapes (AttributeValues), so both
 * engines see exactly one request.
 */
import fc from 'fast-check';

export type AV = Record<string, unknown>;
export interface Op {
  /** The SDK command's name without `Command`, e.g. `UpdateItem`. */
  op: string;
  input: Record<string, unknown>;
}

/** The two tables every sequence gets fresh: a sorted one with an index and a stream, and a plain one. */
export const TABLES = { sorted: 'sorted', plain: 'plain' } as const;

const S = (s: string): AV => ({ S: s });
const N = (n: number | string): AV => ({ N: String(n) });
const pks = ['a', 'b'];
const sks = [1, 2, 3];

const value: fc.Arbitrary<AV> = fc.oneof(
  fc.constantFrom(0, 1, 2, 5, -1, 2.5).map(N),
  fc.constantFrom('x', 'xy', 'y', '1').map(S),
  fc.constant({ BOOL: true }),
  fc.constant({ NULL: true }),
  fc.constant({ L: [N(1), S('x')] }),
  fc.constant({ SS: ['x', 'y'] }),
  fc.constant({ M: { k: N(1) } }),
);
const attrName = fc.constantFrom('n', 's', 'gk', 'l', 'm', 'ss', 'missing');

/** An expression and the placeholders it uses. */
interface Expr {
  text: string;
  names: Record<string, string>;
  values: Record<string, AV>;
}
const join = (parts: Expr[], text: string): Expr => ({ text, names: Object.assign({}, ...parts.map((p) => p.names)), values: Object.assign({}, ...parts.map((p) => p.values)) });

function leafCondition(ix: () => number): fc.Arbitrary<Expr> {
  const name = attrName.map((a) => ({ text: `#${a}`, names: { [`#${a}`]: a }, values: {} }) as Expr);
  const val = value.map((v) => {
    const k = `:v${ix()}`;
    return { text: k, names: {}, values: { [k]: v } } as Expr;
  });
  return fc.oneof(
    fc.tuple(name, fc.constantFrom('=', '<>', '<', '<=', '>', '>='), val).map(([a, c, v]) => join([a, v], `${a.text} ${c} ${v.text}`)),
    name.map((a) => join([a], `attribute_exists(${a.text})`)),
    name.map((a) => join([a], `attribute_not_exists(${a.text})`)),
    fc.tuple(name, val, val).map(([a, x, y]) => join([a, x, y], `${a.text} BETWEEN ${x.text} AND ${y.text}`)),
    fc.tuple(name, val, val).map(([a, x, y]) => join([a, x, y], `${a.text} IN (${x.text}, ${y.text})`)),
    fc.tuple(name, val).map(([a, v]) => join([a, v], `begins_with(${a.text}, ${v.text})`)),
    fc.tuple(name, val).map(([a, v]) => join([a, v], `contains(${a.text}, ${v.text})`)),
    fc.tuple(name, fc.constantFrom('<', '>', '='), fc.constantFrom(0, 1, 2).map(N)).map(([a, c, n]) => {
      const k = `:v${ix()}`;
      return { text: `size(${a.text}) ${c} ${k}`, names: a.names, values: { [k]: n } };
    }),
    fc.tuple(name, fc.constantFrom('S', 'N', 'L', 'M', 'SS', 'NULL', 'BOOL')).map(([a, t]) => {
      const k = `:v${ix()}`;
      return { text: `attribute_type(${a.text}, ${k})`, names: a.names, values: { [k]: S(t) } };
    }),
  );
}

/** Conditions of depth ≤ 2 with AND, OR, NOT and parentheses; placeholders numbered per expression. */
export function condition(): fc.Arbitrary<Expr> {
  let i = 0;
  const ix = () => i++;
  const leaf = leafCondition(ix);
  return fc.oneof(
    { weight: 3, arbitrary: leaf },
    { weight: 2, arbitrary: fc.tuple(leaf, fc.constantFrom('AND', 'OR'), leaf).map(([a, op, b]) => join([a, b], `${a.text} ${op} ${b.text}`)) },
    { weight: 1, arbitrary: leaf.map((a) => join([a], `NOT ${a.text}`)) },
    { weight: 1, arbitrary: fc.tuple(leaf, leaf, leaf).map(([a, b, c]) => join([a, b, c], `(${a.text} OR ${b.text}) AND NOT (${c.text})`)) },
  );
}

function update(): fc.Arbitrary<Expr> {
  let i = 0;
  const k = () => `:u${i++}`;
  const set = fc.oneof(
    fc.tuple(attrName, value).map(([a, v]) => ({ kind: 'SET', a, ...((x) => ({ text: `#${a} = ${x}`, values: { [x]: v } }))(k()) })),
    fc.tuple(attrName, fc.constantFrom('+', '-'), fc.constantFrom(1, 2).map(N)).map(([a, op, v]) => ({ kind: 'SET', a, ...((x) => ({ text: `#${a} = #${a} ${op} ${x}`, values: { [x]: v } }))(k()) })),
    fc.tuple(attrName, value).map(([a, v]) => ({ kind: 'SET', a, ...((x) => ({ text: `#${a} = if_not_exists(#${a}, ${x})`, values: { [x]: v } }))(k()) })),
    fc.constant(0).map(() => ({ kind: 'SET', a: 'l', ...((x) => ({ text: `#l = list_append(if_not_exists(#l, ${x}), ${x})`, values: { [x]: { L: [N(9)] } } }))(k()) })),
    fc.constant(0).map(() => ({ kind: 'SET', a: 'm', ...((x) => ({ text: `#m.#k = ${x}`, values: { [x]: N(7) } }))(k()) })),
  );
  const clause = fc.oneof(
    { weight: 3, arbitrary: set },
    { weight: 1, arbitrary: attrName.map((a) => ({ kind: 'REMOVE', a, text: `#${a}`, values: {} })) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('n', 'ss'), fc.constant(0)).map(([a]) => ({ kind: 'ADD', a, ...((x) => ({ text: `#${a} ${x}`, values: { [x]: a === 'n' ? N(1) : { SS: ['z'] } } }))(k()) })) },
    { weight: 1, arbitrary: fc.constant(0).map(() => ({ kind: 'DELETE', a: 'ss', ...((x) => ({ text: `#ss ${x}`, values: { [x]: { SS: ['x'] } } }))(k()) })) },
  );
  return fc.array(clause, { minLength: 1, maxLength: 3 }).map((cs) => {
    const by = new Map<string, string[]>();
    for (const c of cs) by.set(c.kind, [...(by.get(c.kind) ?? []), c.text]);
    const text = [...by].map(([kind, xs]) => `${kind} ${xs.join(', ')}`).join(' ');
    const names: Record<string, string> = {};
    for (const c of cs) names[`#${c.a}`] = c.a;
    if (text.includes('#k')) names['#k'] = 'k';
    return { text, names, values: Object.assign({}, ...cs.map((c) => c.values)) as Record<string, AV> };
  });
}

const sortedKey = fc.tuple(fc.constantFrom(...pks), fc.constantFrom(...sks)).map(([p, s]) => ({ pk: S(p), sk: N(s) }));
const plainKey = fc.constantFrom(...pks).map((p) => ({ pk: S(p) }));
const anyKey = fc.oneof(sortedKey.map((k) => ({ table: TABLES.sorted, key: k })), plainKey.map((k) => ({ table: TABLES.plain, key: k })));
const item = fc.tuple(anyKey, fc.dictionary(attrName.filter((a) => a !== 'missing'), value, { maxKeys: 3 }), fc.constantFrom('g1', 'g2')).map(([k, attrs, g]) => {
  const it: Record<string, AV> = { ...attrs, ...k.key };
  // The index needs gk a string and n a number; mixed types are kept out of its keys (a ValidationException case of its own).
  if (k.table === TABLES.sorted) {
    it.gk = S(g);
    it.n = N(typeof attrs.n?.N === 'string' ? attrs.n.N : 1);
  }
  return { table: k.table, item: it };
});

/** `{ ConditionExpression, names, values }` spread into an input, or nothing. */
const withCondition = (c: Expr | null) => (c === null ? {} : { ConditionExpression: c.text, names: c.names, values: c.values });
const merged = (input: Record<string, unknown>, ...exprs: { names?: Record<string, string> | undefined; values?: Record<string, AV> | undefined }[]) => {
  const names = Object.assign({}, ...exprs.map((e) => e.names ?? {}));
  const values = Object.assign({}, ...exprs.map((e) => e.values ?? {}));
  return { ...input, ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}), ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}) };
};
const strip = ({ names: _n, values: _v, ...rest }: Record<string, unknown>) => rest;

const put = fc.tuple(item, fc.option(condition(), { freq: 2 }), fc.constantFrom('NONE', 'ALL_OLD'), fc.boolean()).map(([i, c, rv, old]) => {
  const cond = withCondition(c);
  return { op: 'PutItem', input: merged({ TableName: i.table, Item: i.item, ...strip(cond), ReturnValues: rv, ...(old && c ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } : {}) }, cond) };
});
const upd = fc.tuple(anyKey, update(), fc.option(condition(), { freq: 2 }), fc.constantFrom('NONE', 'ALL_OLD', 'UPDATED_OLD', 'ALL_NEW', 'UPDATED_NEW')).map(([k, u, c, rv]) => {
  const cond = withCondition(c);
  return { op: 'UpdateItem', input: merged({ TableName: k.table, Key: k.key, UpdateExpression: u.text, ...strip(cond), ReturnValues: rv }, u, cond) };
});
const del = fc.tuple(anyKey, fc.option(condition(), { freq: 2 }), fc.constantFrom('NONE', 'ALL_OLD')).map(([k, c, rv]) => {
  const cond = withCondition(c);
  return { op: 'DeleteItem', input: merged({ TableName: k.table, Key: k.key, ...strip(cond), ReturnValues: rv }, cond) };
});
const get = fc.tuple(anyKey, fc.boolean(), fc.boolean()).map(([k, projected, consistent]) => ({ op: 'GetItem', input: { TableName: k.table, Key: k.key, ConsistentRead: consistent, ...(projected ? { ProjectionExpression: '#n, #s, pk', ExpressionAttributeNames: { '#n': 'n', '#s': 's' } } : {}) } }));

const keyCondition = fc.oneof(
  fc.constantFrom(...pks).map((p) => ({ text: '#pk = :p', names: { '#pk': 'pk' }, values: { ':p': S(p) } })),
  fc.tuple(fc.constantFrom(...pks), fc.constantFrom('<', '<=', '>', '>=', '='), fc.constantFrom(...sks)).map(([p, c, s]) => ({ text: `#pk = :p AND #sk ${c} :s`, names: { '#pk': 'pk', '#sk': 'sk' }, values: { ':p': S(p), ':s': N(s) } })),
  fc.tuple(fc.constantFrom(...pks), fc.constantFrom(...sks)).map(([p, s]) => ({ text: '#pk = :p AND #sk BETWEEN :s AND :t', names: { '#pk': 'pk', '#sk': 'sk' }, values: { ':p': S(p), ':s': N(s), ':t': N(s + 1) } })),
);
const indexCondition = fc.tuple(fc.constantFrom('g1', 'g2'), fc.constantFrom(0, 1, 2)).map(([g, n]) => ({ text: '#gk = :g AND #n >= :n', names: { '#gk': 'gk', '#n': 'n' }, values: { ':g': S(g), ':n': N(n) } }));
const query = fc.tuple(fc.boolean(), keyCondition, indexCondition, fc.option(condition(), { freq: 3 }), fc.option(fc.constantFrom(1, 2), { freq: 2 }), fc.boolean(), fc.boolean()).map(([onIndex, kc, ic, filter, limit, forward, count]) => {
  const k = onIndex ? ic : kc;
  const f = filter === null ? {} : { names: filter.names, values: filter.values };
  // A filter on a key attribute is refused by DynamoDB: keep filters on the others.
  const usable = filter !== null && !/#(pk|sk|gk)\b/.test(filter.text) && !(onIndex && /#n\b/.test(filter.text));
  return {
    op: 'Query',
    input: merged({ TableName: TABLES.sorted, ...(onIndex ? { IndexName: 'byGroup' } : {}), KeyConditionExpression: k.text, ...(usable ? { FilterExpression: filter!.text } : {}), ...(limit === null ? {} : { Limit: limit }), ScanIndexForward: forward, ...(count ? { Select: 'COUNT' } : {}) }, k, usable ? f : {}),
  };
});
const scan = fc.constantFrom(TABLES.sorted, TABLES.plain).map((t) => ({ op: 'Scan', input: { TableName: t } }));
const batchGet = fc.uniqueArray(sortedKey, { minLength: 1, maxLength: 3, selector: (k) => JSON.stringify(k) }).map((keys) => ({ op: 'BatchGetItem', input: { RequestItems: { [TABLES.sorted]: { Keys: keys, ConsistentRead: true } } } }));

/** A transaction's action (its `ConditionCheck` always carries a condition). */
const action = fc.oneof(
  put.map((p) => ({ Put: { ...(p.input as Record<string, unknown>), ReturnValues: undefined } })),
  upd.map((u) => ({ Update: { ...(u.input as Record<string, unknown>), ReturnValues: undefined } })),
  del.map((d) => ({ Delete: { ...(d.input as Record<string, unknown>), ReturnValues: undefined } })),
  fc.tuple(anyKey, condition(), fc.boolean()).map(([k, c, old]) => ({ ConditionCheck: merged({ TableName: k.table, Key: k.key, ConditionExpression: c.text, ...(old ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } : {}) }, c) })),
);
const clean = (a: Record<string, Record<string, unknown>>) => Object.fromEntries(Object.entries(a).map(([k, v]) => [k, Object.fromEntries(Object.entries(v).filter(([f, x]) => x !== undefined && f !== 'ReturnValues'))]));
// One action per item: a transaction naming an item twice is refused up front by AWS (ValidationException), while
// DynamoDB Local first evaluates the conditions and answers a cancellation if one fails (NORMALISATIONS); the
// deliberate duplicate below carries no condition, where both refuse it.
const target = (a: Record<string, Record<string, unknown>>) => {
  const x = Object.values(a)[0]!;
  return JSON.stringify([x.TableName, x.Key ?? { pk: (x.Item as Record<string, unknown>).pk, sk: (x.Item as Record<string, unknown>).sk }]);
};
const transact = fc.tuple(fc.uniqueArray(action, { minLength: 1, maxLength: 4, selector: target }), fc.option(fc.constantFrom('token-1', 'token-2'), { freq: 2 })).map(([actions, token]) => ({ op: 'TransactWriteItems', input: { TransactItems: actions.map(clean), ...(token === null ? {} : { ClientRequestToken: token }) } }));

/** An unconditional transaction under one token: a second one is a replay (same request) or a mismatch (another). */
const tokened = fc.constantFrom('x', 'y').map((v) => ({ op: 'TransactWriteItems', input: { TransactItems: [{ Put: { TableName: TABLES.plain, Item: { pk: S('a'), s: S(v) } } }], ClientRequestToken: 'token-3' } }));

/** Mistakes the code could make: an unused value, a missing placeholder, a key attribute updated, a wrong key type. */
const invalid = fc.oneof(
  anyKey.map((k) => ({ op: 'UpdateItem', input: { TableName: k.table, Key: k.key, UpdateExpression: 'SET #s = :s', ExpressionAttributeNames: { '#s': 's' }, ExpressionAttributeValues: { ':s': S('x'), ':unused': N(1) } } })),
  anyKey.map((k) => ({ op: 'UpdateItem', input: { TableName: k.table, Key: k.key, UpdateExpression: 'SET #s = :missing', ExpressionAttributeNames: { '#s': 's' }, ExpressionAttributeValues: { ':other': N(1) } } })),
  sortedKey.map((k) => ({ op: 'UpdateItem', input: { TableName: TABLES.sorted, Key: k, UpdateExpression: 'SET #sk = :s', ExpressionAttributeNames: { '#sk': 'sk' }, ExpressionAttributeValues: { ':s': N(9) } } })),
  fc.constant({ op: 'GetItem', input: { TableName: TABLES.sorted, Key: { pk: N(1), sk: N(1) } } }),
  fc.constant({ op: 'TransactWriteItems', input: { TransactItems: [{ Put: { TableName: TABLES.plain, Item: { pk: S('a') } } }, { Delete: { TableName: TABLES.plain, Key: { pk: S('a') } } }] } }),
);

export const operation: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: put },
  { weight: 4, arbitrary: upd },
  { weight: 1, arbitrary: del },
  { weight: 2, arbitrary: get },
  { weight: 2, arbitrary: query },
  { weight: 3, arbitrary: transact },
  { weight: 1, arbitrary: tokened },
  { weight: 1, arbitrary: scan },
  { weight: 1, arbitrary: batchGet },
  { weight: 1, arbitrary: invalid },
);

export const sequence = (maxLength = 14): fc.Arbitrary<Op[]> => fc.array(operation, { minLength: 3, maxLength });
