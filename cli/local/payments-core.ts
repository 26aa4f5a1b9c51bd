/**
 * The payment provider stand-in's behaviour, with no transport: one POST in (method, path, a
 * header lookup, the raw body), one answer out (status, headers, JSON body) or "lost" (performed,
 * the connection to be cut before the answer), and the record and fault plan it keeps. The
 * node:http server (payments-provider.ts) and the simulator's fetch (test/sim/effects/) are thin
 * adapters over it; payments-provider.ts's module comment says what the contract is and why.
 *
 * `handle` runs without an await: a key's check and its record are one step.
 */
import { createHash, randomUUID } from 'node:crypto';
import { Countdown, counters, Window, type CutBody } from './fault-switch.js';

export interface KeyRecord {
  readonly key: string;
  readonly outboxId: string | undefined;
  readonly outboxTable: string | undefined;
  /** The path the key was first POSTed to: a per-recipient destination's own. */
  readonly path?: string;
  /** The body the key was first POSTed with (what the provider acted on): the checker compares it with the input. */
  readonly body?: string;
  bodyHash: string;
  /** The charge the key now replays (the last one performed). */
  chargeId: string;
  /** Every charge performed under this key: more than one only when a request came after the key was forgotten. */
  charges: string[];
  /** When each request with this key came (ms, this server's clock); `at[0]` is the key's first sight. */
  at: number[];
  /** When the remembered entry was stored: it is forgotten keyRetentionMs after. */
  storedAt: number;
  /** Requests received with this key (the first performed, the rest replayed or refused). */
  requests: number;
  refused: number;
  /** The status of an error saved as the key's answer (a 500 after the charge, Stripe-style): replayed instead of the charge. */
  savedError?: number;
  /** The charge was declined (Stripe's `card_declined`): nothing charged, the 402 replayed for the key. */
  declined?: string;
}

/** Stripe test mode's card token that is always declined: this stand-in declines it the same way. */
export const DECLINED_CARD = 'tok_chargeDeclined';

/** The kinds of answer the fault plan gives, each counted in `fired`. */
export const PAYMENT_FAULTS = ['throttled', '5xx-after', '5xx-before', '2xx-cut', 'paused', 'replayed-5xx', 'redirect'] as const;
export type PaymentFault = (typeof PAYMENT_FAULTS)[number];

export interface PaymentsOptions {
  /** Keys are forgotten this long after they were stored. Default: kept for good. */
  keyRetentionMs?: number;
  /** This provider's clock (tests drive it). Default Date.now. */
  now?: () => number;
  /** Where charge ids come from (default randomUUID): a simulator passes a deterministic source. */
  ids?: () => string;
  /**
   * The API key every POST must carry (`Authorization: Bearer <key>`), as a real provider's: a
   * missing or wrong one is refused 401 before anything is performed. Default: none asked.
   */
  apiKey?: string;
}

/** The record and fault plan every payment stand-in exposes, whatever carries its requests. */
export interface PaymentsStandIn {
  readonly records: Map<string, KeyRecord>;
  readonly keyRetentionMs: number | undefined;
  /** Answers 503 for `ms` from now (0: up again). */
  down(ms: number): void;
  /** Answers 503 while `p()` holds, whatever down() says (an outage of its own). */
  downWhile(p: () => boolean): void;
  loseResponses(n: number): void;
  /** Called with the key of each request performed whose answer was lost. */
  onResponseLost?: (key: string) => void;
  /** Requests performed whose answer was lost so far (loseResponses that fired). */
  readonly responsesLost: number;
  /** The Idempotency-Keys of those requests, in order: each has its record, its first answer never written. */
  readonly lostKeys: readonly string[];
  /** Requests refused with 503 while down (nothing performed). */
  readonly refused: number;
  /** The next n requests answer 429 with `Retry-After: retryAfterS` (default 1): nothing performed, nothing stored. */
  throttle(n: number, retryAfterS?: number): void;
  /** The next n requests that perform are answered 500 after the charge; `saved` (default true): the 500 is replayed for the key. */
  fail5xxAfter(n: number, opts?: { saved?: boolean }): void;
  /** The next n requests answer 503 without performing (like down, counted). */
  fail5xxBefore(n: number): void;
  /** The next n 200 answers (a charge performed, or a replay of one) have their body cut (`how`, default truncated): the charge stands. */
  cut2xx(n: number, how?: CutBody): void;
  /** The next n keys are answered 302 to another location (an endpoint moved), on every request with them: nothing performed, the outbox id kept in `redirected`. */
  redirect(n: number): void;
  /** The outbox ids of the requests answered with a redirect: refused for good by this provider's own account (no resend can reach it). */
  readonly redirected: ReadonlySet<string>;
  /** The account is disabled for `ms` from now (0: enabled again): 403 account_inactive, nothing performed. */
  pause(ms: number): void;
  /** The account is disabled while `p()` holds, whatever pause() says. */
  pausedWhile(p: () => boolean): void;
  /** How many answers of each kind the fault plan gave. */
  readonly fired: Readonly<Record<PaymentFault, number>>;
  /** Declines a `fraction` of new keys (chosen by the key and `seed`, so the same each run) besides every charge with DECLINED_CARD as its `card`. */
  declineShare(fraction: number, seed?: number): void;
  /** Charges declined so far (new keys only, not their replays). */
  readonly declines: number;
  /** Requests refused 401 for a missing or wrong API key (with `apiKey` set; nothing performed). */
  readonly unauthorized: number;
}

