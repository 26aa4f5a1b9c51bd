/**
 * The sample workload: a monthly invoice run. Deterministic customers from a seed, K customers
 * per unit; each customer gets
 *   - a DOCUMENT, `invoices/<period>/<customer>/<generation>.json`, put by the worker before the
 *     unit's transaction (the protected file: a new object per generation, never replaced);
 *   - an UPSERTED invoice (`invoice#<period>#<customer>`, guarded by the fence alone: a
 *     correction run replaces it) that points to that document (`documentKey`, `documentEtag`);
 *   - a ONCE-ONLY charge (`charge#<period>#<customer>`, guarded by its operation key as well);
 *   - two OUTBOX items, once-only in the same transaction (the unprotected effects): the
 *     invoice email (`email#<period>#<customer>`) and the charge notification to the payment
 *     provider (`payment#<period>#<customer>`, an http effect with an Idempotency-Key);
 *   - after the payment, by its outcome (invoiceSteps): the receipt email once the provider took
 *     the charge, a "payment failed" email once it declined the card, neither while nobody knows.
 * Amounts and counts are reproducible from the seed, so a report can state the expected totals.
 */
import { describeValue, InvalidInputError, onceOnly, upsert, type Effect } from '../../protocol/index.js';
import { maxUnitSize, outboxEmail, outboxHttp, type DocumentDraft, type DocumentRef, type EmailPayload, type FollowUpStep, type OutboxItem, type Processor, type TableNames, type UnitContext } from '../../workflow/index.js';

export interface InvoiceRunInput {
  period: string;
  customers: number;
  seed: number;
  unitSize: number;
  currency: string;
  /** A shard's customers: [from, to) of the period's `customers` (lib/workloads/invoices/shards.ts). Absent: all of them. */
  from?: number;
  to?: number;
}

/** The job id of a period's run: one per period, which makes the starter idempotent. */
export const invoiceJobId = (period: string): string => `invoice-run#${period}`;

const PERIOD = /^\d{4}-(0[1-9]|1[0-2])$/;
/** What unitEffects writes per customer: the invoice (upsert), the charge, the email and the payment notification (once-only). */
export const EFFECTS_PER_CUSTOMER = 4;
/** 24: a unit's customers, their effects, the fence and the checkpoint fit one transaction. */
export const MAX_UNIT_SIZE = maxUnitSize(EFFECTS_PER_CUSTOMER);
/** The stack's unit size unless `unitSize` says otherwise, and the capacity planner's. */
export const DEFAULT_UNIT_SIZE = 20;
/** Customers in one invoice run: the starter's setting and payload, the stack's synth check, the job input. */
export const MAX_CUSTOMERS = 10_000_000;

export function parseInvoiceInput(raw: unknown): InvoiceRunInput {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidInputError('input', 'must be an object');
  const r = raw as Record<string, unknown>;
  if (typeof r.period !== 'string' || !PERIOD.test(r.period)) throw new InvalidInputError('input.period', 'must be "YYYY-MM"');
  const int = (name: string, min: number, max: number): number => {
    const v = r[name];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
      throw new InvalidInputError(`input.${name}`, `must be an integer in [${min}, ${max}], got ${describeValue(v)}`);
    }
    return v;
  };
  const currency = r.currency ?? 'EUR';
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) throw new InvalidInputError('input.currency', 'must be an ISO 4217 code');
  const customers = int('customers', 0, MAX_CUSTOMERS);
  return {
    period: r.period,
    customers,
    seed: int('seed', 0, 2 ** 31 - 1),
    unitSize: int('unitSize', 1, MAX_UNIT_SIZE),
    currency,
    ...shardRangeOf(r, customers),
  };
}

/** A shard's range, checked: 0 <= from <= to <= customers, both or neither. */
function shardRangeOf(r: Record<string, unknown>, customers: number): { from?: number; to?: number } {
  if (r.from === undefined && r.to === undefined) return {};
  const ok = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= customers;
  if (!ok(r.from) || !ok(r.to) || r.from > r.to) {
    throw new InvalidInputError('input.from', `a shard's range must be 0 <= from <= to <= customers (${customers}), got [${describeValue(r.from)}, ${describeValue(r.to)})`);
  }
  return { from: r.from, to: r.to };
}

