/**
 * What IAM evaluates for one AWS call: the action(s) and the resource ARN(s) AWS authorizes the
 * request against, and the condition keys the request itself carries (Service Authorization
 * Reference: DynamoDB, DynamoDB Streams, Amazon S3). A call is not always one action on one
 * resource: a TransactWriteItems is authorized per item (PutItem, UpdateItem, ConditionCheckItem
 * on each item's table), a BatchGetItem per table, and a conditional S3 delete with an ETag needs
 * s3:GetObject besides s3:DeleteObject (S3 User Guide, "Enforce conditional deletes").
 *
 * ARNs are built from `ArnNames`: the stack's names when the IAM test gives them, the local
 * names otherwise.
 */
import { TABLE_ROLES, type TableRole } from '../../lib/workflow/index.js';

/** One request AWS authorizes: an IAM action on one resource, with the condition keys the request carries. */
export interface Authorization {
  action: string;
  resource: string;
  /** Request-borne condition keys (s3:prefix, s3:if-none-match, s3:if-match); the principal's are the evaluator's. */
  context: Readonly<Record<string, string>>;
}

/** How local names become the names AWS evaluates (partition, region, account, physical names). */
export interface ArnNames {
  readonly partition: string;
  readonly region: string;
  readonly account: string;
  /** The physical name of the table a local table stands for (`local` is `<prefix><role>`). */
  table(local: string): string;
  bucket(local: string): string;
  /** The work queue's physical name (the local runtime's queue is no SQS queue: its sends are recorded at the port). */
  readonly queue: string;
  /** The SES email identity a From address sends as, and the configuration set every email names. */
  emailIdentity(from: string): string;
  readonly configurationSet: string;
  /** The function behind the sandbox provider's function URL, the one signed http calls reach. */
  readonly sandboxProvider?: string;
}

/**
 * The label every stream ARN gets: DynamoDB Local's stream ARNs are its own, and the evaluator
 * resolves the template's `Fn::GetAtt StreamArn` with this same label.
 */
export const STREAM_LABEL = '2026-01-01T00:00:00.000';

/** A fixed, made-up environment: the ARNs' account and region are the same in the template's resolution. */
export const TEST_ENV = { partition: 'aws', region: 'eu-west-1', account: '111122223333' } as const;

/** The local names unchanged (npm start's default: no synthesized stack to name them by). */
export const localArnNames: ArnNames = { ...TEST_ENV, table: (n) => n, bucket: (n) => n, queue: 'work-queue', emailIdentity: (from) => from, configurationSet: 'local' };

/** The schema role of a local table name (`<prefix><role>`, lib/workflow tableNames), if it has one. */
export function roleOfTable(local: string): TableRole | undefined {
  return TABLE_ROLES.find((r) => local.endsWith(r));
}

type Input = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export class ArnBuilder {
  constructor(readonly names: ArnNames) {}
  table(local: string): string {
    const { partition, region, account } = this.names;
    return `arn:${partition}:dynamodb:${region}:${account}:table/${this.names.table(local)}`;
  }
  index(local: string, index: string): string {
    return `${this.table(local)}/index/${index}`;
  }
  stream(local: string): string {
    return `${this.table(local)}/stream/${STREAM_LABEL}`;
  }
  bucket(local: string): string {
    return `arn:${this.names.partition}:s3:::${this.names.bucket(local)}`;
  }
  object(local: string, key: string): string {
    return `${this.bucket(local)}/${key}`;
  }
  queue(): string {
    const { partition, region, account } = this.names;
    return `arn:${partition}:sqs:${region}:${account}:${this.names.queue}`;
  }
  /**
   * A signed call to a function URL (AuthType AWS_IAM) is authorized on the function twice:
   * lambda:InvokeFunctionUrl with the URL's auth type, and lambda:InvokeFunction as invoked through
   * a function URL (Lambda Developer Guide, Control access to function URLs).
   */
  functionUrl(): Authorization[] {
    const { partition, region, account } = this.names;
    const resource = `arn:${partition}:lambda:${region}:${account}:function:${this.names.sandboxProvider ?? 'no-sandbox-provider-in-stack'}`;
    return [
      { action: 'lambda:InvokeFunctionUrl', resource, context: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } },
      { action: 'lambda:InvokeFunction', resource, context: { 'lambda:InvokedViaFunctionUrl': 'true' } },
    ];
  }
  /** SESv2 SendEmail is authorized on the identity and on the configuration set it names. */
  sendEmail(from: string): string[] {
    const { partition, region, account } = this.names;
    const at = (rest: string) => `arn:${partition}:ses:${region}:${account}:${rest}`;
    return [at(`identity/${this.names.emailIdentity(from)}`), at(`configuration-set/${this.names.configurationSet}`)];
  }
}

