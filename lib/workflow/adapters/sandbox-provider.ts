/**
 * The sandbox provider: what a stack deploys for its http targets that are not live (DESIGN.md,
 * External effects; docs/deploy.md, Sandbox and live), so that a first deploy runs end to end and
 * reaches no real provider. It keeps a payment provider's idempotency contract, as the local one
 * does (cli/local/payments-core.ts), on a DynamoDB table so that every container sees every key:
 *
 * - A POST needs an `Idempotency-Key` (400 without). Its first request is performed: a 200 with
 *   `{"id": "sbx_…", "status": "succeeded"}`, or, for a declined one, Stripe's 402 `card_declined`.
 *   The answer is stored with the key, under `attribute_not_exists` (or an expired key's).
 * - A later request with the key and the same path and body gets the stored answer again, with
 *   `Idempotent-Replayed: true`; with another body, 400 `idempotency_error`.
 * - A key is forgotten `keyRetentionMs` after it was stored (checked on read; TTL removes it
 *   later): a request after that is performed again, as a provider that dropped the key does.
 * - Told to misbehave (the stack's `sandboxProvider` setting): a seeded share of keys declined
 *   (and every body whose `card` is Stripe's `tok_chargeDeclined`), a share of requests throttled
 *   (429, Retry-After 1) or failed before anything is performed (503). Neither stores anything.
 *
 * It is never an open endpoint: the stack puts it behind a function URL that takes only
 * SigV4-signed calls (AWS_IAM), and only the sender and the reconciler may make them.
 */
import { createHash, randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConfigError } from '../../protocol/index.js';

/** Stripe test mode's card token that is always declined; the sandbox declines it the same way. */
export const SANDBOX_DECLINED_CARD = 'tok_chargeDeclined';

export const SANDBOX_ENV = {
  keysTable: 'SANDBOX_KEYS_TABLE',
  keyRetentionMs: 'SANDBOX_KEY_RETENTION_MS',
  declineShare: 'SANDBOX_DECLINE_SHARE',
  throttleShare: 'SANDBOX_THROTTLE_SHARE',
  errorShare: 'SANDBOX_ERROR_SHARE',
} as const;

export interface SandboxBehaviour {
  /** Keys are forgotten this long after they were stored; undefined: kept for good. */
  readonly keyRetentionMs?: number;
  /** The share of new keys declined (402), by the key: the same key is declined on every provider that computes it. */
  readonly declineShare: number;
  /** The share of requests answered 429 before anything is performed. */
  readonly throttleShare: number;
  /** The share of requests answered 503 before anything is performed. */
  readonly errorShare: number;
}

export interface SandboxDeps {
  readonly doc: DynamoDBDocumentClient;
  readonly table: string;
  readonly behaviour: SandboxBehaviour;
  readonly now?: () => number;
  /** Where the throttle and error draws come from (tests pass a seeded one). */
  readonly random?: () => number;
}

/** A function URL request as the handler reads it (payload format 2.0). */
export interface SandboxRequest {
  readonly method: string;
  readonly path: string;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: string;
}

