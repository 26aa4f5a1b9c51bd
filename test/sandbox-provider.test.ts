// tier: quick
/**
 * The sandbox provider a stack deploys for its http targets that are not live
 * (lib/workflow/adapters/sandbox-provider.ts), behind a local function URL that, like Lambda's
 * with AuthType AWS_IAM, passes only signed requests, its keys on DynamoDB Local, called by the
 * sender's own provider (FetchHttpProvider over signedFetch): the first answer per key is replayed,
 * another body under a key is refused, a key is forgotten after its retention, a declined key is a
 * decline for good, and it throttles and fails before performing when told to. An unsigned call,
 * or one signed by someone else, never reaches it.
 */
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxHandler } from '../functions/sandbox-provider-handler.js';
import { ConfigError } from '../lib/protocol/index.js';
import { FetchHttpProvider, SANDBOX_DECLINED_CARD, SANDBOX_ENV, sandboxBehaviourFromEnv, signedFetch, type SandboxBehaviour } from '../lib/workflow/adapters/index.js';
import { CALLER, FUNCTION_URL_REGION, startFunctionUrl, type LocalFunctionUrl } from './support/function-url.js';
import { makeTables, type TestTables } from './support/tables.js';

let t: TestTables;
let table: string;
let clock = 1_000_000;
const servers: LocalFunctionUrl[] = [];

beforeAll(async () => {
  t = await makeTables(import.meta.filename);
  table = `${t.prefix}sandbox-keys`;
  await t.dynamo.client.send(new CreateTableCommand({ TableName: table, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }] }));
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

const NONE: SandboxBehaviour = { keyRetentionMs: 3_600_000, declineShare: 0, throttleShare: 0, errorShare: 0 };

/** A sandbox provider behind its own local function URL, and the sender's provider for a target there. */
async function sandbox(behaviour: SandboxBehaviour = NONE, random?: () => number) {
  const fnUrl = await startFunctionUrl(sandboxHandler({ doc: t.dynamo.doc, table, behaviour, now: () => clock, ...(random ? { random } : {}) }));
  servers.push(fnUrl);
  const endpoint = `${fnUrl.url}payments`;
  const provider = new FetchHttpProvider(endpoint, 5_000, {}, signedFetch({ region: FUNCTION_URL_REGION, credentials: CALLER }));
  return { fnUrl, endpoint, provider };
}

let n = 0;
const call = (body: Record<string, unknown> = { amountCents: 1234, currency: 'EUR' }, key = `outbox-key-${++n}`) => ({ idempotencyKey: key, headers: { 'x-outbox-id': `payment#${n}` }, body });

