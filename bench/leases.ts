/**
 * Lease cycles/s: acquire + one renew + release, ours against each peer (bench/peers.ts), on the
 * same DynamoDB Local in the same run. Rounds interleave the libraries (each round runs every
 * library for the same number of cycles, in a rotating order); the figure is the median of
 * per-round ratios.
 */
import type { BenchEnv } from './env.js';
import { deliveryHeroAdapter, lockClientAdapter, oursAdapter, type LeaseAdapter } from './peers.js';
import { median } from './stats.js';

export interface PeerFigure {
  name: string;
  version: string;
  requestsPerCycle: string;
  lacks: readonly string[];
  cyclesPerSec: number;
  /** Ours ÷ this peer, median of the rounds' ratios. */
  oursOverPeer: number;
  rounds: number[];
}

export interface LeaseCycles {
  ours: { cyclesPerSec: number; requestsPerCycle: string };
  peers: PeerFigure[];
}

export async function measureLeaseCycles(
  env: BenchEnv,
  opts: { rounds: number; cycles: number; onProgress?: (label: string) => void },
): Promise<LeaseCycles> {
  const ours = await oursAdapter(env);
  const peers = [await lockClientAdapter(env), await deliveryHeroAdapter(env)];
  const all: LeaseAdapter[] = [ours, ...peers];
  const rates = new Map<LeaseAdapter, number[]>(all.map((a) => [a, []]));
  let n = 0;
  const run = async (a: LeaseAdapter, cycles: number): Promise<number> => {
    const t0 = performance.now();
    for (let i = 0; i < cycles; i++) await a.cycle(`bench-key-${n++}`);
    return cycles / ((performance.now() - t0) / 1000);
  };
  try {
    for (const a of all) await run(a, 10); // warm-up: JIT, connections
    for (let r = 0; r < opts.rounds; r++) {
      const order = all.map((_, i) => all[(i + r) % all.length]!);
      for (const a of order) rates.get(a)!.push(await run(a, opts.cycles));
      opts.onProgress?.(`lease cycles round ${r + 1}/${opts.rounds}`);
    }
  } finally {
    for (const a of all) a.close();
  }
  const oursRates = rates.get(ours)!;
  return {
    ours: { cyclesPerSec: median(oursRates), requestsPerCycle: ours.requestsPerCycle },
    peers: peers.map((p) => {
      const ratios = rates.get(p)!.map((x, i) => oursRates[i]! / x);
      return {
        name: p.name,
        version: p.version,
        requestsPerCycle: p.requestsPerCycle,
        lacks: p.lacks,
        cyclesPerSec: median(rates.get(p)!),
        oursOverPeer: median(ratios),
        rounds: ratios,
      };
    }),
  };
}