const TRANSACT_ACTIONS: Readonly<Record<string, string>> = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'ConditionCheckItem', Get: 'GetItem' };

/** DynamoDB (the marshalled input): per table, per index, per transaction item. */
export function dynamodbAuthorizations(op: string, input: Input, arns: ArnBuilder): Authorization[] {
  const on = (action: string, resource: string): Authorization => ({ action: `dynamodb:${action}`, resource, context: {} });
  const table = str(input.TableName);
  if (op === 'TransactWriteItems' || op === 'TransactGetItems') {
    return ((input.TransactItems ?? []) as Record<string, Input>[]).flatMap((item) =>
      Object.entries(item).map(([kind, body]) => on(TRANSACT_ACTIONS[kind] ?? kind, arns.table(String(body.TableName)))),
    );
  }
  if (op === 'BatchGetItem' || op === 'BatchWriteItem') return Object.keys((input.RequestItems ?? {}) as Input).map((t) => on(op, arns.table(t)));
  if (table === undefined) return [on(op, '*')];
  const index = str(input.IndexName);
  return [on(op, index === undefined ? arns.table(table) : arns.index(table, index))];
}

/** `arn:aws:dynamodb:ddblocal:000000000000:table/<name>/stream/<label>` → `<name>`. */
export const tableOfStreamArn = (arn: string): string | undefined => /:table\/([^/]+)\/stream\//.exec(arn)?.[1];

/** DynamoDB Streams: the stream ARN (GetRecords names only an iterator: `streamArn` is the one it came from). */
export function streamsAuthorizations(op: string, input: Input, arns: ArnBuilder, streamArn: string | undefined): Authorization[] {
  const table = streamArn === undefined ? undefined : tableOfStreamArn(streamArn);
  // ListStreams has no resource-level permission: AWS evaluates it against "*".
  return [{ action: `dynamodb:${op}`, resource: table === undefined ? '*' : arns.stream(table), context: {} }];
}

/** The S3 condition keys a request carries: the listing's prefix, the conditional write's headers. */
function s3Context(input: Input): Record<string, string> {
  const ctx: Record<string, string> = {};
  if (str(input.Prefix) !== undefined) ctx['s3:prefix'] = String(input.Prefix);
  if (str(input.IfNoneMatch) !== undefined) ctx['s3:if-none-match'] = String(input.IfNoneMatch);
  if (str(input.IfMatch) !== undefined) ctx['s3:if-match'] = String(input.IfMatch);
  return ctx;
}

/** S3: the object ARN (its key as the stack stores it: `key`) or the bucket's. */
export function s3Authorizations(op: string, input: Input, arns: ArnBuilder, key: string | undefined): Authorization[] {
  const bucket = String(input.Bucket ?? '');
  const context = s3Context(input);
  const object = key === undefined ? undefined : arns.object(bucket, key);
  const versioned = str(input.VersionId) !== undefined;
  const on = (action: string, resource: string | undefined): Authorization => ({ action: `s3:${action}`, resource: resource ?? arns.bucket(bucket), context });
  switch (op) {
    case 'PutObject':
      return [on('PutObject', object)];
    case 'GetObject':
    case 'HeadObject':
      return [on(versioned ? 'GetObjectVersion' : 'GetObject', object)];
    case 'DeleteObject':
      // A delete conditional on an ETag reads the object's ETag: it needs s3:GetObject too.
      return [on(versioned ? 'DeleteObjectVersion' : 'DeleteObject', object), ...(context['s3:if-match'] === undefined ? [] : [on('GetObject', object)])];
    case 'ListObjectsV2':
    case 'ListObjects':
    case 'HeadBucket':
      return [on('ListBucket', undefined)];
    case 'ListObjectVersions':
      return [on('ListBucketVersions', undefined)];
    default:
      return [on(op, object)];
  }
}
