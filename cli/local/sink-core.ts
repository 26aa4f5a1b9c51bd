/**
 * The email stand-in's behaviour, with no transport: what it decides about a send (down: nothing
 * taken; refused by the fault plan: throttled, paused, the sandbox; taken, and whether its
 * acknowledgement is lost), its record of what it took (`received`) and the events SES's event
 * publishing would emit for it (a Send at once unless lost, a Bounce or a Complaint later). The
 * SMTP sink (smtp-sink.ts, on smtp-server) and the simulator's SES v2 handler (test/sim/effects/)
 * are adapters over it, each answering in its provider's words; smtp-sink.ts's module comment
 * says which behaviours these are and why.
 *
 * Time is the injected clock's (default the process's): `down`, `pause`, the message's `at` and
 * the feedback delay.
 */
import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../../lib/protocol/index.js';
import { Countdown, counters, Window, type EmailFaultPlan } from './fault-switch.js';

/** The header value of a raw message (unfolded), without parsing the body. */
export function headerOf(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/, 1)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const re = new RegExp(`^${name}:\\s*(.*)$`, 'im');
  return re.exec(unfolded)?.[1]?.trim();
}

export interface ReceivedMessage {
  readonly queueId: string;
  readonly raw: string;
  /** The envelope recipients (RCPT TO). */
  readonly to: readonly string[];
  readonly at: number;
}

/** An SES-shaped event about a message the sink accepted. */
export interface SinkEvent {
  readonly type: 'Send' | 'Bounce' | 'Complaint';
  readonly message: ReceivedMessage;
  /** The recipients it is about: all of them for a Send, the bounced or complaining ones otherwise. */
  readonly recipients: readonly string[];
  readonly bounceType?: string;
  readonly bounceSubType?: string;
}

export const SINK_FAULTS = ['throttled', 'paused', 'sandbox', 'bounced', 'complained', 'send-event-lost', 'send-event-late', 'resend-throttled'] as const;
export type SinkFault = (typeof SINK_FAULTS)[number];

/** Why the fault plan refuses a send (nothing taken); each adapter words it as its provider does. */
export type SinkRefusal = { readonly kind: 'throttled' } | { readonly kind: 'paused' } | { readonly kind: 'sandbox'; readonly region: string; readonly identities: readonly string[] };

export interface SinkCoreOptions {
  onReceived?: (m: ReceivedMessage) => void | Promise<void>;
  /** Told of each event emitted (a Send at acceptance, a Bounce or a Complaint later); a failure is dropped, as EventBridge drops one. */
  onEvent?: (e: SinkEvent) => void | Promise<void>;
  /** The region named in a sandbox refusal (default us-east-1). */
  region?: string;
  /** How long after the Send a Bounce or a Complaint is emitted (default 20 ms). */
  feedbackDelayMs?: number;
  /** The stand-in's clock (default the process's). */
  clock?: Clock;
  /** Where queue ids come from (default randomUUID): a simulator passes a deterministic source. */
  ids?: () => string;
}

/** The record and fault plan every email stand-in exposes, whatever carries its sends. */
export interface EmailSink extends EmailFaultPlan {
  readonly received: ReceivedMessage[];
  down(ms: number): void;
  loseAcks(n: number): void;
  /** Messages taken whose acknowledgement was lost so far (loseAcks that fired): each is in `received`, its acknowledgement never written. */
  readonly acksLost: number;
  /** Sends refused while down (nothing taken from them). */
  readonly refused: number;
  /** The next n Send events are lost (SES event publishing is best effort): never emitted. */
  loseSendEvents(n: number): void;
  /**
   * The next message whose acknowledgement is lost: its Send event withheld (a record later than
   * the reconciler's lag) until the next send to its recipients (the reconciler's resend), which
   * is refused as throttled, nothing taken; the Send event is emitted then.
   */
  lateRecordOfLostAck(): void;
  readonly fired: Readonly<Record<SinkFault, number>>;
  /** Every event emitted, in order. */
  readonly events: readonly SinkEvent[];
  /** Resolves once every event scheduled so far has been emitted and its onEvent has settled. */
  settled(): Promise<void>;
  /** Stops; events not yet emitted are dropped. */
  close(): Promise<void>;
}

export class SinkCore implements EmailSink {
  readonly received: ReceivedMessage[] = [];
  readonly fired = counters(SINK_FAULTS);
  readonly events: SinkEvent[] = [];
  private downUntil = 0;
  private acksToLose = 0;
  private acksLostCount = 0;
  private refusedCount = 0;
  private readonly throttled = new Countdown();
  private readonly paused: Window;
  private readonly sendsToLose = new Countdown();
  private lateRecordArmed = false;
  /** The withheld Send events of lost acknowledgements' messages. */
  private readonly withheld: SinkEvent[] = [];
  private verified: ((addr: string) => boolean) | undefined;
  private bounces: ((to: string) => boolean) | undefined;
  private complaints: ((to: string) => boolean) | undefined;
  private readonly clock: Clock;
  private readonly ids: () => string;
  // Events in flight: each settles once emitted and its onEvent settled, or once dropped by close().
  private readonly pending = new Set<Promise<void>>();
  private readonly drops = new Set<() => void>();

  constructor(private readonly opts: SinkCoreOptions = {}) {
    this.clock = opts.clock ?? systemClock;
    this.ids = opts.ids ?? randomUUID;
    this.paused = new Window(() => this.clock.wallNow());
  }

