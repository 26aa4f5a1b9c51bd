/**
 * The external effects of a local run, wired as in AWS: the worker puts documents into the
 * bucket before each unit; the Outbox stream drives the sender handler (cli/local/outbox-stream.ts);
 * the reconciler and the collector run on a schedule; and the faults of the external effects
 * are injected: a lost S3 put answer, a lost SMTP acknowledgement, a sender killed after the
 * provider accepted (before SENT), a duplicate stream delivery, two senders racing for one
 * batch, the providers down for a while, a lost payment-provider answer.
 */
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { Clock, Dynamo } from '../../lib/protocol/index.js';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { countUnsent, DEPLOYED_DEFAULTS, type CollectReport, type EmailProvider, type HttpProvider, type DocumentTarget, type FollowUpStep, type Processor, type ReconcileReport, type SenderDeps, type SenderHooks, type SenderPoint, type TableNames, type Telemetry } from '../../lib/workflow/index.js';
import { createCollectorHandler, createReconcilerHandler, type BudgetContext, type CollectorHandler, type ReconcilerHandler } from '../../functions/effects-handlers.js';
import { createSenderHandler } from '../../functions/sender-handler.js';
import { asFunction, type AwsCallRecorder } from '../local/aws-calls.js';
import type { Effects } from '../local/effects-env.js';
import type { CutBody } from '../local/fault-switch.js';
import type { S3Request } from '../local/s3-endpoint.js';
import { headerOf } from '../local/smtp-sink.js';
import type { EffectsSources } from '../check/invariants-effects.js';
import { OutboxStream, type StreamActivity } from '../local/outbox-stream.js';
import type { Timeline } from '../shared/timeline.js';

export interface RunEffectsOptions {
  /** How often the stream stand-in polls its shards (default the stand-in's 50 ms; Lambda's event source mapping polls a DynamoDB stream's shard 4 times a second). */
  streamPollMs?: number;
  /** The engine tells its stream's appends: the stream stand-in waits for them instead of polling (the simulator). */
  streamActivity?: StreamActivity;
  dynamo: Dynamo;
  streams: DynamoDBStreamsClient;
  tables: TableNames;
  /** The run's document folder (named like its tables). */
  set: string;
  effects: Effects;
  clock: Clock;
  telemetry: Telemetry;
  timeline?: Timeline;
  leaseMs: number;
  /** Inject the external-effect faults (the demo's faulted run, chaos). */
  faults: boolean;
  /** The workload's documents (their folder and how a key names its pointer). Absent: the workload has none, and no collector runs (its stack has none). */
  catalog?: DocumentCatalog;
  /** The workload's steps: what follows each settled outcome (Workload.steps). */
  steps?: readonly FollowUpStep[] | undefined;
  /** The sender's own hooks beside the run's fault (a negative control's writes around its settle). */
  senderHooks?: SenderHooks;
  /** The workload's fence key prefix: the collector reads the fences its workers raise. @default 'fence#' */
  fenceKeyPrefix?: string | undefined;
  /** Records the SES sends of the sender and the reconciler (locally SMTP: recorded at the provider port). */
  calls?: AwsCallRecorder;
  /** The sender's email provider, if not the run's own (a negative control misreads its answers). */
  email?: EmailProvider;
  /** The sender's http providers, if not the run's own (a negative control hides their key retention). */
  http?: Readonly<Record<string, HttpProvider>>;
  /** The sender's margin before the payment provider's key retention (SenderDeps.keyRetentionMarginMs). */
  keyRetentionMarginMs?: number;
  /**
   * After the first lost payment answer, the payment provider goes down past that key's
   * retention: until it has forgotten the key ('until-forgotten'), or for 1.25 retentions
   * ('timed'). Its item then outlives the retention: given up UNKNOWN, or resent as a second charge.
   */
  retentionOutage?: 'until-forgotten' | 'timed';
  /** The providers' misbehaviour (chaos): none by default. */
  providerFaults?: ProviderFaultPlan;
}

/**
 * The providers misbehaving on cue (the stand-ins' fault plans: cli/local/smtp-sink.ts,
 * cli/local/payments-provider.ts), each as its provider documents it: the counts arm the next answers,
 * the windows start `atMs` into the run. Every one is something a send must survive: nothing in
 * it is a refusal for good, so DELIVERY holds that no item ends FAILED.
 */
