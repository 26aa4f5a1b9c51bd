/**
 * The sandbox provider's handler, thin: a function URL's request (payload format 2.0) in, the
 * answer out; what it answers is lib/workflow/adapters/sandbox-provider.ts. Apart from the entry
 * (sandbox-provider.ts), which reads its settings at cold start, so a test drives it with its own.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { answerSandboxCall, type SandboxDeps } from '../lib/workflow/adapters/index.js';

export function sandboxHandler(deps: SandboxDeps): (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2> {
  return async (event) => {
    const headers: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(event.headers ?? {})) headers[k.toLowerCase()] = v;
    const body = event.body === undefined ? '' : event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
    return answerSandboxCall(deps, { method: event.requestContext.http.method, path: event.rawPath, headers, body });
  };
}
