/**
 * The nightly tenant reports as a workload descriptor (lib/workflow/workload.ts). Why it is the
 * second sample: it differs from the invoice run where a fork most often does. It runs daily
 * (a day, not a month, names the run), sends no email (so its stack has no SES identity, no
 * configuration set and no recorder), calls each tenant's own webhook (a per-recipient
 * destination, not one fixed URL), writes two effects per item (its units take up to 49 items,
 * the invoice run's 24), and has no once-only record of its own: the outbox item is its only
 * once-only effect.
 */
import type { ExpectedEffect, ExpectedRecord, StartRequest, Workload } from '../../workflow/index.js';
import { describeValue, InvalidInputError } from '../../protocol/index.js';
import { DEFAULT_UNIT_SIZE, EFFECTS_PER_TENANT, MAX_TENANTS, parseReportInput, reportJobId, reportProcessor, tenantId, tenantRange, usageOf, WEBHOOKS_TARGET, webhookPath, type ReportRunInput } from './reports.js';

/** The day a run started at `time` reports on: the previous UTC day. */
export const previousDay = (time: Date): string => new Date(Date.UTC(time.getUTCFullYear(), time.getUTCMonth(), time.getUTCDate() - 1)).toISOString().slice(0, 10);

function runOf(req: StartRequest): { runId: string; input: ReportRunInput } {
  const p = req.payload;
  if (p.day !== undefined && (typeof p.day !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(p.day))) throw new InvalidInputError('payload.day', `must be "YYYY-MM-DD", got ${describeValue(p.day)}`);
  if (p.tenants !== undefined && (typeof p.tenants !== 'number' || !Number.isSafeInteger(p.tenants) || p.tenants < 0 || p.tenants > MAX_TENANTS)) {
    throw new InvalidInputError('payload.tenants', `must be an integer in [0, ${MAX_TENANTS}], got ${describeValue(p.tenants)}`);
  }
  const day = typeof p.day === 'string' ? p.day : previousDay(req.time);
  const input = parseReportInput({ day, tenants: p.tenants ?? req.items, seed: p.seed ?? Number(day.replace(/-/g, '')) % 2 ** 31, unitSize: req.unitSize });
  return { runId: reportJobId(day), input };
}

function* records(input: ReportRunInput): Iterable<ExpectedRecord> {
  const { from, to } = tenantRange(input);
  for (let i = from; i < to; i++) yield { pk: `report#${input.day}#${tenantId(i)}`, once: false, fields: { requests: usageOf(input.seed, i), tenant: tenantId(i) } };
}

/** Per tenant: one call to the tenant's own webhook, with the day and its usage. */
function* outbox(input: ReportRunInput): Iterable<ExpectedEffect> {
  const { from, to } = tenantRange(input);
  for (let i = from; i < to; i++) {
    const tenant = tenantId(i);
    yield { id: `webhook#${input.day}#${tenant}`, kind: 'http', target: WEBHOOKS_TARGET, path: webhookPath(tenant), request: { tenant, day: input.day, requests: usageOf(input.seed, i) } };
  }
}

export const reports: Workload<ReportRunInput> = {
  name: 'reports',
  description: "nightly tenant reports: per tenant a report document and record, and one call to the tenant's own webhook",
  processor: reportProcessor,
  effectsPerItem: EFFECTS_PER_TENANT,
  defaultUnitSize: DEFAULT_UNIT_SIZE,
  start: {
    schedule: { minute: '30', hour: '1', day: '*', month: '*', description: "01:30 UTC daily: the previous day's reports" },
    payloadFields: ['day', 'tenants', 'seed'],
    runOf,
    itemsOf: (input) => input.tenants,
    shardOf: (input, range) => ({ ...input, ...range }),
    rangeOf: tenantRange,
    maxItems: MAX_TENANTS,
  },
  outbox: { email: false, http: [{ target: WEBHOOKS_TARGET, destination: 'per-item', description: "each tenant's webhook (its path below the endpoint, Idempotency-Key)", keyRetentionMs: 86_400_000 }] },
  checks: {
    groupOfInput: (input) => input.day,
    groupOfRecord: (pk) => /^report#(\d{4}-\d{2}-\d{2})#/.exec(pk)?.[1],
    isOnce: () => false,
    records,
    outbox,
    documents: { pointsTo: (pk) => pk.startsWith('report#'), sameFields: ['requests', 'tenant'] },
    figures: (rs) => ({ reports: rs.length, requests: rs.reduce((s, r) => s + Number(r.requests), 0) }),
  },
  local: { items: 300, unitSize: 40, payloads: (tenants, seed) => ['2026-10-01', '2026-10-02', '2026-10-03'].map((day, i) => ({ day, tenants, seed: seed + i })) },
};