export interface ProviderFaultPlan {
  /** The next n emails refused with SES's 454 throttling, and the next n payments with 429. */
  readonly throttleEmails: number;
  readonly throttlePayments: number;
  /** The next n payments performed and answered 500 (`saved5xx`: the 500 saved and replayed for the key, as Stripe does). */
  readonly fail5xxAfter: number;
  readonly saved5xx: boolean;
  /** The next n payments answered 503, nothing performed. */
  readonly fail5xxBefore: number;
  /** The account paused (SES's 554, the provider's 403): for `ms`, or (`untilRefused`) until it refused a send and for `ms` more. */
  readonly pause?: { readonly who: 'email' | 'payments' | 'both'; readonly atMs: number; readonly ms: number; readonly untilRefused?: boolean };
  /** The SES sandbox for a while: every recipient unverified. */
  readonly sandbox?: { readonly atMs: number; readonly ms: number };
  /** Every n-th customer's email bounces (a Permanent bounce) or is complained about, after acceptance. */
  readonly bounceEvery: number;
  readonly complaintEvery: number;
  /** The next n payments performed and their 200's body cut (`cutHow`): maybe taken, resent with the key. */
  readonly cut2xxPayments?: number;
  readonly cutHow?: CutBody;
  /** The next n payment keys answered 302 on every request (the endpoint moved): never followed, FAILED with the location. */
  readonly redirectPayments?: number;
  /** The lost acknowledgement's provider record comes late, after the reconciler's resend was throttled: the record settles the item, never a second send. */
  readonly lateRecord?: boolean;
}

export type DocumentCatalog = NonNullable<Processor<unknown>['documents']>;

/** Telemetry whose timeline entries go to one lane (the sender, the reconciler, the collector). */
export const inLane = (t: Telemetry, lane: string): Telemetry => ({ count: (m, n) => t.count(m, n), gauge: (m, v) => t.gauge(m, v), event: (name, f) => t.event(name, { ...f, lane }) });

/** Kills the first sender whose email the provider accepted, before it marks the item SENT. */
class SenderKill implements SenderHooks {
  fired = false;
  /** The outbox item whose sender was killed. */
  pk: string | undefined;
  constructor(private readonly timeline?: Timeline) {}
  async at(point: SenderPoint, info: { pk: string; kind: string; result?: string }): Promise<void> {
    // The first email the provider took, whatever the workload calls its items.
    if (this.fired || point !== 'after-send' || info.result !== 'accepted' || info.kind !== 'email') return;
    this.fired = true;
    this.pk = info.pk;
    this.timeline?.add('sender', 'crash', `CRASH sender after the provider accepted ${info.pk}, before SENT`);
    return new Promise<void>(() => undefined);
  }
}

/**
 * The lost S3 put answer took effect, read from the endpoint's own log: a PUT applied (200) whose
 * answer was never written, then the client's resend of that key refused (412), then the HEAD
 * that resolved it.
 */
export function lostPutResolved(log: readonly S3Request[]): boolean {
  const i = log.findIndex((r) => r.method === 'PUT' && r.status === 200 && !r.answered);
  if (i < 0) return false;
  const after = log.slice(i + 1).filter((r) => r.key === log[i]!.key);
  const resent = after.findIndex((r) => r.method === 'PUT' && r.status === 412);
  return resent >= 0 && after.slice(resent + 1).some((r) => r.method === 'HEAD');
}

/** The run's fault (the sender killed) and another's hooks, each called at every point. */
function hooksOf(...hooks: (SenderHooks | undefined)[]): { hooks?: SenderHooks } {
  const all = hooks.filter((h): h is SenderHooks => h !== undefined);
  if (all.length === 0) return {};
  return { hooks: { at: async (point, info) => void (await Promise.all(all.map((h) => h.at(point, info)))) } };
}

/** The scheduled functions' timeout in AWS (infra): the local runtime gives them the same time. */
const SCHEDULED_TIMEOUT_MS = 60_000;

