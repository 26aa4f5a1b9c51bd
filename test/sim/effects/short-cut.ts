/**
 * The short-cut's route for the providers' clients (S3Client, SESv2Client; test/sim/short-cut.ts
 * has what every route shares, and the proof): each command class's own stack, resolved once as
 * the SDK's `cacheMiddleware` resolves it, less the middleware whose work no stand-in reads:
 * endpoint rules (the endpoint is the stand-in's, path-style for a bucket), auth scheme selection
 * and SigV4 signing, the user agent, host header, recursion detection, region redirects, S3
 * Express sessions, the logger. What stays is what reaches the stand-in or the code: the schema
 * serializer, the content length, the bucket name check, SSE-C, the checksums the adapter sends
 * and compares, the retry loop with the client's own strategy, the deserializer and S3's
 * 200-with-an-error check.
 */
import { getSmithyContext } from '@smithy/core';
import { operation } from '@smithy/core/schema';
import { toEndpointV1 } from '@smithy/core/transport';
import type { HttpHandlerOptions, HttpRequest, MiddlewareStack } from '@smithy/types';
import { fresh, installShortCut, type AnyCommand, type SdkClient, type ShortCutOptions, type Terminal } from '../short-cut.js';
import { pathAndQuery } from './smithy.js';

/** The middleware a stand-in has no use for (by the names the SDK gives them). */
const UNREAD = [
  'loggerMiddleware',
  'httpAuthSchemeMiddleware',
  'httpSigningMiddleware',
  'endpointV2Middleware',
  'regionRedirectMiddleware',
  'regionRedirectEndpointMiddleware',
  'bucketEndpointMiddleware',
  's3ExpressMiddleware',
  'getUserAgentMiddleware',
  'hostHeaderMiddleware',
  'recursionDetectionMiddleware',
];

/** Headers only the removed middleware writes (or drawn per send), which no stand-in reads: compare mode leaves them out. */
const UNCOMPARED = new Set(['authorization', 'x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token', 'user-agent', 'x-amz-user-agent', 'host', 'amz-sdk-invocation-id', 'x-amzn-trace-id']);

/**
 * Installs the short-cut on a provider's client whose request handler is a stand-in's.
 * `endpointOf` is the URL a request goes to: the client's endpoint, and for S3 path-style the
 * bucket after it (compare mode holds it to what the SDK's endpoint rules resolve).
 */
export function installProviderShortCut(client: SdkClient, endpointOf: (input: Record<string, unknown>) => string, opts: ShortCutOptions = {}): void {
  const config = client.config;
  const serializer = (next: any, context: any) => async (args: any) => {
    const [, ns, n, t, i, o] = getSmithyContext(context).operationSchema as unknown[];
    const endpoint = async () => toEndpointV1({ url: new URL(endpointOf(args.input)) });
    return next({ ...args, request: await config.protocol.serializeRequest(operation(ns as string, n as string, t as never, i as never, o as never), args.input, { ...config, ...context, endpoint }) });
  };
  const base = client.middlewareStack.clone();
  base.remove('serializerMiddleware');
  base.add(serializer as never, { step: 'serialize', name: 'serializerMiddleware', override: true });
  // The command's own middleware joins the client's in `concat`: the unread are taken out of the whole.
  const pruned: MiddlewareStack<any, any> = {
    ...base,
    concat: (from: MiddlewareStack<any, any>) => {
      const whole = base.concat(from);
      for (const name of UNREAD) whole.remove(name);
      return whole;
    },
  } as MiddlewareStack<any, any>;
  const via = (terminal: Terminal) => {
    const resolved = (command: AnyCommand, options: { abortSignal?: AbortSignal } | undefined) =>
      command.resolveMiddleware(pruned as never, { ...config, requestHandler: { handle: (request: HttpRequest, o?: HttpHandlerOptions) => terminal({ request }, o) } }, options) as (args: never) => Promise<{ output: unknown }>;
    // Without options, one handler per command class (as the SDK's `cacheMiddleware`); with an abort signal, one per send (as the SDK: the signal is in its context).
    const byClass = new Map<unknown, (args: never) => Promise<{ output: unknown }>>();
    const handlerOf = (command: AnyCommand) => {
      let h = byClass.get(command.constructor);
      if (h === undefined) {
        h = resolved(fresh(command), undefined);
        byClass.set(command.constructor, h);
      }
      return h;
    };
    return (command: AnyCommand, options?: { abortSignal?: AbortSignal }): Promise<unknown> =>
      (options === undefined ? handlerOf(command) : resolved(command, options))({ input: command.input } as never).then((r) => r.output);
  };
  installShortCut({ via, sent, operationOf: (r) => `${r.method} ${r.path}`, takesAbortSignal: true }, client, undefined, opts);
}

/** A request as a stand-in reads it: method, URL, the headers the removed middleware does not write, body. */
function sent(r: HttpRequest, body: string): string {
  const headers = Object.entries(r.headers)
    .map(([k, v]) => [k.toLowerCase(), v] as const)
    .filter(([k]) => !UNCOMPARED.has(k))
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return `${r.method} ${r.protocol}//${r.hostname}${r.port === undefined ? '' : `:${r.port}`}${pathAndQuery(r)} ${JSON.stringify(headers)} ${body}`;
}
