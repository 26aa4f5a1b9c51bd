/**
 * A throwaway workload of a shape neither sample has: email only (no http target), no documents,
 * one once-only record and one email per item. The registry-wide tests run on it beside the
 * registered ones (test/support/registry.ts), so a test that assumes documents, http or a list of
 * names fails here first, not in a fork.
 */
import { describeValue, InvalidInputError, onceOnly, type Effect } from '../../../lib/protocol/index.js';
import { maxUnitSize, outboxEmail, type ExpectedEffect, type ExpectedRecord, type Processor, type UnitContext, type Workload } from '../../../lib/workflow/index.js';

export interface NoticeInput {
  week: string;
  members: number;
  unitSize: number;
  from?: number;
  to?: number;
}

const WEEK = /^\d{4}-W(0[1-9]|[1-4]\d|5[0-3])$/;
const MAX_MEMBERS = 100_000;
const MAX_UNIT = maxUnitSize(2);
const memberId = (i: number): string => `member-${String(i).padStart(5, '0')}`;
const address = (member: string): string => `${member}@members.example`;
const range = (input: NoticeInput) => ({ from: input.from ?? 0, to: input.to ?? input.members });

const int = (r: Record<string, unknown>, name: string, min: number, max: number): number => {
  const v = r[name];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) throw new InvalidInputError(`input.${name}`, `must be an integer in [${min}, ${max}], got ${describeValue(v)}`);
  return v;
};

function parseInput(raw: unknown): NoticeInput {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidInputError('input', 'must be an object');
  const r = raw as Record<string, unknown>;
  if (typeof r.week !== 'string' || !WEEK.test(r.week)) throw new InvalidInputError('input.week', `must be "YYYY-Www", got ${describeValue(r.week)}`);
  const members = int(r, 'members', 0, MAX_MEMBERS);
  const input = { week: r.week, members, unitSize: int(r, 'unitSize', 1, MAX_UNIT) };
  if (r.from === undefined && r.to === undefined) return input;
  const from = int(r, 'from', 0, members);
  return { ...input, from, to: int(r, 'to', from, members) };
}

function membersOf(input: NoticeInput, unit: number): string[] {
  const { from, to } = range(input);
  const first = from + unit * input.unitSize;
  return Array.from({ length: Math.max(0, Math.min(to, first + input.unitSize) - first) }, (_, k) => memberId(first + k));
}

const processor: Processor<NoticeInput> = {
  name: 'notice-run',
  parseInput,
  totalUnits: (input) => Math.max(1, Math.ceil((range(input).to - range(input).from) / input.unitSize)),
  unitEffects(input, ctx: UnitContext): Effect[] {
    const origin = { jobId: ctx.jobId, unit: ctx.unit };
    return membersOf(input, ctx.unit).flatMap((m) => [
      onceOnly(ctx.tables.records, { pk: `notice#${input.week}#${m}`, jobId: ctx.jobId, member: m, generation: ctx.generation, unit: ctx.unit }),
      outboxEmail(ctx.tables.outbox, `notice-email#${input.week}#${m}`, origin, { to: address(m), subject: `Your notice for ${input.week}`, body: `Notice ${input.week} for ${m}.\n` }),
    ]);
  },
};

function* records(input: NoticeInput): Iterable<ExpectedRecord> {
  const { from, to } = range(input);
  for (let i = from; i < to; i++) yield { pk: `notice#${input.week}#${memberId(i)}`, once: true, fields: { member: memberId(i) } };
}

function* outbox(input: NoticeInput): Iterable<ExpectedEffect> {
  const { from, to } = range(input);
  for (let i = from; i < to; i++) yield { id: `notice-email#${input.week}#${memberId(i)}`, kind: 'email', to: address(memberId(i)), says: [input.week] };
}

export const notices: Workload<NoticeInput> = {
  name: 'notices',
  description: 'weekly member notices: per member a once-only notice record and one email (a test fixture: no documents, no http)',
  processor,
  effectsPerItem: 2,
  defaultUnitSize: 30,
  start: {
    schedule: { minute: '0', hour: '6', weekDay: 'MON', description: '06:00 UTC on Mondays' },
    payloadFields: ['week', 'members'],
    runOf: (req) => {
      const week = typeof req.payload.week === 'string' ? req.payload.week : '2026-W01';
      return { runId: `notice-run#${week}`, input: parseInput({ week, members: req.payload.members ?? req.items, unitSize: req.unitSize }) };
    },
    itemsOf: (input) => input.members,
    shardOf: (input, r) => ({ ...input, ...r }),
    rangeOf: range,
    maxItems: MAX_MEMBERS,
  },
  outbox: { email: true, http: [] },
  checks: {
    groupOfInput: (input) => input.week,
    groupOfRecord: (pk) => /^notice#(\d{4}-W\d{2})#/.exec(pk)?.[1],
    isOnce: () => true,
    records,
    outbox,
  },
  local: { items: 60, unitSize: 10, payloads: (members) => ['2026-W40', '2026-W41', '2026-W42'].map((week) => ({ week, members })) },
};