/** A request as it arrived: `path` as sent (`/charges`), `header` a lookup by lower-case name. */
export interface PaymentsCall {
  readonly method: string;
  readonly path: string | undefined;
  readonly header: (name: string) => string | undefined;
  readonly body: Buffer;
}

/** An answer to write (its body cut as `cut` says, when set), or "lost": performed, the connection to be cut before any answer. */
export type PaymentsAnswer = { readonly lost: false; readonly status: number; readonly headers: Record<string, string>; readonly body: string; readonly cut?: CutBody } | { readonly lost: true; readonly key: string };

const BANK_ERROR = { error: { type: 'api_error', message: 'An error occurred with our connection to the bank.' } };

export class PaymentsCore implements PaymentsStandIn {
  readonly records = new Map<string, KeyRecord>();
  readonly keyRetentionMs: number | undefined;
  readonly lostKeys: string[] = [];
  readonly fired = counters(PAYMENT_FAULTS);
  onResponseLost?: (key: string) => void;
  private readonly now: () => number;
  private readonly ids: () => string;
  private readonly retention: number;
  private downUntil = 0;
  private downIf: () => boolean = () => false;
  private lose = 0;
  private lost = 0;
  private refusedCount = 0;
  private readonly throttled = new Countdown();
  private retryAfterS = 1;
  // Each armed 500-after remembers whether it saves its 500, in the order they were armed.
  private readonly after: boolean[] = [];
  private readonly before = new Countdown();
  private readonly cut = new Countdown();
  private readonly moved = new Countdown();
  private readonly movedKeys = new Set<string>();
  readonly redirected = new Set<string>();
  private cutHow: CutBody = 'truncated';
  private readonly paused: Window;
  private declineFraction = 0;
  private declineSeed = 0;
  private declined = 0;

  private readonly apiKey: string | undefined;
  private unauthorizedCount = 0;

  constructor(opts: PaymentsOptions = {}) {
    this.apiKey = opts.apiKey;
    this.now = opts.now ?? Date.now;
    this.ids = opts.ids ?? randomUUID;
    this.keyRetentionMs = opts.keyRetentionMs;
    this.retention = opts.keyRetentionMs ?? Number.POSITIVE_INFINITY;
    this.paused = new Window(this.now);
  }

  get responsesLost(): number {
    return this.lost;
  }

  get refused(): number {
    return this.refusedCount;
  }

  get declines(): number {
    return this.declined;
  }

  /** Requests refused 401 for a missing or wrong API key (nothing performed). */
  get unauthorized(): number {
    return this.unauthorizedCount;
  }

  readonly declineShare = (fraction: number, seed = 0) => {
    this.declineFraction = fraction;
    this.declineSeed = seed;
  };

  /** Whether a new key's charge is declined: its card is the declining one, or the key falls in the seeded share. */
  private isDeclined(key: string, body: Buffer): boolean {
    let card: unknown;
    try {
      card = (JSON.parse(body.toString('utf8')) as { card?: unknown } | null)?.card;
    } catch {
      card = undefined;
    }
    if (card === DECLINED_CARD) return true;
    if (this.declineFraction <= 0) return false;
    return createHash('sha256').update(`${this.declineSeed}:${key}`).digest().readUInt32BE(0) / 2 ** 32 < this.declineFraction;
  }

  readonly down = (ms: number) => void (this.downUntil = this.now() + ms);
  readonly downWhile = (p: () => boolean) => void (this.downIf = p);
  readonly loseResponses = (n: number) => void (this.lose += n);
  readonly throttle = (n: number, s = 1) => {
    this.throttled.arm(n);
    this.retryAfterS = s;
  };
  readonly fail5xxAfter = (n: number, o: { saved?: boolean } = {}) => void this.after.push(...Array.from({ length: Math.max(0, Math.floor(n)) }, () => o.saved ?? true));
  readonly fail5xxBefore = (n: number) => this.before.arm(n);
  readonly cut2xx = (n: number, how: CutBody = 'truncated') => {
    this.cut.arm(n);
    this.cutHow = how;
  };
  readonly redirect = (n: number) => this.moved.arm(n);
  readonly pause = (ms: number) => this.paused.for(ms);
  readonly pausedWhile = (p: () => boolean) => this.paused.while(p);

