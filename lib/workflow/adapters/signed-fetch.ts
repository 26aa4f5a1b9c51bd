/**
 * A fetch whose every request is signed with AWS Signature Version 4, for an http target behind
 * an endpoint that takes only IAM-authorized calls: the sandbox provider's Lambda function URL
 * (AuthType AWS_IAM; the caller needs lambda:InvokeFunctionUrl on the function). The signer and
 * the SHA-256 are the SDK's own (@smithy/signature-v4, @smithy/core), the credentials the
 * function's role's, from the SDK's default chain; only the glue between them and fetch is here,
 * since the SDK has no client for a function URL.
 */
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';

export interface SignedFetchOptions {
  readonly region: string;
  /** @default 'lambda' (a function URL's signing name) */
  readonly service?: string;
  /** @default the SDK's default chain (in Lambda: the function's role) */
  readonly credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** How the signed request goes out. @default the global fetch, looked up at each call */
  readonly fetchFn?: typeof fetch;
}

export function signedFetch(opts: SignedFetchOptions): typeof fetch {
  const signer = new SignatureV4({ service: opts.service ?? 'lambda', region: opts.region, credentials: opts.credentials ?? defaultProvider(), sha256: Sha256 });
  const send: typeof fetch = opts.fetchFn ?? ((input, init) => fetch(input, init));
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => void (headers[k] = v));
    const body = typeof init?.body === 'string' ? init.body : '';
    const query: Record<string, string> = {};
    url.searchParams.forEach((v, k) => void (query[k] = v));
    const signed = await signer.sign({
      method: init?.method ?? 'GET',
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port === '' ? {} : { port: Number(url.port) }),
      path: url.pathname,
      query,
      headers: { ...headers, host: url.host },
      body,
    });
    // fetch sets Host from the URL itself (the same value that was signed) and refuses it as a header.
    const { host: _host, ...out } = signed.headers;
    return send(url, { ...init, headers: out });
  };
}
