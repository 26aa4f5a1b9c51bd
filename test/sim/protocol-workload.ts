/**
 * The workload of the simulator's `protocol` shape: per item one once-only record and nothing
 * else (no outbox, no documents). What runs is the protocol alone: leases, fences, claims,
 * checkpoints and the sweeper, under every protocol fault the schedule draws, judged by the
 * record invariants (FENCE, ONCE, PROGRESS, TOKENS, RUNS) and LEASE. Not registered: it is the
 * simulator's, not a sample a fork starts from.
 */
import { describeValue, InvalidInputError, onceOnly, type Effect } from '../../lib/protocol/index.js';
import { maxUnitSize, type ExpectedRecord, type Processor, type UnitContext, type Workload } from '../../lib/workflow/index.js';

export interface LedgerInput {
  period: string;
  entries: number;
  unitSize: number;
  from?: number;
  to?: number;
}

const PERIOD = /^\d{4}-(0[1-9]|1[0-2])$/;
const MAX_ENTRIES = 100_000;
const MAX_UNIT = maxUnitSize(1);
const entryId = (i: number): string => `entry-${String(i).padStart(5, '0')}`;
const range = (input: LedgerInput) => ({ from: input.from ?? 0, to: input.to ?? input.entries });

const int = (r: Record<string, unknown>, name: string, min: number, max: number): number => {
  const v = r[name];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) throw new InvalidInputError(`input.${name}`, `must be an integer in [${min}, ${max}], got ${describeValue(v)}`);
  return v;
};

function parseInput(raw: unknown): LedgerInput {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidInputError('input', 'must be an object');
  const r = raw as Record<string, unknown>;
  if (typeof r.period !== 'string' || !PERIOD.test(r.period)) throw new InvalidInputError('input.period', `must be "YYYY-MM", got ${describeValue(r.period)}`);
  const entries = int(r, 'entries', 0, MAX_ENTRIES);
  const input = { period: r.period, entries, unitSize: int(r, 'unitSize', 1, MAX_UNIT) };
  if (r.from === undefined && r.to === undefined) return input;
  const from = int(r, 'from', 0, entries);
  return { ...input, from, to: int(r, 'to', from, entries) };
}

const processor: Processor<LedgerInput> = {
  name: 'ledger-run',
  parseInput,
  totalUnits: (input) => Math.max(1, Math.ceil((range(input).to - range(input).from) / input.unitSize)),
  unitEffects(input, ctx: UnitContext): Effect[] {
    const { from, to } = range(input);
    const first = from + ctx.unit * input.unitSize;
    const ids = Array.from({ length: Math.max(0, Math.min(to, first + input.unitSize) - first) }, (_, k) => entryId(first + k));
    return ids.map((e) => onceOnly(ctx.tables.records, { pk: `ledger#${input.period}#${e}`, jobId: ctx.jobId, entry: e, generation: ctx.generation, unit: ctx.unit }));
  },
};

function* records(input: LedgerInput): Iterable<ExpectedRecord> {
  const { from, to } = range(input);
  for (let i = from; i < to; i++) yield { pk: `ledger#${input.period}#${entryId(i)}`, once: true, fields: { entry: entryId(i) } };
}

export const ledger: Workload<LedgerInput> = {
  name: 'ledger',
  description: 'per entry one once-only record, no outbox and no documents: the protocol alone (the simulator\'s protocol shape)',
  processor,
  effectsPerItem: 1,
  defaultUnitSize: 30,
  start: {
    schedule: { minute: '0', hour: '3', day: '1', description: '03:00 UTC on the first of the month' },
    payloadFields: ['period', 'entries'],
    runOf: (req) => {
      const period = typeof req.payload.period === 'string' ? req.payload.period : '2025-01';
      return { runId: `ledger-run#${period}`, input: parseInput({ period, entries: req.payload.entries ?? req.items, unitSize: req.unitSize }) };
    },
    itemsOf: (input) => input.entries,
    shardOf: (input, r) => ({ ...input, ...r }),
    rangeOf: range,
    maxItems: MAX_ENTRIES,
  },
  outbox: { email: false, http: [] },
  checks: {
    groupOfInput: (input) => input.period,
    groupOfRecord: (pk) => /^ledger#(\d{4}-\d{2})#/.exec(pk)?.[1],
    isOnce: () => true,
    records,
    outbox: () => [],
  },
  local: { items: 60, unitSize: 10, payloads: (entries) => ['2025-01', '2025-02', '2025-03'].map((period) => ({ period, entries })) },
};