describe('the sandbox provider keeps a payment provider\'s idempotency contract', () => {
  it('a signed call is performed once: its answer is replayed for the key, another body under it is refused for good', async () => {
    const { fnUrl, provider } = await sandbox();
    const c = call();
    const first = await provider.post(c);
    expect(first).toMatchObject({ kind: 'accepted' });
    expect((first as { providerMessageId: string }).providerMessageId).toMatch(/^sbx_[0-9a-f]{24}$/);
    expect(await provider.post(c)).toEqual(first);
    expect(await provider.post({ ...c, body: { amountCents: 1, currency: 'EUR' } })).toMatchObject({ kind: 'rejected', permanent: true, reason: expect.stringContaining('idempotency_error') });
    expect(fnUrl.invoked).toBe(3);
    expect(fnUrl.forbidden).toBe(0);
  });

  it('a key is forgotten after its retention: the same request is then performed again, as a new one', async () => {
    const { provider } = await sandbox();
    const c = call();
    const first = (await provider.post(c)) as { providerMessageId: string };
    clock += NONE.keyRetentionMs! - 1;
    expect(await provider.post(c)).toEqual(first);
    clock += 1;
    const again = (await provider.post(c)) as { kind: string; providerMessageId: string };
    expect(again.kind).toBe('accepted');
    expect(again.providerMessageId).not.toBe(first.providerMessageId);
  });

  it("a declined key (Stripe's declining test card, or the declined share) is a decline, replayed for the key", async () => {
    const { provider } = await sandbox();
    const c = call({ amountCents: 500, card: SANDBOX_DECLINED_CARD });
    expect(await provider.post(c)).toMatchObject({ kind: 'declined' });
    expect(await provider.post(c)).toMatchObject({ kind: 'declined' });
    const all = await sandbox({ ...NONE, declineShare: 1 });
    expect(await all.provider.post(call())).toMatchObject({ kind: 'declined' });
    const share = await sandbox({ ...NONE, declineShare: 0.05 });
    const verdicts = await Promise.all(Array.from({ length: 400 }, () => share.provider.post(call())));
    const declined = verdicts.filter((v) => v.kind === 'declined').length;
    expect(declined).toBeGreaterThan(5);
    expect(declined).toBeLessThan(40);
  });

  it('told to, it throttles (429, Retry-After) and fails before performing (503, maybe taken): neither stores the key, so the resend performs it', async () => {
    const draws = [0, 1, 1]; // throttled, then neither
    const throttling = await sandbox({ ...NONE, throttleShare: 0.5 }, () => draws.shift() ?? 1);
    const c = call();
    expect(await throttling.provider.post(c)).toMatchObject({ kind: 'throttled', retryAfterMs: 1000 });
    expect(await throttling.provider.post(c)).toMatchObject({ kind: 'accepted' });
    const failing = await sandbox({ ...NONE, errorShare: 0.5 }, (() => {
      const d = [1, 0, 1, 1];
      return () => d.shift() ?? 1;
    })());
    const f = call();
    expect(await failing.provider.post(f)).toMatchObject({ kind: 'ambiguous' });
    expect((await failing.provider.post(f)) as { final?: boolean }).not.toHaveProperty('final');
  });
});

describe('only signed calls reach it (AuthType AWS_IAM)', () => {
  it('unsigned, or signed with keys it does not know, the call is refused 403 before the handler: held, never performed', async () => {
    const { fnUrl, endpoint } = await sandbox();
    const unsigned = new FetchHttpProvider(endpoint, 5_000);
    expect(await unsigned.post(call())).toMatchObject({ kind: 'held', reason: expect.stringContaining('403') });
    const stranger = new FetchHttpProvider(endpoint, 5_000, {}, signedFetch({ region: FUNCTION_URL_REGION, credentials: { accessKeyId: 'AKIASTRANGER', secretAccessKey: 'other' } }));
    expect(await stranger.post(call())).toMatchObject({ kind: 'held' });
    const forged = new FetchHttpProvider(endpoint, 5_000, {}, signedFetch({ region: FUNCTION_URL_REGION, credentials: { accessKeyId: CALLER.accessKeyId, secretAccessKey: 'guessed' } }));
    expect(await forged.post(call())).toMatchObject({ kind: 'held' });
    expect(fnUrl.forbidden).toBe(3);
    expect(fnUrl.invoked).toBe(0);
  });
});

describe('its settings, read at cold start', () => {
  it('shares in [0, 1] and a retention of at least a minute; anything else stops it in one line naming the variable', () => {
    expect(sandboxBehaviourFromEnv({ [SANDBOX_ENV.keyRetentionMs]: '86400000', [SANDBOX_ENV.declineShare]: '0.05' })).toEqual({ keyRetentionMs: 86_400_000, declineShare: 0.05, throttleShare: 0, errorShare: 0 });
    expect(sandboxBehaviourFromEnv({})).toEqual({ declineShare: 0, throttleShare: 0, errorShare: 0 });
    for (const [name, value] of [
      [SANDBOX_ENV.declineShare, '1.5'],
      [SANDBOX_ENV.throttleShare, '-0.1'],
      [SANDBOX_ENV.keyRetentionMs, '59999'],
      [SANDBOX_ENV.errorShare, 'lots'],
    ] as const) {
      let error: unknown;
      try {
        sandboxBehaviourFromEnv({ [name]: value });
      } catch (e) {
        error = e;
      }
      expect(error, name).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe(name);
    }
  });
});
