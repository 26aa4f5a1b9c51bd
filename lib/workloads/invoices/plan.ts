/**
 * The capacity plan of a period's invoice run on AWS (`npm run cli -- plan`): units, requests,
 * write and read units, S3 puts and emails per run, the cost at list prices, the wall time, and
 * which limit binds with the setting that raises it. The workload is DESIGN.md's invoice run:
 * per customer, a fenced unit writes an invoice (upsert), a charge (once-only) and two outbox items
 * (once-only: the invoice email and the payment provider's charge notification) in its
 * transaction; the invoice's document is one S3 PUT; each outbox item is one provider call, which
 * the sender claims and marks sent (two conditional updates) and which enters and leaves the
 * outbox's index of unsent items. Every item is under 1 KB.
 */
import {
  AWS_LIMITS,
  projectedKeyRate,
  projectedWrites,
  bindingLimit,
  costOf,
  DEFAULT_ASSUMPTIONS,
  MAX_SHARDS,
  rampSeconds,
  workerConcurrencyFor,
  workerRoom,
  type LimitVerdict,
  type PlanAssumptions,
  type ProfileKey,
  type TableRole,
  UNFINISHED,
  UNFINISHED_INDEX,
} from '../../workflow/index.js';
import { InvalidInputError } from '../../protocol/index.js';
import { INVOICE_PROFILE } from './profile.js';
import { shardRange } from './shards.js';
import { DEFAULT_UNIT_SIZE, EFFECTS_PER_CUSTOMER, MAX_UNIT_SIZE } from './invoices.js';

/** What one customer costs outside DynamoDB (its DynamoDB writes are the measured profile). */
export const INVOICE_MIX = {
  /** Outbox items per customer the unit writes (the invoice email, the payment provider's charge notification): one provider call each. */
  outboxItems: 2,
  /** Items per customer the payment's settle creates: its receipt, or the declined card's email (invoiceSteps). */
  followUps: 1,
  s3Puts: 1,
  /** The invoice email and the payment's follow-up email. */
  emails: 2,
  /** The payment provider's POST (outside AWS: no AWS cost, but one call per customer). */
  paymentCalls: 1,
} as const;
const TX = AWS_LIMITS.transactionalWriteFactor;

export interface InvoicePlanInput {
  customers: number;
  /** Absent: the plan recommends a count. */
  shards?: number;
  unitSize?: number;
  assumptions?: Partial<PlanAssumptions>;
  /** Table-level write quota (default AWS's 40,000) and Lambda concurrency (default 1,000), if raised. */
  tableWriteUnits?: number;
  lambdaConcurrency?: number;
}

export interface InvoicePlan {
  customers: number;
  shards: number;
  recommendedShards: number;
  unitSize: number;
  units: number;
  unitsPerShard: number;
  invocations: number;
  requests: Record<string, number>;
  writeUnits: Record<'records' | 'outbox' | 'fences' | 'jobs' | 'leases' | 'total', number>;
  /** Write units per customer, with the line of every write that makes them up. */
  writeUnitsPerCustomer: { total: number; breakdown: WriteShare[] };
  /** Per table and index, its hottest key at the rate the work asks (the profile's shares), against one partition's limits. */
  partitions: PartitionLoad[];
  readUnits: number;
  s3Puts: number;
  emails: number;
  paymentCalls: number;
  cost: Record<string, number>;
  wallSeconds: number;
  /** The same run on tables that were never pre-warmed (4,000 write units/s at once). */
  wallSecondsUnwarmed: number;
  binding: LimitVerdict;
  limits: LimitVerdict[];
  /**
   * `warmIndexWriteUnits`: per table role, the warm write units of each index the run writes
   * faster than a new index serves (4,000/s), as `warmThroughput.<role>.indexes.<name>.write`.
   */
  settings: { shards: number; workerMaxConcurrency: number; warmWriteUnits: { records: number; outbox: number }; warmIndexWriteUnits: Partial<Record<TableRole, Record<string, number>>>; lambdaConcurrency: number };
  assumptions: PlanAssumptions;
}

