/**
 * The command-level short-cut: a simulated client's `send` that runs only the middleware whose
 * work reaches the model or the code. The document client's marshalling (its own middleware),
 * the SDK's schema serializer (the same JSON body, through the same request handler and so the
 * same transport, fault rules and wire check), the SDK's retry loop and its deserializer stay;
 * what goes is what a simulated request has no use for: endpoint rules, SigV4 signing, the user
 * agent, host and content-length headers, recursion detection, the logger. A command through the
 * short-cut costs a fraction of the full stack's CPU (docs/verification.md has the figures).
 *
 * Proof: with `compare`, every request also goes the full SDK path, fed the same answer, and
 * what the two paths sent (the JSON body) and returned (the output, or the error's name, fault
 * and message) must agree; test/sim-short-cut.test.ts runs schedules that way and shows a
 * deliberately broken short-cut caught. A client whose stack is not the stock one (the IAM
 * recorder's middleware attached), a send with options or a callback, and a command with
 * middleware of its own take the SDK path, always.
 */
import type { Client, Command } from '@smithy/core/client';
import { constructStack } from '@smithy/core/client';
import { retryMiddleware, StandardRetryStrategy } from '@smithy/core/retry';
import { operation } from '@smithy/core/schema';
import { toEndpointV1 } from '@smithy/core/transport';
import type { HttpRequest, HttpResponse, MiddlewareStack } from '@smithy/types';
import { SMITHY_CONTEXT_KEY } from '@smithy/types';
import { FencedError } from '../../../lib/protocol/index.js';

/** The two paths disagreed on a request: the short-cut is not the SDK's equal for it. */
export class ShortCutMismatchError extends FencedError {
  readonly code = 'SIM_SHORT_CUT_MISMATCH';
}

/** What compare mode found: requests compared, and the first differences. */
export interface ShortCutComparison {
  compared: number;
  /** Requests compared per operation, and how many of them the retry loop sent more than once. */
  operations: Record<string, number>;
  retried: number;
  differences: string[];
}

export const newComparison = (): ShortCutComparison => ({ compared: 0, operations: {}, retried: 0, differences: [] });

export interface ShortCutOptions {
  /** Run every request both ways and record where they differ. */
  compare?: ShortCutComparison;
  /** A deliberately broken short-cut, for the proof test: rewrites the answer the short-cut deserializes. */
  breakAnswer?: (operation: string, body: string) => string;
}

type AnyCommand = Command<any, any, any, any, any> & { schema?: unknown; input: object; clientCommand?: AnyCommand; addMarshallingMiddleware?: (config: unknown) => void; inputKeyNodes?: unknown };
type SdkClient = Client<any, any, any, any> & { config: any; middlewareStack: MiddlewareStack<any, any> };
type Send = (command: AnyCommand, ...rest: unknown[]) => Promise<unknown>;

const SIM_ENDPOINT = 'http://dynamodb.sim';
const decoder = new TextDecoder();
const encoder = new TextEncoder();
const bodyText = (r: HttpRequest) => (typeof r.body === 'string' ? r.body : r.body === undefined ? '' : decoder.decode(r.body as Uint8Array));

/**
 * Installs the short-cut on `client` (a DynamoDBClient or DynamoDBStreamsClient whose request
 * handler is the model's) and on `doc`, a document client over it. The retry loop keeps one
 * strategy (its token bucket) per client, as the SDK's own does.
 */
export function installShortCut(client: SdkClient, doc: SdkClient | undefined, opts: ShortCutOptions = {}): void {
  const changed = watchStack(client.middlewareStack);
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
  const send = (terminal: Terminal) => {
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
      const args = { input: target.input, op: operationOf(target.schema) };
      return (command.clientCommand === undefined ? plain : handlerOf(command))(args as never).then((r) => r.output);
    };
  };
  if (opts.compare !== undefined) config.requestHandler = replayingHandler(config.requestHandler);
  const handled: Terminal = (args) => config.requestHandler.handle(args.request);
  const direct = send(opts.breakAnswer === undefined ? handled : broken(handled, opts.breakAnswer));
  const sdkSend: Send = client.send.bind(client) as Send;
  const docSdkSend: Send | undefined = doc === undefined ? undefined : (doc.send.bind(doc) as Send);
  // Options or a callback, a command of no known schema, middleware of the command's own or added to the client's: the SDK's path.
  const eligible = (command: AnyCommand, rest: unknown[]) =>
    rest.length === 0 &&
    (command.clientCommand ?? command).schema !== undefined &&
    command.middlewareStack.identify().length === 0 &&
    (command.clientCommand === undefined || command.clientCommand.middlewareStack.identify().length === 0) &&
    !changed();
  const shortSend = (fallback: Send): Send => (command, ...rest) => {
    if (!eligible(command, rest)) return fallback(command, ...rest);
    return opts.compare === undefined ? direct(command) : compared(command, fallback, send, config, opts);
  };
  client.send = shortSend(sdkSend) as never;
  if (doc !== undefined && docSdkSend !== undefined) doc.send = shortSend(docSdkSend) as never;
}

/** Whether anything was added to or removed from the client's stack since it was built (the recorder, a test's counter). */
function watchStack(stack: MiddlewareStack<any, any>): () => boolean {
  let changed = false;
  const s = stack as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const m of ['add', 'addRelativeTo', 'use', 'remove', 'removeByTag']) {
    const original = s[m]!.bind(stack);
    s[m] = (...a: unknown[]) => ((changed = true), original(...a));
  }
  return () => changed;
}

type Terminal = (args: { request: HttpRequest }) => Promise<{ response: HttpResponse }>;

