/**
 * FENCE, structurally: read from the requests that reached the engine and the engine's answers
 * (the fault proxy's record, cli/local/fault-proxy.ts), never from the worker's code paths. The stream
 * tie of cli/check/invariants.ts (an effect and a fence write share generation and `updatedAt`) cannot
 * tell "in the same transaction" from "in another request stamped alike"; the wire can:
 *
 *   1. every effect write the engine applied (an item of the effects table written, an outbox item
 *      created) was an action of a TransactWriteItems that also carried the fence's action for the
 *      effect's job, conditioned on the very generation the effect carries: an Update of the fence
 *      item that SETs `generation = :g` under `generation <= :g` (alone, or OR'd with
 *      `attribute_not_exists(generation)`);
 *   2. no effect of generation g was applied when it was sent after a write that raised the same
 *      fence above g had been answered (the engine's order, as the proxy saw it);
 *   3. nothing else changes an effect: no delete of one, no change after its creation of what
 *      the unit wrote on an outbox item (its tie `generation`, `updatedAt`, `jobId`, and every
 *      field the provider sees: `to`, `subject`, `body`, `target`, `request`, `path`);
 *   4. a follow-up (an outbox item with `parent`: lib/workflow/effects/follow-ups.ts) carries no
 *      generation and is created only by the transaction that settles its parent: a conditional
 *      Update of the parent's item that SETs its `status` and lists the follow-up in `followUps`.
 *
 * Every write operation DynamoDB has is read or refused: PutItem, UpdateItem, DeleteItem,
 * BatchWriteItem and TransactWriteItems are read as above; a PartiQL write (ExecuteStatement,
 * BatchExecuteStatement, ExecuteTransaction) or a DeleteTable that names a fence or effects table
 * is itself a violation: no effect or fence is ever written that way, and this check cannot read
 * one.
 *
 * A transaction replayed under a ClientRequestToken the engine already applied applies nothing
 * (DynamoDB's idempotency): it is counted as a replay, not as a second write. Locally only: on
 * AWS nothing sits on the wire, and the stream tie is the check there.
 */
import type { WireExchange } from '../local/fault-proxy.js';

/** The tables the check reads the wire for. */
export interface WireTables {
  fences: string;
  records: string;
  outbox: string;
  /** The workload's fence key prefix (Workload.fenceKeyPrefix). @default 'fence#' */
  fencePrefix?: string | undefined;
}

export interface WireReport {
  /** Applied TransactWriteItems (replays not counted). */
  transactions: number;
  /** Applied writes of effects, each checked against its transaction's fence action. */
  effectWritesChecked: number;
  /** Applied writes that raised a fence. */
  fenceWrites: number;
  /** Applied transactions that were replays of an applied ClientRequestToken. */
  replays: number;
  violations: string[];
}

type AttributeValue = { S?: string; N?: string } & Record<string, unknown>;
type Attributes = Record<string, AttributeValue>;
interface WireAction {
  kind: 'Put' | 'Update' | 'Delete' | 'ConditionCheck';
  TableName?: string;
  Item?: Attributes;
  Key?: Attributes;
  UpdateExpression?: string;
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Attributes;
}

/** What the unit wrote on an outbox item: its tie to the fence write and everything its provider sees. */
const WRITTEN_BY_UNIT = ['generation', 'updatedAt', 'jobId', 'kind', 'unit', 'to', 'subject', 'body', 'target', 'request', 'path', 'context', 'parent', 'step'];
/** PartiQL's writes: a statement's verb and the table it names (quoted or not). */
const PARTIQL_WRITE = /^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_.-]+))/i;
const MAX_LISTED = 20;
/** The fence a job's effects are guarded by, as the table contract names it (`<prefix><jobId>`, the workload's prefix): the checker's one spelling of it. */
export const fenceKeyOfJob = (jobId: string, prefix = 'fence#'): string => `${prefix}${jobId}`;

