/**
 * The external effects of a simulated run, in memory: the counterpart of cli/local/effects-env.ts
 * `startEffects`, returning the same `Effects`, so RunEffects and the chaos harness take either.
 * The stand-ins are the local servers' own cores (cli/local/s3-core.ts, sink-core.ts,
 * payments-core.ts) behind in-memory transports for the real clients: S3Client and SESv2Client on
 * SDK handlers, FetchHttpProvider on a fetch. Email goes the production way, SesEmailProvider over
 * SESv2Client, into the sink's core, whose events reach the recorder as the embedded sink's do.
 *
 * No sockets, no randomness of its own (ids count), no timers of its own: every delay (the
 * record's EVENT_DELAY_MS, the feedback delay, the adapter's wait between throttled attempts, a
 * paused account's window, key retention) is the injected clock's. A request no stand-in can
 * answer throws SimUnansweredError and makes `close()` throw it again (errors.ts says why).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { asFunction } from '../../../cli/local/aws-calls.js';
import { DEFAULT_BUCKET, EVENT_DELAY_MS, LOCAL_API_KEY, SENDER_ADDRESS, sinkEventDetail, type Effects, type EffectsOptions } from '../../../cli/local/effects-env.js';
import { PaymentsCore } from '../../../cli/local/payments-core.js';
import type { PaymentsProvider } from '../../../cli/local/payments-provider.js';
import { S3Core } from '../../../cli/local/s3-core.js';
import type { S3Endpoint } from '../../../cli/local/s3-endpoint.js';
import { SinkCore, type SinkCoreOptions } from '../../../cli/local/sink-core.js';
import type { SmtpSink } from '../../../cli/local/smtp-sink.js';
import { FencedError, systemClock, type Clock } from '../../../lib/protocol/index.js';
import { FetchHttpProvider, S3ObjectStore, SesEmailProvider } from '../../../lib/workflow/adapters/index.js';
import { recordSesEvent, type HttpTargetSpec } from '../../../lib/workflow/index.js';
import type { ShortCutOptions } from '../short-cut.js';
import { Unanswered } from './errors.js';
import { simFetch, SIM_PAYMENTS_URL } from './fetch.js';
import { sequentialIds } from './ids.js';
import { simS3Client, simS3Handler, SIM_S3_URL } from './s3-handler.js';
import { simSesClient, simSesHandler, SIM_SES_URL } from './ses-handler.js';

export { SimNetworkError, SimUnansweredError, Unanswered } from './errors.js';
export { simFetch, SIM_PAYMENTS_URL } from './fetch.js';
export { simS3Client, simS3Handler, SIM_S3_URL } from './s3-handler.js';
export { simSesClient, simSesHandler, SIM_SES_URL } from './ses-handler.js';

export interface SimEffectsOptions extends Omit<EffectsOptions, 's3Endpoint' | 'smtp'> {
  /** Every delay of the stand-ins and the record (default the process's clock, which a simulator may have made virtual). */
  clock?: Clock;
  /** How long after the Send a Bounce or a Complaint is emitted (the sink's default, 20 ms). */
  feedbackDelayMs?: number;
  /** The configuration set SendEmail names (default `sim`). */
  configurationSet?: string;
  /** How the S3 and SES clients send (test/sim/effects/short-cut.ts) and the payment provider's fetch reads a call (fetch.ts): the short-cut (default), compared with the full path, or the full path. */
  shortCut?: 'sdk' | ShortCutOptions;
}

/** Effects, with the in-memory stand-ins always present (the embedded S3 and sink are never replaced by real ones here). */
export interface SimEffects extends Effects {
  readonly embeddedS3: S3Endpoint;
  readonly sink: SmtpSink;
  /** The payment provider's core itself (what the in-memory fetch answers from). */
  readonly payments: PaymentsCore & PaymentsProvider;
  /** The requests no stand-in could answer (close() throws the first). */
  readonly unanswered: Unanswered;
  /** The SES v2 client the email adapter sends with. */
  readonly ses: import('@aws-sdk/client-sesv2').SESv2Client;
}

/** The in-memory sink has no SMTP address: a caller that asks for one would open a socket. */
export class SimNoSocketError extends FencedError {
  readonly code = 'SIM_NO_SOCKET';
  constructor(readonly what: string) {
    super(`the in-memory sink has no ${what}: it answers SESv2Client in memory (use Effects.email), never over SMTP`);
  }
}

// The same as effects-env.ts's (not exported there): the invoice sample's `payments` at `/charges`,
// a fixed target at `/<target>`, a per-item one at the provider's root.
const DEFAULT_TARGETS: readonly HttpTargetSpec[] = [{ target: 'payments', description: 'the payment provider' }];
const endpointOf = (url: string, t: HttpTargetSpec): string => (t.destination === 'per-item' ? url : `${url}/${t.target === 'payments' ? 'charges' : t.target}`);

