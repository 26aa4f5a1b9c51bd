/**
 * The command-level short-cut, what every simulated client's shares: a `send` that runs only the
 * middleware whose work reaches the stand-in or the code (each route, test/sim/dynamodb/short-cut.ts
 * and test/sim/effects/short-cut.ts, says which), through the client's own request handler, and so
 * the same transport, fault rules and stand-in. A command through it costs a fraction of the full
 * stack's CPU (docs/verification.md has the figures).
 *
 * Proof: with `compare`, every request also goes the full SDK path, fed the same answer, and what
 * the two paths sent (as the stand-in reads it) and returned (the output, or the error's name,
 * fault and message) must agree; test/sim-short-cut.test.ts runs schedules that way and shows a
 * deliberately broken short-cut caught. A client whose stack is not the stock one (the IAM
 * recorder's middleware attached), a send with a callback or with options (but an abort signal
 * alone, on a route that takes one; options given as `undefined` are none), and a command with
 * middleware of its own take the SDK path, always.
 */
import { Readable } from 'node:stream';
import type { Client, Command } from '@smithy/core/client';
import type { HttpHandlerOptions, HttpRequest, HttpResponse, MiddlewareStack } from '@smithy/types';
import { FencedError } from '../../lib/protocol/index.js';

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
  /** A deliberately broken short-cut, for the proof test: rewrites the answer the short-cut deserializes (operation as the route names it). */
  breakAnswer?: (operation: string, body: string) => string;
}

export type AnyCommand = Command<any, any, any, any, any> & { schema?: unknown; input: object; clientCommand?: AnyCommand; addMarshallingMiddleware?: (config: unknown) => void };
export type SdkClient = Client<any, any, any, any> & { config: any; middlewareStack: MiddlewareStack<any, any> };
export type Terminal = (args: { request: HttpRequest }, options?: HttpHandlerOptions) => Promise<{ response: HttpResponse }>;
type Send = (command: AnyCommand, ...rest: unknown[]) => Promise<unknown>;
/** A send's options the short-cut takes (a route that says so): only an abort signal. */
type SendOptions = { abortSignal?: AbortSignal };

/** How one kind of client goes the short way. */
export interface ShortCutRoute {
  /** The short stack ending in `terminal`, as a send (with options only where `takesAbortSignal`). */
  via(terminal: Terminal): (command: AnyCommand, options?: SendOptions) => Promise<unknown>;
  /** Whether a send with an abort signal (and no other option) may go the short way. */
  takesAbortSignal?: boolean;
  /** A request as the stand-in reads it (method, path, the headers it may read, body): what the two paths must agree on. */
  sent(request: HttpRequest, body: string): string;
  /** The operation a request is, for `breakAnswer`. */
  operationOf(request: HttpRequest): string;
}

const decoder = new TextDecoder();
const strict = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/** Bytes as text: UTF-8 where they are, else base64 (an object's binary body). */
function textOf(bytes: Uint8Array): string {
  try {
    return strict.decode(bytes);
  } catch {
    return `base64:${Buffer.from(bytes).toString('base64')}`;
  }
}

/** A body of any kind the SDK sends or a handler answers, read to bytes. */
async function bytesOf(body: unknown): Promise<Uint8Array> {
  if (body === undefined || body === null) return new Uint8Array();
  if (typeof body === 'string') return encoder.encode(body);
  if (body instanceof Uint8Array) return new Uint8Array(body);
  if (typeof body === 'object' && Symbol.asyncIterator in body) {
    const chunks: Buffer[] = [];
    for await (const c of body as AsyncIterable<Uint8Array | string>) chunks.push(Buffer.from(c));
    return new Uint8Array(Buffer.concat(chunks));
  }
  throw new ShortCutMismatchError(`a body of type ${Object.prototype.toString.call(body)} the short-cut cannot copy`);
}

/** A fresh body of the kind `like` was (bytes, or a stream as an http handler answers). */
const bodyLike = (like: unknown, bytes: Uint8Array): unknown => (like instanceof Uint8Array || like === undefined ? new Uint8Array(bytes) : Readable.from(bytes.length === 0 ? [] : [Buffer.from(bytes)]));

/**
 * Installs the short-cut on `client` and on `doc`, a document client over it (none for a
 * provider's client). The route builds the short stack; this decides which sends take it and, in
 * compare mode, sends each both ways.
 */