const numberOf = (v: AttributeValue | undefined): number | undefined => (v?.N === undefined ? undefined : Number(v.N));

/** The attribute names an update expression assigns or removes, with the value token each SET assigns. */
function assignments(a: WireAction): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  const names = a.ExpressionAttributeNames ?? {};
  // A clause keyword stands alone: `#add` or `#set` is a placeholder name, not a clause.
  const clauses = (a.UpdateExpression ?? '').split(/(?:^|\s)(SET|REMOVE|ADD|DELETE)(?=\s)/i);
  for (let i = 1; i < clauses.length; i += 2) {
    const verb = clauses[i]!.toUpperCase();
    for (const part of (clauses[i + 1] ?? '').split(',')) {
      const [lhs = '', rhs] = part.split('=').map((x) => x.trim());
      const path = lhs.split(/\s+/)[0] ?? '';
      if (path === '') continue;
      // A nested path (`#request.#amount`, `#l[0]`) changes its top-level attribute.
      const head = path.split(/[.[]/)[0]!;
      const name = names[head] ?? head;
      out.set(name, verb === 'SET' && rhs !== undefined && /^:\w+$/.test(rhs) ? rhs : undefined);
    }
  }
  return out;
}

/** The generation an action writes: the Item's for a Put, the value SET for an Update. */
function writtenGeneration(a: WireAction): number | undefined {
  if (a.kind === 'Put') return numberOf(a.Item?.generation);
  const token = assignments(a).get('generation');
  return token === undefined ? undefined : numberOf(a.ExpressionAttributeValues?.[token]);
}

/**
 * The generation a fence action is conditioned on, if its condition is the fence's: `generation <=
 * g` (or `g >= generation`), alone or OR'd with `attribute_not_exists(generation)`, and it SETs
 * the same g. Anything else (no condition, another comparison, another value) is no fence.
 */
function fenceCondition(a: WireAction): number | undefined {
  if (a.kind !== 'Update' || a.ConditionExpression === undefined) return undefined;
  const names = a.ExpressionAttributeNames ?? {};
  const values = a.ExpressionAttributeValues ?? {};
  const text = a.ConditionExpression.replace(/#\w+/g, (n) => names[n] ?? n)
    .replace(/:\w+/g, (v) => (values[v]?.N === undefined ? v : `@${values[v]!.N}`))
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^\((.*)\)$/, '$1');
  const m = /^(?:attribute_not_exists\(generation\) OR )?(?:generation <= @(\d+)|@(\d+) >= generation)$/.exec(text);
  const bound = m === null ? undefined : Number(m[1] ?? m[2]);
  return bound !== undefined && bound === writtenGeneration(a) ? bound : undefined;
}

/** The actions of one applied write request, with the table each names. */
function actionsOf(operation: string, request: Record<string, unknown>): WireAction[] {
  if (operation === 'TransactWriteItems') {
    return ((request.TransactItems as Record<string, WireAction>[] | undefined) ?? []).flatMap((t) =>
      (['Put', 'Update', 'Delete', 'ConditionCheck'] as const).filter((k) => t[k] !== undefined).map((k) => ({ ...t[k]!, kind: k })),
    );
  }
  if (operation === 'BatchWriteItem') {
    const items = (request.RequestItems ?? {}) as Record<string, { PutRequest?: { Item: Attributes }; DeleteRequest?: { Key: Attributes } }[]>;
    return Object.entries(items).flatMap(([table, reqs]) =>
      reqs.map((r): WireAction => (r.PutRequest ? { kind: 'Put', TableName: table, Item: r.PutRequest.Item } : { kind: 'Delete', TableName: table, Key: r.DeleteRequest?.Key ?? {} })),
    );
  }
  const kind = ({ PutItem: 'Put', UpdateItem: 'Update', DeleteItem: 'Delete' } as const)[operation as 'PutItem'];
  return kind === undefined ? [] : [{ ...(request as unknown as WireAction), kind }];
}

