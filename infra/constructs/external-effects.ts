/**
 * The external effects on AWS (DESIGN.md, External effects): the documents bucket (the
 * protected file), the SES identity and configuration set whose events record each delivery,
 * and the four functions around the Outbox table: the sender (the Outbox stream's INSERTs), the
 * reconciler and the collector (scheduled), the recorder (SES events through EventBridge: the
 * SEND that proves acceptance, and the bounces, complaints, rejections and delays the alarms count).
 *
 * The bucket refuses what the design forbids even to a principal that holds the permission: a
 * PutObject under the documents prefix without If-None-Match (an overwrite) and any delete by a
 * role other than the collector's. The prefix is the workload's (its descriptor's
 * `documents.prefix`): every statement and acknowledgement that names it takes it from there.
 */
import { CfnElement, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { AnyPrincipal, Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { ConfigurationSet, DkimIdentity, EmailIdentity, EmailSendingEvent, EventDestination, Identity, type DkimRecord, type IEmailIdentity } from 'aws-cdk-lib/aws-ses';
import { EventBus } from 'aws-cdk-lib/aws-events';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV, OUTBOX_INDEX } from '../../lib/workflow/index.js';
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

export interface ExternalEffectsProps {
  readonly tables: Readonly<Record<'records' | 'fences' | 'jobs' | 'outbox', ITable>>;
  /** The From address of every email (CDK context `senderAddress`). */
  readonly senderAddress: string;
  /** The SES identity it sends as. @default an email-address identity created for `senderAddress` (no DKIM) */
  readonly senderIdentity?: SenderIdentitySetting;
  /** The payment provider's charge-notification endpoint; none: those outbox items end FAILED, explained. */
  readonly paymentsUrl?: string;
  /** The environment of the workflow's functions (table names, epoch...). */
  readonly environment: Readonly<Record<string, string>>;
  readonly scheduleDeadLetterQueue: Queue;
  readonly services: Readonly<Record<'sender' | 'reconciler' | 'recorder' | 'collector', string>>;
  /** The folder the workload's documents are written under (`Processor.documents.prefix`, ending in "/"). */
  readonly documentsPrefix: string;
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

export class ExternalEffects extends Construct {
  readonly bucket: Bucket;
  readonly accessLogs: Bucket;
  readonly identity: IEmailIdentity;
  /** The CNAME records that verify a created domain identity and enable its DKIM signing; none for another identity. */
  readonly dkimRecords?: readonly DkimRecord[];
  readonly configurationSet: ConfigurationSet;
  readonly sender: FencedFunction;
  readonly reconciler: FencedFunction;
  readonly recorder: FencedFunction;
  readonly collector: FencedFunction;
  /** Outbox stream records the sender gave up on (after bisecting and retries): the reconciler still sends their items. */
  readonly senderDeadLetterQueue: Queue;
  /** What the worker needs in its environment to put documents. */
  readonly workerEnvironment: Readonly<Record<string, string>>;

  /** The workload's documents folder (its descriptor's `documents.prefix`). */
  readonly documentsPrefix: string;

  constructor(scope: Construct, id: string, props: ExternalEffectsProps) {
    super(scope, id);
    this.documentsPrefix = props.documentsPrefix;
    this.accessLogs = new Bucket(this, 'AccessLogs', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(365), abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.accessLogs).acknowledge({
      id: 'AwsSolutions::AwsSolutions-S1',
      reason: 'This bucket receives the documents bucket\'s server access logs; logging it to itself would log its own log deliveries without end.',
    });
    this.bucket = new Bucket(this, 'Documents', {
      versioned: true,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'documents/',
      lifecycleRules: [
        // A document is written once and never replaced; what the collector deletes becomes noncurrent and goes after 30 days.
        { abortIncompleteMultipartUploadAfter: Duration.days(1), noncurrentVersionExpiration: Duration.days(30), expiredObjectDeleteMarker: true },
      ],
      // Invoices are records: `cdk destroy` leaves them.
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.identity = this.senderIdentity(props.senderAddress, props.senderIdentity ?? { kind: 'address' });
    if (this.identity instanceof EmailIdentity && props.senderIdentity?.kind === 'domain') this.dkimRecords = this.identity.dkimRecords;
    this.configurationSet = new ConfigurationSet(this, 'ConfigurationSet', {});
    this.configurationSet.addEventDestination('ToEventBridge', {
      destination: EventDestination.eventBus(EventBus.fromEventBusName(this, 'DefaultBus', 'default')),
      events: SES_EVENTS.map((e) => e.event),
    });

    const common = { ...props.environment, [ENV.documentsBucket]: this.bucket.bucketName };
    const mail = { [ENV.senderAddress]: props.senderAddress, [ENV.sesConfigurationSet]: this.configurationSet.configurationSetName, ...(props.paymentsUrl ? { [ENV.paymentsUrl]: props.paymentsUrl } : {}) };
    this.workerEnvironment = { [ENV.documentsBucket]: this.bucket.bucketName };
    const timeout = Duration.minutes(1);
    const fn = (name: 'Sender' | 'Reconciler' | 'Recorder' | 'Collector', entry: string, description: string, env: Record<string, string>, service: string, extra: { deadLetterQueue?: Queue } = {}) =>
      fencedFunction(this, name, { entry, description, timeout, memorySize: 256, environment: { ...env, POWERTOOLS_SERVICE_NAME: service }, ...extra });
    // Both senders get the same claim timeout and the sender's life: each refuses at cold start a
    // claim timeout not above that life (functions/effects-commons.ts), the sender checks its claim
    // is still fresh before each send, the reconciler takes over only claims older than it.
    const reconcileClaimTimeout = props.reconcileClaimTimeout ?? Duration.minutes(5);
    validateEffects({ senderTimeout: timeout, reconcileClaimTimeout, ...(props.sendRatePerSecond !== undefined ? { sendRatePerSecond: props.sendRatePerSecond } : {}) });
    const sending = {
      ...mail,
      [ENV.reconcileClaimTimeoutMs]: String(reconcileClaimTimeout.toMilliseconds()),
      [ENV.senderTimeoutMs]: String(timeout.toMilliseconds()),
      ...(props.sendRatePerSecond !== undefined ? { [ENV.sendRatePerSecond]: String(props.sendRatePerSecond) } : {}),
    };
    this.sender = fn('Sender', 'functions/sender.ts', 'Outbox sender: claims each new outbox item, sends it with its outbox identity, marks it SENT', { ...common, ...sending }, props.services.sender);
    this.reconciler = fn('Reconciler', 'functions/reconciler.ts', 'Outbox reconciler: resolves items stuck in SENDING from the provider record, sends what the stream left PENDING', { ...common, ...sending }, props.services.reconciler, { deadLetterQueue: props.scheduleDeadLetterQueue });
    this.recorder = fn('Recorder', 'functions/recorder.ts', 'Recorder: stores SES send, bounce, complaint, reject and delivery-delay events on the outbox item they name', common, props.services.recorder, { deadLetterQueue: props.scheduleDeadLetterQueue });
    this.collector = fn('Collector', 'functions/collector.ts', 'Collector: deletes documents no invoice points to and no live generation can still publish', common, props.services.collector, { deadLetterQueue: props.scheduleDeadLetterQueue });

    // The next scheduled run is the retry: a retried one would only overlap it.
    for (const f of [this.reconciler, this.collector]) f.fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(5) });
    this.senderDeadLetterQueue = deadLetterQueue(this, 'SenderDeadLetterQueue');
    this.sender.fn.addEventSource(
      new DynamoEventSource(props.tables.outbox, {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: 10,
        bisectBatchOnError: true,
        reportBatchItemFailures: true,
        retryAttempts: 5,
        maxRecordAge: Duration.hours(6),
        onFailure: new SqsDlq(this.senderDeadLetterQueue),
        // Only a created item is a delivery; the sender's own state changes are MODIFYs.
        filters: [FilterCriteria.filter({ eventName: FilterRule.isEqual('INSERT') })],
      }),
    );
    new Rule(this, 'SesEvents', {
      description: "SES send, bounce, complaint, reject and delivery-delay events of this workflow's configuration set, to the recorder",
      eventPattern: {
        source: ['aws.ses'],
        detailType: SES_EVENTS.map((e) => e.detailType),
        detail: { mail: { tags: { 'ses:configuration-set': [this.configurationSet.configurationSetName] } } },
      },
      targets: [new LambdaFunction(this.recorder.fn, { deadLetterQueue: props.scheduleDeadLetterQueue, retryAttempts: 8 })],
    });
    this.guardBucket();
    this.grant(props);
    this.acknowledge();
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
  private documents(): string {
    return this.bucket.arnForObjects(`${this.documentsPrefix}*`);
  }

  /** The finding id of a wildcard below the documents prefix (cdk-nag names the bucket by its logical id). */
  private documentsWildcard(): string {
    const logicalId = Stack.of(this).getLogicalId(this.bucket.node.defaultChild as CfnElement);
    return `AwsSolutions::AwsSolutions-IAM5[Resource::<${logicalId}.Arn>/${this.documentsPrefix}*]`;
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
    Validations.of(this.collector.role.node.findChild('DefaultPolicy')).acknowledge({
      id: this.documentsWildcard(),
      reason: `The collector lists, reads (for If-Match) and deletes document objects: every key under ${this.documentsPrefix} is one (one per item and generation), and nothing else in the bucket is granted.`,
    });
    for (const f of [this.reconciler.fn, this.collector.fn]) {
      Validations.of(f.node.findChild('EventInvokeConfig')).acknowledge({
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
  private guardBucket(): void {
    this.bucket.addToResourcePolicy(
      new PolicyStatement({
        sid: 'DenyDocumentPutWithoutIfNoneMatch',
        effect: Effect.DENY,
        principals: [new AnyPrincipal()],
        actions: ['s3:PutObject'],
        resources: [this.documents()],
        conditions: { Null: { 's3:if-none-match': 'true' } },
      }),
    );
    this.bucket.addToResourcePolicy(
      new PolicyStatement({
        sid: 'DenyDeleteExceptCollector',
        effect: Effect.DENY,
        principals: [new AnyPrincipal()],
        actions: ['s3:DeleteObject', 's3:DeleteObjectVersion'],
        resources: [this.bucket.arnForObjects('*')],
        conditions: { ArnNotEquals: { 'aws:PrincipalArn': this.collector.role.roleArn } },
      }),
    );
  }

  /** Least privilege, from the calls each function's code makes (test/infra/iam.test.ts holds the list). */
  private grant(props: ExternalEffectsProps): void {
    const allow = (f: FencedFunction, actions: string[], resources: string[]) => f.role.addToPrincipalPolicy(new PolicyStatement({ actions, resources }));
    const outbox = props.tables.outbox.tableArn;
    const stack = Stack.of(this);
    const identityArn = this.identity.emailIdentityArn;
    const configSetArn = stack.formatArn({ service: 'ses', resource: 'configuration-set', resourceName: this.configurationSet.configurationSetName });
    // Sender (lib/workflow effects/sender.ts): claim, mark SENT/FAILED, release: conditional UpdateItem; SES SendEmail.
    // The event source grants the stream reads (DescribeStream, GetRecords, GetShardIterator, ListStreams) and the DLQ send.
    allow(this.sender, ['dynamodb:UpdateItem'], [outbox]);
    allow(this.sender, ['ses:SendEmail'], [identityArn, configSetArn]);
    // Reconciler (effects/reconciler.ts): the unsent index, the same conditional updates, SES SendEmail for a resend.
    // The index holds keys only: each due item is read (consistent GetItem) before it is acted on.
    allow(this.reconciler, ['dynamodb:Query'], [`${outbox}/index/${OUTBOX_INDEX}`]);
    allow(this.reconciler, ['dynamodb:GetItem', 'dynamodb:UpdateItem'], [outbox]);
    allow(this.reconciler, ['ses:SendEmail'], [identityArn, configSetArn]);
    // Recorder (effects/recorder.ts): read the item's status (a SENT item needs no record), ADD providerEvents conditional on its existence.
    allow(this.recorder, ['dynamodb:GetItem', 'dynamodb:UpdateItem'], [outbox]);
    // Collector (effects/collector.ts): list the documents prefix, read the pointer, the fence and the job
    // (consistent GetItem), DeleteObject with If-Match (which also needs s3:GetObject).
    this.collector.role.addToPrincipalPolicy(this.listDocuments());
    allow(this.collector, ['s3:DeleteObject', 's3:GetObject'], [this.documents()]);
    allow(this.collector, ['dynamodb:GetItem'], [props.tables.records.tableArn, props.tables.fences.tableArn, props.tables.jobs.tableArn]);
    // The pointers of a page in consistent batches (BatchGetItem on the pointer table), and the
    // resumable cursor item it keeps in Jobs (a PutItem per page): test/infra/iam-calls.test.ts
    // found both missing from this role, the local run making them and AWS refusing them.
    allow(this.collector, ['dynamodb:BatchGetItem'], [props.tables.records.tableArn]);
    allow(this.collector, ['dynamodb:PutItem'], [props.tables.jobs.tableArn]);
  }

  /**
   * s3:ListBucket on the bucket, only for listings under the documents prefix (`s3:prefix`).
   * Granted to the worker too, which never lists: without it S3 answers a HEAD or GET of a
   * missing key 403 AccessDenied instead of 404, and the HEAD that resolves a 412 must tell
   * "gone" (put again) from "not readable". The alternative, reading a 403 as one or the other,
   * guesses; a listing of the documents prefix reveals only key names the role may write anyway.
   * The adapter still types a 403 (ObjectStateUnknownError) rather than trust this grant.
   */
  private listDocuments(): PolicyStatement {
    return new PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn], conditions: { StringLike: { 's3:prefix': `${this.documentsPrefix}*` } } });
  }

  /** The worker's part: put documents (If-None-Match; the HEAD that resolves a 412 needs GetObject, and ListBucket for a 404) and create outbox items in its transaction. */
  grantWorker(worker: FencedFunction, outbox: ITable): void {
    worker.role.addToPrincipalPolicy(new PolicyStatement({ actions: ['s3:PutObject', 's3:GetObject'], resources: [this.documents()] }));
    worker.role.addToPrincipalPolicy(this.listDocuments());
    worker.role.addToPrincipalPolicy(new PolicyStatement({ actions: ['dynamodb:PutItem'], resources: [outbox.tableArn] }));
    Validations.of(worker.role.node.findChild('DefaultPolicy')).acknowledge({
      id: this.documentsWildcard(),
      reason: `The worker puts each unit's documents under ${this.documentsPrefix} (If-None-Match, required by the bucket policy) and reads one back only to resolve a 412; the keys are new per generation, so no fixed ARN can name them.`,
    });
  }
}