/** Single-item updates per customer (each outbox item's delivery), from the profile: one unit each (items under 1 KB). */
const updatesPerCustomer = (): number => INVOICE_PROFILE.writes.filter((w) => w.basis === 'item' && w.index === undefined && w.purpose.startsWith('UpdateItem')).reduce((n, w) => n + w.units, 0);

/** One line of the write units per customer: where, what for, how many, and whether measured or counted from the assumptions. */
export interface WriteShare {
  table: TableRole;
  index?: string;
  purpose: string;
  units: number;
  source: 'measured' | 'assumed';
}

/** The write units per customer of a plan, line by line: the profile's, then the clock's and the shape's. */
function writeShares(m: { units: number; shaped: Record<TableRole, number> }, n: number): WriteShare[] {
  const lines: WriteShare[] = INVOICE_PROFILE.writes
    .filter((w) => w.basis !== 'shard')
    .map((w) => ({ table: w.role, ...(w.index === undefined ? {} : { index: w.index }), purpose: w.purpose, units: (w.units * (w.basis === 'item' ? n : m.units)) / n, source: 'measured' as const }));
  const what: Record<TableRole, string> = {
    fences: 'fence raise per invocation',
    jobs: 'heartbeat stamps (and their index moves), shard creation, run record',
    leases: 'acquire and release per invocation, renewals',
    records: '',
    outbox: '',
  };
  for (const [t, u] of Object.entries(m.shaped) as [TableRole, number][]) if (u > 0) lines.push({ table: t, purpose: what[t], units: u / n, source: 'assumed' });
  return lines;
}

/** The run's request mix: everything it sends, counted from the protocol (one transaction per unit, the per-invocation steps, the completion checks). */
function mix(n: number, k: number, unitSize: number, a: PlanAssumptions) {
  let units = 0;
  let unitsPerShard = 0;
  let invocations = 0;
  for (let i = 0; i < k; i++) {
    const { from, to } = shardRange(n, i, k);
    const u = Math.max(1, Math.ceil((to - from) / unitSize));
    units += u;
    unitsPerShard = Math.max(unitsPerShard, u);
    invocations += Math.max(1, Math.ceil((u * a.unitLatencyMs) / a.invocationMs));
  }
  const busySeconds = (units * a.unitLatencyMs + invocations * a.handoffMs) / 1000;
  const stamps = Math.ceil(busySeconds / (a.leaseMs / 4 / 1000)) + 2 * k; // lease/4, and every shard's first and last unit
  const renewals = Math.ceil(busySeconds / (a.leaseMs / 2 / 1000));
  const runRecordKb = Math.max(1, Math.ceil((k * 48) / 1024));
  const work = projectedWrites(INVOICE_PROFILE, n, units);
  const measured = (t: TableRole) => work.get(t) ?? 0;
  // What follows the run's shape and the clock: a fence raise per invocation; heartbeat stamps
  // (each moves the job in the sweeper's index: 2 index writes); a shard's creation with its
  // index entry; the run record's put and doneAt; acquire and release per invocation, renewals.
  const shaped = { records: 0, outbox: 0, fences: invocations, jobs: stamps * (1 + 2) + k * 2 + 2 * runRecordKb, leases: invocations * 2 + renewals };
  const writeUnits = {
    records: measured('records') + shaped.records,
    outbox: measured('outbox') + shaped.outbox,
    fences: measured('fences') + shaped.fences,
    jobs: measured('jobs') + shaped.jobs,
    leases: measured('leases') + shaped.leases,
  };
  const total = Object.values(writeUnits).reduce((x, y) => x + y, 0);
  // Per invocation: the screen read and the checkpoint read (strongly consistent); per shard: its completion check (the run record and every shard).
  const readUnits = invocations * 2 + k * (runRecordKb + k);
  const messages = invocations; // a start per shard, then a continuation per hand-off
  return {
    units,
    unitsPerShard,
    invocations,
    busySeconds,
    shaped,
    writeUnits: { ...writeUnits, total },
    readUnits,
    requests: {
      transactWriteItems: units,
      updateItem: invocations * 3 + renewals + k + updatesPerCustomer() * n, // acquire, raise, release; renewals; doneAt checks; the delivery's updates (measured)
      getItem: invocations * 2 + k,
      batchGetItem: k * Math.ceil(k / 100),
      putItem: k + 1,
      sqs: messages * 3, // send, receive, delete
      lambda: invocations,
    },
  };
}

