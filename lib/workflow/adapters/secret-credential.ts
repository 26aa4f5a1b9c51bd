/**
 * A live http target's credential, read from AWS Secrets Manager: the provider's API key, sent
 * as `Authorization: Bearer <key>` on every call (how Stripe and most payment APIs take it). The
 * value is read when first needed and kept for `ttlMs` within the function's life (a rotated key
 * is picked up within that time); it is never logged, and it is in neither the template nor the
 * environment: those hold the secret's ARN only.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { FencedError } from '../../protocol/index.js';

export interface Credential {
  /** The key, or throws: the caller holds the item (a provider would refuse the call anyway). */
  value(): Promise<string>;
}

export class SecretsManagerCredential implements Credential {
  private cached: { value: string; at: number } | undefined;
  constructor(
    private readonly client: SecretsManagerClient,
    private readonly secretId: string,
    private readonly ttlMs = 300_000,
    private readonly now: () => number = Date.now,
  ) {}

  static client(): SecretsManagerClient {
    return new SecretsManagerClient({});
  }

  async value(): Promise<string> {
    const t = this.now();
    if (this.cached !== undefined && t - this.cached.at < this.ttlMs) return this.cached.value;
    const out = await this.client.send(new GetSecretValueCommand({ SecretId: this.secretId }));
    const value = out.SecretString?.trim();
    // A secret created by the stack and never given the provider's key holds a generated
    // placeholder, which the provider refuses (401: held); an empty one is refused here alike.
    if (value === undefined || value === '') throw new CredentialMissingError(this.secretId);
    this.cached = { value, at: t };
    return value;
  }
}

/** The target's secret has no string value: nothing to send. */
export class CredentialMissingError extends FencedError {
  readonly code = 'CREDENTIAL_MISSING';
  constructor(readonly secretId: string) {
    super(`the secret ${secretId} holds no key: put the provider's API key in it (aws secretsmanager put-secret-value)`);
  }
}
