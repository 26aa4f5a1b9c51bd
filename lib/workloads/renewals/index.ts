/**
 * Monthly subscription renewals as a workload descriptor (lib/workflow/workload.ts): the sample of
 * a chained job. The unit writes the once-only renewal and the charge to the subscription's
 * merchant; what follows the charge (the receipt, or the declined card's email) is the
 * descriptor's `steps`, created exactly once by the write that settles the charge, and what
 * follows a receipt that bounced for good (a word to the merchant) by the write that records the bounce. No documents,
 * so its stack has no collector; email only as a step, so its units create none.
 */
import { describeValue, InvalidInputError } from '../../protocol/index.js';
import { followUpId, type ExpectedEffect, type ExpectedRecord, type StartRequest, type Workload } from '../../workflow/index.js';
import {
  cardOf,
  CHARGES_TARGET,
  DEFAULT_UNIT_SIZE,
  EFFECTS_PER_SUBSCRIPTION,
  formatAmount,
  MAX_SUBSCRIPTIONS,
  merchantAddress,
  merchantPath,
  parseRenewalInput,
  renewalJobId,
  renewalProcessor,
  renewalSteps,
  subscriberAddress,
  subscriptionOf,
  subscriptionRange,
  type RenewalRunInput,
} from './renewals.js';

/** The month a run started at `time` renews: its own (UTC). */
export const monthOf = (time: Date): string => time.toISOString().slice(0, 7);

/** The month's seed when the payload names none: from the month alone, so a rerun of the slot is the same run. */
const seedOf = (month: string): number => Number(month.replace('-', '')) % 2 ** 31;

function runOf(req: StartRequest): { runId: string; input: RenewalRunInput } {
  const p = req.payload;
  if (p.month !== undefined && (typeof p.month !== 'string' || !/^\d{4}-(0[1-9]|1[0-2])$/.test(p.month))) throw new InvalidInputError('payload.month', `must be "YYYY-MM", got ${describeValue(p.month)}`);
  const month = typeof p.month === 'string' ? p.month : monthOf(req.time);
  const input = parseRenewalInput({ month, subscriptions: p.subscriptions ?? req.items, seed: p.seed ?? seedOf(month), unitSize: req.unitSize, currency: 'EUR' });
  return { runId: renewalJobId(month), input };
}

/** Per subscription: one renewal record, once-only, saying its merchant, plan and price. */
function* records(input: RenewalRunInput): Iterable<ExpectedRecord> {
  const { from, to } = subscriptionRange(input);
  for (let i = from; i < to; i++) {
    const s = subscriptionOf(i);
    yield { pk: `renewal#${input.month}#${s.id}`, once: true, fields: { subscription: s.id, merchant: s.merchant, plan: s.plan, amountCents: s.amountCents, currency: input.currency } };
  }
}

/** Per subscription: the charge to its merchant, then the receipt if the provider took it, or the declined card's email if it declined it; the merchant told if the receipt bounced for good. */
function* outbox(input: RenewalRunInput): Iterable<ExpectedEffect> {
  const { from, to } = subscriptionRange(input);
  for (let i = from; i < to; i++) {
    const s = subscriptionOf(i);
    const charge = `charge#${input.month}#${s.id}`;
    const amount = formatAmount(s.amountCents, input.currency);
    const to = subscriberAddress(s.id);
    yield { id: charge, kind: 'http', target: CHARGES_TARGET, path: merchantPath(s.merchant), request: { subscription: s.id, merchant: s.merchant, amountCents: s.amountCents, currency: input.currency, card: cardOf(input.seed, i) } };
    yield { id: followUpId(charge, 'receipt'), kind: 'email', to, says: [input.month, amount, s.merchant, 'renewed'], after: { parent: charge, step: 'receipt', on: 'accepted' } };
    const receipt = followUpId(charge, 'receipt');
    yield { id: followUpId(receipt, 'receipt-bounced'), kind: 'email', to: merchantAddress(s.merchant), says: [s.id, input.month, 'bounced'], after: { parent: receipt, step: 'receipt-bounced', on: 'bounced' } };
    yield { id: followUpId(charge, 'card-declined'), kind: 'email', to, says: [input.month, amount, s.merchant, 'declined'], after: { parent: charge, step: 'card-declined', on: 'refusedForGood' } };
  }
}

export const renewals: Workload<RenewalRunInput> = {
  name: 'renewals',
  description: "monthly subscription renewals: per subscription a once-only renewal and a charge to its merchant; then the receipt, or the declined card's email",
  processor: renewalProcessor,
  effectsPerItem: EFFECTS_PER_SUBSCRIPTION,
  defaultUnitSize: DEFAULT_UNIT_SIZE,
  start: {
    schedule: { minute: '0', hour: '3', day: '1', month: '*', description: "03:00 UTC on the 1st: the month's renewals" },
    payloadFields: ['month', 'subscriptions', 'seed'],
    runOf,
    itemsOf: (input) => input.subscriptions,
    shardOf: (input, range) => ({ ...input, ...range }),
    rangeOf: subscriptionRange,
    maxItems: MAX_SUBSCRIPTIONS,
  },
  outbox: { email: true, http: [{ target: CHARGES_TARGET, destination: 'per-item', description: "each merchant's charges (its path below the endpoint, Idempotency-Key)", keyRetentionMs: 86_400_000 }] },
  steps: renewalSteps,
  checks: {
    groupOfInput: (input) => input.month,
    groupOfRecord: (pk) => /^renewal#(\d{4}-\d{2})#/.exec(pk)?.[1],
    isOnce: () => true,
    records,
    outbox,
    figures: (rs) => ({ renewals: rs.length, totalCents: rs.reduce((s, r) => s + Number(r.amountCents), 0) }),
  },
  local: { items: 240, unitSize: 20, payloads: (subscriptions, seed) => ['2026-10', '2026-11', '2026-12'].map((month, i) => ({ month, subscriptions, seed: seed + i })) },
};
