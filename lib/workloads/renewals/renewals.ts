/**
 * The third sample: monthly subscription renewals, a chained job. Each subscription of the
 * month's run gets
 *   - a ONCE-ONLY renewal record (`renewal#<month>#<subscription>`): the month is renewed once,
 *     whatever a retry or a zombie does;
 *   - one OUTBOX item, the charge (`charge#<month>#<subscription>`), an http effect to the
 *     subscription's MERCHANT: a per-item destination, `/merchants/<merchant>/charges` below the
 *     charges endpoint, with an Idempotency-Key;
 *   - after the charge, by what the provider did with it (renewalSteps): the receipt once it took
 *     the charge, "your card was declined" once it declined the card, neither while nobody knows;
 *     and after a receipt that bounced for good, a word to the merchant's billing desk.
 *     The subscriber's address rides on the charge as its `context`: the steps read it, the
 *     provider never sees it.
 * No documents. Plans, merchants and amounts follow the subscription; which cards decline follows
 * the seed, so every month a different tenth of subscribers meets a declined card.
 */
import { describeValue, InvalidInputError, onceOnly, type Effect } from '../../protocol/index.js';
import { maxUnitSize, outboxHttp, type EmailPayload, type FollowUpStep, type OutboxItem, type Processor, type UnitContext } from '../../workflow/index.js';

export interface RenewalRunInput {
  /** The month renewed, `YYYY-MM`. */
  month: string;
  subscriptions: number;
  seed: number;
  unitSize: number;
  currency: string;
  /** A shard's subscriptions: [from, to) of the month's. Absent: all of them. */
  from?: number;
  to?: number;
}

/** The renewal record and the charge. */
export const EFFECTS_PER_SUBSCRIPTION = 2;
/** 49: maxUnitSize(2). */
export const MAX_UNIT_SIZE = maxUnitSize(EFFECTS_PER_SUBSCRIPTION);
export const DEFAULT_UNIT_SIZE = 40;
export const MAX_SUBSCRIPTIONS = 1_000_000;
/** The charges' provider: each merchant's own path below its endpoint (CHARGES_URL). */
export const CHARGES_TARGET = 'charges';
/** Stripe test mode's token that is always declined (the local provider declines it the same way). */
export const DECLINED_CARD = 'tok_chargeDeclined';

const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;
const PLANS = [
  { plan: 'basic', cents: 499 },
  { plan: 'standard', cents: 999 },
  { plan: 'plus', cents: 1_499 },
  { plan: 'business', cents: 4_900 },
] as const;
const MERCHANTS = 12;

export const renewalJobId = (month: string): string => `renewal-run#${month}`;
export const subscriptionId = (i: number): string => `sub-${String(i).padStart(7, '0')}`;
/** Subscribers live in a reserved domain (RFC 2606): the sample never mails anyone real. */
export const subscriberAddress = (subscription: string): string => `${subscription}@subscribers.example`;
/** A merchant's billing desk, told of a subscriber's receipt that bounced for good (RFC 2606's reserved domain too). */
export const merchantAddress = (merchant: string): string => `billing@${merchant}.merchants.example`;
/** Where a merchant's charges go below the charges endpoint. */
export const merchantPath = (merchant: string): string => `/merchants/${merchant}/charges`;

/** A stable hash of the subscription's index: its merchant and plan never change from month to month. */
function mix(i: number): number {
  let h = Math.imul(i + 1, 0x9e3779b1) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  return (h ^ (h >>> 13)) >>> 0;
}

/** What subscription i is: its merchant, its plan and that plan's price. */
export function subscriptionOf(i: number): { id: string; merchant: string; plan: string; amountCents: number } {
  const h = mix(i);
  const p = PLANS[h % PLANS.length]!;
  return { id: subscriptionId(i), merchant: `merchant-${String((h >>> 8) % MERCHANTS).padStart(2, '0')}`, plan: p.plan, amountCents: p.cents };
}

/** The card subscription i pays with this month: one in ten declines, which one the seed says. */
export const cardOf = (seed: number, i: number): string => ((i + seed) % 10 === 3 ? DECLINED_CARD : 'tok_visa');

const int = (r: Record<string, unknown>, name: string, min: number, max: number): number => {
  const v = r[name];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) throw new InvalidInputError(`input.${name}`, `must be an integer in [${min}, ${max}], got ${describeValue(v)}`);
  return v;
};

export function parseRenewalInput(raw: unknown): RenewalRunInput {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidInputError('input', 'must be an object');
  const r = raw as Record<string, unknown>;
  if (typeof r.month !== 'string' || !MONTH.test(r.month)) throw new InvalidInputError('input.month', `must be "YYYY-MM", got ${describeValue(r.month)}`);
  const currency = r.currency ?? 'EUR';
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) throw new InvalidInputError('input.currency', `must be an ISO 4217 code, got ${describeValue(currency)}`);
  const subscriptions = int(r, 'subscriptions', 0, MAX_SUBSCRIPTIONS);
  const input: RenewalRunInput = { month: r.month, subscriptions, seed: int(r, 'seed', 0, 2 ** 31 - 1), unitSize: int(r, 'unitSize', 1, MAX_UNIT_SIZE), currency };
  if (r.from === undefined && r.to === undefined) return input;
  const from = int(r, 'from', 0, subscriptions);
  return { ...input, from, to: int(r, 'to', from, subscriptions) };
}

