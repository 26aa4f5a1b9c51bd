/**
 * The two shapes of a stand-in's fault: one armed for the next n answers (a throttle, a lost
 * answer), and one on for a while (an outage, a paused account). The stand-ins (the payment
 * provider, the SMTP sink, the SES endpoint) build their fault plans from these, so a test or the
 * chaos harness arms each the same way, and each answer it gives is counted where it fired.
 */

/** Armed for the next n answers: `take()` says whether this answer is one of them (and uses it up). */
export class Countdown {
  private left = 0;

  arm(n: number): void {
    this.left += Math.max(0, Math.floor(n));
  }

  take(): boolean {
    if (this.left <= 0) return false;
    this.left--;
    return true;
  }
}

/**
 * On for `ms` from now, or while a predicate holds (the harness's own condition); either turns it
 * on. The clock is the stand-in's own, so a test that drives one stand-in's time drives its faults.
 */
export class Window {
  private until = 0;
  private when: () => boolean = () => false;

  constructor(private readonly now: () => number = Date.now) {}

  /** On for `ms` from now (0: off again, unless the predicate holds). */
  for(ms: number): void {
    this.until = this.now() + ms;
  }

  /** On while `p()` holds, whatever for() said; `() => false` to stop. */
  while(p: () => boolean): void {
    this.when = p;
  }

  get on(): boolean {
    return this.now() < this.until || this.when();
  }
}

/**
 * How a stand-in cuts a 2xx answer's body: `truncated` (a whole HTTP answer whose body is the
 * first half of the real one: it does not parse) or `reset` (the headers promise the whole body,
 * half of it comes, then the connection is reset).
 */
export type CutBody = 'truncated' | 'reset';

/** What of a cut body arrives, either way: its first half. */
export const cutHalf = (body: string): string => body.slice(0, Math.floor(body.length / 2));

/** A counter per kind of answer a fault gave, all at zero. */
export function counters<K extends string>(kinds: readonly K[]): Record<K, number> {
  return Object.fromEntries(kinds.map((k) => [k, 0])) as Record<K, number>;
}

/** The fault plan every email stand-in plays (the SMTP sink, the SES endpoint), each answering as its provider does. */
export interface EmailFaultPlan {
  /** The next n sends are refused as throttled (SES's 454, 429 TooManyRequestsException): nothing taken. */
  throttle(n: number): void;
  /** The account's sending is paused for `ms` from now (0: resumed): refused, nothing taken. */
  pause(ms: number): void;
  /** Paused while `p()` holds, whatever pause() says. */
  pausedWhile(p: () => boolean): void;
  /** The sandbox: while set, a recipient `verified` refuses is refused with SES's "not verified"; undefined: out of the sandbox. */
  sandbox(verified: ((addr: string) => boolean) | undefined): void;
  /** Messages to a recipient matching `pred` are accepted and then bounce (Permanent, General); undefined: none. */
  bounce(pred: ((to: string) => boolean) | undefined): void;
  /** Messages to a recipient matching `pred` are accepted and then complained about; undefined: none. */
  complain(pred: ((to: string) => boolean) | undefined): void;
}