export class RunEffects {
  readonly documents: DocumentTarget;
  readonly stream: OutboxStream;
  /**
   * Faults armed (before the run, or when triggered: the providers' outage), each with how to
   * tell from the far side that it took effect (the server's own record, the client's resend):
   * the report lists only those that did.
   */
  private readonly armed: { text: string; hit: () => boolean }[] = [];
  /** Faults this run could not inject (an external server's behaviour is not ours to change), said in the report. */
  private readonly cannot: string[] = [];
  private readonly senderDeps: SenderDeps;
  private readonly kill: SenderKill | undefined;
  private readonly reconciler: ReconcilerHandler;
  readonly reconciles: ReconcileReport[] = [];
  readonly collects: CollectReport[] = [];
  /** The reconciler runs on its schedule (background), and who waits for its next pass (settle). */
  private scheduled = false;
  private passWaiters: { resolve: (r: ReconcileReport) => void; reject: (e: unknown) => void }[] = [];

  constructor(private readonly o: RunEffectsOptions) {
    this.documents = { store: o.effects.store, set: o.set, concurrency: 8 };
    this.kill = o.faults ? new SenderKill(o.timeline) : undefined;
    this.senderDeps = {
      doc: o.dynamo.doc,
      table: o.tables.outbox,
      clock: o.clock,
      telemetry: inLane(o.telemetry, 'sender'),
      email: o.calls?.email(o.email ?? o.effects.email) ?? o.email ?? o.effects.email,
      http: o.http ?? o.effects.http,
      from: o.effects.from,
      ...(o.keyRetentionMarginMs === undefined ? {} : { keyRetentionMarginMs: o.keyRetentionMarginMs }),
      ...hooksOf(this.kill, o.senderHooks),
      // AWS's waits (1 s doubling to 15 min, a held account tried every 5 min), scaled to the run's lease.
      // The sender checks before each send that its claim outlives one (its adapters' timeout).
      claimTimeoutMs: this.claimTimeoutMs,
      sendTimeoutMs: o.effects.sendTimeoutMs,
      backoff: { throttleBaseMs: Math.round(o.leaseMs / 4), maxMs: o.leaseMs * 4, heldRetryMs: o.leaseMs * 2 },
      ...(o.steps === undefined ? {} : { steps: o.steps }),
    };
    this.stream = new OutboxStream({
      client: o.dynamo.client,
      streams: o.streams,
      table: o.tables.outbox,
      clock: o.clock,
      sender: createSenderHandler(this.senderDeps),
      invocationTimeoutMs: o.leaseMs * 2,
      retryAfterMs: Math.round(o.leaseMs / 3),
      maxRetries: 4,
      ...(o.streamPollMs === undefined ? {} : { pollMs: o.streamPollMs }),
      ...(o.streamActivity === undefined ? {} : { activity: o.streamActivity }),
    });
    this.reconciler = createReconcilerHandler({
      ...this.senderDeps,
      telemetry: inLane(o.telemetry, 'reconciler'),
      hooks: undefined,
      // Well past the stream's retries: the reconciler is for what the stream gave up on.
      pendingAfterMs: o.leaseMs * 6,
      claimTimeoutMs: this.claimTimeoutMs,
      // The embedded sink records as it receives; an external SMTP server keeps no record we can read.
      recordLagMs: o.effects.sink === undefined ? undefined : Math.round(o.leaseMs / 2),
    });
  }

  /** A Lambda-like context for one scheduled invocation: the functions' 60 s timeout, on the run's clock. */
  private invocation(): BudgetContext {
    const started = this.o.clock.monotonicNow();
    return { getRemainingTimeInMillis: () => Math.max(0, SCHEDULED_TIMEOUT_MS - (this.o.clock.monotonicNow() - started)) };
  }

