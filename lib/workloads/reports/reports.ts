/**
 * The second sample: a nightly report per tenant. Each tenant of the day's run gets
 *   - a DOCUMENT, `reports/<day>/<tenant>/<generation>.json`, its usage report (put before the
 *     unit's transaction, a new object per generation);
 *   - an UPSERTED report record (`report#<day>#<tenant>`, the fence alone guards it) pointing to
 *     that document;
 *   - one OUTBOX item to the tenant's OWN webhook (`webhook#<day>#<tenant>`, an http effect with
 *     a per-recipient destination, `/tenants/<tenant>/reports` below the webhooks endpoint).
 * Two effects per tenant, no email and no once-only record of its own: the shape a fork for "a
 * nightly job that writes a document and calls one endpoint per tenant" starts from.
 */
import { describeValue, InvalidInputError, upsert, type Effect } from '../../protocol/index.js';
import { maxUnitSize, outboxHttp, type DocumentDraft, type DocumentRef, type Processor, type TableNames, type UnitContext } from '../../workflow/index.js';

export interface ReportRunInput {
  /** The day the run reports on, UTC. */
  day: string;
  tenants: number;
  seed: number;
  unitSize: number;
  /** A shard's tenants: [from, to) of the day's `tenants`. Absent: all of them. */
  from?: number;
  to?: number;
}

/** A report record and a webhook call per tenant. */
export const EFFECTS_PER_TENANT = 2;
/** 49: twice the invoice run's cap, from the same rule (maxUnitSize). */
export const MAX_UNIT_SIZE = maxUnitSize(EFFECTS_PER_TENANT);
export const DEFAULT_UNIT_SIZE = 40;
export const MAX_TENANTS = 1_000_000;
export const REPORTS_PREFIX = 'reports/';
export const WEBHOOKS_TARGET = 'webhooks';

const DAY = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;
export const reportJobId = (day: string): string => `report-run#${day}`;
export const tenantId = (i: number): string => `tenant-${String(i).padStart(6, '0')}`;
/** Where a tenant's webhook lives below the webhooks endpoint: its own destination. */
export const webhookPath = (tenant: string): string => `/tenants/${tenant}/reports`;

/** A tenant's usage for the day, from the seed alone (0 to 99,999 requests). */
export function usageOf(seed: number, i: number): number {
  let h = (seed ^ Math.imul(i + 1, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) % 100_000;
}

const int = (r: Record<string, unknown>, name: string, min: number, max: number): number => {
  const v = r[name];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) throw new InvalidInputError(`input.${name}`, `must be an integer in [${min}, ${max}], got ${describeValue(v)}`);
  return v;
};

export function parseReportInput(raw: unknown): ReportRunInput {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidInputError('input', 'must be an object');
  const r = raw as Record<string, unknown>;
  if (typeof r.day !== 'string' || !DAY.test(r.day)) throw new InvalidInputError('input.day', `must be "YYYY-MM-DD", got ${describeValue(r.day)}`);
  const tenants = int(r, 'tenants', 0, MAX_TENANTS);
  const input: ReportRunInput = { day: r.day, tenants, seed: int(r, 'seed', 0, 2 ** 31 - 1), unitSize: int(r, 'unitSize', 1, MAX_UNIT_SIZE) };
  if (r.from === undefined && r.to === undefined) return input;
  const from = int(r, 'from', 0, tenants);
  const to = int(r, 'to', from, tenants);
  return { ...input, from, to };
}

export const tenantRange = (input: ReportRunInput): { from: number; to: number } => ({ from: input.from ?? 0, to: input.to ?? input.tenants });

function tenantsOf(input: ReportRunInput, unit: number): { id: string; usage: number }[] {
  const { from, to } = tenantRange(input);
  const first = from + unit * input.unitSize;
  const last = Math.min(to, first + input.unitSize);
  return Array.from({ length: Math.max(0, last - first) }, (_, k) => ({ id: tenantId(first + k), usage: usageOf(input.seed, first + k) }));
}

const DOCUMENT = /^reports\/(\d{4}-\d{2}-\d{2})\/(tenant-\d{6})\/(\d+)\.json$/;
export const reportDocumentName = (day: string, tenant: string, generation: number): string => `${REPORTS_PREFIX}${day}/${tenant}/${generation}.json`;

export const reportProcessor: Processor<ReportRunInput> = {
  name: 'report-run',
  parseInput: parseReportInput,
  totalUnits: (input) => Math.max(1, Math.ceil((tenantRange(input).to - tenantRange(input).from) / input.unitSize)),
  unitDocuments(input, ctx: UnitContext): DocumentDraft[] {
    return tenantsOf(input, ctx.unit).map((t) => {
      const body = { day: input.day, tenant: t.id, requests: t.usage, jobId: ctx.jobId, generation: ctx.generation, unit: ctx.unit };
      return { ref: t.id, name: reportDocumentName(input.day, t.id, ctx.generation), body: `${JSON.stringify(body, null, 1)}\n`, contentType: 'application/json' };
    });
  },
  unitEffects(input, ctx: UnitContext): Effect[] {
    const origin = { jobId: ctx.jobId, unit: ctx.unit };
    return tenantsOf(input, ctx.unit).flatMap((t) => {
      const doc = ctx.documents?.get(t.id);
      const pointer = doc === undefined ? {} : { documentKey: doc.key, documentEtag: doc.etag };
      const record = { pk: `report#${input.day}#${t.id}`, jobId: ctx.jobId, tenant: t.id, requests: t.usage, generation: ctx.generation, unit: ctx.unit, updatedAt: ctx.now, ...pointer };
      const call = { target: WEBHOOKS_TARGET, path: webhookPath(t.id), request: { tenant: t.id, day: input.day, requests: t.usage, ...(doc === undefined ? {} : { document: doc.key }) } };
      return [upsert(ctx.tables.records, record), outboxHttp(ctx.tables.outbox, `webhook#${input.day}#${t.id}`, origin, call)];
    });
  },
  documents: {
    prefix: REPORTS_PREFIX,
    refOf(name: string, tables: TableNames): DocumentRef | undefined {
      const m = DOCUMENT.exec(name);
      if (m === null) return undefined;
      const [, day, tenant, generation] = m as unknown as [string, string, string, string];
      return { jobId: reportJobId(day), generation: Number(generation), pointer: { table: tables.records, pk: `report#${day}#${tenant}` } };
    },
  },
};