export function installShortCut(route: ShortCutRoute, client: SdkClient, doc: SdkClient | undefined, opts: ShortCutOptions = {}): void {
  const changed = watchStack(client.middlewareStack);
  const config = client.config;
  if (opts.compare !== undefined) config.requestHandler = replayingHandler(config.requestHandler, route);
  const handled: Terminal = (args, options) => config.requestHandler.handle(args.request, options);
  const direct = route.via(opts.breakAnswer === undefined ? handled : broken(handled, route, opts.breakAnswer));
  const sdkSend: Send = client.send.bind(client) as Send;
  const docSdkSend: Send | undefined = doc === undefined ? undefined : (doc.send.bind(doc) as Send);
  // Options or a callback, a command of no known schema, middleware of the command's own or added to the client's: the SDK's path.
  const eligible = (command: AnyCommand, rest: unknown[]) =>
    (rest.length === 0 || (route.takesAbortSignal === true && rest.length === 1 && abortOnly(rest[0]))) &&
    (command.clientCommand ?? command).schema !== undefined &&
    command.middlewareStack.identify().length === 0 &&
    (command.clientCommand === undefined || command.clientCommand.middlewareStack.identify().length === 0) &&
    !changed();
  const shortSend = (fallback: Send): Send => (command, ...given) => {
    // `send(command, undefined)` is the SDK's `send(command)` (lib/protocol's sendLowLevel passes its options so).
    const rest = given.length === 1 && given[0] === undefined ? [] : given;
    if (!eligible(command, rest)) return fallback(command, ...given);
    const options = rest[0] as SendOptions | undefined;
    return opts.compare === undefined ? direct(command, options) : compared(command, options, fallback, route, config, opts);
  };
  client.send = shortSend(sdkSend) as never;
  if (doc !== undefined && docSdkSend !== undefined) doc.send = shortSend(docSdkSend) as never;
}

/** Options that are an abort signal and nothing else. */
const abortOnly = (o: unknown): boolean => typeof o === 'object' && o !== null && Object.keys(o).every((k) => k === 'abortSignal');

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

/** A terminal that answers as `next` does, then lets `breakAnswer` rewrite the body. */
function broken(next: Terminal, route: ShortCutRoute, breakAnswer: NonNullable<ShortCutOptions['breakAnswer']>): Terminal {
  return async (args, options) => {
    const { response } = await next(args, options);
    const body = encoder.encode(breakAnswer(route.operationOf(args.request), decoder.decode(await bytesOf(response.body))));
    return { response: { ...response, body: bodyLike(response.body, body) } as HttpResponse };
  };
}

/** The request option by which compare mode hands the SDK's path the answers to replay (its request handler is shared by concurrent requests). */
const REPLAY = 'simShortCutReplay';
interface Replay {
  name: string;
  /** Each attempt's request, and what came back: an answer, or what the handler threw (a cut connection). */
  sent: ({ text: string; response: HttpResponse; body: Uint8Array } | { text: string; thrown: unknown })[];
  attempt: number;
  differences: string[];
}

/** A request's body as text, its stream (if any) replaced by the bytes read, so the request can still be sent. */
async function takeBody(request: HttpRequest): Promise<string> {
  if (typeof request.body === 'string' || request.body === undefined || request.body === null) return request.body ?? '';
  const bytes = await bytesOf(request.body);
  request.body = bytes;
  return textOf(bytes);
}

/** The client's request handler, which in compare mode answers a replayed request from its record instead of the stand-in. */
function replayingHandler(original: any, route: ShortCutRoute): any {
  return {
    ...original,
    handle: async (request: HttpRequest, options?: Record<string, unknown>) => {
      const replay = options?.[REPLAY] as Replay | undefined;
      if (replay === undefined) return original.handle(request, options);
      const a = replay.sent[replay.attempt++];
      if (a === undefined) throw new ShortCutMismatchError(`${replay.name}: the SDK path made attempt ${replay.attempt}, the short-cut ${replay.sent.length}`);
      const mine = route.sent(request, await takeBody(request));
      if (mine !== a.text) replay.differences.push(`${replay.name}: the requests differ\n  sdk:       ${mine}\n  short-cut: ${a.text}`);
      if ('thrown' in a) throw a.thrown;
      return { response: { ...a.response, body: bodyLike(a.response.body, a.body) } };
    },
  };
}

/**
 * Both ways: the short-cut sends for real; the SDK's full path sends nothing, its request
 * handler compares the request it built with the short-cut's and is handed the same answer.
 */
