/**
 * Where the writes of a run land: every recorded DynamoDB call of a local run (cli/local/aws-calls.ts,
 * with the engine's own ConsumedCapacity per table and per index) turned into write and read
 * units per table, index, partition-key value and purpose. The capacity planner
 * (lib/workloads/invoices/plan.ts) projects these shares to AWS sizes instead of a hand-kept list.
 *
 * The engine says how many units a request cost on the table and on each index (DynamoDB Local
 * knows which writes touch an index: a KEYS_ONLY entry is not rewritten by an update of an
 * unprojected attribute, a changed sort key costs a delete and a put). It does not say which
 * index key value the entry had: that is followed here from what the calls wrote (an item's
 * Put, an update that SETs or REMOVEs the index key), by the schema's index key attributes.
 */
import { InvalidInputError } from '../../lib/protocol/index.js';
import type { TableNames, TableRole } from '../../lib/workflow/index.js';
import { TABLES, type IndexSchema } from '../../lib/workflow/index.js';
import type { Basis, KeyScope, LoadProfile, ProfileKey, ProfileRun, ProfileWrite } from '../../lib/workflow/index.js';

/** The part of a recorded call this reads (cli/local/aws-calls.ts records more). */
export interface ProfiledCall {
  readonly action: string;
  readonly input: Readonly<Record<string, unknown>>;
  /** The response's ConsumedCapacity: one object, or one per table (transactions, batches). */
  readonly consumed?: unknown;
  /** Set when the call failed: a refused condition still bills its write, and changes no index. */
  readonly error?: string;
}

/** One partition-key value of a table or index, and what landed on it. */
export interface KeyLoad {
  /** Write units by what caused them: `<1 in a transaction, else 0>|<the base item's key pattern>`. */
  readonly writes: Map<string, number>;
  readUnits: number;
}

/** Writes of one kind: the table (or index), the action, the attributes it writes; and units. */
export interface PurposeLoad {
  readonly role: TableRole;
  readonly index?: string;
  /** e.g. `transaction Put`, `UpdateItem SET claimToken,claimedAt,status ADD attempts`. */
  readonly purpose: string;
  /** Whether a unit's transaction wrote it. */
  readonly inTransaction: boolean;
  /** The pattern of the base items' keys it wrote (to tell a customer's item from a shard's). */
  readonly basePattern: string;
  writeUnits: number;
  requests: number;
}

export interface CallLoad {
  /** By `<role>` or `<role>/<index>`, then by key value. */
  readonly keys: Map<string, Map<string, KeyLoad>>;
  readonly purposes: Map<string, PurposeLoad>;
}

type Av = { S?: string; N?: string } | string | number | undefined;
const scalar = (v: unknown): string | undefined => {
  const a = v as Av;
  if (typeof a === 'string' || typeof a === 'number') return String(a);
  if (a !== null && typeof a === 'object') return a.S ?? a.N;
  return undefined;
};

interface Action {
  readonly kind: 'Put' | 'Update' | 'Delete' | 'ConditionCheck' | 'Get' | 'Query';
  readonly table: string;
  readonly index?: string;
  readonly key?: string;
  readonly item?: Readonly<Record<string, unknown>>;
  readonly update?: { set: Map<string, unknown>; remove: string[]; add: string[] };
  readonly inTransaction: boolean;
}

/** `SET #a = :x, b = :y REMOVE #c ADD #d :z`: which attributes get which value, which go. */
export function parseUpdate(expression: string, names: Record<string, string> = {}, values: Record<string, unknown> = {}): { set: Map<string, unknown>; remove: string[]; add: string[] } {
  const clause = (verb: string) => new RegExp(`\\b${verb}\\s+(.*?)(?=\\s+(?:SET|REMOVE|ADD|DELETE)\\s|$)`, 's').exec(expression)?.[1] ?? '';
  const resolve = (t: string) => names[t.trim()] ?? t.trim();
  const set = new Map<string, unknown>();
  // Split on commas outside parentheses (if_not_exists(a, :b)).
  for (const part of clause('SET').split(/,(?![^(]*\))/).filter((p) => p.trim() !== '')) {
    const [lhs, rhs = ''] = part.split('=');
    const v = rhs.trim();
    set.set(resolve(lhs!), v.startsWith(':') && /^:\w+$/.test(v) ? values[v] : undefined);
  }
  const list = (verb: string) => clause(verb).split(',').map((p) => resolve(p.trim().split(/\s+/)[0] ?? '')).filter((a) => a !== '');
  return { set, remove: list('REMOVE'), add: list('ADD') };
}