  /** The faults that need no trigger: armed before the run starts. */
  arm(): void {
    if (!this.o.faults) return;
    const e = this.o.effects;
    const arm = (lane: string, text: string, hit: () => boolean) => {
      this.armed.push({ text, hit });
      this.o.timeline?.add(lane, 'note', `armed: ${text}`);
    };
    if (e.embeddedS3 !== undefined) {
      const s3 = e.embeddedS3;
      s3.dropResponses(1, (r) => r.method === 'PUT');
      arm('s3', 'an S3 put answer lost (the retry meets 412, resolved by HEAD)', () => lostPutResolved(s3.requests));
    } else this.cannot.push(`a lost S3 put answer (the S3 endpoint ${e.s3Url} is not the embedded one)`);
    this.stream.duplicateNext(1);
    this.stream.raceNext(1);
    arm('sender', 'a duplicate stream delivery', () => this.stream.duplicated > 0);
    arm('sender', 'two senders racing for one batch', () => this.stream.raced > 0);
    if (e.sink !== undefined) {
      e.sink.loseAcks(1);
      arm('sender', 'an SMTP acknowledgement lost (an ambiguous send)', () => e.sink!.acksLost > 0);
    } else this.cannot.push(`a lost SMTP acknowledgement and the email provider's outage (${e.emailName} is not the embedded sink)`);
    e.payments.loseResponses(1);
    if (this.o.providerFaults !== undefined) this.armProviders(this.o.providerFaults, arm);
    if (this.o.retentionOutage !== undefined) this.armRetentionOutage(this.o.retentionOutage, arm);
    // Performed, its answer lost, and the same key sent again (the provider replayed its answer).
    arm('sender', "a payment provider's answer lost (the resend with its Idempotency-Key is replayed)", () => e.payments.lostKeys.some((k) => (e.payments.records.get(k)?.requests ?? 0) >= 2));
  }

  /** The providers' fault plan: counted answers at once, the windows (paused, sandbox) at their time. */
  private armProviders(plan: ProviderFaultPlan, arm: (lane: string, text: string, hit: () => boolean) => void): void {
    const { sink, payments } = this.o.effects;
    if (sink !== undefined) {
      sink.throttle(plan.throttleEmails);
      const every = (n: number) => (to: string) => Number(/(\d+)@/.exec(to)?.[1] ?? 1) % n === 0;
      sink.bounce(every(plan.bounceEvery));
      sink.complain(every(plan.complaintEvery));
      if (plan.throttleEmails > 0) arm('sender', 'SES throttling emails (454: deferred with a backoff)', () => sink.fired.throttled > 0);
      arm('sender', 'emails bounced or complained about after acceptance (recorded on their items)', () => sink.fired.bounced + sink.fired.complained > 0);
    } else this.cannot.push(`the email provider's throttles, pauses, sandbox and bounces (${this.o.effects.emailName} is not the embedded sink)`);
    payments.throttle(plan.throttlePayments, 0);
    payments.fail5xxAfter(plan.fail5xxAfter, { saved: plan.saved5xx });
    payments.fail5xxBefore(plan.fail5xxBefore);
    if (plan.throttlePayments > 0) arm('sender', 'the payment provider throttling (429)', () => payments.fired.throttled > 0);
    if (plan.fail5xxAfter > 0) arm('sender', `a payment performed and answered 500${plan.saved5xx ? ' (saved and replayed: UNKNOWN)' : ' (resent: replayed 200)'}`, () => payments.fired['5xx-after'] > 0);
    if (plan.fail5xxBefore > 0) arm('sender', 'a payment answered 503 before anything was performed', () => payments.fired['5xx-before'] > 0);
    payments.cut2xx(plan.cut2xxPayments ?? 0, plan.cutHow);
    if ((plan.cut2xxPayments ?? 0) > 0) arm('sender', `a payment's 200 cut (${plan.cutHow ?? 'truncated'}): maybe taken, resent with its key`, () => payments.fired['2xx-cut'] > 0);
    payments.redirect(plan.redirectPayments ?? 0);
    if ((plan.redirectPayments ?? 0) > 0) arm('sender', 'a payment answered with a redirect (never followed: FAILED)', () => payments.fired.redirect > 0);
    if (plan.lateRecord && sink !== undefined) {
      sink.lateRecordOfLostAck();
      arm('sender', "a lost acknowledgement's record late, after the reconciler's resend was throttled (settled by the record)", () => sink.fired['resend-throttled'] > 0 && sink.fired['send-event-late'] > 0);
    }
    const later = (atMs: number, f: () => void) => void setTimeout(f, atMs).unref();
    if (plan.pause !== undefined) this.armPause(plan.pause, arm, later);
    if (plan.sandbox !== undefined && sink !== undefined) {
      const { atMs, ms } = plan.sandbox;
      later(atMs, () => {
        sink.sandbox(() => false);
        later(ms, () => sink.sandbox(undefined));
      });
      arm('sender', 'the SES sandbox refusing unverified recipients (held, then sent)', () => sink.fired.sandbox > 0);
    }
  }