async function compared(command: AnyCommand, options: SendOptions | undefined, sdkSend: Send, route: ShortCutRoute, config: any, opts: ShortCutOptions): Promise<unknown> {
  const name = command.constructor.name;
  const replay: Replay = { name, sent: [], attempt: 0, differences: opts.compare!.differences };
  // What the stand-in answered is recorded for the SDK's path; a broken short-cut then mangles only its own copy.
  const recorded: Terminal = async (args, handlerOptions) => {
    const text = route.sent(args.request, await takeBody(args.request));
    let response: HttpResponse;
    try {
      ({ response } = (await config.requestHandler.handle(args.request, handlerOptions)) as { response: HttpResponse });
    } catch (thrown) {
      replay.sent.push({ text, thrown });
      throw thrown;
    }
    const body = await bytesOf(response.body);
    replay.sent.push({ text, response, body });
    return { response: { ...response, body: bodyLike(response.body, body) } as HttpResponse };
  };
  const via = route.via(opts.breakAnswer === undefined ? recorded : broken(recorded, route, opts.breakAnswer));
  const shortOutcome = await settle(via(command, options), config);
  // The full path, replaying each attempt's answer: it must send what the short-cut sent, attempt by attempt.
  const sdkOutcome = await settle(sdkSend(fresh(command), { ...options, [REPLAY]: replay }), config);
  const c = opts.compare!;
  c.compared++;
  const op = (command.clientCommand ?? command).constructor.name.replace(/Command$/, '');
  c.operations[op] = (c.operations[op] ?? 0) + 1;
  if (replay.sent.length > 1) c.retried++;
  const a = describe(sdkOutcome);
  const b = describe(shortOutcome);
  if (a !== b) c.differences.push(`${name}: the outcomes differ\n  sdk:       ${a}\n  short-cut: ${b}`);
  if (replay.attempt !== replay.sent.length) c.differences.push(`${name}: the SDK path made ${replay.attempt} attempts, the short-cut ${replay.sent.length}`);
  if (shortOutcome.ok) return shortOutcome.value;
  throw shortOutcome.error;
}

type Outcome = { ok: true; value: unknown; body?: Uint8Array } | { ok: false; error: unknown };

/** The outcome of a send; a streamed Body (S3's GetObject) read to bytes and handed on as a fresh stream of them. */
async function settle(p: Promise<unknown>, config: any): Promise<Outcome> {
  try {
    const value = (await p) as { Body?: { transformToByteArray?: () => Promise<Uint8Array> } } | undefined;
    if (typeof value?.Body?.transformToByteArray !== 'function') return { ok: true, value };
    const body = await value.Body.transformToByteArray();
    value.Body = config.sdkStreamMixin(Readable.from(body.length === 0 ? [] : [Buffer.from(body)]));
    return { ok: true, value, body };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A command like `command`, unresolved (a command's middleware stack is filled when it is sent). */
export function fresh(command: AnyCommand): AnyCommand {
  const Ctor = command.constructor as new (input: object) => AnyCommand;
  return new Ctor(command.input);
}

/** An outcome as text: the output without $metadata's request-specific fields, or the error's identity. */
function describe(o: Outcome): string {
  if (o.ok) {
    const { $metadata, Body, ...rest } = o.value as { $metadata?: { httpStatusCode?: number; attempts?: number; totalRetryDelay?: number }; Body?: unknown };
    const body = o.body ?? Body;
    // Not totalRetryDelay: each path draws its own jitter.
    return JSON.stringify({ output: rest, ...(body === undefined ? {} : { body }), status: $metadata?.httpStatusCode, attempts: $metadata?.attempts }, replacer);
  }
  const e = o.error as { name?: string; message?: string; $fault?: string; $metadata?: { httpStatusCode?: number; attempts?: number }; CancellationReasons?: unknown; Item?: unknown };
  return JSON.stringify({ error: e.name, message: e.message, fault: e.$fault, status: e.$metadata?.httpStatusCode, attempts: e.$metadata?.attempts, reasons: e.CancellationReasons, item: e.Item }, replacer);
}

const replacer = (_k: string, v: unknown) => (v instanceof Uint8Array ? `bytes:${Buffer.from(v).toString('base64')}` : typeof v === 'bigint' ? `${v}n` : v instanceof Set ? { set: [...v] } : v);