function actionsOf(call: ProfiledCall): Action[] {
  const i = call.input as Record<string, any>;
  const one = (kind: Action['kind'], a: Record<string, any>, inTransaction: boolean): Action => ({
    kind,
    table: String(a.TableName),
    ...(a.IndexName === undefined ? {} : { index: String(a.IndexName) }),
    ...(scalar((a.Key ?? a.Item)?.pk) === undefined ? {} : { key: scalar((a.Key ?? a.Item).pk)! }),
    ...(a.Item === undefined ? {} : { item: a.Item }),
    ...(a.UpdateExpression === undefined ? {} : { update: parseUpdate(a.UpdateExpression, a.ExpressionAttributeNames, a.ExpressionAttributeValues) }),
    inTransaction,
  });
  switch (call.action) {
    case 'PutItem': return [one('Put', i, false)];
    case 'UpdateItem': return [one('Update', i, false)];
    case 'DeleteItem': return [one('Delete', i, false)];
    case 'GetItem': return [one('Get', i, false)];
    case 'Query': return [{ ...one('Query', i, false), ...queryKey(i) }];
    case 'Scan': return []; // no function scans (the operators' seal does): only the local run's own watchers count items
    case 'TransactWriteItems':
      return (i.TransactItems as Record<string, any>[]).map((t) => {
        const [kind, a] = Object.entries(t)[0] as [string, Record<string, any>];
        return one(kind as Action['kind'], a, true);
      });
    case 'BatchWriteItem':
      return Object.entries(i.RequestItems as Record<string, any[]>).flatMap(([table, rs]) =>
        rs.map((r) => (r.PutRequest ? one('Put', { TableName: table, Item: r.PutRequest.Item }, false) : one('Delete', { TableName: table, Key: r.DeleteRequest.Key }, false))),
      );
    case 'BatchGetItem':
      return Object.entries(i.RequestItems as Record<string, { Keys: unknown[] }>).flatMap(([table, r]) => r.Keys.map((Key) => one('Get', { TableName: table, Key }, false)));
    default:
      return [];
  }
}

