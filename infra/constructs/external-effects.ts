/**
 * The external effects on AWS (DESIGN.md, External effects): the documents bucket (the
 * protected file), the SES identity and configuration set whose events record each delivery,
 * and the four functions around the Outbox table: the sender (the Outbox stream's INSERTs), the
 * reconciler and the collector (scheduled), the recorder (SES events through EventBridge: the
 * SEND that proves acceptance, and the bounces, complaints, rejections and delays the alarms count).
 *
 * Which of them exist is the workload's (its descriptor, lib/workflow/workload.ts): SES and the
 * recorder only for a workload that sends email, the bucket and the collector only for one that
 * writes documents, an endpoint variable per http target it declares. A stack holds no resource,
 * grant or alarm for an effect its workload never makes.
 *
 * The bucket refuses what the design forbids even to a principal that holds the permission: a
 * PutObject under the documents prefix without If-None-Match (an overwrite) and any delete by a
 * role other than the collector's. The prefix is the workload's (its processor's
 * `documents.prefix`): every statement and acknowledgement that names it takes it from there.
 */
import { CfnElement, Duration, Fn, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { AnyPrincipal, Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Secret, type ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { ConfigurationSet, DkimIdentity, EmailIdentity, EmailSendingEvent, EventDestination, Identity, type DkimRecord, type IEmailIdentity } from 'aws-cdk-lib/aws-ses';
import { EventBus } from 'aws-cdk-lib/aws-events';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ConfigError } from '../../lib/protocol/index.js';
import { DEFAULT_HTTP_KEY_RETENTION_MS, ENV, targetsOf, httpTargetEnv, isHttpUrl, OUTBOX_INDEX, type HttpTargetSpec, type Workload } from '../../lib/workflow/index.js';
import type { SandboxBehaviour } from '../../lib/workflow/adapters/index.js';
import { SandboxProvider } from './sandbox-provider.js';
import { deadLetterQueue } from './defaults.js';
import { fencedFunction, type FencedFunction } from './function.js';
import { validateEffects } from './settings.js';

/**
 * The SES events the configuration set publishes, and their EventBridge detail types (EventBridge
 * Events Reference, Amazon SES events): SEND, the reconciler's proof that SES accepted a message
 * (lib/workflow/effects/recorder.ts); BOUNCE, COMPLAINT and REJECT, trouble after acceptance that
 * the alarms count (a SENT item that bounced is not delivered) and SES's reputation rates weigh;
 * DELIVERY_DELAY, recorded on the item for whoever looks. Not DELIVERY: a write per email, and no
 * decision reads it.
 */
export const SES_EVENTS: readonly { readonly event: EmailSendingEvent; readonly detailType: string }[] = [
  { event: EmailSendingEvent.SEND, detailType: 'Email Sent' },
  { event: EmailSendingEvent.BOUNCE, detailType: 'Email Bounced' },
  { event: EmailSendingEvent.COMPLAINT, detailType: 'Email Complaint Received' },
  { event: EmailSendingEvent.REJECT, detailType: 'Email Rejected' },
  { event: EmailSendingEvent.DELIVERY_DELAY, detailType: 'Email Delivery Delayed' },
];

/** Outbox stream records per sender invocation (the rate check in settings.ts spaces them within its timeout). */
export const SENDER_BATCH_SIZE = 10;

/** What the effects are built from: the workload's outbox (email, http targets) and its documents. */
export type EffectsWorkload = Pick<Workload, 'name' | 'outbox' | 'steps'> & { readonly processor: Pick<Workload['processor'], 'documents'> };

export interface ExternalEffectsProps {
  /**
   * The workload: which effect functions and resources exist comes from it. SES (identity,
   * configuration set, the events rule) and the recorder only when it sends email; the bucket
   * and the collector only when its processor writes documents, every grant and bucket statement
   * naming its `documents.prefix`; one endpoint variable per http target it declares.
   */
  readonly workload: EffectsWorkload;
  readonly tables: Readonly<Record<'records' | 'fences' | 'jobs' | 'outbox', ITable>>;
  /**
   * The From address of every email (CDK context `senderAddress`): required when the workload
   * sends email, refused otherwise (a ConfigError: it would name an identity nothing sends from).
   */
  readonly senderAddress?: string;
  /** The SES identity it sends as. @default an email-address identity created for `senderAddress` (no DKIM) */
  readonly senderIdentity?: SenderIdentitySetting;
  /**
   * The targets that reach real recipients and providers: `email` (the workload's email) and
   * http target names. Every other target is in the sandbox: its emails go to SES's mailbox
   * simulator (lib/workflow/effects/sandbox.ts). A name the workload does not have is refused.
   * @default none: the stack deploys in the sandbox
   */
  readonly liveTargets?: readonly string[];
  /**
   * Each live http target's endpoint, by target name (the workload's `outbox.http`), passed to
   * the sender and the reconciler as `<TARGET>_URL` (httpTargetEnv): required for a live target,
   * refused for one in the sandbox. A name the workload does not declare is refused.
   */
  readonly httpTargets?: Readonly<Record<string, string>>;
  /**
   * The secret (its complete ARN) holding each live http target's API key, by target name. A live
   * target without one gets a secret the stack creates, holding a generated placeholder until the
   * operator puts the provider's key in it (the provider refuses the placeholder: its items are
   * held and alarmed). Only the sender and the reconciler may read it; its value is never in the
   * template or the environment.
   */
  readonly httpCredentials?: Readonly<Record<string, string>>;
  /**
   * How the sandbox provider (deployed when an http target is not live) misbehaves: shares of
   * keys declined, of requests throttled and failed before anything is performed.
   * @default a twentieth of the keys declined, nothing throttled or failed
   */
  readonly sandboxProvider?: Partial<Pick<SandboxBehaviour, 'declineShare' | 'throttleShare' | 'errorShare'>>;
  /** The environment of the workflow's functions (table names, epoch, WORKLOAD...). */
  readonly environment: Readonly<Record<string, string>>;
  readonly scheduleDeadLetterQueue: Queue;
  readonly services: Readonly<Record<'sender' | 'reconciler' | 'recorder' | 'collector', string>>;
  /**
   * When the reconciler takes over a SENDING claim: above the sender's timeout (1 minute), checked
   * at synth and by both functions at cold start. @default 5 minutes
   */
  readonly reconcileClaimTimeout?: Duration;
  /**
   * Sends per second each sender or reconciler invocation may make (CDK context
   * `sendRatePerSecond`): the account's MaxSendRate shared among the invocations that can run at
   * once. @default unpaced (a throttled answer still defers its item)
   */
  readonly sendRatePerSecond?: number;
}

/**
 * The SES identity the sender and the reconciler send as (CDK context `senderIdentity`,
 * `senderDomain`; docs/deploy.md, Sender identity):
 * - `address`: an email-address identity created for the sender address. SES verifies it by a
 *   link mailed to it; it cannot carry Easy DKIM (DKIM keys are DNS records, and an address has
 *   none of its own), so receivers see mail signed only by amazonses.com.
 * - `domain`: a domain identity created with Easy DKIM: the three CNAME records it outputs both
 *   verify the domain and let SES sign as it.
 * - `imported`: an identity that already exists in the account and region (created by hand or by
 *   another stack): the stack creates none, since a second AWS::SES::EmailIdentity for the same
 *   name fails with AlreadyExists.
 */
export type SenderIdentitySetting =
  | { readonly kind: 'address' }
  | { readonly kind: 'domain'; readonly domain: string }
  | { readonly kind: 'imported'; readonly name: string; readonly arn?: string };

type EffectFunctionName = 'Sender' | 'Reconciler' | 'Recorder' | 'Collector';

/** The From address the workload's email needs: required when it sends email, refused when it sends none. */
function senderAddressOf(props: ExternalEffectsProps): string | undefined {
  const { workload, senderAddress, senderIdentity } = props;
  if (workload.outbox.email) {
    if (senderAddress === undefined || senderAddress === '') throw new ConfigError('senderAddress', `is required: workload ${workload.name} sends email, and an SES identity is created for (or imported as) its From address`);
    return senderAddress;
  }
  // Refused rather than ignored: these props are code, and a From address for a workload that sends no email is a mistake in it
  // (an identity nothing sends from). The stack passes none: another stack's senderAddress in the shared context is ignored there, with a warning.
  for (const [key, value] of [['senderAddress', senderAddress], ['senderIdentity', senderIdentity]] as const) {
    if (value !== undefined) throw new ConfigError(key, `workload ${workload.name} sends no email: the stack creates no SES identity, configuration set or recorder for it; leave ${key} unset`);
  }
  return undefined;
}

/** The live targets, checked against the workload's (targetsOf). */
function checkedLiveTargets(workload: EffectsWorkload, live: readonly string[]): readonly string[] {
  const targets = targetsOf(workload);
  for (const n of live) if (!targets.includes(n)) throw new ConfigError('liveTargets', `workload ${workload.name} has no target "${n.slice(0, 100)}" (its targets: ${targets.join(', ') || 'none'})`);
  return live;
}

/**
 * `<TARGET>_URL` for each live http target; a name the workload does not declare, a URL the
 * sender would refuse at cold start, a live target without a URL or a sandboxed one with one, is
 * refused here.
 */
function httpTargetVariables(workload: EffectsWorkload, urls: Readonly<Record<string, string>>, live: readonly string[]): Record<string, string> {
  const declared = workload.outbox.http.map((t) => t.target);
  const missing = declared.find((t) => live.includes(t) && urls[t] === undefined);
  if (missing !== undefined) throw new ConfigError(`httpTargets.${missing}`, `is required: target ${missing} is live, and its calls need the provider's endpoint`);
  const out: Record<string, string> = {};
  for (const [target, url] of Object.entries(urls)) {
    if (!declared.includes(target)) throw new ConfigError(`httpTargets.${target}`, `workload ${workload.name} has no http target "${target}" (its targets: ${declared.join(', ') || 'none'})`);
    if (!live.includes(target)) throw new ConfigError(`httpTargets.${target}`, `target ${target} is in the sandbox: name it in liveTargets to call its endpoint`);
    // A token (another construct's URL) resolves at deploy; the sender checks it at cold start.
    if (!Token.isUnresolved(url) && !isHttpUrl(url)) throw new ConfigError(`httpTargets.${target}`, `must be an http(s) URL, got ${JSON.stringify(url.slice(0, 200))}`);
    out[httpTargetEnv(target).url] = url;
  }
  return out;
}

export class ExternalEffects extends Construct {
  /** The documents bucket and its access logs: only for a workload whose processor writes documents. */
  readonly bucket?: Bucket;
  readonly accessLogs?: Bucket;
  /** SES: only for a workload that sends email. */
  readonly identity?: IEmailIdentity;
  /** The CNAME records that verify a created domain identity and enable its DKIM signing; none for another identity. */
  readonly dkimRecords?: readonly DkimRecord[];
  readonly configurationSet?: ConfigurationSet;
  readonly sender: FencedFunction;
  readonly reconciler: FencedFunction;
  /** SES's events onto the outbox items: only for a workload that sends email. */
  readonly recorder?: FencedFunction;
  /** Deletes orphaned documents: only for a workload that writes documents. */
  readonly collector?: FencedFunction;
  /** Outbox stream records the sender gave up on (after bisecting and retries): the reconciler still sends their items. */
  readonly senderDeadLetterQueue: Queue;
  /** The provider the http targets that are not live call: only when the workload has one. */
  readonly sandbox?: SandboxProvider;
  /** Each live http target's credential, by target name. */
  readonly credentials: Readonly<Record<string, ISecret>> = {};
  /** What the worker needs in its environment to put documents. */
  readonly workerEnvironment: Readonly<Record<string, string>>;
  /** The workload's documents folder (its processor's `documents.prefix`); undefined when it writes none. */
  readonly documentsPrefix?: string;

  constructor(scope: Construct, id: string, props: ExternalEffectsProps) {
    super(scope, id);
    const address = senderAddressOf(props);
    const live = checkedLiveTargets(props.workload, props.liveTargets ?? []);
    const sandboxed = props.workload.outbox.http.filter((t) => !live.includes(t.target));
    if (sandboxed.length > 0) this.sandbox = this.sandboxProvider(sandboxed, props.sandboxProvider ?? {});
    this.credentials = this.targetCredentials(props.workload.outbox.http.filter((t) => live.includes(t.target)), props.httpCredentials ?? {});
    const secretVariables = Object.fromEntries(Object.entries(this.credentials).map(([target, secret]) => [httpTargetEnv(target).secretArn, secret.secretArn]));
    const http = { ...httpTargetVariables(props.workload, props.httpTargets ?? {}, live), ...this.sandboxUrls(sandboxed), ...secretVariables };
    const prefix = props.workload.processor.documents?.prefix;
    if (prefix !== undefined) {
      this.documentsPrefix = prefix;
      this.accessLogs = this.accessLogBucket();
      this.bucket = this.documentsBucket(this.accessLogs);
    }
    if (address !== undefined) {
      this.identity = this.senderIdentity(address, props.senderIdentity ?? { kind: 'address' });
      if (this.identity instanceof EmailIdentity && props.senderIdentity?.kind === 'domain') this.dkimRecords = this.identity.dkimRecords;
      this.configurationSet = this.publishingConfigurationSet();
    }

    const documents: Record<string, string> = this.bucket === undefined ? {} : { [ENV.documentsBucket]: this.bucket.bucketName };
    const common = { ...props.environment, ...documents };
    const mail: Record<string, string> = address === undefined || this.configurationSet === undefined ? {} : { [ENV.senderAddress]: address, [ENV.sesConfigurationSet]: this.configurationSet.configurationSetName };
    this.workerEnvironment = documents;
    const timeout = Duration.minutes(1);
    const fn = (name: EffectFunctionName, entry: string, description: string, env: Record<string, string>, service: string, extra: { deadLetterQueue?: Queue } = {}) =>
      fencedFunction(this, name, { entry, description, timeout, memorySize: 256, environment: { ...env, POWERTOOLS_SERVICE_NAME: service }, ...extra });
    // Both senders get the same claim timeout and one life (`timeout`, SENDER_TIMEOUT_MS): each
    // refuses at cold start a claim timeout not above that life (functions/effects-commons.ts),
    // each checks its claim is still fresh before each send, the reconciler takes over only claims
    // older than it.
    const reconcileClaimTimeout = props.reconcileClaimTimeout ?? Duration.minutes(5);
    validateEffects({ senderTimeout: timeout, reconcilerTimeout: timeout, reconcileClaimTimeout, senderBatchSize: SENDER_BATCH_SIZE, ...(props.sendRatePerSecond !== undefined ? { sendRatePerSecond: props.sendRatePerSecond } : {}) });
    const sending = {
      ...mail,
      ...http,
      [ENV.liveTargets]: live.length === 0 ? 'none' : live.join(','),
      [ENV.reconcileClaimTimeoutMs]: String(reconcileClaimTimeout.toMilliseconds()),
      [ENV.senderTimeoutMs]: String(timeout.toMilliseconds()),
      ...(props.sendRatePerSecond !== undefined ? { [ENV.sendRatePerSecond]: String(props.sendRatePerSecond) } : {}),
    };
    const dlq = { deadLetterQueue: props.scheduleDeadLetterQueue };
    this.sender = fn('Sender', 'functions/sender.ts', 'Outbox sender: claims each new outbox item, sends it with its outbox identity, marks it SENT', { ...common, ...sending }, props.services.sender);
    this.reconciler = fn('Reconciler', 'functions/reconciler.ts', 'Outbox reconciler: resolves items stuck in SENDING from the provider record, sends what the stream left PENDING', { ...common, ...sending }, props.services.reconciler, dlq);
    if (this.configurationSet !== undefined) {
      this.recorder = fn('Recorder', 'functions/recorder.ts', 'Recorder: stores SES send, bounce, complaint, reject and delivery-delay events on the outbox item they name', common, props.services.recorder, dlq);
      this.sesEventsToRecorder(this.configurationSet, this.recorder, props.scheduleDeadLetterQueue);
    }
    if (this.bucket !== undefined) {
      this.collector = fn('Collector', 'functions/collector.ts', 'Collector: deletes documents no record points to and no live generation can still publish', common, props.services.collector, dlq);
    }

    // The next scheduled run is the retry: a retried one would only overlap it.
    for (const f of [this.reconciler, this.collector]) f?.fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(5) });
    this.senderDeadLetterQueue = deadLetterQueue(this, 'SenderDeadLetterQueue');
    this.sender.fn.addEventSource(
      new DynamoEventSource(props.tables.outbox, {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: SENDER_BATCH_SIZE,
        bisectBatchOnError: true,
        reportBatchItemFailures: true,
        retryAttempts: 5,
        maxRecordAge: Duration.hours(6),
        onFailure: new SqsDlq(this.senderDeadLetterQueue),
        // Only a created item is a delivery; the sender's own state changes are MODIFYs.
        filters: [FilterCriteria.filter({ eventName: FilterRule.isEqual('INSERT') })],
      }),
    );
    if (this.bucket !== undefined && this.collector !== undefined && prefix !== undefined) this.guardBucket(this.bucket, prefix, this.collector);
    this.grant(props);
    this.acknowledge();
  }

  /**
   * The sandbox provider, keeping each key at least as long as any sandboxed target says its
   * provider does (the sender never resends past that, so a longer memory is only safer).
   */
  private sandboxProvider(targets: readonly HttpTargetSpec[], given: NonNullable<ExternalEffectsProps['sandboxProvider']>): SandboxProvider {
    const keyRetentionMs = Math.max(...targets.map((t) => t.keyRetentionMs ?? DEFAULT_HTTP_KEY_RETENTION_MS));
    const behaviour = { keyRetentionMs, declineShare: given.declineShare ?? 0.05, throttleShare: given.throttleShare ?? 0, errorShare: given.errorShare ?? 0 };
    for (const [k, v] of Object.entries(behaviour)) if (k !== 'keyRetentionMs' && !(v >= 0 && v <= 1)) throw new ConfigError(`sandboxProvider.${k}`, `must be a share in [0, 1], got ${v}`);
    return new SandboxProvider(this, 'Sandbox', { behaviour, service: 'sandbox-provider' });
  }

  /** Each live target's secret: the one given (by complete ARN), or one created with a placeholder. */
  private targetCredentials(targets: readonly HttpTargetSpec[], given: Readonly<Record<string, string>>): Record<string, ISecret> {
    for (const name of Object.keys(given)) if (!targets.some((t) => t.target === name)) throw new ConfigError(`httpCredentials.${name}`, `names no live http target (live: ${targets.map((t) => t.target).join(', ') || 'none'})`);
    const out: Record<string, ISecret> = {};
    for (const t of targets) {
      const id = `${t.target.replace(/(^|-)([a-z0-9])/g, (_, _d: string, c: string) => c.toUpperCase())}Credential`;
      const arn = given[t.target];
      if (arn !== undefined) {
        out[t.target] = Secret.fromSecretCompleteArn(this, id, arn);
        continue;
      }
      const secret = new Secret(this, id, { description: `The ${t.target} provider's API key, sent as Authorization: Bearer by the outbox sender and reconciler. Created with a placeholder: put yours (aws secretsmanager put-secret-value).` });
      Validations.of(secret).acknowledge({
        id: 'AwsSolutions::AwsSolutions-SMG4',
        reason: "The key is the provider's, issued and rotated in the provider's dashboard: there is no rotation Lambda to write. A new key is put with put-secret-value, and the sender reads it again within 5 minutes.",
      });
      out[t.target] = secret;
    }
    return out;
  }

  /** `<TARGET>_URL` of each sandboxed target: the sandbox provider's function URL, the target's name its path. */
  private sandboxUrls(targets: readonly HttpTargetSpec[]): Record<string, string> {
    const url = this.sandbox?.url.url;
    if (url === undefined) return {};
    // The function URL ends with "/": the target's name is the first segment of every path it is called at.
    return Object.fromEntries(targets.map((t) => [httpTargetEnv(t.target).url, Fn.join('', [url, t.target])]));
  }

  private accessLogBucket(): Bucket {
    const logs = new Bucket(this, 'AccessLogs', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(365), abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(logs).acknowledge({
      id: 'AwsSolutions::AwsSolutions-S1',
      reason: 'This bucket receives the documents bucket\'s server access logs; logging it to itself would log its own log deliveries without end.',
    });
    return logs;
  }

  private documentsBucket(accessLogs: Bucket): Bucket {
    return new Bucket(this, 'Documents', {
      versioned: true,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'documents/',
      lifecycleRules: [
        // A document is written once and never replaced; what the collector deletes becomes noncurrent and goes after 30 days.
        { abortIncompleteMultipartUploadAfter: Duration.days(1), noncurrentVersionExpiration: Duration.days(30), expiredObjectDeleteMarker: true },
      ],
      // The documents are what the records point to (the protected file): `cdk destroy` leaves them.
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  /** The configuration set whose events (SES_EVENTS) reach EventBridge's default bus, where the recorder's rule takes them. */
  private publishingConfigurationSet(): ConfigurationSet {
    const set = new ConfigurationSet(this, 'ConfigurationSet', {});
    set.addEventDestination('ToEventBridge', {
      destination: EventDestination.eventBus(EventBus.fromEventBusName(this, 'DefaultBus', 'default')),
      events: SES_EVENTS.map((e) => e.event),
    });
    return set;
  }

  private sesEventsToRecorder(set: ConfigurationSet, recorder: FencedFunction, dlq: Queue): void {
    new Rule(this, 'SesEvents', {
      description: "SES send, bounce, complaint, reject and delivery-delay events of this workflow's configuration set, to the recorder",
      eventPattern: {
        source: ['aws.ses'],
        detailType: SES_EVENTS.map((e) => e.detailType),
        detail: { mail: { tags: { 'ses:configuration-set': [set.configurationSetName] } } },
      },
      targets: [new LambdaFunction(recorder.fn, { deadLetterQueue: dlq, retryAttempts: 8 })],
    });
  }

  private senderIdentity(address: string, setting: SenderIdentitySetting): IEmailIdentity {
    switch (setting.kind) {
      case 'address':
        return new EmailIdentity(this, 'SenderIdentity', { identity: Identity.email(address) });
      case 'domain':
        // Easy DKIM (CDK's default, stated): SES generates the keys and signs every message as the domain.
        return new EmailIdentity(this, 'SenderIdentity', { identity: Identity.domain(setting.domain), dkimSigning: true, dkimIdentity: DkimIdentity.easyDkim() });
      case 'imported':
        // By name: its ARN in the stack's own partition, region and account, where SES looks the From
        // address up (the sender names no identity ARN). By ARN: that one, asserted at deploy to be there (infra/stack.ts).
        return setting.arn !== undefined ? EmailIdentity.fromEmailIdentityArn(this, 'SenderIdentity', setting.arn) : EmailIdentity.fromEmailIdentityName(this, 'SenderIdentity', setting.name);
    }
  }

  /** The documents' object ARNs: every key under the workload's prefix. */
  private documents(bucket: Bucket, prefix: string): string {
    return bucket.arnForObjects(`${prefix}*`);
  }

  /** The finding id of a wildcard below the documents prefix (cdk-nag names the bucket by its logical id). */
  private documentsWildcard(bucket: Bucket, prefix: string): string {
    const logicalId = Stack.of(this).getLogicalId(bucket.node.defaultChild as CfnElement);
    return `AwsSolutions::AwsSolutions-IAM5[Resource::<${logicalId}.Arn>/${prefix}*]`;
  }

  private acknowledge(): void {
    Validations.of(this.sender.fn).acknowledge({
      id: 'Serverless::Serverless-LambdaDLQ',
      reason: "The sender is invoked only synchronously, by the Outbox stream's event source mapping, which never uses a function dead-letter queue; records it gives up on go to the mapping's on-failure destination (SenderDeadLetterQueue, alarmed), and the reconciler sends their items.",
    });
    Validations.of(this.sender.role.node.findChild('DefaultPolicy')).acknowledge({
      id: 'AwsSolutions::AwsSolutions-IAM5[Resource::*]',
      reason: 'Added by the DynamoDB event source: dynamodb:ListStreams supports no resource-level permission (Service Authorization Reference, DynamoDB). The stream reads themselves name the Outbox stream ARN.',
    });
    if (this.collector !== undefined && this.bucket !== undefined && this.documentsPrefix !== undefined) {
      Validations.of(this.collector.role.node.findChild('DefaultPolicy')).acknowledge({
        id: this.documentsWildcard(this.bucket, this.documentsPrefix),
        reason: `The collector lists, reads (for If-Match) and deletes document objects: every key under ${this.documentsPrefix} is one (one per item and generation), and nothing else in the bucket is granted.`,
      });
    }
    for (const f of [this.reconciler, this.collector]) {
      if (f === undefined) continue;
      Validations.of(f.fn.node.findChild('EventInvokeConfig')).acknowledge({
        id: 'Serverless::Serverless-LambdaAsyncFailureDestination',
        reason: "A failed or expired scheduled invocation goes to the function's dead-letter queue (DeadLetterConfig: ScheduleDeadLetterQueue, alarmed); an OnFailure destination as well would record the same failure twice.",
      });
    }
    for (const id of ['AwsSolutions::AwsSolutions-SQS3', 'Serverless::Serverless-SQSRedrivePolicy']) {
      Validations.of(this.senderDeadLetterQueue).acknowledge({
        id,
        reason: "This queue is itself a dead-letter queue: the on-failure destination of the Outbox stream's event source mapping. Messages stay 14 days (the SQS maximum) and an alarm fires on the first one.",
      });
    }
  }

  /** The bucket policy: no overwrite under the documents prefix, and no delete but the collector's. */
  private guardBucket(bucket: Bucket, prefix: string, collector: FencedFunction): void {
    bucket.addToResourcePolicy(
      new PolicyStatement({
        sid: 'DenyDocumentPutWithoutIfNoneMatch',
        effect: Effect.DENY,
        principals: [new AnyPrincipal()],
        actions: ['s3:PutObject'],
        resources: [this.documents(bucket, prefix)],
        conditions: { Null: { 's3:if-none-match': 'true' } },
      }),
    );
    bucket.addToResourcePolicy(
      new PolicyStatement({
        sid: 'DenyDeleteExceptCollector',
        effect: Effect.DENY,
        principals: [new AnyPrincipal()],
        actions: ['s3:DeleteObject', 's3:DeleteObjectVersion'],
        resources: [bucket.arnForObjects('*')],
        conditions: { ArnNotEquals: { 'aws:PrincipalArn': collector.role.roleArn } },
      }),
    );
  }

  /** Least privilege, from the calls each function's code makes (test/infra/iam.test.ts holds the list); only for what exists. */
  private grant(props: ExternalEffectsProps): void {
    const allow = (f: FencedFunction, actions: string[], resources: string[]) => f.role.addToPrincipalPolicy(new PolicyStatement({ actions, resources }));
    const outbox = props.tables.outbox.tableArn;
    // Sender (lib/workflow effects/sender.ts): claim, mark SENT/FAILED, release: conditional UpdateItem.
    // The event source grants the stream reads (DescribeStream, GetRecords, GetShardIterator, ListStreams) and the DLQ send.
    allow(this.sender, ['dynamodb:UpdateItem'], [outbox]);
    // Reconciler (effects/reconciler.ts): the unsent index, the same conditional updates.
    // The index holds keys only: each due item is read (consistent GetItem) before it is acted on.
    allow(this.reconciler, ['dynamodb:Query'], [`${outbox}/index/${OUTBOX_INDEX}`]);
    allow(this.reconciler, ['dynamodb:GetItem', 'dynamodb:UpdateItem'], [outbox]);
    if (this.identity !== undefined && this.configurationSet !== undefined) {
      // Both send email through SES (SendEmail, a resend for the reconciler), as the identity, with the configuration set.
      const configSetArn = Stack.of(this).formatArn({ service: 'ses', resource: 'configuration-set', resourceName: this.configurationSet.configurationSetName });
      for (const f of [this.sender, this.reconciler]) allow(f, ['ses:SendEmail'], [this.identity.emailIdentityArn, configSetArn]);
    }
    // Both read each live target's API key (lib/workflow/adapters/secret-credential.ts).
    for (const secret of Object.values(this.credentials)) for (const f of [this.sender, this.reconciler]) allow(f, ['secretsmanager:GetSecretValue'], [secret.secretArn]);
    // Both call the sandbox provider's function URL (signed): new function URLs need both actions (Lambda Developer Guide, Control access to function URLs).
    if (this.sandbox !== undefined) {
      const fnArn = this.sandbox.provider.fn.functionArn;
      for (const f of [this.sender, this.reconciler]) {
        f.role.addToPrincipalPolicy(new PolicyStatement({ actions: ['lambda:InvokeFunctionUrl'], resources: [fnArn], conditions: { StringEquals: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } } }));
        f.role.addToPrincipalPolicy(new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [fnArn], conditions: { Bool: { 'lambda:InvokedViaFunctionUrl': 'true' } } }));
      }
    }
    // Recorder (effects/recorder.ts): read the item's status (a SENT item needs no record), ADD providerEvents conditional on its existence.
    if (this.recorder !== undefined) allow(this.recorder, ['dynamodb:GetItem', 'dynamodb:UpdateItem'], [outbox]);
    // A workload with steps (effects/follow-ups.ts): the settle's transaction puts each follow-up
    // (PutItem under attribute_not_exists) beside the parent's UpdateItem; only the settlers write it.
    if ((props.workload.steps ?? []).length > 0) for (const f of [this.sender, this.reconciler]) allow(f, ['dynamodb:PutItem'], [outbox]);
    // A `bounced` step's follow-ups are the recorder's: put in the write that records the hard bounce (recorder.ts, provider-records.ts recordBounce).
    if (this.recorder !== undefined && (props.workload.steps ?? []).some((s) => s.on === 'bounced')) allow(this.recorder, ['dynamodb:PutItem'], [outbox]);
    if (this.collector !== undefined && this.bucket !== undefined && this.documentsPrefix !== undefined) this.grantCollector(this.collector, this.bucket, this.documentsPrefix, props.tables);
  }

  /**
   * Collector (effects/collector.ts): list the documents prefix, read the pointer, the fence and the
   * job (consistent GetItem), DeleteObject with If-Match (which also needs s3:GetObject).
   */
  private grantCollector(collector: FencedFunction, bucket: Bucket, prefix: string, tables: ExternalEffectsProps['tables']): void {
    const allow = (actions: string[], resources: string[]) => collector.role.addToPrincipalPolicy(new PolicyStatement({ actions, resources }));
    collector.role.addToPrincipalPolicy(this.listDocuments(bucket, prefix));
    allow(['s3:DeleteObject', 's3:GetObject'], [this.documents(bucket, prefix)]);
    allow(['dynamodb:GetItem'], [tables.records.tableArn, tables.fences.tableArn, tables.jobs.tableArn]);
    // The pointers of a page in consistent batches (BatchGetItem on the pointer table), and the
    // resumable cursor item it keeps in Jobs (a PutItem per page): test/infra/iam-calls.test.ts
    // found both missing from this role, the local run making them and AWS refusing them.
    allow(['dynamodb:BatchGetItem'], [tables.records.tableArn]);
    allow(['dynamodb:PutItem'], [tables.jobs.tableArn]);
  }

  /**
   * s3:ListBucket on the bucket, only for listings under the documents prefix (`s3:prefix`).
   * Granted to the worker too, which never lists: without it S3 answers a HEAD or GET of a
   * missing key 403 AccessDenied instead of 404, and the HEAD that resolves a 412 must tell
   * "gone" (put again) from "not readable". The alternative, reading a 403 as one or the other,
   * guesses; a listing of the documents prefix reveals only key names the role may write anyway.
   * The adapter still types a 403 (ObjectStateUnknownError) rather than trust this grant.
   */
  private listDocuments(bucket: Bucket, prefix: string): PolicyStatement {
    return new PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn], conditions: { StringLike: { 's3:prefix': `${prefix}*` } } });
  }

  /** The worker's part: put documents (If-None-Match; the HEAD that resolves a 412 needs GetObject, and ListBucket for a 404), when it writes any, and create outbox items in its transaction. */
  grantWorker(worker: FencedFunction, outbox: ITable): void {
    const { bucket, documentsPrefix: prefix } = this;
    if (bucket !== undefined && prefix !== undefined) {
      worker.role.addToPrincipalPolicy(new PolicyStatement({ actions: ['s3:PutObject', 's3:GetObject'], resources: [this.documents(bucket, prefix)] }));
      worker.role.addToPrincipalPolicy(this.listDocuments(bucket, prefix));
    }
    worker.role.addToPrincipalPolicy(new PolicyStatement({ actions: ['dynamodb:PutItem'], resources: [outbox.tableArn] }));
    if (bucket === undefined || prefix === undefined) return;
    Validations.of(worker.role.node.findChild('DefaultPolicy')).acknowledge({
      id: this.documentsWildcard(bucket, prefix),
      reason: `The worker puts each unit's documents under ${prefix} (If-None-Match, required by the bucket policy) and reads one back only to resolve a 412; the keys are new per generation, so no fixed ARN can name them.`,
    });
  }
}