  /** The account paused for a while: every send held, and sent once it lifts. */
  private armPause(p: NonNullable<ProviderFaultPlan['pause']>, arm: (lane: string, text: string, hit: () => boolean) => void, later: (ms: number, f: () => void) => void): void {
    const { sink, payments } = this.o.effects;
    const email = p.who !== 'payments' ? sink : undefined;
    const pay = p.who !== 'email' ? payments : undefined;
    const refused = () => (email?.fired.paused ?? 0) + (pay?.fired.paused ?? 0);
    later(p.atMs, () => {
      this.o.timeline?.add('sender', 'pause', `ACCOUNT PAUSED (${p.who}) for ${p.ms} ms${p.untilRefused ? ', until a send is refused' : ''}`);
      if (p.untilRefused) {
        // Paused until it refused a send, and `ms` after: a pause that refused nothing tested nothing.
        let liftAt: number | undefined;
        const on = () => (liftAt === undefined && refused() > 0 ? ((liftAt = Date.now() + p.ms), true) : liftAt === undefined || Date.now() < liftAt);
        email?.pausedWhile(on);
        pay?.pausedWhile(on);
      } else {
        email?.pause(p.ms);
        pay?.pause(p.ms);
      }
    });
    arm('sender', `the sending account paused (${p.who}): held, never FAILED, sent once it lifted`, () => refused() > 0);
  }

  /** The payment provider down past the key retention of the first request whose answer it lost. */
  private armRetentionOutage(mode: 'until-forgotten' | 'timed', arm: (lane: string, text: string, hit: () => boolean) => void): void {
    const p = this.o.effects.payments;
    const retention = p.keyRetentionMs;
    if (retention === undefined) return void this.cannot.push('an outage past the key retention (the payment provider keeps keys for good)');
    let lost: string | undefined;
    let lostAt = 0;
    p.onResponseLost = (key) => {
      if (lost !== undefined) return;
      [lost, lostAt] = [key, Date.now()];
      this.o.timeline?.add('sender', 'pause', `PAYMENTS DOWN past the key retention (${retention} ms) of a request whose answer was lost`);
      // Forgotten: the provider's own record says the key is older than its retention (a lease more, for the resend's way there).
      const stored = () => p.records.get(key)?.storedAt ?? lostAt;
      p.downWhile(mode === 'until-forgotten' ? () => Date.now() - stored() < retention + this.o.leaseMs : () => Date.now() - lostAt < retention * 1.25);
    };
    arm('sender', "the payment provider down past its key retention after an answer lost", () => lost !== undefined && Date.now() - lostAt >= retention);
  }

  /** The effect faults that took effect, in the order they were armed. */
  get fired(): string[] {
    return this.armed.filter((a) => a.hit()).map((a) => a.text);
  }

  /** What was not injected: what an external server does not let us inject, and what was armed and never met its occasion. */
  get notInjected(): string[] {
    return [...this.cannot, ...this.armed.filter((a) => !a.hit()).map((a) => `${a.text}: armed, never met its occasion`)];
  }

  /**
   * The providers go down for `ms` (called by the run once it is under way), and stay down, `ms`
   * at a time, until they have refused something or `maxMs` has passed: on a loaded machine the
   * first sends may come later than the outage would have, and an outage that refused nothing
   * tested nothing.
   */
  providersDown(ms: number, maxMs = ms * 10): void {
    if (!this.o.faults) return;
    const { sink, payments } = this.o.effects;
    const before = { sink: sink?.refused ?? 0, payments: payments.refused };
    // It took effect if a provider refused something while down (421, 503: nothing taken).
    const hit = () => (sink?.refused ?? 0) > before.sink || payments.refused > before.payments;
    this.armed.push({ text: `${sink === undefined ? 'the payment provider' : 'email and payment providers'} down for ${ms} ms`, hit });
    this.o.timeline?.add('sender', 'pause', `PROVIDERS DOWN for ${ms} ms`);
    const started = Date.now();
    const goDown = () => {
      sink?.down(ms);
      payments.down(ms);
      setTimeout(() => (hit() || Date.now() - started + ms > maxMs ? this.o.timeline?.add('sender', 'resume', 'providers back') : goDown()), ms).unref();
    };
    goDown();
  }

  /**
   * The kill took effect: the provider accepted the email (the sink's own record has it; with an
   * external SMTP server only the client's 250 says so) and the killed sender never marked it.
   */
  get senderKilled(): boolean {
    const { kill } = this;
    const sink = this.o.effects.sink;
    if (kill?.fired !== true) return false;
    return sink === undefined || sink.received.some((m) => headerOf(m.raw, 'X-Outbox-Id') === kill.pk && headerOf(m.raw, 'X-Outbox-Table') === this.o.tables.outbox);
  }

