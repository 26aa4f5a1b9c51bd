/**
 * The external effects of a local run: the documents bucket (the embedded S3 endpoint, or
 * `--s3-endpoint URL --bucket NAME`), the email provider (the embedded SMTP sink, or
 * `--smtp HOST:PORT`) and the payment provider (the embedded one). The embedded sink's events are
 * the provider's own record: each (a Send per message taken, a Bounce or a Complaint after it,
 * lost as SES's best-effort publishing may lose one) goes, in SES's EventBridge `detail` shape,
 * through the recorder (the code SES events go through in AWS) onto the outbox item it names.
 */
import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, HeadBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError } from '../../lib/protocol/index.js';
import { FetchHttpProvider, S3ObjectStore, s3Client, SmtpEmailProvider } from '../../lib/workflow/adapters/index.js';
import { messageIdentity, recordSesEvent, type EmailProvider, type FollowUpStep, type HttpProvider, type HttpTargetSpec } from '../../lib/workflow/index.js';
import { asFunction } from './aws-calls.js';
import { startPaymentsProvider, type PaymentsProvider } from './payments-provider.js';
import { startS3Endpoint, type S3Endpoint } from './s3-endpoint.js';
import { headerOf, startSmtpSink, type SinkEvent, type SmtpSink } from './smtp-sink.js';


/** The local provider's API key: made up, never a real provider's. */
export const LOCAL_API_KEY = 'sk_test_local_fenced_workflow';
export interface EffectsOptions {
  /** The DynamoDB client the recorder writes with. */
  doc: DynamoDBDocumentClient;
  s3Endpoint?: string;
  bucket?: string;
  /** HOST:PORT of an SMTP server to deliver to instead of the embedded sink. */
  smtp?: { host: string; port: number };
  /** How long after the sink's answer its record reaches the recorder (default EVENT_DELAY_MS). */
  eventDelayMs?: number;
  /** The payment provider forgets keys this long after it stored them (scaled; Stripe's 24 h), and says so to the sender. Default: kept for good. */
  paymentsKeyRetentionMs?: number;
  /** The providers' adapters give up on an answer after this (ms); the claim timeout must outlive it. Default 1 s: loopback sends take milliseconds. */
  sendTimeoutMs?: number;
  /**
   * The workload's http targets (Workload.outbox.http), each served by the embedded provider: a
   * fixed one at `/<target>`, a per-item one at the provider's root (the item's path below it).
   * Default: the invoice sample's `payments` at `/charges`.
   */
  httpTargets?: readonly HttpTargetSpec[];
  /** The workload's steps: the recorder creates the follow-ups of a hard bounce (its `bounced` steps). */
  steps?: readonly FollowUpStep[] | undefined;
  /** The recorder's code (default recordSesEvent): a negative control passes a broken one. */
  record?: typeof recordSesEvent;
}

/**
 * SES publishes a message's Send event asynchronously (event publishing, through EventBridge),
 * after SendEmail has answered: the sender has normally marked the item SENT by then, and the
 * recorder writes nothing. The sink plays that order: its record follows its answer by this much
 * (well inside the reconciler's record lag, leaseMs / 2 locally), so a sender killed after the
 * send still leaves a record, and a recorder that arrives first still finds the item unsent.
 */
export const EVENT_DELAY_MS = 100;

export interface Effects {
  readonly s3: S3Client;
  readonly bucket: string;
  readonly store: S3ObjectStore;
  readonly s3Url: string;
  readonly embeddedS3?: S3Endpoint;
  readonly email: EmailProvider;
  readonly emailName: string;
  /** The embedded sink (its record); undefined with --smtp: no record the reconciler or checker can read. */
  readonly sink?: SmtpSink;
  readonly payments: PaymentsProvider;
  /** The adapters' answer timeout (EffectsOptions.sendTimeoutMs). */
  readonly sendTimeoutMs: number;
  readonly http: Readonly<Record<string, HttpProvider>>;
  readonly from: string;
  close(): Promise<void>;
}

export const SENDER_ADDRESS = 'billing@fenced-workflow.example';
export const DEFAULT_BUCKET = 'fenced-workflow-documents';