/** Each limit's floor on the wall time at `k` shards, with the given warm throughput. */
function verdicts(m: ReturnType<typeof mix>, n: number, k: number, warm: { records: number; outbox: number }, a: PlanAssumptions, quota: number, lambda: number): LimitVerdict[] {
  const perInvocation = Math.ceil(a.invocationMs / a.unitLatencyMs);
  const chain = (m.unitsPerShard * a.unitLatencyMs + Math.floor(m.unitsPerShard / perInvocation) * a.handoffMs) / 1000;
  const table = (name: 'records' | 'outbox'): LimitVerdict => {
    const cap = Math.min(quota, warm[name]);
    return {
      name: `${name} table write throughput`,
      seconds: m.writeUnits[name] / cap,
      allows: cap,
      demands: m.writeUnits[name] / chain,
      unit: 'write units/s',
      raise:
        warm[name] < quota
          ? `warm throughput on the ${name} table (stack context warmThroughput.${name}.write, up to the ${quota} quota)`
          : `the table-level write throughput quota (${quota}; Service Quotas), then warm throughput to match`,
    };
  };
  const esm = workerConcurrencyFor(k, workerRoom(lambda, OTHER_FUNCTIONS));
  const waves = (slots: number) => chain * (k / Math.max(1, Math.min(k, slots)));
  return [
    { name: "one shard's chain of transactions", seconds: chain, allows: 1000 / a.unitLatencyMs, demands: 1000 / a.unitLatencyMs, unit: 'units/s per shard', raise: 'more shards (plan --shards, stack context shards)' },
    table('records'),
    table('outbox'),
    ...partitionLoads(m, k, a, chain, n).map(partitionVerdict(chain)),
    { name: 'Lambda concurrency', seconds: waves(lambda), allows: lambda, demands: esm, unit: 'concurrent invocations', raise: `the account's Lambda concurrent executions quota (${lambda}; Service Quotas)` },
    { name: 'SQS event source maximum concurrency', seconds: waves(esm), allows: esm, demands: k, unit: 'concurrent invocations', raise: `stack context workerMaxConcurrency (set from shards: ${esm}; at most ${AWS_LIMITS.eventSourceMaxConcurrency})` },
  ];
}

/** The hottest partition-key value of one table or index, at the rate the work asks of it. */
export interface PartitionLoad {
  table: TableRole;
  index?: string;
  /** The key's pattern (digits as N), e.g. `open#N`; `scope`: how its values grow with the run. */
  key: string;
  scope: ProfileKey['scope'];
  writeUnitsPerSecond: number;
  readUnitsPerSecond: number;
  limit: { writeUnitsPerSecond: number; readUnitsPerSecond: number };
}

/**
 * Per table and index, the hottest key value when the work runs as fast as the shards allow
 * (`seconds`: the chain), from the profile's shares; the sweeper index's key also takes the
 * heartbeat stamps (every lease/4 per shard: two index writes), which follow the clock.
 * A shard's other clock-driven writes (renewals, acquire and release) are a few per minute.
 */
