/**
 * DynamoDB clients, built once per process. One kept-alive connection pool: a fenced unit is
 * one round trip, so a TLS/TCP handshake per request would be most of its latency.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { marshall, unmarshall, type marshallOptions } from '@aws-sdk/util-dynamodb';
import type { AttributeValue, DynamoDBClientResolvedConfig, ServiceInputTypes, ServiceOutputTypes } from '@aws-sdk/client-dynamodb';
import type { Command } from '@smithy/types';
import { InvalidInputError } from './errors.js';

/** Client settings; everything else is the SDK's default chain (region, credentials). */
export interface DynamoOptions {
  /** e.g. http://127.0.0.1:8000 for DynamoDB Local; absent for AWS. */
  endpoint?: string;
  region?: string;
  /** Per-request timeout; a timed-out write is *ambiguous*: it may have been applied. */
  requestTimeoutMs?: number;
  maxAttempts?: number;
  maxSockets?: number;
}

/** The two clients the library uses: low-level (table admin) and the document client (every protocol call). */
export interface Dynamo {
  client: DynamoDBClient;
  doc: DynamoDBDocumentClient;
}

/** The region a client of a local endpoint uses when none is given: the environment's, else us-east-1. */
export const localRegion = (): string => process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1';

/**
 * The keys a client of a local endpoint signs with: the environment's when set, else dummy ones
 * (DynamoDB Local accepts any signature). DynamoDB Local without -sharedDb keeps one database per
 * access key and region, so every client of one local run must agree on both: the test run gives
 * each test file a key of its own (test/support/own-database.ts).
 */
export const localSigningKeys = (): { accessKeyId: string; secretAccessKey: string } => ({
  accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'local',
  secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
});

/**
 * The credentials of an SDK v3 client of a local endpoint, to spread into its config: none when
 * the environment has keys (the SDK's chain signs with them, and their session token: an endpoint
 * may be a real one, a VPC endpoint), else the dummy keys DynamoDB Local accepts.
 */
export const localCredentials = (): { credentials?: { accessKeyId: string; secretAccessKey: string } } =>
  process.env.AWS_ACCESS_KEY_ID === undefined ? { credentials: localSigningKeys() } : {};

/**
 * Both clients over one kept-alive connection pool, with a request timeout that fails instead of
 * hanging; against DynamoDB Local (`endpoint`) it supplies dummy credentials when none are set.
 */
export function createDynamo(opts: DynamoOptions = {}): Dynamo {
  const agentOpts = { keepAlive: true, maxSockets: opts.maxSockets ?? 64 };
  const config: DynamoDBClientConfig = {
    region: opts.region ?? (opts.endpoint ? localRegion() : (process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION)),
    maxAttempts: opts.maxAttempts ?? 3,
    requestHandler: new NodeHttpHandler({
      httpAgent: new HttpAgent(agentOpts),
      httpsAgent: new HttpsAgent(agentOpts),
      connectionTimeout: 2_000,
      requestTimeout: opts.requestTimeoutMs ?? 5_000,
      // Without this, @smithy/node-http-handler 4.x only logs a warning and the request hangs on.
      throwOnRequestTimeout: true,
    }),
  };
  if (opts.endpoint !== undefined) {
    Object.assign(config, { endpoint: opts.endpoint, ...localCredentials() });
  }
  const client = new DynamoDBClient(config);
  const doc = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true },
  });
  return { client, doc };
}

/** The marshalling options the document client was built with (e.g. removeUndefinedValues). */
export function marshallOptionsOf(doc: DynamoDBDocumentClient): marshallOptions | undefined {
  return doc.config.translateConfig?.marshallOptions;
}

/**
 * A record (an item, a key, expression values) as DynamoDB AttributeValues, with the document
 * client's own options, never wrapped as one top-level { M: ... } (lib-dynamodb turns
 * `convertTopLevelContainer` on in the options object it shares).
 */
export function toAttributes(values: Readonly<Record<string, unknown>>, options: marshallOptions | undefined): Record<string, AttributeValue> {
  return marshall(values, { ...options, convertTopLevelContainer: false }) as Record<string, AttributeValue>;
}

/** The inverse, for what a low-level call returns (ReturnValues), with the document client's options. */
export function fromAttributes(doc: DynamoDBDocumentClient, item: Record<string, AttributeValue> | undefined): Record<string, unknown> | undefined {
  return item === undefined ? undefined : unmarshall(item, { ...doc.config.translateConfig?.unmarshallOptions, convertWithoutMapWrapper: false });
}

