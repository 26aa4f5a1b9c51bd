/**
 * `--endpoint URL` checked before any work: one ListTables. A refused connection, an unknown
 * host, a server that answers but is not DynamoDB (an HTML page, another service on the port)
 * become one InvalidInputError line that says what to do, not an SDK stack trace mid-run.
 */
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createDynamo, InvalidInputError } from '../../lib/protocol/index.js';

const START_ONE = 'start one with `npm run dynamodb`, or leave out --endpoint to use an embedded one';

/** What a person should read for a failed request to `endpoint`, or undefined if it is not a connection problem. */
export function connectionProblem(e: unknown, endpoint: string): string | undefined {
  if (!(e instanceof Error)) return undefined;
  const code = (e as { code?: unknown }).code ?? (e.cause as { code?: unknown } | undefined)?.code;
  const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const type = (e as { $response?: { headers?: Record<string, string> } }).$response?.headers?.['content-type'];
  switch (code) {
    case 'ECONNREFUSED':
      return `nothing answers at ${endpoint} (connection refused): ${START_ONE}`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot resolve the host of ${endpoint}: check the URL (DynamoDB Local is usually http://127.0.0.1:8000)`;
    case 'ECONNRESET':
    case 'EPIPE':
      return `${endpoint} closed the connection: is it DynamoDB? (${START_ONE})`;
  }
  if (e.name === 'TimeoutError' || e.name === 'RequestTimeout' || code === 'ETIMEDOUT') {
    return `${endpoint} did not answer in time: is it DynamoDB, and running? (${START_ONE})`;
  }
  // The SDK could not read the answer as DynamoDB's JSON: something else is listening there.
  if (e.name === 'SyntaxError' || (status !== undefined && /Deserialization error/.test(e.message))) {
    return `${endpoint} answered, but not as DynamoDB (HTTP ${status ?? '?'}${type ? `, ${type}` : ''}): check the URL and port (${START_ONE})`;
  }
  return undefined;
}

/** Throws InvalidInputError(flag) unless `endpoint` answers ListTables as DynamoDB does. */
export async function checkEndpoint(endpoint: string, flag = '--endpoint'): Promise<void> {
  const { client } = createDynamo({ endpoint, maxAttempts: 1, requestTimeoutMs: 5_000 });
  try {
    await client.send(new ListTablesCommand({ Limit: 1 }));
  } catch (e) {
    const problem = connectionProblem(e, endpoint);
    throw new InvalidInputError(flag, problem ?? `${endpoint} refused ListTables: ${(e as Error).name}: ${(e as Error).message}`);
  } finally {
    client.destroy();
  }
}