  get acksLost(): number {
    return this.acksLostCount;
  }

  get refused(): number {
    return this.refusedCount;
  }

  readonly down = (ms: number) => void (this.downUntil = this.clock.wallNow() + ms);
  readonly loseAcks = (n: number) => void (this.acksToLose += n);
  readonly throttle = (n: number) => this.throttled.arm(n);
  readonly pause = (ms: number) => this.paused.for(ms);
  readonly pausedWhile = (p: () => boolean) => this.paused.while(p);
  readonly sandbox = (v: ((addr: string) => boolean) | undefined) => void (this.verified = v);
  readonly bounce = (p: ((to: string) => boolean) | undefined) => void (this.bounces = p);
  readonly complain = (p: ((to: string) => boolean) | undefined) => void (this.complaints = p);
  readonly loseSendEvents = (n: number) => this.sendsToLose.arm(n);
  readonly lateRecordOfLostAck = () => void (this.lateRecordArmed = true);

  /** A fresh id (32 hex digits) for an adapter's queue or message id. */
  newId(): string {
    return this.ids().replace(/-/g, '');
  }

  /** Whether the provider is down now: a send is refused before anything is taken (counted). */
  refusesConnection(): boolean {
    if (this.clock.wallNow() >= this.downUntil) return false;
    this.refusedCount++;
    return true;
  }

  /** The fault plan's refusal of a message to `to`, if any (counted). */
  refusal(to: readonly string[], raw?: string): SinkRefusal | undefined {
    const late = this.withheldFor(to, raw);
    if (late !== undefined) {
      this.withheld.splice(this.withheld.indexOf(late), 1);
      this.fired['resend-throttled']++;
      // The record comes now: after the resend was refused, while its item goes back to PENDING.
      this.track(this.emit(late, 'send-event-late'));
      return { kind: 'throttled' };
    }
    if (this.throttled.take()) return this.fired.throttled++, { kind: 'throttled' };
    if (this.paused.on) return this.fired.paused++, { kind: 'paused' };
    const failed = this.verified === undefined ? [] : to.filter((a) => !this.verified!(a));
    if (failed.length > 0) return this.fired.sandbox++, { kind: 'sandbox', region: this.opts.region ?? 'us-east-1', identities: failed };
    return undefined;
  }

  /**
   * The withheld Send event a send is the resend of: the same outbox identity (`raw` given: the
   * message's X-Outbox-Id and X-Outbox-Table headers), or, refused before the message came (at
   * RCPT TO), a recipient in common.
   */
  private withheldFor(to: readonly string[], raw: string | undefined): SinkEvent | undefined {
    const id = (m: string) => `${headerOf(m, 'X-Outbox-Table')} ${headerOf(m, 'X-Outbox-Id')}`;
    if (raw !== undefined) return this.withheld.find((e) => id(e.message.raw) === id(raw));
    return this.withheld.find((e) => e.recipients.some((a) => to.includes(a)));
  }

  /** Takes a message (recorded, its events published); `ackLost`: the adapter is to cut the connection instead of acknowledging it. */
  take(queueId: string, raw: string, to: readonly string[]): { message: ReceivedMessage; ackLost: boolean } {
    const m: ReceivedMessage = { queueId, raw, to, at: this.clock.wallNow() };
    this.received.push(m);
    void Promise.resolve(this.opts.onReceived?.(m)).catch(() => undefined);
    const ackLost = this.acksToLose > 0;
    if (ackLost) {
      this.acksToLose--;
      this.acksLostCount++;
    }
    const late = ackLost && this.lateRecordArmed;
    if (late) this.lateRecordArmed = false;
    this.published(m, late);
    return { message: m, ackLost };
  }

  settled = async (): Promise<void> => {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  };

  /** Drops the events not yet emitted. */
  close = async (): Promise<void> => {
    for (const drop of this.drops) drop();
  };

  private emit(e: SinkEvent, counted?: SinkFault): Promise<void> {
    this.events.push(e);
    if (counted !== undefined) this.fired[counted]++;
    return Promise.resolve()
      .then(() => this.opts.onEvent?.(e))
      .then(
        () => undefined,
        () => undefined,
      );
  }

  private track(p: Promise<void>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  private schedule(ms: number, e: SinkEvent, counted: SinkFault): void {
    const stop = new AbortController();
    const drop = () => stop.abort();
    this.drops.add(drop);
    this.track(
      this.clock.sleep(ms, stop.signal).then(
        () => {
          this.drops.delete(drop);
          return this.emit(e, counted);
        },
        () => undefined,
      ),
    );
  }

  private published(m: ReceivedMessage, late = false): void {
    const send: SinkEvent = { type: 'Send', message: m, recipients: m.to };
    if (this.sendsToLose.take()) this.fired['send-event-lost']++;
    else if (late) this.withheld.push(send);
    else this.track(this.emit(send));
    // A bounced message draws no complaint: it never reached a mailbox.
    const bounced = this.bounces === undefined ? [] : m.to.filter(this.bounces);
    const complained = bounced.length > 0 || this.complaints === undefined ? [] : m.to.filter(this.complaints);
    const delay = this.opts.feedbackDelayMs ?? 20;
    if (bounced.length > 0) this.schedule(delay, { type: 'Bounce', message: m, recipients: bounced, bounceType: 'Permanent', bounceSubType: 'General' }, 'bounced');
    if (complained.length > 0) this.schedule(delay, { type: 'Complaint', message: m, recipients: complained }, 'complained');
  }
}
