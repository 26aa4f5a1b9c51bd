/**
 * The local runtime's record of every AWS call each function makes: SDK middleware on the
 * DynamoDB, DynamoDB Streams and S3 clients of a local run (never in functions/: the Lambda
 * entries carry none), and the function a call belongs to from an AsyncLocalStorage the local
 * runtime sets where it invokes each handler (`asFunction`). One shared document client serves
 * every function locally, as one process does; per-function clients would have to be threaded
 * through every handler factory and the runs that build them, while the invocation already marks
 * where one function's work starts, and its timers and awaits inherit the mark.
 *
 * test/infra/iam-calls.test.ts evaluates the records against the synthesized stack's policies;
 * the capacity planner reads the same records (`consumed`, `input`), so every DynamoDB call that
 * takes it is sent with ReturnConsumedCapacity INDEXES unless its caller chose one.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EmailProvider, WorkQueue } from '../../lib/workflow/index.js';
import { ArnBuilder, dynamodbAuthorizations, localArnNames, s3Authorizations, streamsAuthorizations, type ArnNames, type Authorization } from './aws-authorizations.js';

export type { ArnNames, Authorization } from './aws-authorizations.js';

export interface AwsCall {
  /** The function whose invocation made the call: worker, sweeper, starter, sender, reconciler, recorder, collector. */
  fn: string;
  /** sqs and sesv2: recorded at the port (the local queue, the SMTP provider), where the Lambda would call the SDK. */
  service: 'dynamodb' | 'dynamodbstreams' | 's3' | 'sqs' | 'sesv2' | 'lambda' | 'secretsmanager';
  /** The API operation as sent (GetItem, TransactWriteItems, PutObject...). */
  action: string;
  /** What IAM authorizes for it, one per distinct (action, resource, context): a transaction's per item action and table. */
  authorizations: Authorization[];
  /** The distinct resources of `authorizations`, as ARNs AWS would evaluate. */
  resources: string[];
  /** Local names: the table (single-table calls), the index, the bucket and the key (its local document set kept). */
  table?: string;
  index?: string;
  bucket?: string;
  key?: string;
  /** The input as serialized: DynamoDB attribute values marshalled (`{ S: '...' }`), ReturnConsumedCapacity included. */
  input: Record<string, unknown>;
  /** The response's ConsumedCapacity (an object, or an array for batches and transactions). */
  consumed?: unknown;
  /**
   * The error's name when the call failed: a condition failure was still authorized, and still
   * consumed capacity, which DynamoDB does not report in an error answer (`consumed` is absent).
   */
  error?: string;
}

const current = new AsyncLocalStorage<string>();
/**
 * Whether any recorder exists in this process: until one does, the marks are not set at all. On
 * Node 20 a store in use makes every promise carry its context, a cost a run that records
 * nothing (npm start without --calls, the chaos long runs) should not pay.
 */
let recording = false;
let recorders = 0;

/** Runs `f` as an invocation of `fn`: every call it makes, its timers' too, is recorded as that function's. */
export function asFunction<T>(fn: string, f: () => T): T {
  return recording ? current.run(fn, f) : f();
}

/** Runs `f` as no function's: a local stand-in's own call (one AWS makes from configuration). */
export function outsideFunctions<T>(f: () => T): T {
  return recording ? current.exit(f) : f();
}