export const subscriptionRange = (input: RenewalRunInput): { from: number; to: number } => ({ from: input.from ?? 0, to: input.to ?? input.subscriptions });

export const formatAmount = (cents: number, currency: string): string => `${(cents / 100).toFixed(2)} ${currency}`;

function unitIndexes(input: RenewalRunInput, unit: number): number[] {
  const { from, to } = subscriptionRange(input);
  const first = from + unit * input.unitSize;
  return Array.from({ length: Math.max(0, Math.min(to, first + input.unitSize) - first) }, (_, k) => first + k);
}

export const renewalProcessor: Processor<RenewalRunInput> = {
  name: 'renewal-run',
  parseInput: parseRenewalInput,
  // At least one unit: the last unit is what marks the job DONE, even for an empty run.
  totalUnits: (input) => Math.max(1, Math.ceil((subscriptionRange(input).to - subscriptionRange(input).from) / input.unitSize)),
  unitEffects(input, ctx: UnitContext): Effect[] {
    const origin = { jobId: ctx.jobId, unit: ctx.unit };
    return unitIndexes(input, ctx.unit).flatMap((i) => {
      const s = subscriptionOf(i);
      const fields = { subscription: s.id, merchant: s.merchant, plan: s.plan, amountCents: s.amountCents, currency: input.currency };
      const charge = {
        target: CHARGES_TARGET,
        path: merchantPath(s.merchant),
        request: { ...fields, card: cardOf(input.seed, i), reference: `renewal#${input.month}#${s.id}` },
        context: { subscriber: subscriberAddress(s.id), month: input.month },
      };
      return [onceOnly(ctx.tables.records, { pk: `renewal#${input.month}#${s.id}`, jobId: ctx.jobId, ...fields, generation: ctx.generation, unit: ctx.unit, renewedAt: ctx.now }), outboxHttp(ctx.tables.outbox, `charge#${input.month}#${s.id}`, origin, charge)];
    });
  },
};

/** What a settled charge says, read back by the steps that follow it. */
function chargeOf(item: OutboxItem): { to: string; month: string; subscription: string; merchant: string; plan: string; amount: string } {
  const r = (item.request ?? {}) as Record<string, unknown>;
  const c = (item.context ?? {}) as Record<string, unknown>;
  return { to: String(c.subscriber), month: String(c.month), subscription: String(r.subscription), merchant: String(r.merchant), plan: String(r.plan), amount: formatAmount(Number(r.amountCents), String(r.currency)) };
}

/** The receipt carries, as its context, whom to tell if it bounces: the merchant, for this subscription and month. */
function receipt(item: OutboxItem): EmailPayload {
  const c = chargeOf(item);
  return {
    to: c.to,
    subject: `Your ${c.plan} plan is renewed for ${c.month}: ${c.amount}`,
    body: `${c.merchant} charged ${c.amount} for your ${c.plan} plan, ${c.month} (charge ${String(item.providerMessageId)}). Thank you.\n`,
    context: { merchant: c.merchant, subscription: c.subscription, month: c.month },
  };
}

function receiptBounced(item: OutboxItem): EmailPayload {
  const c = (item.context ?? {}) as Record<string, unknown>;
  const [merchant, subscription, month] = [String(c.merchant), String(c.subscription), String(c.month)];
  return { to: merchantAddress(merchant), subject: `A renewal receipt bounced: ${subscription}, ${month}`, body: `The receipt for ${subscription}'s renewal (${month}) bounced for good: ask the subscriber for an address that takes mail.\n` };
}

function cardDeclined(item: OutboxItem): EmailPayload {
  const c = chargeOf(item);
  return { to: c.to, subject: `Your ${c.plan} plan was not renewed for ${c.month}`, body: `Your card was declined for ${c.amount} (${c.merchant}, ${c.plan} plan, ${c.month}). Please update your card.\n` };
}

/** After a charge, by its outcome: the receipt, or the declined card's email; nothing while nobody knows whether it was taken. */
export const renewalSteps: readonly FollowUpStep[] = [
  { name: 'receipt', after: CHARGES_TARGET, on: 'accepted', creates: 'email', description: 'the receipt, once the merchant charged the card', next: receipt },
  { name: 'card-declined', after: CHARGES_TARGET, on: 'refusedForGood', creates: 'email', description: '"your card was declined", once the provider declined it', next: cardDeclined },
  { name: 'receipt-bounced', after: 'receipt', on: 'bounced', creates: 'email', description: "the merchant told, once a subscriber's receipt bounced for good", next: receiptBounced },
];
