/**
 * The chaos harness's environment (test/chaos/harness.ts ChaosEnv) in a simulated world: the
 * in-memory DynamoDB and its streams behind a simulated network, the handlers' requests through
 * the same fault rules the proxy applies, and the external services' in-memory stand-ins.
 */
import type { DynamoModel } from './dynamodb/model.js';
import type { SimClientOptions } from './dynamodb/clients.js';
import { simDynamo, simStreams } from './dynamodb/clients.js';
import { simEffects } from './effects/index.js';
import { faultedWire, type Latency } from './wire.js';
import type { ChaosEnv } from '../chaos/harness.js';
import type { StreamActivity } from '../../cli/local/outbox-stream.js';
import type { World } from './world.js';

/** How long a GSI lags its table at most (virtual ms): AWS propagates "usually within a second". */
export const INDEX_LAG_MS = 200;

/** Lambda's event source mapping polls a DynamoDB stream's shard about four times a second. */
export const STREAM_POLL_MS = 250;

/**
 * The stream's appends as events: a waiter wakes when its table's stream has a record it has not
 * seen, after the latency of the poll that would find it (uniform over one polling interval).
 */
export function streamActivity(world: World, model: DynamoModel): StreamActivity {
  const waiting = new Map<string, (() => void)[]>();
  model.onStreamRecord = (table) => {
    const ws = waiting.get(table);
    if (ws === undefined) return;
    waiting.delete(table);
    for (const w of ws) w();
  };
  return {
    count: (table) => model.streamRecords(table),
    after: (table, seen, signal) =>
      new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        const done = () => (signal.removeEventListener('abort', done), resolve());
        const found = () => void world.schedule(world.random() * STREAM_POLL_MS, done);
        if (model.streamRecords(table) > seen) return found();
        waiting.set(table, [...(waiting.get(table) ?? []), found]);
        signal.addEventListener('abort', done, { once: true });
      }),
  };
}

export function simChaosEnv(world: World, model: DynamoModel, opts: { latency?: Latency } & Pick<SimClientOptions, 'shortCut'> = {}): ChaosEnv {
  const clients = opts.shortCut === undefined ? {} : { shortCut: opts.shortCut };
  // Each applied write's index changes reach the indexes a drawn while later, in write order.
  let propagating = false;
  const afterApply = () => {
    if (propagating || model.pendingIndexUpdates() === 0) return;
    propagating = true;
    world.schedule(world.random() * INDEX_LAG_MS, () => {
      propagating = false;
      model.propagateIndexes();
    });
  };
  // The checker's, the starter's and the effects functions' client: latency, no faults, not on the FENCE wire.
  const direct = faultedWire(world, { ...opts, afterApply });
  return {
    // Lambda's event source mapping polls a stream's shard 4 times a second; the progress watch is the harness's, not the code's.
    pacing: { progressPollMs: 250, streamPollMs: STREAM_POLL_MS },
    streamActivity: streamActivity(world, model),
    direct: simDynamo(model, direct.transport, clients),
    streams: simStreams(model, direct.transport, clients),
    async wire(onExchange) {
      const w = faultedWire(world, { ...opts, onExchange, afterApply });
      // The handlers' clients as the harness builds them on DynamoDB Local (createDynamo, maxAttempts 3).
      const dynamo = simDynamo(model, w.transport, { maxAttempts: 3, ...clients });
      return { dynamo, faults: w.faults, close: async () => void w.faults.clear() };
    },
    effects: async (o) => simEffects({ ...o, ...clients }),
  };
}
