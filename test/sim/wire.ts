/**
 * The simulated network between the code and the in-memory services: every request waits a
 * latency drawn from the world's random source, then the fault rules (cli/local/fault-rules.ts,
 * the same table the loopback proxy uses) decide whether it is answered, delayed, lost after it
 * was applied, held, or refused in the engine's place. What reached the engine is told to the
 * wire check exactly as the proxy tells it, so the structural FENCE check reads the same record
 * in a simulated run as in a run on DynamoDB Local.
 */
import { FencedError } from '../../lib/protocol/index.js';
import { createFaultTable, proxiedRequest, type FaultTable } from '../../cli/local/fault-rules.js';
import type { WireExchange } from '../../cli/local/fault-proxy.js';
import type { SimTransport, SimWireAnswer } from './dynamodb/handler.js';
import type { World } from './world.js';

/** What Node's http client raises when the peer cuts the connection before answering: the SDK treats it as transient, as it does the real one. */
export class SimConnectionReset extends FencedError {
  readonly code = 'ECONNRESET';
  constructor() {
    super('socket hang up');
  }
}

/** What the SDK's node handler raises when no answer came within its request timeout. */
export class SimRequestTimeout extends FencedError {
  readonly code = 'ETIMEDOUT';
  override readonly name = 'TimeoutError';
}

export interface Latency {
  /** Each way's latency is `minMs` plus up to `jitterMs`, drawn per request. */
  minMs: number;
  jitterMs: number;
  /** A blackholed request gives up after this (the clients' request timeout). */
  requestTimeoutMs: number;
}

export const DEFAULT_LATENCY: Latency = { minMs: 1, jitterMs: 4, requestTimeoutMs: 5_000 };

/** Every request over every simulated DynamoDB wire of this thread since it started. */
export const wireTotal = { requests: 0 };

const TARGET_PREFIX = { dynamodb: 'DynamoDB_20120810', streams: 'DynamoDBStreams_20120810' } as const;

/**
 * A wire with fault rules: `transport` for the model's clients, `faults` to arm. `onExchange`
 * hears each request the engine applied, with its answer (also when the answer is then lost).
 * `afterApply` runs after each applied request (the world schedules index propagation there).
 */
export function faultedWire(world: World, opts: { latency?: Latency; onExchange?: (ex: WireExchange) => void; afterApply?: () => void } = {}): { transport: SimTransport; faults: FaultTable } {
  const latency = opts.latency ?? DEFAULT_LATENCY;
  const faults = createFaultTable();
  const way = () => world.sleep(latency.minMs + world.random() * latency.jitterMs);
  const transport: SimTransport = async (req, apply) => {
    wireTotal.requests++;
    const request = proxiedRequest(`${TARGET_PREFIX[req.service]}.${req.operation}`, req.body);
    const action = faults.actionFor(request);
    await way();
    if (action?.kind === 'blackhole') {
      await world.sleep(latency.requestTimeoutMs);
      throw new SimRequestTimeout(`no answer within ${latency.requestTimeoutMs} ms`);
    }
    if (action?.kind === 'respond') {
      await way();
      return { status: action.status, body: JSON.stringify(action.body(request)) };
    }
    const sentAt = world.now;
    const answer: SimWireAnswer = apply();
    opts.afterApply?.();
    opts.onExchange?.({ operation: req.operation, body: req.body, sentAt, answeredAt: world.now, status: answer.status, answer: answer.body });
    if (action?.kind === 'drop') {
      await way();
      throw new SimConnectionReset();
    }
    if (action?.kind === 'delay') await world.sleep(action.ms);
    await way();
    return answer;
  };
  return { transport, faults };
}
