/**
 * `npm start`'s faulted run (cli/demo/run.ts invoiceRun: the real handlers, the local runtime,
 * its faults and the checker) in a simulated world of `seed`: the in-memory DynamoDB and the
 * effects' in-memory stand-ins, every wait in virtual time. For the files whose point is what the
 * run does (shards, destinations), not how fast a machine runs it.
 */
import type { Effects, EffectsOptions } from '../../cli/local/effects-env.js';
import { invoiceRun, type RunOptions, type RunResult } from '../../cli/demo/run.js';
import { ensureTables, type HttpProvider } from '../../lib/workflow/index.js';
import { DynamoModel } from './dynamodb/model.js';
import { comparedShapes } from './dynamodb/shape.js';
import { simChaosEnv } from './env.js';
import { inWorld } from './world.js';

export interface SimDemoOptions extends Omit<RunOptions, 'dynamo' | 'endpoint' | 'streams' | 'effects' | 'http'> {
  /** The effects' options beyond the checker's client (the http targets of the workload). */
  effects?: Omit<EffectsOptions, 'doc'>;
  /** The sender's http providers, made from the run's own effects (a negative control's). */
  http?: (effects: Effects) => Readonly<Record<string, HttpProvider>>;
}

export interface SimDemoRun {
  run: RunResult;
  effects: Effects;
  /** What the model was asked and does not implement: a run with any is void. */
  unsupported: string[];
}

export async function simDemoRun(seed: number, opts: SimDemoOptions): Promise<SimDemoRun> {
  let model: DynamoModel | undefined;
  const { effects: effectsOptions, http, ...run } = opts;
  const out = await inWorld(seed, async (w) => {
    model = new DynamoModel({ now: () => w.wallNow, indexLag: true, shapes: comparedShapes() });
    const env = simChaosEnv(w, model);
    const effects = await env.effects({ doc: env.direct.doc, ...effectsOptions });
    await ensureTables(env.direct.client, opts.tables);
    try {
      const result = await invoiceRun({ ...run, dynamo: env.direct, endpoint: env.wire, streams: env.streams, effects, ...(http ? { http: http(effects) } : {}) });
      return { run: result, effects };
    } finally {
      await effects.close();
    }
  });
  return { ...out, unsupported: [...new Set<string>(model?.unsupported ?? [])] };
}