  start(): void {
    // The stream's reads are the sender's: in AWS its event source mapping reads with the function's role.
    asFunction('sender', () => this.stream.start());
  }


  async reconcileOnce(): Promise<ReconcileReport> {
    const waiters = this.passWaiters.splice(0);
    try {
      const r = await asFunction('reconciler', () => this.reconciler(undefined, this.invocation()));
      this.reconciles.push(r);
      for (const w of waiters) w.resolve(r);
      return r;
    } catch (e) {
      for (const w of waiters) w.reject(e);
      throw e;
    }
  }

  /** One collector run; none for a workload without documents. */
  async collectOnce(minAgeMs: number): Promise<CollectReport | undefined> {
    const catalog = this.o.catalog;
    if (catalog === undefined) return undefined;
    const prefix = `${this.o.set}/${catalog.prefix}`;
    const collector: CollectorHandler = createCollectorHandler({
      doc: this.o.dynamo.doc,
      tables: this.o.tables,
      store: this.o.effects.store,
      pages: this.o.effects.store,
      prefix,
      refOf: (key) => (key.startsWith(`${this.o.set}/`) ? catalog.refOf(key.slice(this.o.set.length + 1), this.o.tables) : undefined),
      clock: this.o.clock,
      telemetry: inLane(this.o.telemetry, 'collector'),
      minAgeMs,
      ...(this.o.fenceKeyPrefix === undefined ? {} : { fenceKeyPrefix: this.o.fenceKeyPrefix }),
    });
    const r = await asFunction('collector', () => collector(undefined, this.invocation()));
    this.collects.push(r);
    return r;
  }

  async stop(): Promise<void> {
    await this.stream.stop();
  }

  /** The reconciler and the collector on their schedules (EventBridge Scheduler in AWS), and the providers' outage. */
  background(collectAfterMs: number): { stop(): Promise<void> } {
    const { clock, leaseMs } = this.o;
    const stop = new AbortController();
    const every = async (ms: number, task: () => Promise<unknown>) => {
      for (;;) {
        try {
          await clock.sleep(ms, stop.signal);
        } catch {
          return;
        }
        await task().catch(() => undefined);
      }
    };
    const down = setTimeout(() => this.providersDown(leaseMs * 2), leaseMs);
    this.scheduled = true;
    const loops = [every(this.reconcileEveryMs, () => this.reconcileOnce()), every(leaseMs * 3, () => this.collectOnce(collectAfterMs))];
    return {
      stop: async () => {
        clearTimeout(down);
        stop.abort();
        await Promise.all(loops);
        this.scheduled = false;
      },
    };
  }

  /** The reconciler's schedule scaled to the run's lease: as many passes per lease as the stack's (every minute, a 30 s lease). */
  get reconcileEveryMs(): number {
    return Math.round((this.o.leaseMs * DEPLOYED_DEFAULTS.reconcilerIntervalMs) / DEPLOYED_DEFAULTS.leaseDurationMs);
  }

  /** The next reconciler pass: the scheduled one while the schedule runs, else one now. */
  private nextPass(): Promise<ReconcileReport> {
    if (!this.scheduled) return this.reconcileOnce();
    return new Promise((resolve, reject) => this.passWaiters.push({ resolve, reject }));
  }

  /**
   * After the last unit: until every outbox item is delivered or given up, or none has been for
   * `stallMs` (not a budget for the whole delivery: a big run, or a busy laptop, delivers for
   * longer than that while it still moves), then the orphans' collection. Returns when the
   * delivery ended (monotonic) and how many items it left unsent, so the run can report the
   * delivery's time apart from the collection's wait.
   */
  async settle(stallMs: number, collectAfterMs: number): Promise<{ at: number; unsent: number }> {
    const { clock, leaseMs } = this.o;
    let last = -1;
    let movedAt = clock.monotonicNow();
    let unsent = 0;
    for (;;) {
      // The stream delivers on its own while it runs; the reconciler passes on its schedule (each pass an event this waits for).
      if (!this.stream.running) await asFunction('sender', () => this.stream.drain(1)).catch(() => undefined);
      const r = await this.nextPass();
      if (this.stream.backlog === 0 && r.oldestUnsentAgeMs === 0) {
        unsent = 0;
        break;
      }
      unsent = await this.unsent();
      if (unsent !== last) [last, movedAt] = [unsent, clock.monotonicNow()];
      if (clock.monotonicNow() - movedAt > stallMs) break;
      if (!this.scheduled) await clock.sleep(Math.round(leaseMs / 2));
    }
    const at = clock.monotonicNow();
    await clock.sleep(collectAfterMs);
    await this.collectOnce(collectAfterMs);
    return { at, unsent };
  }

