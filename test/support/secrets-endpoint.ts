/**
 * AWS Secrets Manager, played locally for what the sender calls: `GetSecretValue` over its real
 * protocol (POST /, JSON 1.1, `X-Amz-Target: secretsmanager.GetSecretValue`), the SDK pointed at
 * it with its own endpoint setting. A secret is looked up by its ARN or name; an unknown one is
 * `ResourceNotFoundException`, as AWS answers. Every request is kept as it came (for the IAM
 * evaluation of the calls the code made: test/infra/wire-calls.ts).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WireRequest } from '../infra/wire-calls.js';

export interface SecretsEndpoint {
  readonly url: string;
  readonly requests: WireRequest[];
  /** Sets (or replaces) a secret's string value; `arn` is its complete ARN, its name the part after `secret:`. */
  put(arn: string, value: string): void;
  close(): Promise<void>;
}

export async function startSecretsEndpoint(): Promise<SecretsEndpoint> {
  const secrets = new Map<string, { arn: string; value: string; version: number }>();
  const requests: WireRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const target = String(req.headers['x-amz-target'] ?? '');
      requests.push({ method: req.method ?? 'POST', path: req.url ?? '/', headers: { host: String(req.headers.host), 'x-amz-target': target }, body });
      const answer = (status: number, out: unknown) => {
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify(out));
      };
      if (target !== 'secretsmanager.GetSecretValue') return answer(400, { __type: 'UnknownOperationException', message: `not served here: ${target}` });
      const id = String((JSON.parse(body) as { SecretId?: unknown }).SecretId ?? '');
      const s = secrets.get(id) ?? [...secrets.values()].find((x) => x.arn.split(':secret:')[1]?.replace(/-[A-Za-z0-9]{6}$/, '') === id);
      if (s === undefined) return answer(400, { __type: 'ResourceNotFoundException', message: "Secrets Manager can't find the specified secret." });
      return answer(200, { ARN: s.arn, Name: s.arn.split(':secret:')[1], SecretString: s.value, VersionId: `v${s.version}`, VersionStages: ['AWSCURRENT'], CreatedDate: 1_700_000_000 });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    put: (arn, value) => void secrets.set(arn, { arn, value, version: (secrets.get(arn)?.version ?? 0) + 1 }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