/**
 * Sends a low-level command (already-marshalled AttributeValues) through a document client. The
 * document client is its base client's config and middleware stack (lib-dynamodb shares both),
 * so the request takes the same connection pool, signing, retries and any middleware a caller
 * added (request counters, tracing); it only skips the document client's (un)marshalling pass:
 * on the hot paths (a fenced unit, a lease operation) the library marshals once itself.
 * Output and errors are low-level (AttributeValue maps), as the document client leaves errors.
 */
export function sendLowLevel<I extends ServiceInputTypes, O extends ServiceOutputTypes>(
  doc: DynamoDBDocumentClient,
  command: Command<ServiceInputTypes, I, ServiceOutputTypes, O, DynamoDBClientResolvedConfig>,
  options?: { abortSignal?: AbortSignal },
): Promise<O> {
  return (doc as unknown as { send(c: typeof command, o?: typeof options): Promise<O> }).send(command, options);
}

/** The error name the SDK gives a failed condition on a single-item write. */
export const isConditionalCheckFailed = (e: unknown): e is Error & { Item?: Record<string, AttributeValue> } =>
  e instanceof Error && e.name === 'ConditionalCheckFailedException';

/**
 * The item returned by `ReturnValuesOnConditionCheckFailure: ALL_OLD`. The document client does
 * not unmarshall errors, so this does.
 */
export function conditionFailureItem(e: { Item?: Record<string, AttributeValue> }): Record<string, unknown> | undefined {
  return e.Item === undefined ? undefined : unmarshall(e.Item);
}

/** DynamoDB's item size limit. */
export const MAX_ITEM_BYTES = 400 * 1024;

/**
 * An item's size as DynamoDB counts it (attribute names + values), never below it: sets,
 * binary and nested values included. JSON.stringify is not that: a Set serialises as `{}`
 * (a 500 KB string set would pass as 2 bytes) and a Buffer as an array of numbers.
 */
export function itemBytes(item: Readonly<Record<string, unknown>>, field = 'item'): number {
  let total = 0;
  for (const [name, value] of Object.entries(item)) total += Buffer.byteLength(name) + valueBytes(value, field, 1);
  return total;
}

/** DynamoDB's limit on nested attributes; also what stops a cyclic value here. */
const MAX_NESTING = 32;

/** Also refuses what DynamoDB cannot store (NaN, Infinity, symbols, functions, nesting past 32 levels, cycles). */
function valueBytes(v: unknown, field: string, depth: number): number {
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v === 'number' && !Number.isFinite(v)) throw new InvalidInputError(field, `${v} cannot be stored in DynamoDB`);
  if (typeof v === 'number' || typeof v === 'bigint') return String(v).length + 1;
  if (v === null || v === undefined || typeof v === 'boolean') return 1;
  if (typeof v === 'symbol' || typeof v === 'function') throw new InvalidInputError(field, `a ${typeof v} cannot be stored in DynamoDB`);
  if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return v.byteLength;
  if (depth > MAX_NESTING) throw new InvalidInputError(field, `nested more than ${MAX_NESTING} levels deep (or cyclic)`);
  if (v instanceof Set) return [...v].reduce((n: number, e) => n + valueBytes(e, field, depth + 1), 0);
  if (Array.isArray(v)) return v.reduce((n: number, e) => n + 1 + valueBytes(e, field, depth + 1), 3);
  if (typeof v === 'object') return 3 + Object.entries(v).reduce((n, [k, e]) => n + Buffer.byteLength(k) + 1 + valueBytes(e, field, depth + 1), 0);
  return Buffer.byteLength(String(v));
}

/**
 * A request that got no answer to act on: no HTTP response at all (the SDK's own errors carry
 * `$metadata` without a status), a server fault or throttling. Anything else (a bad table name,
 * missing permissions, a bug) is thrown to the caller.
 */
export function isUnanswered(e: unknown): boolean {
  if (!(e instanceof Error) || !('$metadata' in e)) return false;
  const x = e as Error & { $fault?: string; $metadata?: { httpStatusCode?: number } };
  if (x.$fault === 'server' || x.$metadata?.httpStatusCode === undefined) return true;
  return ['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded'].includes(x.name);
}