  /** Outbox items not yet sent (nor given up): the reconciler's sparse index holds exactly those. */
  async unsent(): Promise<number> {
    return countUnsent(this.o.dynamo.doc, this.o.tables.outbox);
  }

  /** Every outbox item, sent or not (read once, after the last unit, when no more are created). */
  async items(): Promise<number> {
    let n = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.o.dynamo.doc.send(new ScanCommand({ TableName: this.o.tables.outbox, Select: 'COUNT', ExclusiveStartKey: start }));
      n += page.Count ?? 0;
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    return n;
  }

  summary() {
    const sum = (k: 'fromRecord' | 'resent' | 'delivered' | 'unknown') => this.reconciles.reduce((n, r) => n + r[k], 0);
    return {
      faults: this.fired,
      notInjected: this.notInjected,
      senderKilled: this.senderKilled,
      reconciled: { fromRecord: sum('fromRecord'), resent: sum('resent'), delivered: sum('delivered'), unknown: sum('unknown') },
      collected: this.collects.reduce((n, r) => n + r.deleted, 0),
      streamDeadLetters: this.stream.deadLetters.length,
    };
  }

  /** How old a SENDING claim must be before the reconciler may take it over (the checker holds it to this). */
  private get claimTimeoutMs(): number {
    // Above a send's longest life (the adapters' timeout), as the stack's is above the sender's timeout.
    return Math.max(this.o.leaseMs * 2, this.o.effects.sendTimeoutMs * 2);
  }

  /** What the checker reads: the bucket, the providers' own records, and the claim timeout takeovers must respect. */
  sources(): EffectsSources {
    const e = this.o.effects;
    return {
      ...(this.o.catalog === undefined ? {} : { s3: { client: e.s3, bucket: e.bucket, set: this.o.set, prefix: this.o.catalog.prefix } }),
      claimTimeoutMs: this.claimTimeoutMs,
      ...(e.sink === undefined ? { unread: { DELIVERY: [`emails: ${e.emailName} keeps no record this run can read, so the messages it received per outbox id are not counted (a duplicate or a lost email would not show)`] } } : { mails: e.sink.received }),
      payments: [...e.payments.records.values()],
      ...(e.payments.keyRetentionMs === undefined ? {} : { paymentsKeyRetentionMs: e.payments.keyRetentionMs }),
      ...this.providerRecords(),
    };
  }

  /** The providers' own records of their fault plan: the trouble events they emitted, what they refused for good, their counters. */
  private providerRecords(): Pick<EffectsSources, 'troubleEvents' | 'refusedForGood' | 'providerFaults'> {
    const e = this.o.effects;
    const troubleEvents = (e.sink?.events ?? []).flatMap((ev) => {
      const outboxId = headerOf(ev.message.raw, 'X-Outbox-Id');
      const outboxTable = headerOf(ev.message.raw, 'X-Outbox-Table');
      if (ev.type === 'Send' || outboxId === undefined || outboxTable === undefined) return [];
      return [{ outboxId, outboxTable, event: ev.type === 'Complaint' ? ('COMPLAINT' as const) : ('BOUNCE' as const) }];
    });
    // The payment provider's refusals for good: a key reused with other parameters, a request turned away to another location.
    const refusedForGood = new Set([...[...e.payments.records.values()].filter((r) => (r.refused > 0 || r.declined !== undefined) && r.outboxId !== undefined).map((r) => r.outboxId!), ...e.payments.redirected]);
    const providerFaults: Record<string, number> = { ...e.payments.fired };
    for (const [k, v] of Object.entries(e.sink?.fired ?? {})) providerFaults[k] = (providerFaults[k] ?? 0) + v;
    return { troubleEvents, refusedForGood, providerFaults };
  }
}