/** The operations that take ReturnConsumedCapacity (DynamoDB API reference). */
const CAPACITY_OPERATIONS = new Set(['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'Query', 'Scan', 'BatchGetItem', 'BatchWriteItem', 'TransactGetItems', 'TransactWriteItems', 'ExecuteStatement', 'BatchExecuteStatement', 'ExecuteTransaction']);

interface Stack {
  add(mw: unknown, opts: { step: 'initialize' | 'build'; name: string; priority?: 'high' | 'low' }): void;
}
/** Any SDK v3 client: its middleware stack is all the recorder needs. */
export interface AnyClient {
  middlewareStack: unknown;
}
type Next = (args: { input: Record<string, unknown> }) => Promise<{ output: Record<string, unknown> }>;
type Ctx = { clientName?: string; commandName?: string; awsCallInput?: Record<string, unknown> };

const SERVICES: Readonly<Record<string, AwsCall['service']>> = { DynamoDBClient: 'dynamodb', DynamoDBStreamsClient: 'dynamodbstreams', S3Client: 's3' };

export class AwsCallRecorder {
  readonly records: AwsCall[] = [];
  /** Calls made outside any function (the run's own reads, the checker): not recorded, counted. */
  unattributed = 0;
  private readonly arns: ArnBuilder;
  private readonly attached = new WeakSet<object>();
  private readonly sets = new Set<string>();
  /** Which stream each live shard iterator reads (GetRecords names only the iterator). */
  private readonly iterators = new Map<string, string>();
  /** Middleware names are unique per stack: two recorders may share a client. */
  private readonly id = ++recorders;

  constructor(names: ArnNames = localArnNames) {
    recording = true;
    this.arns = new ArnBuilder(names);
  }

  /** A local run's document folder (`<set>/` before its keys): dropped from object ARNs, as the stack has none. */
  documentSet(set: string): this {
    if (set !== '') this.sets.add(set);
    return this;
  }

  /**
   * Installs the recorder on a DynamoDB, DynamoDB Streams or S3 client (once; a document client
   * shares its base client's stack). Another client's calls pass unrecorded.
   */
  attach(client: AnyClient): this {
    if (this.attached.has(client.middlewareStack as object)) return this;
    this.attached.add(client.middlewareStack as object);
    const stack = client.middlewareStack as Stack;
    // Before serialization: the capacity request must be part of what is sent.
    stack.add((next: Next, context: Ctx) => (args: { input: Record<string, unknown> }) => this.around(next, context, args), { step: 'initialize', name: `awsCallRecorder-${this.id}`, priority: 'low' });
    // After serialization the input is what went on the wire (the document client marshals just before it).
    stack.add((next: Next, context: Ctx) => (args: { input: Record<string, unknown> }) => {
      context.awsCallInput = args.input;
      return next(args);
    }, { step: 'build', name: `awsCallInput-${this.id}` });
    return this;
  }

  as<T>(fn: string, f: () => T): T {
    return asFunction(fn, f);
  }

  /** The work queue as the functions see it: each send is the SQS SendMessage the Lambda would make. */
  queue(queue: WorkQueue): WorkQueue {
    return {
      // Recorded before the send: IAM authorizes the attempt, whatever its outcome.
      send: (message) => {
        this.port('sqs', 'SendMessage', [{ action: 'sqs:SendMessage', resource: this.arns.queue(), context: {} }], { MessageBody: JSON.stringify(message) });
        return queue.send(message);
      },
    };
  }

  /** The email provider as the sender and the reconciler see it: each send is SES's SendEmail. */
  email(provider: EmailProvider): EmailProvider {
    return {
      name: provider.name,
      send: (mail) => {
        const resources = this.arns.sendEmail(mail.from);
        this.port('sesv2', 'SendEmail', resources.map((resource) => ({ action: 'ses:SendEmail', resource, context: {} })), { FromEmailAddress: mail.from });
        return provider.send(mail);
      },
    };
  }

  /** A call made at a port (no SDK client locally), recorded as the current function's. */
  private port(service: AwsCall['service'], action: string, authorizations: Authorization[], input: Record<string, unknown>): void {
    const fn = current.getStore();
    if (fn === undefined) {
      this.unattributed++;
      return;
    }
    this.records.push({ fn, service, action, authorizations, resources: authorizations.map((a) => a.resource), input });
  }

  private async around(next: Next, context: Ctx, args: { input: Record<string, unknown> }) {
    const fn = current.getStore();
    const service = SERVICES[context.clientName ?? ''];
    const action = String(context.commandName ?? 'unknown').replace(/Command$/, '');
    if (fn === undefined || service === undefined) {
      if (fn === undefined) this.unattributed++;
      return next(args);
    }
    const wantsCapacity = service === 'dynamodb' && CAPACITY_OPERATIONS.has(action) && args.input.ReturnConsumedCapacity === undefined;
    const sent = wantsCapacity ? { ...args, input: { ...args.input, ReturnConsumedCapacity: 'INDEXES' } } : args;
    const streamArn = service === 'dynamodbstreams' ? this.streamOf(action, sent.input) : undefined;
    try {
      const out = await next(sent);
      this.push({ fn, service, action, input: context.awsCallInput ?? sent.input, streamArn, consumed: out.output.ConsumedCapacity });
      this.follow(action, sent.input, out.output, streamArn);
      return out;
    } catch (e) {
      this.push({ fn, service, action, input: context.awsCallInput ?? sent.input, streamArn, error: (e as Error).name });
      throw e;
    }
  }

  private streamOf(action: string, input: Record<string, unknown>): string | undefined {
    if (typeof input.StreamArn === 'string') return input.StreamArn;
    return action === 'GetRecords' ? this.iterators.get(String(input.ShardIterator)) : undefined;
  }

  /** Keeps the iterator → stream map current: each page's next iterator reads the same stream. */
  private follow(action: string, input: Record<string, unknown>, output: Record<string, unknown>, streamArn: string | undefined): void {
    if (streamArn === undefined) return;
    if (action === 'GetRecords') this.iterators.delete(String(input.ShardIterator));
    const next = output.ShardIterator ?? output.NextShardIterator;
    if (typeof next === 'string') this.iterators.set(next, streamArn);
  }

  /** The key as the stack stores it: the local run's `<set>/` dropped. */
  private stackKey(key: string): string {
    const set = key.split('/')[0] ?? '';
    return this.sets.has(set) ? key.slice(set.length + 1) : key;
  }

  private push(c: { fn: string; service: AwsCall['service']; action: string; input: Record<string, unknown>; streamArn: string | undefined; consumed?: unknown; error?: string }): void {
    const { input } = c;
    const key = typeof input.Key === 'string' ? input.Key : undefined;
    const all =
      c.service === 'dynamodb'
        ? dynamodbAuthorizations(c.action, input, this.arns)
        : c.service === 'dynamodbstreams'
          ? streamsAuthorizations(c.action, input, this.arns, c.streamArn)
          : s3Authorizations(c.action, { ...input, ...(typeof input.Prefix === 'string' ? { Prefix: this.stackKey(input.Prefix) } : {}) }, this.arns, key === undefined ? undefined : this.stackKey(key));
    // A transaction's items on one table are one authorization.
    const authorizations = [...new Map(all.map((a) => [JSON.stringify(a), a])).values()];
    const text = (k: string) => (typeof input[k] === 'string' ? { [k.replace(/Name$/, '').toLowerCase()]: input[k] as string } : {});
    this.records.push({
      fn: c.fn,
      service: c.service,
      action: c.action,
      authorizations,
      resources: [...new Set(authorizations.map((a) => a.resource))],
      ...text('TableName'),
      ...text('IndexName'),
      ...text('Bucket'),
      ...(key === undefined ? {} : { key }),
      input,
      ...(c.consumed === undefined ? {} : { consumed: c.consumed }),
      ...(c.error === undefined ? {} : { error: c.error }),
    });
  }
}

/** A recorder with the ARNs built from `names` (the stack's, in the IAM test; the local names by default). */
export function recordAwsCalls(names?: ArnNames): AwsCallRecorder {
  return new AwsCallRecorder(names);
}

/** The records as JSON lines (npm start --calls FILE). */
export function writeCalls(path: string, records: readonly AwsCall[]): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, records.map((r) => JSON.stringify(r)).join('\n') + '\n');
}