const statementsOf = (list: unknown): unknown[] => ((list as { Statement?: unknown }[] | undefined) ?? []).map((s) => s.Statement);
/** The PartiQL statements of each operation that carries them. */
const STATEMENTS: Readonly<Record<string, (request: Record<string, unknown>) => unknown[]>> = {
  ExecuteStatement: (r) => [r.Statement],
  BatchExecuteStatement: (r) => statementsOf(r.Statements),
  ExecuteTransaction: (r) => statementsOf(r.TransactStatements),
};

/** The tables a PartiQL write or a DeleteTable names (a SELECT writes nothing). */
function statementTables(operation: string, request: Record<string, unknown>): string[] {
  if (operation === 'DeleteTable') return [String(request.TableName)];
  return (STATEMENTS[operation]?.(request) ?? []).flatMap((s) => {
    const m = typeof s === 'string' ? PARTIQL_WRITE.exec(s) : null;
    return m === null ? [] : [m[2] ?? m[3] ?? m[4]!];
  });
}

const keyOf = (a: WireAction): string => String((a.Item ?? a.Key)?.pk?.S ?? '?');

/** The structural check, fed one exchange at a time (so a long run keeps summaries, not bodies). */
export class WireCheck {
  private transactions = 0;
  private effects = 0;
  private fences = 0;
  private replays = 0;
  private readonly violations: string[] = [];
  private readonly tokens = new Set<string>();
  /** Per fence key: per generation, the earliest answer of a write that raised the fence to it. */
  private readonly raised = new Map<string, Map<number, number>>();
  /** Per fence key: per generation, the latest send of an applied effect of it (and its item). */
  private readonly applied = new Map<string, Map<number, { sentAt: number; key: string }>>();

  constructor(private readonly tables: WireTables) {}

  observe(ex: WireExchange): void {
    if (ex.status !== 200) return; // refused: nothing was applied
    let request: Record<string, unknown>;
    try {
      request = JSON.parse(ex.body) as Record<string, unknown>;
    } catch {
      return; // not a DynamoDB JSON request: nothing this check reads
    }
    for (const table of statementTables(ex.operation, request)) if (this.checked(table)) this.add(`${table}: written by a ${ex.operation}, which no effect or fence is written with and this check cannot read`);
    const actions = actionsOf(ex.operation, request);
    if (actions.length === 0) return;
    if (ex.operation === 'TransactWriteItems') {
      const token = typeof request.ClientRequestToken === 'string' ? request.ClientRequestToken : undefined;
      if (token !== undefined && this.tokens.has(token)) return void this.replays++;
      if (token !== undefined) this.tokens.add(token);
      this.transactions++;
    }
    for (const a of actions) if (a.TableName === this.tables.fences) this.fenceWrite(a, ex);
    for (const a of actions) this.effectWrite(a, ex, ex.operation === 'TransactWriteItems' ? actions : []);
  }

  private fenceWrite(a: WireAction, ex: WireExchange): void {
    const g = a.kind === 'Delete' || a.kind === 'ConditionCheck' ? undefined : writtenGeneration(a);
    if (a.kind === 'Delete') this.add(`fence ${keyOf(a)} deleted by a ${ex.operation}`);
    if (g === undefined) return;
    this.fences++;
    const byGen = this.raised.get(keyOf(a)) ?? new Map<number, number>();
    byGen.set(g, Math.min(byGen.get(g) ?? Infinity, ex.answeredAt));
    this.raised.set(keyOf(a), byGen);
  }

