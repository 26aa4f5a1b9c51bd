// tier: quick
/**
 * A live http target's API key (lib/workflow/adapters/secret-credential.ts): read from Secrets
 * Manager (a local endpoint speaking its protocol, the SDK's own client), kept for its TTL, sent as
 * `Authorization: Bearer` by the sender's provider; the local payment provider, like a real one,
 * refuses a call without the right key 401 before performing anything, which the sender holds.
 * A key that cannot be read holds the item without any call reaching the provider.
 */
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPaymentsProvider, type PaymentsProvider } from '../cli/local/payments-provider.js';
import { CredentialMissingError, FetchHttpProvider, SecretsManagerCredential, type Credential } from '../lib/workflow/adapters/index.js';
import { startSecretsEndpoint, type SecretsEndpoint } from './support/secrets-endpoint.js';

const KEY = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc';
const ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:FencedWorkflow-payments-AbCdEf';

let payments: PaymentsProvider;
let secrets: SecretsEndpoint;
let client: SecretsManagerClient;
beforeAll(async () => {
  [payments, secrets] = await Promise.all([startPaymentsProvider({ apiKey: KEY }), startSecretsEndpoint()]);
  client = new SecretsManagerClient({ endpoint: secrets.url, region: 'eu-west-1', credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local' } });
});
afterAll(async () => {
  client.destroy();
  await Promise.all([payments.close(), secrets.close()]);
});

let n = 0;
const call = () => ({ idempotencyKey: `outbox-credential-${++n}`, headers: { 'x-outbox-id': `payment#${n}` }, body: { amountCents: 1234, currency: 'EUR' } });
const provider = (credential?: Credential) => new FetchHttpProvider(`${payments.url}/charges`, 5_000, credential === undefined ? {} : { credential });
const fixed = (value: string): Credential => ({ value: async () => value });

describe('the provider takes the target\'s API key on every call', () => {
  it('the right key: performed; none, or a wrong one: refused 401 before anything is performed, which the sender holds (never FAILED)', async () => {
    expect(await provider(fixed(KEY)).post(call())).toMatchObject({ kind: 'accepted' });
    const before = payments.records.size;
    expect(await provider().post(call())).toMatchObject({ kind: 'held', reason: expect.stringContaining('401') });
    expect(await provider(fixed('sk_test_placeholder')).post(call())).toMatchObject({ kind: 'held', reason: expect.stringContaining('Invalid API Key') });
    expect(payments.records.size).toBe(before);
    expect(payments.unauthorized).toBe(2);
  });

  it('a key that cannot be read holds the item, and nothing reaches the provider', async () => {
    const unauthorized = payments.unauthorized;
    const records = payments.records.size;
    const broken: Credential = { value: async () => Promise.reject(new CredentialMissingError(ARN)) };
    const result = await provider(broken).post(call());
    expect(result).toMatchObject({ kind: 'held', reason: expect.stringContaining('CredentialMissingError') });
    expect([payments.unauthorized, payments.records.size]).toEqual([unauthorized, records]);
  });
});

describe('SecretsManagerCredential, over Secrets Manager\'s protocol', () => {
  it('reads the key once per TTL: many calls, one GetSecretValue; a rotated key is read after the TTL', async () => {
    let now = 0;
    secrets.put(ARN, KEY);
    const credential = new SecretsManagerCredential(client, ARN, 300_000, () => now);
    const p = provider(credential);
    for (let i = 0; i < 5; i++) expect(await p.post(call())).toMatchObject({ kind: 'accepted' });
    const reads = () => secrets.requests.filter((r) => r.headers['x-amz-target'] === 'secretsmanager.GetSecretValue').length;
    expect(reads()).toBe(1);
    secrets.put(ARN, 'sk_test_rotated');
    now += 299_999;
    expect(await credential.value()).toBe(KEY);
    now += 1;
    expect(await credential.value()).toBe('sk_test_rotated');
    expect(reads()).toBe(2);
  });

  it('a secret that does not exist, or holds an empty value, is an error the provider turns into held', async () => {
    const missing = new SecretsManagerCredential(client, 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:gone-ZZZZZZ');
    expect(await provider(missing).post(call())).toMatchObject({ kind: 'held', reason: expect.stringContaining('ResourceNotFoundException') });
    const emptyArn = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:empty-QwErTy';
    secrets.put(emptyArn, '   ');
    await expect(new SecretsManagerCredential(client, emptyArn).value()).rejects.toBeInstanceOf(CredentialMissingError);
  });
});