/** The SDK's operation schema object for a command's static schema (the stock serde middleware builds the same, per request). */
const operations = new WeakMap<object, unknown>();
function operationOf(schema: unknown): unknown {
  let op = operations.get(schema as object);
  if (op === undefined) {
    const [, ns, n, t, i, o] = schema as unknown[];
    op = operation(ns as string, n as string, t as never, i as never, o as never);
    operations.set(schema as object, op);
  }
  return op;
}

/** A terminal that answers as `next` does, then lets `breakAnswer` rewrite the body. */
function broken(next: Terminal, breakAnswer: NonNullable<ShortCutOptions['breakAnswer']>): Terminal {
  return async (args) => {
    const { response } = await next(args);
    const target = String(args.request.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
    return { response: { ...response, body: encoder.encode(breakAnswer(target, decoder.decode(response.body as Uint8Array))) } as HttpResponse };
  };
}

/** The request option by which compare mode hands the SDK's path the answers to replay (its request handler is shared by concurrent requests). */
const REPLAY = 'simShortCutReplay';
interface Replay {
  name: string;
  sent: { body: string; response: HttpResponse }[];
  attempt: number;
  differences: string[];
}

/** The client's request handler, which in compare mode answers a replayed request from its record instead of the model. */
function replayingHandler(original: any): any {
  return {
    ...original,
    handle: (request: HttpRequest, options?: Record<string, unknown>) => {
      const replay = options?.[REPLAY] as Replay | undefined;
      if (replay === undefined) return original.handle(request, options);
      const a = replay.sent[replay.attempt++];
      if (a === undefined) return Promise.reject(new ShortCutMismatchError(`${replay.name}: the SDK path made attempt ${replay.attempt}, the short-cut ${replay.sent.length}`));
      const mine = normalizeBody(bodyText(request));
      if (mine !== normalizeBody(a.body)) replay.differences.push(`${replay.name}: the bodies differ\n  sdk:       ${mine}\n  short-cut: ${normalizeBody(a.body)}`);
      return Promise.resolve({ response: { ...a.response, body: new Uint8Array(a.response.body as Uint8Array) } });
    },
  };
}

/**
 * Both ways: the short-cut sends for real; the SDK's full path sends nothing, its request
 * handler compares the body it built with the short-cut's and is handed the same answer.
 */
async function compared(command: AnyCommand, sdkSend: Send, send: (t: Terminal) => (c: AnyCommand) => Promise<unknown>, config: any, opts: ShortCutOptions): Promise<unknown> {
  const name = command.constructor.name;
  const replay: Replay = { name, sent: [], attempt: 0, differences: opts.compare!.differences };
  // What the engine answered is recorded for the SDK's path; a broken short-cut then mangles only its own copy.
  const recorded: Terminal = async (args) => {
    const { response } = (await config.requestHandler.handle(args.request)) as { response: HttpResponse };
    const body = new Uint8Array(response.body as Uint8Array);
    replay.sent.push({ body: bodyText(args.request), response: { ...response, body } as HttpResponse });
    return { response: { ...response, body: new Uint8Array(body) } as HttpResponse };
  };
  const shortOutcome = await settle(send(opts.breakAnswer === undefined ? recorded : broken(recorded, opts.breakAnswer))(command));
  // The full path, replaying each attempt's answer: it must send what the short-cut sent, attempt by attempt.
  const sdkOutcome = await settle(sdkSend(fresh(command), { [REPLAY]: replay }));
  const c = opts.compare!;
  c.compared++;
  const op = (command.clientCommand ?? command).constructor.name.replace(/Command$/, '');
  c.operations[op] = (c.operations[op] ?? 0) + 1;
  if (replay.sent.length > 1) c.retried++;
  const a = describe(sdkOutcome);
  const b = describe(shortOutcome);
  if (a !== b) opts.compare!.differences.push(`${name}: the outcomes differ\n  sdk:       ${a}\n  short-cut: ${b}`);
  if (replay.attempt !== replay.sent.length) opts.compare!.differences.push(`${name}: the SDK path made ${replay.attempt} attempts, the short-cut ${replay.sent.length}`);
  if (shortOutcome.ok) return shortOutcome.value;
  throw shortOutcome.error;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
const settle = (p: Promise<unknown>): Promise<Outcome> => p.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));

/** A command like `command`, unresolved (a command's middleware stack is filled when it is sent). */
function fresh(command: AnyCommand): AnyCommand {
  const Ctor = command.constructor as new (input: object) => AnyCommand;
  return new Ctor(command.input);
}

/** The idempotency token is drawn per send: equal bodies may differ in it. */
const normalizeBody = (body: string) => body.replace(/"ClientRequestToken":"[^"]*"/, '"ClientRequestToken":"…"');

/** An outcome as text: the output without $metadata's request-specific fields, or the error's identity. */
function describe(o: Outcome): string {
  if (o.ok) {
    const { $metadata, ...rest } = o.value as { $metadata?: { httpStatusCode?: number; attempts?: number; totalRetryDelay?: number } };
    // Not totalRetryDelay: each path draws its own jitter.
    return JSON.stringify({ output: rest, status: $metadata?.httpStatusCode, attempts: $metadata?.attempts }, replacer);
  }
  const e = o.error as { name?: string; message?: string; $fault?: string; $metadata?: { httpStatusCode?: number; attempts?: number }; CancellationReasons?: unknown; Item?: unknown };
  return JSON.stringify({ error: e.name, message: e.message, fault: e.$fault, status: e.$metadata?.httpStatusCode, attempts: e.$metadata?.attempts, reasons: e.CancellationReasons, item: e.Item }, replacer);
}

const replacer = (_k: string, v: unknown) => (v instanceof Uint8Array ? `bytes:${Buffer.from(v).toString('base64')}` : typeof v === 'bigint' ? `${v}n` : v instanceof Set ? { set: [...v] } : v);
