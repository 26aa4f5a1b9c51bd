/**
 * What the external-effect functions share, from the environment (lib/workflow/config.ts ENV):
 * the documents bucket (the worker puts, the collector deletes), and the outbox sender's
 * providers: SES v2 with the configuration set that publishes SEND events, and the payment
 * provider's endpoint when one is configured.
 */
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { decimal, DEFAULT_KEY_RETENTION_MARGIN_MS, ENV, httpUrl, integer, Pacer, required, type DocumentTarget, type ReconcilerDeps, type SenderDeps, type Telemetry } from '../lib/workflow/index.js';
import { FetchHttpProvider, S3ObjectStore, s3Client, SesEmailProvider } from '../lib/workflow/adapters/index.js';
import { PAYMENTS_TARGET } from '../lib/workloads/invoices.js';
import { ConfigError } from '../lib/protocol/index.js';
import type { Commons, Env } from './commons.js';

export function documentsFromEnv(env: Env, tracer?: Tracer): DocumentTarget & { store: S3ObjectStore } {
  const bucket = required(env, ENV.documentsBucket);
  const endpoint = httpUrl(env, ENV.s3Endpoint, { optional: true });
  const s3 = s3Client(endpoint === undefined ? {} : { endpoint });
  tracer?.captureAWSv3Client(s3);
  const set = env[ENV.documentSet];
  return { store: new S3ObjectStore(s3, bucket), ...(set === undefined || set === '' ? {} : { set }) };
}

/**
 * The claim timeout the reconciler works with, checked against the sender's own life: a sender
 * lives as long as its function's timeout, so a timeout at or above the claim timeout would let
 * the reconciler take a live sender's claim and both send. Refused at start-up, before any run,
 * by the sender and the reconciler alike (the stack passes both the same two values).
 */
function claimTimeoutFromEnv(env: Env): number {
  const claimTimeoutMs = integer(env, ENV.reconcileClaimTimeoutMs, 300_000, 1_000, 86_400_000);
  const senderTimeoutMs = integer(env, ENV.senderTimeoutMs, 60_000, 1_000, 900_000);
  if (claimTimeoutMs <= senderTimeoutMs) {
    throw new ConfigError(ENV.reconcileClaimTimeoutMs, `must be above the sender's timeout (${ENV.senderTimeoutMs} ${senderTimeoutMs} ms), got ${claimTimeoutMs} ms: a live sender's claim would be taken over`);
  }
  return claimTimeoutMs;
}

export function senderFromEnv(env: Env, commons: Commons, telemetry: Telemetry, tracer?: Tracer): SenderDeps {
  const ses = SesEmailProvider.client();
  tracer?.captureAWSv3Client(ses);
  const payments = httpUrl(env, ENV.paymentsUrl, { optional: true });
  // One container serves one invocation at a time: its pacer is that invocation's share of the account's rate.
  const rate = decimal(env, ENV.sendRatePerSecond, 0.001, 10_000);
  return {
    doc: commons.doc,
    table: commons.tables.outbox,
    clock: commons.clock,
    telemetry,
    email: new SesEmailProvider(ses, required(env, ENV.sesConfigurationSet)),
    // Stripe keeps an Idempotency-Key 24 h; a provider that keeps it otherwise says so here.
    ...(payments === undefined ? {} : { http: { [PAYMENTS_TARGET]: new FetchHttpProvider(payments, 10_000, { keyRetentionMs: integer(env, ENV.paymentsKeyRetentionMs, 86_400_000, 60_000, 31 * 86_400_000) }) } }),
    keyRetentionMarginMs: integer(env, ENV.keyRetentionMarginMs, DEFAULT_KEY_RETENTION_MARGIN_MS, 1_000, 86_400_000),
    from: required(env, ENV.senderAddress),
    claimTimeoutMs: claimTimeoutFromEnv(env),
    sendTimeoutMs: 10_000,
    ...(rate === undefined ? {} : { pacer: new Pacer(commons.clock, rate) }),
    backoff: { throttleBaseMs: integer(env, ENV.throttleBackoffMs, 1_000, 10, 3_600_000), heldRetryMs: integer(env, ENV.heldRetryMs, 300_000, 1_000, 86_400_000) },
  };
}

/** The reconciler: the sender's providers and checks, and its own thresholds. */
export function reconcilerFromEnv(env: Env, sender: SenderDeps): ReconcilerDeps {
  return {
    ...sender,
    pendingAfterMs: integer(env, ENV.reconcilePendingAfterMs, 600_000, 1_000, 86_400_000),
    claimTimeoutMs: claimTimeoutFromEnv(env),
    // SES publishes SEND events within seconds to minutes; an hour is a conservative bound.
    recordLagMs: integer(env, ENV.providerRecordLagMs, 3_600_000, 1_000, 86_400_000),
  };
}