/** `HOST:PORT` for --smtp. */
export function smtpFlag(raw: string | undefined): { host: string; port: number } | undefined {
  if (raw === undefined) return undefined;
  const m = /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(raw);
  const port = Number(m?.[2]);
  if (m === null || port < 1 || port > 65_535) throw new InvalidInputError('--smtp', `must be HOST:PORT, got "${raw}"`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

/** S3's bucket naming rule (the common part): 3-63 of [a-z0-9.-], starting and ending with a letter or digit. */
export function bucketFlag(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(raw)) throw new InvalidInputError('--bucket', `must be an S3 bucket name (3-63 chars of [a-z0-9.-]), got "${raw}"`);
  return raw;
}

/** Refuses an --smtp HOST:PORT that does not greet as an SMTP server, before the run sends it anything. */
async function checkSmtp(smtp: { host: string; port: number }): Promise<void> {
  const conn = new SMTPConnection({ host: smtp.host, port: smtp.port, connectionTimeout: 3_000, greetingTimeout: 3_000, socketTimeout: 3_000 });
  try {
    await new Promise<void>((resolve, reject) => {
      conn.once('error', reject);
      // A server that closes instead of greeting (nodemailer reports it as the end of the connection).
      conn.once('end', () => reject(new TypeError('the connection closed before a greeting')));
      conn.connect(() => resolve());
    });
  } catch (e) {
    throw new InvalidInputError('--smtp', `${smtp.host}:${smtp.port} did not greet as an SMTP server (${(e as Error).message}); start one there (npm run cli -- smtp-sink --port ${smtp.port}) or leave out --smtp`);
  } finally {
    conn.close();
  }
}

/** The EventBridge `detail` SES event publishing sends (its Send, Bounce and Complaint shapes), as the recorder reads it. */
export interface SinkSesDetail {
  readonly eventType: SinkEvent['type'];
  readonly mail: { readonly timestamp: string; readonly messageId: string; readonly destination: readonly string[]; readonly tags: Readonly<Record<string, readonly string[]>> };
  readonly send?: Record<string, never>;
  readonly bounce?: {
    readonly feedbackId: string;
    readonly bounceType: string;
    readonly bounceSubType: string;
    readonly bouncedRecipients: readonly { readonly emailAddress: string; readonly action: 'failed'; readonly status: string; readonly diagnosticCode: string }[];
    readonly timestamp: string;
    readonly reportingMTA: string;
  };
  readonly complaint?: {
    readonly feedbackId: string;
    readonly complainedRecipients: readonly { readonly emailAddress: string }[];
    readonly complaintFeedbackType: 'abuse';
    readonly timestamp: string;
    readonly arrivalDate: string;
  };
}

/**
 * The SES detail of one sink event, with the outbox table it names; undefined for a message that
 * names no outbox item (another sender's mail). The tags are the ones the SES adapter sets
 * (outboxId, outboxTable, tag-safe), read here from the identity headers the message carries.
 */
export function sinkEventDetail(e: SinkEvent): { table: string; detail: SinkSesDetail } | undefined {
  const id = headerOf(e.message.raw, 'X-Outbox-Id');
  const table = headerOf(e.message.raw, 'X-Outbox-Table');
  if (id === undefined || table === undefined) return undefined;
  const now = new Date().toISOString();
  const mail = { timestamp: new Date(e.message.at).toISOString(), messageId: e.message.queueId, destination: e.message.to, tags: { outboxId: [messageIdentity.tag(id)], outboxTable: [messageIdentity.tag(table)] } };
  const feedbackId = `${e.message.queueId}-${randomUUID()}`;
  switch (e.type) {
    case 'Send':
      return { table, detail: { eventType: 'Send', mail, send: {} } };
    case 'Bounce':
      return {
        table,
        detail: {
          eventType: 'Bounce',
          mail,
          bounce: {
            feedbackId,
            bounceType: e.bounceType ?? 'Permanent',
            bounceSubType: e.bounceSubType ?? 'General',
            bouncedRecipients: e.recipients.map((emailAddress) => ({ emailAddress, action: 'failed', status: '5.1.1', diagnosticCode: 'smtp; 550 5.1.1 user unknown' })),
            timestamp: now,
            reportingMTA: 'dsn; local-sink.fenced-workflow.example',
          },
        },
      };
    case 'Complaint':
      return { table, detail: { eventType: 'Complaint', mail, complaint: { feedbackId, complainedRecipients: e.recipients.map((emailAddress) => ({ emailAddress })), complaintFeedbackType: 'abuse', timestamp: now, arrivalDate: now } } };
  }
}

const DEFAULT_TARGETS: readonly HttpTargetSpec[] = [{ target: 'payments', description: 'the payment provider' }];
/** Where the embedded provider serves a target: `payments` keeps its `/charges`, the rest their own name, per-item ones the root. */
const endpointOf = (url: string, t: HttpTargetSpec): string => (t.destination === 'per-item' ? url : `${url}/${t.target === 'payments' ? 'charges' : t.target}`);

export async function startEffects(opts: EffectsOptions): Promise<Effects> {
  if (opts.smtp !== undefined) await checkSmtp(opts.smtp);
  const embeddedS3 = opts.s3Endpoint === undefined ? await startS3Endpoint() : undefined;
  const s3Url = opts.s3Endpoint ?? embeddedS3!.url;
  const s3 = s3Client({ endpoint: s3Url });
  const bucket = opts.bucket ?? DEFAULT_BUCKET;
  await ensureBucket(s3, bucket, s3Url);
  const events = new Set<Promise<unknown>>();
  const sink =
    opts.smtp === undefined
      ? await startSmtpSink({
          // The provider's record: the sink's events (SES event publishing's, Send then Bounce or
          // Complaint) through the same recorder code as SES events in AWS.
          onEvent: (e) => {
            const detail = sinkEventDetail(e);
            if (detail === undefined) return;
            // The recorder's invocation (SES events through EventBridge in AWS), after the answer. A
            // record that fails to land is a lost event (EventBridge gives up on a target too): the reconciler's case.
            const later: Promise<unknown> = new Promise((r) => setTimeout(r, opts.eventDelayMs ?? EVENT_DELAY_MS))
              .then(() => asFunction('recorder', () => (opts.record ?? recordSesEvent)({ doc: opts.doc, table: detail.table, steps: opts.steps }, detail.detail)))
              .catch(() => undefined)
              .finally(() => events.delete(later));
            events.add(later);
          },
        })
      : undefined;
  const smtp = opts.smtp ?? { host: sink!.host, port: sink!.port };
  const sendTimeoutMs = opts.sendTimeoutMs ?? 1_000;
  const email = new SmtpEmailProvider({ ...smtp, timeoutMs: sendTimeoutMs });
  const retention = opts.paymentsKeyRetentionMs === undefined ? {} : { keyRetentionMs: opts.paymentsKeyRetentionMs };
  // The local provider asks for an API key as a live one does; the providers carry it (their credential).
  const payments = await startPaymentsProvider({ ...retention, apiKey: LOCAL_API_KEY });
  const credential = { value: async () => LOCAL_API_KEY };
  return {
    s3,
    bucket,
    store: new S3ObjectStore(s3, bucket),
    s3Url,
    ...(embeddedS3 === undefined ? {} : { embeddedS3 }),
    email,
    emailName: opts.smtp === undefined ? `embedded SMTP sink ${smtp.host}:${smtp.port}` : `SMTP ${smtp.host}:${smtp.port}`,
    ...(sink === undefined ? {} : { sink }),
    payments,
    http: Object.fromEntries((opts.httpTargets ?? DEFAULT_TARGETS).map((t) => [t.target, new FetchHttpProvider(endpointOf(payments.url, t), sendTimeoutMs, { ...retention, declines: t.declines, credential })])),
    sendTimeoutMs,
    from: SENDER_ADDRESS,
    close: async () => {
      // The sink's Bounce and Complaint events come after its Send: let them reach the recorder first.
      await sink?.settled();
      await Promise.allSettled([...events]);
      s3.destroy();
      await Promise.all([embeddedS3?.close(), sink?.close(), payments.close()]);
    },
  };
}

async function ensureBucket(s3: S3Client, bucket: string, url: string): Promise<void> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
    return;
  } catch (e) {
    const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status !== 404) throw new InvalidInputError('--s3-endpoint', `${url} did not answer HeadBucket ${bucket} as S3 does (${(e as Error).name}: ${(e as Error).message}); start one there (npm run cli -- s3-endpoint) or leave out --s3-endpoint`);
  }
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
}
