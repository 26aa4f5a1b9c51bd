/**
 * The SDK's HTTP request handler, answered by the model: the request the SDK serialized for AWS
 * (JSON 1.0: POST, `x-amz-target: <Service>_20120810.<Operation>`, a JSON body) in, the JSON the
 * service answers out, through a transport the simulator's scheduler controls.
 */
import type { HttpHandlerOptions, HttpRequest, HttpResponse, RequestHandler } from '@smithy/types';
import { SimAwsError, SimUnsupportedError } from './errors.js';
import type { DynamoModel } from './model.js';

export interface SimWireRequest {
  service: 'dynamodb' | 'streams';
  operation: string;
  body: string;
}
export interface SimWireAnswer {
  status: number;
  body: string;
}
/** How a request travels: `apply` runs it on the model (0, 1 or 2 times). A rejected promise is a transport failure. */
export type SimTransport = (req: SimWireRequest, apply: () => SimWireAnswer) => Promise<SimWireAnswer>;

const atOnce: SimTransport = (_req, apply) => Promise.resolve(apply());

/** Namespaces DynamoDB prints in `__type` (ValidationException comes from its validation layer). */
const typeName = (type: string): string =>
  type === 'ValidationException' ? `com.amazon.coral.validate#${type}` : type === 'SimUnsupported' ? type : `com.amazonaws.dynamodb.v20120810#${type}`;

/** Runs one wire request on the model: every outcome is an answer, never a throw. */
export function answer(model: DynamoModel, req: SimWireRequest): SimWireAnswer {
  let input: Record<string, unknown>;
  try {
    input = req.body === '' ? {} : (JSON.parse(req.body) as Record<string, unknown>);
  } catch {
    return { status: 400, body: JSON.stringify({ __type: 'com.amazon.coral.service#SerializationException', message: 'Start of structure or map found where not expected' }) };
  }
  try {
    return { status: 200, body: JSON.stringify(model.handle(req.service, req.operation, input)) };
  } catch (e) {
    if (e instanceof SimAwsError) return { status: e.status, body: JSON.stringify({ __type: typeName(e.type), message: e.awsMessage, ...e.fields }) };
    // handle() has recorded it in model.unsupported: the run fails on that list.
    const what = e instanceof SimUnsupportedError ? e.message : `not simulated: ${String(e)}`;
    return { status: 400, body: JSON.stringify({ __type: 'SimUnsupported', message: what }) };
  }
}

const TARGET = /^(DynamoDB|DynamoDBStreams)_20120810\.(\w+)$/;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function wireRequestOf(request: HttpRequest): SimWireRequest {
  const target = Object.entries(request.headers).find(([k]) => k.toLowerCase() === 'x-amz-target')?.[1] ?? '';
  const m = TARGET.exec(target);
  const body = request.body === undefined || request.body === null ? '' : typeof request.body === 'string' ? request.body : decoder.decode(request.body as Uint8Array);
  if (m === null) return { service: 'dynamodb', operation: `<no x-amz-target: ${target}>`, body };
  return { service: m[1] === 'DynamoDB' ? 'dynamodb' : 'streams', operation: m[2]!, body };
}

let requests = 0;

/** A request handler for SDK clients (DynamoDBClient, DynamoDBStreamsClient) served by `model`. */
export function simRequestHandler(model: DynamoModel, transport: SimTransport = atOnce): RequestHandler<HttpRequest, HttpResponse, HttpHandlerOptions> & {
  updateHttpClientConfig(): void;
  httpHandlerConfigs(): Record<string, never>;
} {
  return {
    metadata: { handlerProtocol: 'http/1.1' },
    async handle(request: HttpRequest, options?: HttpHandlerOptions) {
      if (options?.abortSignal?.aborted) throw Object.assign(new Error('Request aborted'), { name: 'AbortError' });
      const req = wireRequestOf(request);
      const a = await transport(req, () => answer(model, req));
      const response: HttpResponse = {
        statusCode: a.status,
        headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': `sim-${++requests}` },
        body: encoder.encode(a.body),
      };
      return { response };
    },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
  };
}
