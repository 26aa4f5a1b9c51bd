/**
 * What the external-effect functions share, from the environment (lib/workflow/config.ts ENV):
 * the documents bucket (the worker puts, the collector deletes), and the outbox sender's
 * providers, as the workload declares them: SES v2 with the configuration set that publishes
 * SEND events when it sends email (to the mailbox simulator unless `LIVE_TARGETS` names `email`),
 * and each http target's endpoint (`<TARGET>_URL`): a live target's provider, its API key read
 * from the secret `<TARGET>_SECRET_ARN` names, or the stack's sandbox provider, whose calls are
 * signed (SigV4) for its function URL.
 */
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { decimal, DEFAULT_HTTP_KEY_RETENTION_MS, DEFAULT_SEND_TIMEOUT_MS, DEFAULT_KEY_RETENTION_MARGIN_MS, EMAIL_TARGET, ENV, liveTargetsOf, SandboxEmail, targetsOf, httpTargetEnv, httpUrl, integer, Pacer, required, type DocumentTarget, type EmailProvider, type HttpProvider, type ReconcilerDeps, type SenderDeps, type Telemetry, type Workload } from '../lib/workflow/index.js';
import { FetchHttpProvider, S3ObjectStore, s3Client, SecretsManagerCredential, SesEmailProvider, signedFetch } from '../lib/workflow/adapters/index.js';
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
/** The longest one send takes (every provider client is held to it), and what a claim must outlive before it is sent under. */
const SEND_TIMEOUT_MS = DEFAULT_SEND_TIMEOUT_MS;

function claimTimeoutFromEnv(env: Env): number {
  const claimTimeoutMs = integer(env, ENV.reconcileClaimTimeoutMs, 300_000, 1_000, 86_400_000);
  const senderTimeoutMs = integer(env, ENV.senderTimeoutMs, 60_000, 1_000, 900_000);
  if (claimTimeoutMs <= senderTimeoutMs) {
    throw new ConfigError(ENV.reconcileClaimTimeoutMs, `must be above the sender's timeout (${ENV.senderTimeoutMs} ${senderTimeoutMs} ms), got ${claimTimeoutMs} ms: a live sender's claim would be taken over`);
  }
  return claimTimeoutMs;
}

export function senderFromEnv(env: Env, commons: Commons, telemetry: Telemetry, tracer?: Tracer): SenderDeps {
  const { email, http } = providersFromEnv(env, commons.workload, tracer);
  // One container serves one invocation at a time: its pacer is that invocation's share of the account's rate.
  const rate = decimal(env, ENV.sendRatePerSecond, 0.001, 10_000);
  return {
    doc: commons.doc,
    table: commons.tables.outbox,
    clock: commons.clock,
    telemetry,
    ...(email === undefined ? {} : { email }),
    http,
    keyRetentionMarginMs: integer(env, ENV.keyRetentionMarginMs, DEFAULT_KEY_RETENTION_MARGIN_MS, 1_000, 86_400_000),
    ...(email === undefined ? {} : { from: required(env, ENV.senderAddress) }),
    claimTimeoutMs: claimTimeoutFromEnv(env),
    sendTimeoutMs: SEND_TIMEOUT_MS,
    ...(commons.workload.steps === undefined ? {} : { steps: commons.workload.steps }),
    ...(rate === undefined ? {} : { pacer: new Pacer(commons.clock, rate) }),
    backoff: { throttleBaseMs: integer(env, ENV.throttleBackoffMs, 1_000, 10, 3_600_000), heldRetryMs: integer(env, ENV.heldRetryMs, 300_000, 1_000, 86_400_000) },
  };
}

/**
 * The workload's providers: SES only for a workload that sends email (its configuration set is
 * then required), and one endpoint per http target, from `<TARGET>_URL` (absent: that target's
 * items are held, unsent and alarmed, and sent once one is configured), with the key retention its
 * descriptor states unless `<TARGET>_KEY_RETENTION_MS` says otherwise.
 */
function providersFromEnv(env: Env, workload: Workload<any>, tracer?: Tracer): { email?: EmailProvider; http: Record<string, HttpProvider> } {
  const live = liveTargetsOf(env[ENV.liveTargets], ENV.liveTargets, targetsOf(workload));
  const http: Record<string, HttpProvider> = {};
  let secrets: ReturnType<typeof SecretsManagerCredential.client> | undefined;
  for (const t of workload.outbox.http) {
    const names = httpTargetEnv(t.target);
    const url = httpUrl(env, names.url, { optional: true });
    if (url === undefined) continue;
    const keyRetentionMs = integer(env, names.keyRetentionMs, t.keyRetentionMs ?? DEFAULT_HTTP_KEY_RETENTION_MS, 60_000, 31 * 86_400_000);
    if (live.has(t.target)) {
      // A live provider takes its API key on every call: read from the target's secret, never from the environment.
      const credential = new SecretsManagerCredential(secrets ??= SecretsManagerCredential.client(), required(env, names.secretArn));
      http[t.target] = new FetchHttpProvider(url, SEND_TIMEOUT_MS, { keyRetentionMs, declines: t.declines, credential });
    } else {
      // A target that is not live is the stack's sandbox provider, behind a function URL that takes only signed calls.
      http[t.target] = new FetchHttpProvider(url, SEND_TIMEOUT_MS, { keyRetentionMs, declines: t.declines }, signedFetch({ region: required(env, 'AWS_REGION') }));
    }
  }
  if (secrets !== undefined) tracer?.captureAWSv3Client(secrets);
  if (!workload.outbox.email) return { http };
  const ses = SesEmailProvider.client();
  tracer?.captureAWSv3Client(ses);
  const email = new SesEmailProvider(ses, required(env, ENV.sesConfigurationSet), undefined, SEND_TIMEOUT_MS);
  // Not live: every email goes to SES's mailbox simulator, whatever recipient the item names.
  return { email: live.has(EMAIL_TARGET) ? email : new SandboxEmail(email), http };
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