  handle(call: PaymentsCall): PaymentsAnswer {
    const json = (status: number, body: unknown, headers: Record<string, string> = {}): PaymentsAnswer & { lost: false } => ({ lost: false, status, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const { path } = call;
    if (call.method === 'GET' && path === '/_record') return json(200, [...this.records.values()]);
    // Any POST path: one fixed endpoint (`/charges`) or a recipient's own below it (a tenant's webhook); the record keeps the path.
    if (call.method !== 'POST' || path === undefined || !path.startsWith('/') || path.startsWith('/_')) return json(404, { error: { type: 'invalid_request_error', message: 'unknown route' } });
    // Authentication comes first, as on a real provider: a request it cannot attribute is refused, nothing performed, nothing stored.
    if (this.apiKey !== undefined && call.header('authorization') !== `Bearer ${this.apiKey}`) {
      this.unauthorizedCount++;
      return json(401, { error: { type: 'invalid_request_error', message: call.header('authorization') === undefined ? 'You did not provide an API key.' : 'Invalid API Key provided.' } });
    }
    if (this.now() < this.downUntil || this.downIf()) return this.refusedCount++, json(503, { error: { type: 'api_error', message: 'temporarily unavailable' } });
    const key = call.header('idempotency-key');
    if (key === undefined || key === '') return json(400, { error: { type: 'invalid_request_error', message: 'Idempotency-Key is required' } });
    // Refused before anything is performed: no record, as for a request that never came.
    if (this.before.take()) return this.fired['5xx-before']++, json(503, { error: { type: 'api_error', message: 'The server is temporarily unavailable; nothing was performed.' } });
    if (this.paused.on) return this.fired.paused++, json(403, { error: { type: 'invalid_request_error', code: 'account_inactive', message: 'This account is inactive: charges are disabled.' } });
    if (this.movedKeys.has(key) || this.moved.take()) return this.movedAway(key, call, json);
    if (this.throttled.take()) return this.fired.throttled++, json(429, { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.' } }, { 'retry-after': String(this.retryAfterS) });
    const bodyHash = createHash('sha256').update(call.body).digest('hex');
    const { record: r, replayed } = this.recordOf(key, call, bodyHash);
    if (r.bodyHash !== bodyHash) {
      r.refused++;
      return json(400, { error: { type: 'idempotency_error', message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.' } });
    }
    const failed = !replayed && r.declined === undefined && this.after.length > 0 ? this.after.shift() : undefined;
    if (failed !== undefined) {
      // Performed (the charge is in the record), then the 500: what the caller cannot tell from a charge never made.
      this.fired['5xx-after']++;
      if (failed) r.savedError = 500;
      return json(500, BANK_ERROR);
    }
    if (this.lose > 0) {
      this.lose--;
      this.lost++;
      this.lostKeys.push(key);
      return { lost: true, key };
    }
    // Declined (decided when the key was first seen): the 402 is the key's answer, replayed like a charge.
    if (r.declined !== undefined) return json(402, { error: { type: 'card_error', code: r.declined, message: 'Your card was declined.' } }, replayed ? { 'idempotent-replayed': 'true' } : {});
    if (r.savedError !== undefined) {
      this.fired['replayed-5xx']++;
      return json(r.savedError, BANK_ERROR, { 'idempotent-replayed': 'true' });
    }
    const charged = json(200, { id: r.chargeId, object: 'charge' }, replayed ? { 'idempotent-replayed': 'true' } : {});
    // The charge stands (performed or replayed); only its answer is spoiled on the way.
    return this.cut.take() ? (this.fired['2xx-cut']++, { ...charged, cut: this.cutHow }) : charged;
  }

  /** A 302 to where the endpoint moved, nothing performed, for this key from now on; the provider keeps which outbox item it turned away. */
  private movedAway(key: string, call: PaymentsCall, json: (status: number, body: unknown, headers?: Record<string, string>) => PaymentsAnswer): PaymentsAnswer {
    this.fired.redirect++;
    this.movedKeys.add(key);
    const id = call.header('x-outbox-id');
    if (id !== undefined) this.redirected.add(id);
    return json(302, { error: { type: 'invalid_request_error', message: 'This endpoint has moved.' } }, { location: `https://payments.example${call.path ?? '/'}` });
  }

  /** The key's record, counted for this request: new, forgotten and performed again, or remembered (a replay). */
  private recordOf(key: string, call: PaymentsCall, bodyHash: string): { record: KeyRecord; replayed: boolean } {
    const t = this.now();
    let r = this.records.get(key);
    let replayed = true;
    const chargeId = () => `ch_${this.ids().replace(/-/g, '').slice(0, 20)}`;
    if (r === undefined) {
      replayed = false;
      const id = chargeId();
      r = { key, path: call.path, body: call.body.toString('utf8'), outboxId: call.header('x-outbox-id'), outboxTable: call.header('x-outbox-table'), bodyHash, chargeId: id, charges: [id], at: [], storedAt: t, requests: 0, refused: 0 };
      if (this.isDeclined(key, call.body)) Object.assign(r, { declined: 'card_declined', chargeId: '', charges: [] }), this.declined++;
      this.records.set(key, r);
    } else if (t - r.storedAt >= this.retention) {
      // Forgotten: a new request like any other, performed again (a saved error forgotten with it).
      replayed = false;
      Object.assign(r, { bodyHash, storedAt: t });
      delete r.savedError;
      // Declined again (the same card, the same share), or charged again: a second charge under one key.
      if (r.declined === undefined) r.charges.push((r.chargeId = chargeId()));
    }
    r.requests++;
    r.at.push(t);
    return { record: r, replayed };
  }
}