export function partitionLoads(m: { units: number }, k: number, a: PlanAssumptions, seconds: number, n = 0): PartitionLoad[] {
  const rates = { items: n, units: m.units, shards: k, seconds };
  const hottest = new Map<string, PartitionLoad>();
  for (const key of INVOICE_PROFILE.keys) {
    const r = projectedKeyRate(INVOICE_PROFILE, key, rates);
    const stamps = key.role === 'jobs' && key.index === UNFINISHED_INDEX && key.pattern === UNFINISHED ? k * 2 * (4000 / a.leaseMs) : 0;
    const load: PartitionLoad = {
      table: key.role,
      ...(key.index === undefined ? {} : { index: key.index }),
      key: key.pattern,
      scope: key.scope,
      writeUnitsPerSecond: r.write + stamps,
      readUnitsPerSecond: r.read,
      limit: { writeUnitsPerSecond: AWS_LIMITS.partitionWriteUnitsPerSecond, readUnitsPerSecond: AWS_LIMITS.partitionReadUnitsPerSecond },
    };
    const at = `${key.role}/${key.index ?? ''}`;
    const heat = (x: PartitionLoad) => Math.max(x.writeUnitsPerSecond / x.limit.writeUnitsPerSecond, x.readUnitsPerSecond / x.limit.readUnitsPerSecond);
    if (!hottest.has(at) || heat(load) > heat(hottest.get(at)!)) hottest.set(at, load);
  }
  return [...hottest.values()];
}

/** A partition's floor: the time its key's units take at 1,000 write (3,000 read) units a second. */
const partitionVerdict = (chain: number) => (p: PartitionLoad): LimitVerdict => {
  const w = p.writeUnitsPerSecond / p.limit.writeUnitsPerSecond;
  const r = p.readUnitsPerSecond / p.limit.readUnitsPerSecond;
  const raise = p.scope === 'fixed' ? 'more values for the key (a write-sharded key, read by a fan-out query)' : p.scope === 'shard' ? 'more shards' : 'none: one item takes its few writes once';
  const name = `partition ${p.table}${p.index === undefined ? '' : `/${p.index}`} key ${p.key}`;
  return w >= r
    ? { name, seconds: chain * w, allows: p.limit.writeUnitsPerSecond, demands: p.writeUnitsPerSecond, unit: 'write units/s on one key', raise }
    : { name, seconds: chain * r, allows: p.limit.readUnitsPerSecond, demands: p.readUnitsPerSecond, unit: 'read units/s on one key', raise };
};

function planAt(n: number, k: number, unitSize: number, a: PlanAssumptions, quota: number, lambda: number) {
  const m = mix(n, k, unitSize, a);
  const chain = (m.unitsPerShard * a.unitLatencyMs) / 1000;
  // Recommended warm throughput: what the shards write at, to the 1,000 above, within the quota, never below a new table's.
  const want = (t: 'records' | 'outbox') => Math.min(quota, Math.max(AWS_LIMITS.newTableWarmWriteUnits, Math.ceil(m.writeUnits[t] / chain / 1000) * 1000));
  const warm = { records: want('records'), outbox: want('outbox') };
  const warmIndexes = indexWarmth(n, k, m.units, chain, quota);
  const limits = verdicts(m, n, k, warm, a, quota, lambda);
  const binding = bindingLimit(limits);
  const ramp = rampSeconds(Math.min(k, workerConcurrencyFor(k, workerRoom(lambda, OTHER_FUNCTIONS)))) / 2;
  const unwarmed = bindingLimit(verdicts(m, n, k, { records: AWS_LIMITS.newTableWarmWriteUnits, outbox: AWS_LIMITS.newTableWarmWriteUnits }, a, quota, lambda));
  return { m, warm, warmIndexes, limits, binding, wall: binding.seconds + ramp, wallUnwarmed: unwarmed.seconds + ramp };
}

/**
 * Each index's write units per second when the shards run as fast as they can (`chain` seconds),
 * from the profile's measured index writes: the indexes written faster than a new index serves
 * (4,000/s), with their warm setting (to the 1,000 above, within the quota). Warming a table does
 * not warm its indexes: each has its own warm throughput.
 */
function indexWarmth(n: number, k: number, units: number, chain: number, quota: number): Partial<Record<TableRole, Record<string, number>>> {
  const per = new Map<string, number>();
  for (const w of INVOICE_PROFILE.writes) {
    if (w.index === undefined) continue;
    const count = w.basis === 'item' ? n : w.basis === 'unit' ? units : k;
    const at = `${w.role}\u0000${w.index}`;
    per.set(at, (per.get(at) ?? 0) + w.units * count);
  }
  const out: Partial<Record<TableRole, Record<string, number>>> = {};
  for (const [at, total] of per) {
    const [role, index] = at.split('\u0000') as [TableRole, string];
    const perSecond = total / Math.max(1, chain);
    if (perSecond <= AWS_LIMITS.newTableWarmWriteUnits) continue;
    (out[role] ??= {})[index] = Math.min(quota, Math.ceil(perSecond / 1000) * 1000);
  }
  return out;
}