/** The customers a job bills: its shard's range, or the whole period. */
export const customerRange = (input: InvoiceRunInput): { from: number; to: number } => ({ from: input.from ?? 0, to: input.to ?? input.customers });

/** mulberry32: a tiny, well-known deterministic PRNG; enough to make amounts reproducible. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const customerId = (i: number): string => `cust-${String(i).padStart(7, '0')}`;

/** The amount for customer i: 5.00 to 504.99, from the seed alone. */
export function amountCents(seed: number, i: number): number {
  return 500 + Math.floor(mulberry32((seed ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0)() * 50_000);
}

/**
 * The card customer i pays with, from the seed alone: Stripe's test tokens, one customer in every
 * ten (which one, the seed says) holding the one Stripe, and the local payment provider, always
 * declines: every run of ten customers or more meets a declined card.
 */
export function cardOf(seed: number, i: number): string {
  return (i + seed) % 10 === 7 ? 'tok_chargeDeclined' : 'tok_visa';
}

/** What a job (or a shard: its range) must bill, from its input alone. */
export function expectedTotals(input: InvoiceRunInput): { invoices: number; charges: number; totalCents: number } {
  const { from, to } = customerRange(input);
  let totalCents = 0;
  for (let i = from; i < to; i++) totalCents += amountCents(input.seed, i);
  return { invoices: to - from, charges: to - from, totalCents };
}

/**
 * The folder of the invoice documents in the bucket: the one setting every use of it reads (the
 * stack's bucket policy and S3 grants, the collector, the local run and its checker), so a fork
 * that changes it cannot leave a policy naming the old one (test/infra/iam-calls.test.ts).
 */
export const INVOICE_DOCUMENTS_PREFIX = 'invoices/';

/** The document of a customer's invoice for a period, as this generation renders it (the key holds the generation). */
export const invoiceDocumentName = (period: string, customer: string, generation: number, prefix = INVOICE_DOCUMENTS_PREFIX): string => `${prefix}${period}/${customer}/${generation}.json`;
const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const documentName = (prefix: string): RegExp => new RegExp(`^${escapeRegExp(prefix)}(\\d{4}-(?:0[1-9]|1[0-2]))/(cust-\\d{7})/(\\d+)\\.json$`);
/** The payment provider the charge notifications go to (the sender maps it to an endpoint). */
export const PAYMENTS_TARGET = 'payments';
/** Customers' addresses live in a reserved domain (RFC 2606): the sample never mails anyone real. */
export const customerAddress = (customer: string): string => `${customer}@customers.example`;

/** The unit's customers (within the job's or shard's range), with their amounts. */
function customersOf(input: InvoiceRunInput, unit: number): { id: string; amount: number; card: string }[] {
  const { from, to } = customerRange(input);
  const first = from + unit * input.unitSize;
  const last = Math.min(to, first + input.unitSize);
  return Array.from({ length: Math.max(0, last - first) }, (_, k) => ({ id: customerId(first + k), amount: amountCents(input.seed, first + k), card: cardOf(input.seed, first + k) }));
}

/** A customer's invoice document: everything from (input, generation, unit), never the clock (Processor.unitDocuments). */
function renderInvoice(input: InvoiceRunInput, ctx: UnitContext, c: { id: string; amount: number }, prefix: string): DocumentDraft {
  const doc = { period: input.period, customerId: c.id, amountCents: c.amount, currency: input.currency, jobId: ctx.jobId, generation: ctx.generation, unit: ctx.unit };
  return { ref: c.id, name: invoiceDocumentName(input.period, c.id, ctx.generation, prefix), body: `${JSON.stringify(doc, null, 1)}\n`, contentType: 'application/json' };
}

/** The invoice workload with its documents under `prefix` (a fork's own folder; the tests' second one). */
export function invoiceWorkload(prefix: string = INVOICE_DOCUMENTS_PREFIX): Processor<InvoiceRunInput> {
  // A folder: the grants name `<prefix>*`, so without the slash they would also match `invoices-old/...`.
  if (!/^[a-z0-9][a-z0-9._-]*\/$/.test(prefix)) throw new InvalidInputError('documents prefix', `must be one folder name ending in "/" (e.g. "invoices/"), got "${prefix}"`);
  const DOCUMENT_NAME = documentName(prefix);
  return {
    name: 'invoice-run',
    parseInput: parseInvoiceInput,
    // At least one unit: the last unit is what marks the job DONE, even for an empty run.
    totalUnits: (input) => Math.max(1, Math.ceil((customerRange(input).to - customerRange(input).from) / input.unitSize)),
    unitDocuments(input, ctx: UnitContext): DocumentDraft[] {
      return customersOf(input, ctx.unit).map((c) => renderInvoice(input, ctx, c, prefix));
    },
    unitEffects(input, ctx: UnitContext): Effect[] {
      const effects: Effect[] = [];
      const origin = { jobId: ctx.jobId, unit: ctx.unit };
      for (const c of customersOf(input, ctx.unit)) {
        const common = {
          jobId: ctx.jobId,
          customerId: c.id,
          amountCents: c.amount,
          currency: input.currency,
          generation: ctx.generation,
          unit: ctx.unit,
          updatedAt: ctx.now,
        };
        const doc = ctx.documents?.get(c.id);
        const pointer = doc === undefined ? {} : { documentKey: doc.key, documentEtag: doc.etag };
        const amount = `${(c.amount / 100).toFixed(2)} ${input.currency}`;
        effects.push(upsert(ctx.tables.records, { pk: `invoice#${input.period}#${c.id}`, ...common, ...pointer }));
        effects.push(onceOnly(ctx.tables.records, { pk: `charge#${input.period}#${c.id}`, ...common }));
        effects.push(
          outboxEmail(ctx.tables.outbox, `email#${input.period}#${c.id}`, origin, {
            to: customerAddress(c.id),
            subject: `Your invoice for ${input.period}: ${amount}`,
            body: `Invoice ${input.period} for ${c.id}: ${amount}.${doc === undefined ? '' : ` Document: ${doc.key}`}\n`,
          }),
        );
        effects.push(outboxHttp(ctx.tables.outbox, `payment#${input.period}#${c.id}`, origin, { target: PAYMENTS_TARGET, request: { customerId: c.id, amountCents: c.amount, currency: input.currency, card: c.card, reference: `invoice#${input.period}#${c.id}` } }));
      }
      return effects;
    },
    documents: {
      prefix,
      refOf(name: string, tables: TableNames): DocumentRef | undefined {
        const m = DOCUMENT_NAME.exec(name);
        if (m === null) return undefined;
        const [, period, customer, generation] = m as unknown as [string, string, string, string];
        return { jobId: invoiceJobId(period), generation: Number(generation), pointer: { table: tables.records, pk: `invoice#${period}#${customer}` } };
      },
    },
  };
}

export const invoiceProcessor: Processor<InvoiceRunInput> = invoiceWorkload();

/** What a payment item says, read back by the steps that follow it. */
function paymentOf(item: OutboxItem): { customer: string; period: string; amount: string; reference: string } {
  const r = (item.request ?? {}) as { customerId?: unknown; amountCents?: unknown; currency?: unknown; reference?: unknown };
  const reference = String(r.reference);
  return { customer: String(r.customerId), period: reference.split('#')[1] ?? '', amount: `${(Number(r.amountCents) / 100).toFixed(2)} ${String(r.currency)}`, reference };
}

/** The receipt: once the payment provider took the charge. */
function receipt(item: OutboxItem): EmailPayload {
  const p = paymentOf(item);
  return { to: customerAddress(p.customer), subject: `Payment received for ${p.period}: ${p.amount}`, body: `We received your payment of ${p.amount} for invoice ${p.reference} (charge ${String(item.providerMessageId)}). Thank you.\n` };
}

/** "Your payment failed": once the provider declined the card (a business outcome, not ours to retry with the same key). */
function paymentFailed(item: OutboxItem): EmailPayload {
  const p = paymentOf(item);
  return { to: customerAddress(p.customer), subject: `Your payment for ${p.period} failed: ${p.amount}`, body: `Your card was declined for ${p.amount} (invoice ${p.reference}). Please update your card.\n` };
}

/** The steps after a payment, by its outcome; nothing follows while nobody knows whether it was taken (UNKNOWN: a person's). */
export const invoiceSteps: readonly FollowUpStep[] = [
  { name: 'receipt', after: PAYMENTS_TARGET, on: 'accepted', creates: 'email', description: 'the receipt, once the payment provider took the charge', next: receipt },
  { name: 'payment-failed', after: PAYMENTS_TARGET, on: 'refusedForGood', creates: 'email', description: '"your payment failed", once the provider declined the card', next: paymentFailed },
];