export interface SandboxAnswer {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

interface StoredKey {
  pk: string;
  bodyHash: string;
  statusCode: number;
  body: string;
  storedAt: number;
  /** Epoch seconds: the table's TTL attribute; absent when keys are kept for good. */
  expiresAt?: number;
}

const json = (statusCode: number, body: unknown, headers: Record<string, string> = {}): SandboxAnswer => ({
  statusCode,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

const share = (key: string, fraction: number): boolean => fraction > 0 && createHash('sha256').update(key).digest().readUInt32BE(0) / 2 ** 32 < fraction;

function cardOf(body: string): unknown {
  try {
    return (JSON.parse(body) as { card?: unknown } | null)?.card;
  } catch {
    return undefined;
  }
}

/** The answer a new key gets: performed, or declined. */
function performed(key: string, req: SandboxRequest, b: SandboxBehaviour): { statusCode: number; body: string } {
  if (cardOf(req.body) === SANDBOX_DECLINED_CARD || share(key, b.declineShare)) {
    return { statusCode: 402, body: JSON.stringify({ error: { type: 'card_error', code: 'card_declined', message: 'Declined by the sandbox provider.' } }) };
  }
  return { statusCode: 200, body: JSON.stringify({ id: `sbx_${randomUUID().replace(/-/g, '').slice(0, 24)}`, object: 'sandbox_effect', status: 'succeeded', path: req.path }) };
}

/** Answers one call, as payments-core.ts's contract says, with its keys in the table. */
export async function answerSandboxCall(deps: SandboxDeps, req: SandboxRequest): Promise<SandboxAnswer> {
  const now = (deps.now ?? Date.now)();
  const random = deps.random ?? Math.random;
  const b = deps.behaviour;
  if (req.method !== 'POST') return json(404, { error: { type: 'invalid_request_error', message: 'only POST is served' } });
  const key = req.headers['idempotency-key'];
  if (key === undefined || key === '' || key.length > 255) return json(400, { error: { type: 'invalid_request_error', message: 'an Idempotency-Key (1-255 characters) is required' } });
  // Refused before anything is performed: nothing stored, as for a request that never came.
  if (random() < b.throttleShare) return json(429, { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Throttled by the sandbox provider.' } }, { 'retry-after': '1' });
  if (random() < b.errorShare) return json(503, { error: { type: 'api_error', message: 'The sandbox provider failed before performing anything.' } });

  const bodyHash = createHash('sha256').update(`${req.path}\u0000${req.body}`).digest('hex');
  const answer = performed(key, req, b);
  const item: StoredKey = { pk: key, bodyHash, ...answer, storedAt: now, ...(b.keyRetentionMs === undefined ? {} : { expiresAt: Math.ceil((now + b.keyRetentionMs) / 1000) }) };
  try {
    // New, or forgotten (its retention passed; TTL deletes it only some time later).
    await deps.doc.send(
      new PutCommand({
        TableName: deps.table,
        Item: item,
        ConditionExpression: 'attribute_not_exists(pk) OR storedAt <= :forgotten',
        ExpressionAttributeValues: { ':forgotten': b.keyRetentionMs === undefined ? -1 : now - b.keyRetentionMs },
      }),
    );
    return json(answer.statusCode, JSON.parse(answer.body), { 'request-id': `req_${key.slice(-16)}` });
  } catch (e) {
    if (!(e instanceof ConditionalCheckFailedException)) throw e;
  }
  const stored = (await deps.doc.send(new GetCommand({ TableName: deps.table, Key: { pk: key }, ConsistentRead: true }))).Item as StoredKey | undefined;
  // Taken and then forgotten between the two requests: the caller's resend performs it.
  if (stored === undefined) return json(409, { error: { type: 'idempotency_error', message: 'A request with this key was in progress; send it again.' } });
  if (stored.bodyHash !== bodyHash) {
    return json(400, { error: { type: 'idempotency_error', message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.' } });
  }
  return { statusCode: stored.statusCode, headers: { 'content-type': 'application/json', 'idempotent-replayed': 'true' }, body: stored.body };
}

function fraction(env: Readonly<Record<string, string | undefined>>, name: string): number {
  const v = env[name];
  if (v === undefined || v === '') return 0;
  const n = /^\d+(\.\d+)?$/.test(v) ? Number(v) : NaN;
  if (!(n >= 0 && n <= 1)) throw new ConfigError(name, `must be a share in [0, 1], got "${v.slice(0, 100)}"`);
  return n;
}

/** The behaviour the stack set in the sandbox provider's environment. */
export function sandboxBehaviourFromEnv(env: Readonly<Record<string, string | undefined>>): SandboxBehaviour {
  const retention = env[SANDBOX_ENV.keyRetentionMs];
  const ms = retention === undefined || retention === '' ? undefined : /^\d+$/.test(retention) ? Number(retention) : NaN;
  if (ms !== undefined && !(ms >= 60_000)) throw new ConfigError(SANDBOX_ENV.keyRetentionMs, `must be an integer of at least 60000 ms, got "${String(retention).slice(0, 100)}"`);
  return {
    ...(ms === undefined ? {} : { keyRetentionMs: ms }),
    declineShare: fraction(env, SANDBOX_ENV.declineShare),
    throttleShare: fraction(env, SANDBOX_ENV.throttleShare),
    errorShare: fraction(env, SANDBOX_ENV.errorShare),
  };
}