/** A Query's partition key value: `#k = :v` in its key condition. */
function queryKey(i: Record<string, any>): { key?: string } {
  const m = /([#\w]+)\s*=\s*(:\w+)/.exec(String(i.KeyConditionExpression ?? ''));
  const v = m === null ? undefined : scalar(i.ExpressionAttributeValues?.[m[2]!]);
  return v === undefined ? {} : { key: v };
}

interface Consumed {
  TableName?: string;
  CapacityUnits?: number;
  Table?: { CapacityUnits?: number };
  GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
}

const consumedList = (c: unknown): Consumed[] => (c === undefined ? [] : Array.isArray(c) ? c : [c]) as Consumed[];

/**
 * Accumulates the load of a stream of calls; `roles` maps a physical table name to its role.
 *
 * Write units follow AWS's pricing rules, action by action (1 per KB, twice that in a
 * transaction; an index write at the standard rate, as bench/wcu.ts bills), and an index is
 * written by the documented cases: an entry put, removed, its key or sort key changed (a
 * delete and a put), or rewritten when a projected attribute changes. DynamoDB Local's own
 * ConsumedCapacity undercounts transactions (three Puts in one transaction report 2 units), so
 * it is not the bill; on every single-item write it is the check that these rules say what the
 * engine did to each index (`agreement`).
 */
export class LoadProfiler {
  readonly load: CallLoad = { keys: new Map(), purposes: new Map() };
  readonly agreement = { checked: 0, disagreed: [] as string[] };
  /** The index key value each item has now, by `<table>\0<pk>` then index name. */
  private readonly indexKeys = new Map<string, Map<string, string>>();
  private readonly roles: Map<string, TableRole>;

  constructor(tables: TableNames) {
    this.roles = new Map(Object.entries(tables).map(([role, name]) => [name, role as TableRole]));
  }

  observe(call: ProfiledCall): void {
    const actions = actionsOf(call).filter((a) => this.roles.has(a.table));
    const consumed = consumedList(call.consumed);
    if (call.error !== undefined) return this.failed(call, actions);
    for (const a of actions) {
      const role = this.roles.get(a.table)!;
      if (a.kind === 'Get' || a.kind === 'Query') {
        const c = consumed.find((x) => x.TableName === a.table);
        const units = a.kind === 'Get' && actions.length > 1 ? 1 : (c?.CapacityUnits ?? 0) / actions.filter((x) => x.table === a.table).length;
        this.add(role, a.index, a, units, true);
        continue;
      }
      // A single-item write: the engine's own figures (it knows whether the item was in an index
      // when it applied the write; calls in flight together complete in any order). A transaction:
      // the rules (the engine undercounts it), the rules checked against the engine on the others.
      const single = !a.inTransaction && actions.length === 1 ? consumed[0] : undefined;
      const kb = Math.max(1, Math.ceil(sizeOf(a.item) / 1024));
      this.add(role, undefined, a, single?.Table?.CapacityUnits ?? single?.CapacityUnits ?? (a.inTransaction ? 2 : 1) * kb, false);
      for (const ix of TABLES[role].globalSecondaryIndexes) {
        const rules = this.indexWrites(a, ix) * kb;
        const writes = single === undefined ? rules : (single.GlobalSecondaryIndexes?.[ix.indexName]?.CapacityUnits ?? 0);
        if (writes > 0) this.add(role, ix.indexName, a, writes, false);
        if (single !== undefined) this.check(a, ix.indexName, rules, writes);
      }
    }
    for (const a of actions) this.follow(a);
  }

  /**
   * A refused write (a condition that did not hold, a cancelled transaction) bills as if it had
   * written, 1 unit per KB (2 in a transaction), and writes no index; the engine's error answer
   * carries no capacity, so the rules count it. Throttles and other errors bill nothing.
   */
  private failed(call: ProfiledCall, actions: Action[]): void {
    if (!/ConditionalCheckFailed|TransactionCanceled/.test(call.error ?? '')) return;
    for (const a of actions) {
      if (a.kind === 'Get' || a.kind === 'Query') continue;
      this.add(this.roles.get(a.table)!, undefined, a, (a.inTransaction ? 2 : 1) * Math.max(1, Math.ceil(sizeOf(a.item) / 1024)), false, ' (refused)');
    }
  }

  /** Whether the engine wrote the index as often as the rules say. */
  private check(a: Action, index: string, ours: number, engine: number): void {
    this.agreement.checked++;
    if (engine !== ours) this.agreement.disagreed.push(`${purposeOf(a)} on ${a.table}/${index}: rules ${ours}, engine ${engine}`);
  }

  /** Index entries one action writes (DynamoDB Developer Guide, "Provisioned throughput considerations for GSIs"). */
  private indexWrites(a: Action, ix: IndexSchema): number {
    if (a.kind === 'ConditionCheck') return 0;
    const before = this.indexKeys.get(`${a.table}\u0000${a.key}`)?.get(ix.indexName);
    const attr = ix.partitionKey.name;
    const sort = ix.sortKey?.name;
    if (a.kind === 'Delete') return before === undefined ? 0 : 1;
    if (a.kind === 'Put') {
      const after = scalar(a.item?.[attr]);
      if (after === undefined) return before === undefined ? 0 : 1;
      return before === undefined ? 1 : before === after ? 1 : 2;
    }
    const u = a.update!;
    const touches = (x: string | undefined) => x !== undefined && (u.set.has(x) || u.remove.includes(x) || u.add.includes(x));
    if (before === undefined) return u.set.has(attr) ? 1 : 0;
    if (u.remove.includes(attr)) return 1;
    if (u.set.has(attr) && scalar(u.set.get(attr)) !== before) return 2;
    if (touches(sort)) return 2;
    if (ix.projection === 'ALL') return 1;
    return 0;
  }

  private add(role: TableRole, index: string | undefined, a: Action, units: number, read: boolean, note = ''): void {
    const where = index === undefined ? role : `${role}/${index}`;
    const key = index === undefined || read ? (a.key ?? '(no key)') : (this.indexKeyOf(a, index) ?? '(unknown)');
    const byKey = this.load.keys.get(where) ?? new Map<string, KeyLoad>();
    this.load.keys.set(where, byKey);
    const k = byKey.get(key) ?? { writes: new Map<string, number>(), readUnits: 0 };
    byKey.set(key, k);
    if (read) {
      k.readUnits += units;
      return;
    }
    const basePattern = patternOf(a.key ?? '');
    const cause = `${a.inTransaction ? 1 : 0}|${basePattern}`;
    k.writes.set(cause, (k.writes.get(cause) ?? 0) + units);
    const purpose = `${purposeOf(a)}${note}`;
    const id = `${where}\u0000${purpose}\u0000${basePattern}`;
    const p = this.load.purposes.get(id) ?? { role, ...(index === undefined ? {} : { index }), purpose, inTransaction: a.inTransaction, basePattern, writeUnits: 0, requests: 0 };
    this.load.purposes.set(id, p);
    p.writeUnits += units;
    p.requests += 1;
  }

  /** The index key value of the item an action writes: before the action (an update, a delete) or the new one (a put). */
  private indexKeyOf(a: Action, index: string): string | undefined {
    const attr = indexKeyAttribute(this.roles.get(a.table)!, index);
    if (attr === undefined) return undefined;
    const known = this.indexKeys.get(`${a.table}\u0000${a.key}`)?.get(index);
    if (a.kind === 'Put') return scalar(a.item?.[attr]) ?? known;
    const set = a.update?.set.get(attr);
    return known ?? (set === undefined ? undefined : scalar(set));
  }

  private follow(a: Action): void {
    if (a.key === undefined || a.kind === 'Get' || a.kind === 'Query' || a.kind === 'ConditionCheck') return;
    const id = `${a.table}\u0000${a.key}`;
    const role = this.roles.get(a.table)!;
    for (const ix of TABLES[role].globalSecondaryIndexes) {
      const attr = ix.partitionKey.name;
      const now = this.indexKeys.get(id) ?? new Map<string, string>();
      this.indexKeys.set(id, now);
      if (a.kind === 'Delete' || a.update?.remove.includes(attr)) now.delete(ix.indexName);
      const v = a.kind === 'Put' ? scalar(a.item?.[attr]) : a.update?.set.has(attr) ? scalar(a.update.set.get(attr)) : undefined;
      if (a.kind === 'Put' && v === undefined) now.delete(ix.indexName);
      if (v !== undefined) now.set(ix.indexName, v);
    }
  }
}

/** An item's size by DynamoDB's rules (attribute names and values), marshalled or not; 0 when unknown (an update: under 1 KB here). */
function sizeOf(item: Readonly<Record<string, unknown>> | undefined): number {
  if (item === undefined) return 0;
  return Object.entries(item).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(JSON.stringify(v ?? null)), 0);
}

/** A key value with its digits as `N`: the values one design rule makes share a pattern. */
export const patternOf = (key: string): string => key.replace(/\d+/g, 'N');

const indexKeyAttribute = (role: TableRole, index: string): string | undefined => TABLES[role].globalSecondaryIndexes.find((i) => i.indexName === index)?.partitionKey.name;

/** A write's purpose, named by what it writes (the attribute names are the contract's). */
export function purposeOf(a: Pick<Action, 'kind' | 'inTransaction' | 'update' | 'item'>): string {
  if (a.inTransaction) return `transaction ${a.kind}`;
  if (a.update === undefined) return `${a.kind}Item`;
  const part = (verb: string, xs: readonly string[]) => (xs.length === 0 ? '' : ` ${verb} ${[...xs].sort().join(',')}`);
  return `UpdateItem${part('SET', [...a.update.set.keys()])}${part('REMOVE', a.update.remove)}${part('ADD', a.update.add)}`;
}

/** One local run's load and its size. */
export interface MeasuredRun {
  readonly run: ProfileRun;
  readonly load: CallLoad;
  readonly agreement: { readonly checked: number; readonly disagreed: readonly string[] };
}

/** Distinct values of each key pattern, by `<where>\0<pattern>`. */
function valueCounts(load: CallLoad): Map<string, number> {
  const out = new Map<string, number>();
  for (const [where, byKey] of load.keys) for (const key of byKey.keys()) out.set(`${where}\u0000${patternOf(key)}`, (out.get(`${where}\u0000${patternOf(key)}`) ?? 0) + 1);
  return out;
}

/**
 * How a pattern's values grow from the smaller run to the larger: like the customers (an item
 * each), like the shards (one each), or not at all (a fixed set). The two runs differ in both by
 * different factors, so the three are told apart.
 */
function scopeOf(small: number | undefined, big: number, runs: readonly [ProfileRun, ProfileRun]): KeyScope {
  if (small === undefined || small === 0) return 'item';
  const r = Math.log(big / small);
  const candidates: [KeyScope, number][] = [['fixed', 0], ['item', Math.log(runs[1].items / runs[0].items)], ['shard', Math.log(runs[1].shards / runs[0].shards)]];
  return candidates.reduce((a, b) => (Math.abs(b[1] - r) < Math.abs(a[1] - r) ? b : a))[0];
}

/** The profile of two runs whose customer counts and shard counts grow by different factors. */
export function buildProfile(small: MeasuredRun, big: MeasuredRun, measuredWith: string): LoadProfile {
  const runs = [small.run, big.run] as const;
  if (Math.abs(Math.log(big.run.items / small.run.items) - Math.log(big.run.shards / small.run.shards)) < 0.3) {
    throw new InvalidInputError('runs', 'the two runs must grow their customers and their shards by different factors, or a shard key cannot be told from a customer key');
  }
  const smallCounts = valueCounts(small.load);
  const scope = new Map<string, KeyScope>();
  for (const [id, n] of valueCounts(big.load)) scope.set(id, scopeOf(smallCounts.get(id), n, runs));
  const basis = (inTransaction: boolean, role: TableRole, basePattern: string): Basis => {
    const s = scope.get(`${role}\u0000${basePattern}`) ?? 'item';
    return s === 'item' ? 'item' : inTransaction ? 'unit' : 'shard';
  };
  const writes = new Map<string, ProfileWrite>();
  for (const p of big.load.purposes.values()) {
    const b = basis(p.inTransaction, p.role, p.basePattern);
    const id = `${p.role}\u0000${p.index ?? ''}\u0000${p.purpose}\u0000${b}`;
    const per = b === 'item' ? big.run.items : b === 'unit' ? big.run.units : 1;
    const prev = writes.get(id)?.units ?? 0;
    writes.set(id, { role: p.role, ...(p.index === undefined ? {} : { index: p.index }), purpose: p.purpose, basis: b, units: prev + p.writeUnits / per });
  }
  const checked = small.agreement.checked + big.agreement.checked;
  const indexRules = { checked, agreed: checked - small.agreement.disagreed.length - big.agreement.disagreed.length };
  const smallReads = patternReads(small.load);
  const keys = hottestKeys(big.load, scope, basis).map((k) => ({ ...k, readsGrow: scopeOf(smallReads.get(`${place(k)}\u0000${k.pattern}`), k.total.read, runs) }));
  return { measuredWith, runs, writes: [...writes.values()].sort(byPlace), keys: keys.sort(byPlace), indexRules };
}

const place = (k: { role: string; index?: string }) => (k.index === undefined ? k.role : `${k.role}/${k.index}`);

/** Read units of each key pattern, by `<where>\0<pattern>`. */
function patternReads(load: CallLoad): Map<string, number> {
  const out = new Map<string, number>();
  for (const [where, byKey] of load.keys) for (const [key, k] of byKey) out.set(`${where}\u0000${patternOf(key)}`, (out.get(`${where}\u0000${patternOf(key)}`) ?? 0) + k.readUnits);
  return out;
}

const byPlace = (a: { role: string; index?: string }, b: { role: string; index?: string }) => `${a.role}/${a.index ?? ''}`.localeCompare(`${b.role}/${b.index ?? ''}`);

function hottestKeys(load: CallLoad, scope: Map<string, KeyScope>, basis: (tx: boolean, role: TableRole, p: string) => Basis): Omit<ProfileKey, 'readsGrow'>[] {
  const out: Omit<ProfileKey, 'readsGrow'>[] = [];
  const zero = (): { item: number; unit: number; shard: number; read: number } => ({ item: 0, unit: 0, shard: 0, read: 0 });
  const heat = (x: ReturnType<typeof zero>) => x.item + x.unit + x.shard + x.read;
  for (const [where, byKey] of load.keys) {
    const [role, index] = where.split('/') as [TableRole, string | undefined];
    const groups = new Map<string, { hottest: { key: string } & ReturnType<typeof zero>; total: ReturnType<typeof zero>; values: number }>();
    for (const [key, k] of byKey) {
      const h = { key, ...zero(), read: k.readUnits };
      for (const [cause, units] of k.writes) {
        const [tx, basePattern] = cause.split('|') as [string, string];
        h[basis(tx === '1', role, basePattern)] += units;
      }
      const pattern = patternOf(key);
      const g = groups.get(pattern) ?? { hottest: h, total: zero(), values: 0 };
      groups.set(pattern, g);
      g.values++;
      for (const b of ['item', 'unit', 'shard', 'read'] as const) g.total[b] += h[b];
      if (heat(h) > heat(g.hottest)) g.hottest = h;
    }
    for (const [pattern, g] of groups) {
      out.push({ role, ...(index === undefined ? {} : { index }), pattern, scope: scope.get(`${where}\u0000${pattern}`) ?? 'item', values: g.values, hottest: g.hottest, total: g.total });
    }
  }
  return out;
}
