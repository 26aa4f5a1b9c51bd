/**
 * The short-cut's route for the DynamoDB and DynamoDB Streams clients (test/sim/short-cut.ts has
 * what every route shares, and the proof): the document client's marshalling (its own
 * middleware), the SDK's schema serializer (the same JSON body, through the same request handler
 * and so the same transport, fault rules and wire check), the SDK's retry loop and its
 * deserializer stay; what goes is what a simulated request has no use for: endpoint rules, SigV4
 * signing, the user agent, host and content-length headers, recursion detection, the logger.
 */
import { constructStack } from '@smithy/core/client';
import { retryMiddleware, StandardRetryStrategy } from '@smithy/core/retry';
import { operation } from '@smithy/core/schema';
import { toEndpointV1 } from '@smithy/core/transport';
import type { HttpRequest } from '@smithy/types';
import { SMITHY_CONTEXT_KEY } from '@smithy/types';
import { installShortCut, type AnyCommand, type SdkClient, type ShortCutOptions, type Terminal } from '../short-cut.js';

const SIM_ENDPOINT = 'http://dynamodb.sim';

/**
 * Installs the short-cut on `client` (a DynamoDBClient or DynamoDBStreamsClient whose request
 * handler is the model's) and on `doc`, a document client over it. The retry loop keeps one
 * strategy (its token bucket) per client, as the SDK's own does.
 */
export function installDynamoShortCut(client: SdkClient, doc: SdkClient | undefined, opts: ShortCutOptions = {}): void {
  const config = client.config;
  const protocol = config.protocol;
  protocol.setSerdeContext(config);
  const retryStrategy = new StandardRetryStrategy(async () => (await config.maxAttempts()) as number);
  // The simulated clients' endpoint (clients.ts): the model reads a request's target header and body, never its URL.
  const endpoint = { url: new URL(SIM_ENDPOINT) };
  // What the protocol reads of its context (the stock middleware spreads the whole client config into it on every request).
  const serde = { endpoint: async () => toEndpointV1(endpoint), utf8Encoder: config.utf8Encoder, streamCollector: config.streamCollector, logger: config.logger };
  const stack = constructStack<any, any>();
  stack.add(((next: any) => async (args: any) => next({ ...args, request: await protocol.serializeRequest(args.op, args.input, serde) })) as never, { step: 'serialize', name: 'serializerMiddleware' });
  stack.add(retryMiddleware({ retryStrategy: async () => retryStrategy, maxAttempts: config.maxAttempts, logger: config.logger } as never) as never, { step: 'finalizeRequest', name: 'retryMiddleware' });
  stack.add(((next: any) => async (args: any) => {
    const { response } = await next(args);
    try {
      return { response, output: await protocol.deserializeResponse(args.op, serde, response) };
    } catch (e) {
      Object.defineProperty(e, '$response', { value: response, enumerable: false, writable: false, configurable: false });
      throw e;
    }
  }) as never, { step: 'deserialize', name: 'deserializerMiddleware' });
  const context = (target: AnyCommand) => ({ logger: config.logger, clientName: client.constructor.name, commandName: target.constructor.name, [SMITHY_CONTEXT_KEY]: { commandInstance: target } });
  const via = (terminal: Terminal) => {
    // A low-level command: one handler for every command of the client. A document command: one
    // per command class, with the marshalling middleware the document client adds (it reads the
    // input from the request's arguments and the key paths its class declares, so one instance's
    // serves every instance of its class, as the SDK's own `cacheMiddleware` has it).
    const plain = stack.resolve(terminal as never, context(client as never) as never);
    const byClass = new Map<unknown, (args: never) => Promise<{ output: unknown }>>();
    const handlerOf = (command: AnyCommand) => {
      let h = byClass.get(command.constructor);
      if (h === undefined) {
        command.addMarshallingMiddleware!(doc!.config);
        h = stack.concat(command.clientCommand!.middlewareStack).resolve(terminal as never, context(command.clientCommand!) as never);
        byClass.set(command.constructor, h);
      }
      return h;
    };
    return (command: AnyCommand): Promise<unknown> => {
      const target = command.clientCommand ?? command;
      const args = { input: target.input, op: operationSchemaOf(target.schema) };
      return (command.clientCommand === undefined ? plain : handlerOf(command))(args as never).then((r) => r.output);
    };
  };
  installShortCut({ via, sent: (_request, body) => normalizeBody(body), operationOf }, client, doc, opts);
}

/** The operation a request is: its target header's (`DynamoDB_20120810.Query`). */
const operationOf = (r: HttpRequest) => String(r.headers['x-amz-target'] ?? '').split('.')[1] ?? '';

/** The idempotency token is drawn per send: equal bodies may differ in it. */
const normalizeBody = (body: string) => body.replace(/"ClientRequestToken":"[^"]*"/, '"ClientRequestToken":"…"');

/** The SDK's operation schema object for a command's static schema (the stock serde middleware builds the same, per request). */
const operations = new WeakMap<object, unknown>();
function operationSchemaOf(schema: unknown): unknown {
  let op = operations.get(schema as object);
  if (op === undefined) {
    const [, ns, n, t, i, o] = schema as unknown[];
    op = operation(ns as string, n as string, t as never, i as never, o as never);
    operations.set(schema as object, op);
  }
  return op;
}
