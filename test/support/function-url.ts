/**
 * A Lambda function URL with AuthType AWS_IAM, played locally: a real HTTP server in front of a
 * handler that takes function URL events (payload format 2.0). Like the real one, it invokes the
 * handler only for a request signed with Signature Version 4 by the credentials it knows (the
 * service `lambda`, its region), the body matching the signed payload hash; anything else is
 * answered 403 `{"Message":"Forbidden"}` without reaching the handler.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

export interface LocalFunctionUrl {
  readonly url: string;
  /** Requests refused before the handler (unsigned, signed by someone else, tampered). */
  readonly forbidden: number;
  /** Requests the handler answered. */
  readonly invoked: number;
  close(): Promise<void>;
}

export const FUNCTION_URL_REGION = 'eu-west-1';
export const CALLER = { accessKeyId: 'AKIASANDBOXCALLER', secretAccessKey: 'caller-secret' } as const;

const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/;

async function signedBy(req: IncomingMessage, body: string, url: URL): Promise<boolean> {
  const m = AUTH.exec(req.headers.authorization ?? '');
  const amzDate = req.headers['x-amz-date'];
  if (m === null || typeof amzDate !== 'string') return false;
  const [, keyId, , region, service, signedHeaders, signature] = m;
  if (keyId !== CALLER.accessKeyId || region !== FUNCTION_URL_REGION || service !== 'lambda') return false;
  const hash = req.headers['x-amz-content-sha256'];
  if (hash !== undefined && hash !== createHash('sha256').update(body).digest('hex')) return false;
  const headers: Record<string, string> = {};
  for (const h of signedHeaders!.split(';')) headers[h] = String(req.headers[h] ?? '');
  const date = new Date(`${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`);
  const signer = new SignatureV4({ service: 'lambda', region: FUNCTION_URL_REGION, credentials: CALLER, sha256: Sha256 });
  const query: Record<string, string> = {};
  url.searchParams.forEach((v, k) => void (query[k] = v));
  const again = await signer.sign({ method: req.method ?? 'GET', protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: url.pathname, query, headers, body }, { signingDate: date });
  return again.headers.authorization === req.headers.authorization;
}

export async function startFunctionUrl(handler: (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>): Promise<LocalFunctionUrl> {
  let forbidden = 0;
  let invoked = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
        if (!(await signedBy(req, body, url))) {
          forbidden++;
          res.writeHead(403, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ Message: 'Forbidden' }));
        }
        invoked++;
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
        const event = { version: '2.0', rawPath: url.pathname, rawQueryString: url.search.slice(1), headers, body, isBase64Encoded: false, requestContext: { http: { method: req.method ?? 'GET', path: url.pathname } } } as unknown as APIGatewayProxyEventV2;
        const answer = await handler(event);
        res.writeHead(answer.statusCode ?? 200, answer.headers as Record<string, string>);
        res.end(answer.body ?? '');
      })().catch((e: unknown) => {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ Message: String(e) }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    get forbidden() {
      return forbidden;
    },
    get invoked() {
      return invoked;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
