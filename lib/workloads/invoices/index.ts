/**
 * The invoice run as a workload descriptor (lib/workflow/workload.ts): the sample every generic
 * part reads through the registry (lib/workloads/index.ts). A monthly run bills N customers; each
 * gets an invoice document, an invoice record (upsert), a charge (once-only), an email and a
 * payment-provider notification (outbox). See ./invoices.ts for the processor itself.
 */
import { createHash } from 'node:crypto';
import { describeValue, InvalidInputError } from '../../protocol/index.js';
import { followUpId, type ExpectedEffect, type ExpectedRecord, type StartRequest, type Workload } from '../../workflow/index.js';
import {
  amountCents,
  cardOf,
  customerAddress,
  customerId,
  customerRange,
  DEFAULT_UNIT_SIZE,
  EFFECTS_PER_CUSTOMER,
  invoiceJobId,
  invoiceProcessor,
  invoiceSteps,
  MAX_CUSTOMERS,
  PAYMENTS_TARGET,
  type InvoiceRunInput,
} from './invoices.js';

/** The period a run started at `time` bills: the previous calendar month (UTC). */
export function previousPeriod(time: Date): string {
  const y = time.getUTCFullYear();
  const m = time.getUTCMonth(); // 0-based: the previous month, 1-based
  return m === 0 ? `${y - 1}-12` : `${y}-${String(m).padStart(2, '0')}`;
}

const seedOf = (period: string): number => createHash('sha256').update(period).digest().readUInt32BE(0) & 0x7fffffff;
const PERIOD = /^\d{4}-(0[1-9]|1[0-2])$/;

/** The starter's payload, checked field by field (the starter has refused unknown fields by name already). */
function payloadOf(p: Readonly<Record<string, unknown>>): { period?: string; customers?: number; seed?: number } {
  const int = (name: 'customers' | 'seed', max: number): number | undefined => {
    const v = p[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > max) throw new InvalidInputError(`payload.${name}`, `must be an integer in [0, ${max}], got ${describeValue(v)}`);
    return v;
  };
  if (p.period !== undefined && (typeof p.period !== 'string' || !PERIOD.test(p.period))) throw new InvalidInputError('payload.period', `period must be YYYY-MM, got ${describeValue(p.period)}`);
  const customers = int('customers', MAX_CUSTOMERS);
  const seed = int('seed', 2 ** 31 - 1);
  return { ...(typeof p.period === 'string' ? { period: p.period } : {}), ...(customers === undefined ? {} : { customers }), ...(seed === undefined ? {} : { seed }) };
}

function runOf(req: StartRequest): { runId: string; input: InvoiceRunInput } {
  const payload = payloadOf(req.payload);
  const period = payload.period ?? previousPeriod(req.time);
  const input = invoiceProcessor.parseInput({ period, customers: payload.customers ?? req.items, seed: payload.seed ?? seedOf(period), unitSize: req.unitSize, currency: 'EUR' });
  return { runId: invoiceJobId(period), input };
}

/** Every record a DONE invoice job must hold, recomputed from its input: an invoice (upsert) and a charge (once-only) per customer. */
function* expectedRecords(input: InvoiceRunInput): Iterable<ExpectedRecord> {
  const { from, to } = customerRange(input);
  for (let i = from; i < to; i++) {
    const fields = { customerId: customerId(i), amountCents: amountCents(input.seed, i), currency: input.currency };
    yield { pk: `invoice#${input.period}#${customerId(i)}`, once: false, fields };
    yield { pk: `charge#${input.period}#${customerId(i)}`, once: true, fields };
  }
}

/** Per customer: the invoice email to the customer's own address, saying the period and the amount; the payment of that amount, for that customer. */
function* expectedOutbox(input: InvoiceRunInput): Iterable<ExpectedEffect> {
  const { from, to } = customerRange(input);
  for (let i = from; i < to; i++) {
    const id = customerId(i);
    const cents = amountCents(input.seed, i);
    yield { id: `email#${input.period}#${id}`, kind: 'email', to: customerAddress(id), says: [input.period, `${(cents / 100).toFixed(2)} ${input.currency}`] };
    const payment = `payment#${input.period}#${id}`;
    const amount = `${(cents / 100).toFixed(2)} ${input.currency}`;
    yield { id: payment, kind: 'http', target: PAYMENTS_TARGET, request: { customerId: id, amountCents: cents, currency: input.currency, card: cardOf(input.seed, i), reference: `invoice#${input.period}#${id}` } };
    // After the payment, by what its provider did with it: the receipt, or the declined card's email.
    yield { id: followUpId(payment, 'receipt'), kind: 'email', to: customerAddress(id), says: [input.period, amount, 'payment of'], after: { parent: payment, step: 'receipt', on: 'accepted' } };
    yield { id: followUpId(payment, 'payment-failed'), kind: 'email', to: customerAddress(id), says: [input.period, amount, 'declined'], after: { parent: payment, step: 'payment-failed', on: 'refusedForGood' } };
  }
}

const RECORD_KEY = /^(invoice|charge)#(\d{4}-\d{2})#/;

export const invoices: Workload<InvoiceRunInput> = {
  name: 'invoices',
  description: 'monthly invoice run: per customer an invoice document and record, a once-only charge, an email and a payment-provider call',
  processor: invoiceProcessor,
  effectsPerItem: EFFECTS_PER_CUSTOMER,
  defaultUnitSize: DEFAULT_UNIT_SIZE,
  // The fence key every deployed invoice stack already holds: kept, never renamed (Workload.fenceKeyPrefix).
  fenceKeyPrefix: 'invoices#',
  start: {
    schedule: { minute: '0', hour: '2', day: '1', month: '*', description: "02:00 UTC on the 1st: the previous month's run" },
    payloadFields: ['period', 'customers', 'seed'],
    runOf,
    itemsOf: (input) => input.customers,
    shardOf: (input, range) => ({ ...input, ...range }),
    rangeOf: customerRange,
    maxItems: MAX_CUSTOMERS,
  },
  outbox: { email: true, http: [{ target: PAYMENTS_TARGET, description: 'the payment provider (charge notifications, Idempotency-Key)', keyRetentionMs: 86_400_000 }] },
  steps: invoiceSteps,
  checks: {
    groupOfInput: (input) => input.period,
    groupOfRecord: (pk) => RECORD_KEY.exec(pk)?.[2],
    isOnce: (pk) => pk.startsWith('charge#'),
    records: expectedRecords,
    outbox: expectedOutbox,
    documents: { pointsTo: (pk) => pk.startsWith('invoice#'), sameFields: ['amountCents'] },
    figures(records) {
      const charges = records.filter((r) => String(r.pk).startsWith('charge#'));
      return { invoices: records.filter((r) => String(r.pk).startsWith('invoice#')).length, charges: charges.length, totalCents: charges.reduce((s, c) => s + Number(c.amountCents), 0) };
    },
  },
  // The Records table's construct id in every deployed invoice stack (its logical id): kept, so an upgrade replaces no table.
  stackIds: { records: 'Invoices' },
  local: { items: 400, unitSize: 10, payloads: (customers, seed) => ['2026-09', '2026-10', '2026-11'].map((period, i) => ({ period, customers, seed: seed + i })) },
};
