/**
 * streams: the real worker's fenced units on the project's tables with their streams
 * (NEW_AND_OLD_IMAGES on Leases, Fences, Invoices, as the schema has them) and on the same tables
 * created without any stream, alternating rounds, on a DynamoDB Local of their own (fresh: it
 * slows down with every stream record it holds, bench/env.ts). On AWS a stream adds no write
 * latency (records are written asynchronously); on DynamoDB Local every write to a table with a
 * stream also queries its stream records. Both figures are reported.
 */
import type { BenchEnv } from './env.js';
import { recordRequests } from './requests.js';
import { median } from './stats.js';
import { fencedPhase, type Side } from './throughput.js';

export interface StreamsResult {
  rounds: number;
  withStreamsEffectsPerSec: number;
  withoutStreamsEffectsPerSec: number;
  /** With ÷ without, median of the rounds' ratios. */
  ratio: number;
  roundRatios: number[];
  /** Fenced attempts run again because a job ended uncertain, warm-up included (fencedPhase). */
  uncertainRetries: number;
}

export async function measureStreams(env: BenchEnv, opts: { rounds: number; jobs: number; units: number; onProgress?: (label: string) => void }): Promise<StreamsResult> {
  const side = async (streams: boolean): Promise<Side> => {
    const dynamo = env.dynamo();
    return { dynamo, tables: await env.tables(streams ? 'str-on' : 'str-off', { streams }), log: recordRequests(dynamo.client) };
  };
  const on = await side(true);
  const off = await side(false);
  const w: number[] = [];
  const wo: number[] = [];
  let uncertainRetries = 0;
  const phase = async (s: Side, tag: string): Promise<number> => {
    const p = await fencedPhase(s, tag, opts.jobs, opts.units);
    uncertainRetries += p.retries ?? 0;
    return p.effectsPerSec;
  };
  await phase(on, 'warm-on');
  await phase(off, 'warm-off');
  for (let r = 0; r < opts.rounds; r++) {
    const runs = [async () => w.push(await phase(on, `on${r}`)), async () => wo.push(await phase(off, `off${r}`))];
    for (const run of r % 2 === 0 ? runs : [...runs].reverse()) await run();
    on.log.reset();
    off.log.reset();
    opts.onProgress?.(`streams round ${r + 1}/${opts.rounds}`);
  }
  const ratios = w.map((x, i) => x / wo[i]!);
  return { rounds: opts.rounds, withStreamsEffectsPerSec: median(w), withoutStreamsEffectsPerSec: median(wo), ratio: median(ratios), roundRatios: ratios, uncertainRetries };
}