/**
 * The smallest shard count whose wall time is within 5 % (or a minute) of the best any count
 * allows under these limits: past it, more shards only wait on a limit they cannot raise.
 */
export function recommendShards(n: number, unitSize: number, a: PlanAssumptions, quota: number, lambda: number): number {
  const max = Math.min(MAX_SHARDS, Math.max(1, Math.ceil(n / unitSize)), AWS_LIMITS.eventSourceMaxConcurrency - 2);
  const walls: number[] = [];
  for (let k = 1; k <= max; k++) walls.push(planAt(n, k, unitSize, a, quota, lambda).wall);
  const best = Math.min(...walls);
  return walls.findIndex((w) => w <= Math.max(best * 1.05, best + 60)) + 1;
}

/**
 * The invoice stack's functions besides the worker, one execution each (the stack's own count:
 * infra/constructs/fenced-workflow.ts): the sweeper, the starter, the sender, the reconciler, the
 * recorder, the collector, and the sandbox provider while a target is in the sandbox.
 */
const OTHER_FUNCTIONS = 7;

export function planInvoiceRun(input: InvoicePlanInput): InvoicePlan {
  const a = { ...DEFAULT_ASSUMPTIONS, ...input.assumptions };
  const unitSize = input.unitSize ?? DEFAULT_UNIT_SIZE;
  if (!Number.isInteger(unitSize) || unitSize < 1 || unitSize > MAX_UNIT_SIZE) {
    throw new InvalidInputError('unitSize', `must be an integer in [1, ${MAX_UNIT_SIZE}] (${EFFECTS_PER_CUSTOMER} effects per customer), got ${unitSize}`);
  }
  const quota = input.tableWriteUnits ?? AWS_LIMITS.tableWriteUnitsPerSecond;
  const lambda = input.lambdaConcurrency ?? AWS_LIMITS.lambdaConcurrency;
  const n = input.customers;
  const recommended = recommendShards(n, unitSize, a, quota, lambda);
  const k = input.shards ?? recommended;
  const { m, warm, warmIndexes, limits, binding, wall, wallUnwarmed } = planAt(n, k, unitSize, a, quota, lambda);
  const lambdaGbSeconds = m.busySeconds * a.memoryGb;
  return {
    customers: n,
    shards: k,
    recommendedShards: recommended,
    unitSize,
    units: m.units,
    unitsPerShard: m.unitsPerShard,
    invocations: m.invocations,
    requests: m.requests,
    writeUnits: m.writeUnits,
    writeUnitsPerCustomer: { total: m.writeUnits.total / n, breakdown: writeShares(m, n) },
    partitions: partitionLoads(m, k, a, (m.unitsPerShard * a.unitLatencyMs) / 1000, n),
    readUnits: m.readUnits,
    s3Puts: n * INVOICE_MIX.s3Puts,
    emails: n * INVOICE_MIX.emails,
    paymentCalls: n * INVOICE_MIX.paymentCalls,
    cost: costOf({ wru: m.writeUnits.total, rru: m.readUnits, s3Puts: n * INVOICE_MIX.s3Puts, emails: n * INVOICE_MIX.emails, sqsRequests: m.requests.sqs!, lambdaRequests: m.invocations, lambdaGbSeconds }),
    wallSeconds: wall,
    wallSecondsUnwarmed: wallUnwarmed,
    binding,
    limits,
    settings: { shards: k, workerMaxConcurrency: workerConcurrencyFor(k, workerRoom(lambda, OTHER_FUNCTIONS)), warmWriteUnits: warm, warmIndexWriteUnits: warmIndexes, lambdaConcurrency: lambda },
    assumptions: a,
  };
}
