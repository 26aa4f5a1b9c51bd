/**
 * The fault rules of a DynamoDB wire: which request is delayed, lost, held or answered in the
 * engine's place. One table for both wires that carry the handlers' requests: the loopback proxy
 * in front of DynamoDB Local (fault-proxy.ts) and the simulator's in-memory wire (test/sim): a
 * chaos schedule injects the same faults into either.
 *
 * Matching: `target` is the `X-Amz-Target` header, either in full (`DynamoDB_20120810.UpdateItem`)
 * or just the operation (`UpdateItem`); `when` is a predicate on the request (its parsed JSON
 * body, e.g. the `:me` value of a conditional write). Rules are tried in the order they were
 * added; the first one that matches and has shots left fires and uses up one shot.
 */
export type FaultAction =
  | { kind: 'delay'; ms: number }
  | { kind: 'drop' }
  | { kind: 'blackhole' }
  | { kind: 'respond'; status: number; body: (req: ProxiedRequest) => unknown };

/** What a rule's predicate sees of a request. */
export interface ProxiedRequest {
  /** The full `X-Amz-Target` header, e.g. `DynamoDB_20120810.UpdateItem` ('' when absent). */
  readonly target: string;
  /** The operation part of the target, e.g. `UpdateItem`. */
  readonly operation: string;
  readonly body: string;
  /** The body as JSON (DynamoDB's wire format), undefined if it is not JSON. */
  readonly json: any;
}

export interface FaultMatch {
  /** `DynamoDB_20120810.UpdateItem` or `UpdateItem`; absent: any operation. */
  target?: string;
  when?: (req: ProxiedRequest) => boolean;
  /** How many matching requests this rule affects (default 1; `Infinity` for all). */
  times?: number;
}

export interface Fault {
  /** How many requests this rule has affected so far. */
  readonly hits: number;
  /** Resolves once the rule has affected `n` requests (default 1). */
  waitForHits(n?: number): Promise<void>;
  /** Disarms the rule (requests already held stay held). */
  remove(): void;
}

/** The rules a test or a schedule arms. */
export interface FaultRules {
  inject(match: FaultMatch, action: FaultAction): Fault;
  delay(match: FaultMatch, ms: number): Fault;
  drop(match?: FaultMatch): Fault;
  blackhole(match?: FaultMatch): Fault;
  /** Answers without forwarding (nothing is applied). */
  respond(match: FaultMatch, body: (req: ProxiedRequest) => unknown, status?: number): Fault;
  /** Refuses without forwarding, as DynamoDB does: HTTP 400 with `__type` (e.g. `ThrottlingException`) and any extra fields. */
  error(match: FaultMatch, type: string, extra?: Record<string, unknown>): Fault;
}

/** The rules and what a wire does with them: the action for a request (using up one shot), and disarming all. */
export interface FaultTable extends FaultRules {
  actionFor(req: ProxiedRequest): FaultAction | undefined;
  clear(): void;
}

interface Rule {
  match: FaultMatch;
  action: FaultAction;
  left: number;
  hits: number;
  waiters: { n: number; resolve: () => void }[];
}

function targetMatches(want: string | undefined, target: string, operation: string): boolean {
  return want === undefined || want === target || want === operation;
}

/** The request a wire hands the rules, from its `X-Amz-Target` header and body. */
export function proxiedRequest(target: string, body: string): ProxiedRequest {
  const operation = target.includes('.') ? target.slice(target.lastIndexOf('.') + 1) : target;
  // Parsed when a rule first reads it: most requests meet no rule that does.
  let parsed: { json: unknown } | undefined;
  return {
    target,
    operation,
    body,
    get json() {
      parsed ??= { json: parseOrUndefined(body) };
      return parsed.json;
    },
  };
}

function parseOrUndefined(body: string): unknown {
  try {
    return body.length > 0 ? JSON.parse(body) : undefined;
  } catch {
    return undefined;
  }
}

export function createFaultTable(): FaultTable {
  const rules: Rule[] = [];

  function actionFor(req: ProxiedRequest): FaultAction | undefined {
    for (const rule of rules) {
      if (rule.left <= 0) continue;
      if (!targetMatches(rule.match.target, req.target, req.operation)) continue;
      if (rule.match.when !== undefined && !rule.match.when(req)) continue;
      rule.left--;
      rule.hits++;
      for (const w of rule.waiters.filter((w) => rule.hits >= w.n)) w.resolve();
      rule.waiters = rule.waiters.filter((w) => rule.hits < w.n);
      return rule.action;
    }
    return undefined;
  }

  function inject(match: FaultMatch, action: FaultAction): Fault {
    const rule: Rule = { match, action, left: match.times ?? 1, hits: 0, waiters: [] };
    rules.push(rule);
    return {
      get hits() {
        return rule.hits;
      },
      waitForHits(n = 1) {
        return rule.hits >= n ? Promise.resolve() : new Promise<void>((resolve) => rule.waiters.push({ n, resolve }));
      },
      remove() {
        rule.left = 0;
        const i = rules.indexOf(rule);
        if (i >= 0) rules.splice(i, 1);
      },
    };
  }

  return {
    actionFor,
    clear: () => void (rules.length = 0),
    inject,
    delay: (match, ms) => inject(match, { kind: 'delay', ms }),
    drop: (match = {}) => inject(match, { kind: 'drop' }),
    blackhole: (match = {}) => inject(match, { kind: 'blackhole' }),
    respond: (match, body, status = 200) => inject(match, { kind: 'respond', status, body }),
    error: (match, type, extra = {}) =>
      inject(match, { kind: 'respond', status: 400, body: () => ({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message: `injected ${type}`, ...extra }) }),
  };
}
