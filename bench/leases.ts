/**
 * Lease cycles/s: acquire + one renew + release, ours against each peer (bench/peers.ts), on the
 * same DynamoDB Local in the same run. The libraries take turns cycle by cycle (ours, peer A,
 * peer B, ours, ...; the order rotates each round), so a burst of load on the shared machine
 * hits all of them alike. Per round: the median cycle time of each; the figure is the median of
 * the per-round ratios, cycles/s = 1000 / median cycle time.
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
  const cycleMs = async (a: LeaseAdapter): Promise<number> => {
    const t0 = performance.now();
    await a.cycle(`bench-key-${n++}`);
    return performance.now() - t0;
  };
  const times = new Map<LeaseAdapter, number[]>(all.map((a) => [a, []]));
  try {
    for (let i = 0; i < 10; i++) for (const a of all) await cycleMs(a); // warm-up: JIT, connections
    for (let r = 0; r < opts.rounds; r++) {
      const order = all.map((_, i) => all[(i + r) % all.length]!);
      const round = new Map<LeaseAdapter, number[]>(all.map((a) => [a, []]));
      for (let i = 0; i < opts.cycles; i++) for (const a of order) round.get(a)!.push(await cycleMs(a));
      for (const a of all) {
        rates.get(a)!.push(1000 / median(round.get(a)!));
        times.get(a)!.push(...round.get(a)!);
      }
      opts.onProgress?.(`lease cycles round ${r + 1}/${opts.rounds}`);
    }
  } finally {
    for (const a of all) a.close();
  }
  const oursRates = rates.get(ours)!;
  const overall = (a: LeaseAdapter) => 1000 / median(times.get(a)!);
  return {
    ours: { cyclesPerSec: overall(ours), requestsPerCycle: ours.requestsPerCycle },
    peers: peers.map((p) => {
      const ratios = rates.get(p)!.map((x, i) => oursRates[i]! / x);
      return {
        name: p.name,
        version: p.version,
        requestsPerCycle: p.requestsPerCycle,
        lacks: p.lacks,
        cyclesPerSec: overall(p),
        oursOverPeer: median(ratios),
        rounds: ratios,
      };
    }),
  };
}