/** The email stand-in's core as the Effects' `sink`: its record and faults; no host or port to connect to. */
function memorySink(opts: SinkCoreOptions): SinkCore & SmtpSink {
  const core = new SinkCore(opts);
  const noSocket = (what: string) => () => {
    throw new SimNoSocketError(what);
  };
  return Object.defineProperties(core, { host: { get: noSocket('host'), enumerable: false }, port: { get: noSocket('port'), enumerable: false } }) as SinkCore & SmtpSink;
}

export function simEffects(opts: SimEffectsOptions): SimEffects {
  const clock = opts.clock ?? systemClock;
  const unanswered = new Unanswered();
  const s3Core = new S3Core({ now: () => clock.wallNow(), ids: sequentialIds(0x53) });
  const bucket = opts.bucket ?? DEFAULT_BUCKET;
  // CreateBucket, applied directly: the Effects come back ready, without a request to await.
  s3Core.buckets.set(bucket, new Map());
  // The SDK's default attempts, as the local client (lib's s3Client): a lost put answer is resent and meets 412.
  const s3: S3Client = simS3Client(simS3Handler(s3Core, unanswered), { maxAttempts: 3, ...(opts.shortCut === undefined ? {} : { shortCut: opts.shortCut }) });
  const events = new Set<Promise<unknown>>();
  const sink = memorySink({
    clock,
    ids: sequentialIds(0xe5),
    ...(opts.feedbackDelayMs === undefined ? {} : { feedbackDelayMs: opts.feedbackDelayMs }),
    // The provider's record through the recorder, after EVENT_DELAY_MS, as startEffects feeds the
    // embedded sink's (cli/local/effects-env.ts: the same steps; a record that fails to land is lost).
    onEvent: (e) => {
      const detail = sinkEventDetail(e);
      if (detail === undefined) return;
      const later: Promise<unknown> = clock
        .sleep(opts.eventDelayMs ?? EVENT_DELAY_MS)
        .then(() => asFunction('recorder', () => (opts.record ?? recordSesEvent)({ doc: opts.doc, table: detail.table, steps: opts.steps, clock }, detail.detail)))
        .catch(() => undefined)
        .finally(() => events.delete(later));
      events.add(later);
    },
  });
  const ses = simSesClient(simSesHandler(sink, unanswered, { now: () => clock.wallNow() }), opts.shortCut === undefined ? {} : { shortCut: opts.shortCut });
  const sendTimeoutMs = opts.sendTimeoutMs ?? 1_000;
  const retention = opts.paymentsKeyRetentionMs === undefined ? {} : { keyRetentionMs: opts.paymentsKeyRetentionMs };
  const paymentsCore = new PaymentsCore({ ...retention, now: () => clock.wallNow(), ids: sequentialIds(0xc4), apiKey: LOCAL_API_KEY });
  const credential = { value: async () => LOCAL_API_KEY };
  const fetchFn = simFetch(paymentsCore, unanswered, SIM_PAYMENTS_URL, opts.shortCut === 'sdk' ? 'none' : opts.shortCut?.compare === undefined ? {} : { compare: opts.shortCut.compare });
  const payments = Object.assign(paymentsCore, { url: SIM_PAYMENTS_URL, close: async () => undefined });
  const embeddedS3: S3Endpoint = Object.assign(s3Core, { url: SIM_S3_URL, close: async () => undefined });
  return {
    s3,
    bucket,
    store: new S3ObjectStore(s3, bucket),
    s3Url: SIM_S3_URL,
    embeddedS3,
    email: new SesEmailProvider(ses, opts.configurationSet ?? 'sim', (ms) => clock.sleep(ms)),
    emailName: `in-memory SES v2 ${SIM_SES_URL}`,
    sink,
    payments,
    http: Object.fromEntries((opts.httpTargets ?? DEFAULT_TARGETS).map((t) => [t.target, new FetchHttpProvider(endpointOf(SIM_PAYMENTS_URL, t), sendTimeoutMs, { ...retention, declines: t.declines, credential }, fetchFn)])),
    sendTimeoutMs,
    from: SENDER_ADDRESS,
    unanswered,
    ses,
    // Waits for the records in flight (on the injected clock: a simulator keeps its time moving meanwhile).
    close: async () => {
      // The Bounce and Complaint events come after their Send: let them reach the recorder first.
      await sink.settled();
      await Promise.allSettled([...events]);
      s3.destroy();
      ses.destroy();
      await sink.close();
      unanswered.check();
    },
  };
}