  private effectWrite(a: WireAction, ex: WireExchange, transaction: WireAction[]): void {
    const { records, outbox } = this.tables;
    if (a.TableName !== records && a.TableName !== outbox) return;
    const key = keyOf(a);
    if (a.kind === 'Delete') return this.add(`${key}: an effect deleted by a ${ex.operation}`);
    if (a.kind === 'ConditionCheck') return;
    if (a.TableName === outbox && a.kind === 'Update') {
      const touched = [...assignments(a).keys()].filter((n) => WRITTEN_BY_UNIT.includes(n));
      if (touched.length > 0) this.add(`${key}: an outbox item's ${touched.join(', ')} changed by a ${ex.operation} after its creation`);
      return;
    }
    if (a.TableName === outbox && a.Item?.parent?.S !== undefined) return this.followUpWrite(a, ex, transaction);
    this.effects++;
    const g = writtenGeneration(a);
    const jobId = a.kind === 'Put' ? a.Item?.jobId?.S : undefined;
    if (g === undefined || jobId === undefined) return this.add(`${key}: an effect written by a ${ex.operation} with no generation or job the checker can read`);
    const fence = fenceKeyOfJob(jobId, this.tables.fencePrefix);
    const guarded = transaction.some((t) => t.TableName === this.tables.fences && keyOf(t) === fence && fenceCondition(t) === g);
    if (!guarded) {
      const where = ex.operation === 'TransactWriteItems' ? 'in a transaction without' : `by a ${ex.operation}, not in a transaction with`;
      this.add(`${key}: generation ${g} applied ${where} ${fence}'s action conditioned on generation <= ${g}`);
    }
    const byGen = this.applied.get(fence) ?? new Map<number, { sentAt: number; key: string }>();
    if ((byGen.get(g)?.sentAt ?? -Infinity) < ex.sentAt) byGen.set(g, { sentAt: ex.sentAt, key });
    this.applied.set(fence, byGen);
  }

  /** Rule 4: a follow-up put by its parent's settle, in the same transaction, and by nothing else. */
  private followUpWrite(a: WireAction, ex: WireExchange, transaction: WireAction[]): void {
    const key = keyOf(a);
    const parent = a.Item!.parent!.S!;
    if (a.Item?.generation !== undefined) this.add(`${key}: a follow-up written with a generation (no unit wrote it)`);
    const settle = transaction.find((t) => t.kind === 'Update' && t.TableName === this.tables.outbox && keyOf(t) === parent);
    const listed = settle === undefined ? undefined : assignments(settle).get('followUps');
    const lists = listed !== undefined && JSON.stringify(settle!.ExpressionAttributeValues?.[listed] ?? null).includes(JSON.stringify(key));
    if (settle === undefined || settle.ConditionExpression === undefined || !assignments(settle).has('status') || !lists) {
      const where = ex.operation === 'TransactWriteItems' ? 'in a transaction without' : `by a ${ex.operation}, not in a transaction with`;
      this.add(`${key}: a follow-up created ${where} its parent ${parent}'s settle (a conditional status change listing it in followUps)`);
    }
  }

  /** The tables this check guards: a write to them it cannot read is a violation. */
  private checked(table: string): boolean {
    const { fences, records, outbox } = this.tables;
    return table === fences || table === records || table === outbox;
  }

  private add(msg: string): void {
    if (this.violations.length < MAX_LISTED) this.violations.push(msg);
    else if (this.violations.length === MAX_LISTED) this.violations.push('…');
  }

  /** The report, with rule 2 judged over everything observed. */
  report(): WireReport {
    const late: string[] = [];
    for (const [fence, effects] of this.applied) {
      const raises = this.raised.get(fence) ?? new Map<number, number>();
      for (const [g, e] of effects) {
        for (const [above, answeredAt] of raises) {
          if (above > g && e.sentAt > answeredAt) late.push(`${e.key}: generation ${g} applied, sent ${Math.round(e.sentAt - answeredAt)} ms after ${fence} was raised to ${above}`);
        }
      }
    }
    const violations = [...this.violations, ...late].slice(0, MAX_LISTED + 1);
    return { transactions: this.transactions, effectWritesChecked: this.effects, fenceWrites: this.fences, replays: this.replays, violations };
  }
}
