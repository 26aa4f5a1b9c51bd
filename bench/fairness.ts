/**
 * Fair waiting: the fair acquire (FairAcquirer, a predecessor watch) against today's acquire
 * (LeaseManager.acquire), side by side in the same run on the same DynamoDB Local, each side on
 * its own key and its own client (its own request counter).
 *
 * A closed system: 32 contenders want one key, over and over. Each arrives (staggered by 20 ms, so
 * that arrival order is defined), waits, holds the lease for half a period, releases, is away for
 * one period, and wants it again, until the run ends. Every `crashEvery`-th grant of a side is a
 * crash instead: the holder never releases, and comes back after the same time away as a new
 * process (a new owner). Measured per side: every request (SDK middleware), the requests on the
 * lease item itself, contenders never served, the longest wait and the longest wait divided by
 * (position × lease period), where position is how many other contenders were waiting or holding
 * when this one started to wait, and the takeover after each crash: from the crashed grant to the
 * next, both read from the grants' own send times (a lease's `expiresAt` less its duration), so
 * that a busy event loop delaying one continuation does not shorten or stretch it.
 */
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { AcquireTimeoutError, FairAcquirer, LeaseManager, waitersTableInput, type Lease } from '../lib/protocol/index.js';
import type { BenchEnv } from './env.js';
import { countByTable } from '../test/support/request-counter.js';
import { fmt as f } from './results.js';
import { max, median, sleep } from './stats.js';
import { BenchError } from './errors.js';

export interface FairnessOptions {
  contenders: number;
  periods: number;
  leaseMs: number;
  maxClockSkewMs: number;
  crashEvery: number;
  onProgress?: (label: string) => void;
}

export interface FairnessSide {
  requests: number;
  requestsPerContenderPerLease: number;
  /** Requests on the lease item (acquire attempts and releases) per lease period: the herd. */
  leaseRequestsPerLease: number;
  grants: number;
  neverServed: number;
  /** Longest wait, ms (waits still open at the end included). */
  maxWaitMs: number;
  /** Longest wait ÷ (position × lease period), and its median over all waits. */
  maxWaitPerPosition: number;
  medianWaitPerPosition: number;
  crashes: number;
  takeoverMedianMs: number;
  takeoverMaxMs: number;
  /** Every grant's generation one above the one before, none repeated (TOKENS; must be true). */
  tokensInOrder: boolean;
}

export interface Fairness extends Omit<FairnessOptions, 'onProgress'> {
  holdMs: number;
  awayMs: number;
  seconds: number;
  plain: FairnessSide;
  fair: FairnessSide;
}

type Acquire = (owner: string, signal: AbortSignal) => Promise<Lease>;

/** One side of the run: 32 contender loops around `acquire`. */
async function runSide(opts: FairnessOptions & { holdMs: number; awayMs: number }, acquire: Acquire, release: (lease: Lease) => Promise<unknown>, stop: AbortSignal, count: () => { all: number; lease: number }) {
  const waits: { ms: number; position: number }[] = [];
  const open = new Map<number, { since: number; position: number }>();
  const served = new Set<number>();
  const granted: { generation: number; sentAt: number; crashed: boolean }[] = [];
  let active = 0; // wanting or holding
  const start = performance.now();
  const contender = async (slot: number) => {
    await sleep(slot * 20);
    for (let life = 0; !stop.aborted; life++) {
      const since = performance.now();
      const position = active++;
      open.set(slot, { since, position });
      let lease: Lease;
      try {
        lease = await acquire(`c${slot}-${life}`, stop);
      } catch (e) {
        if (e instanceof AcquireTimeoutError && stop.aborted) return; // still waiting at the end: stays open
        throw e;
      }
      open.delete(slot);
      waits.push({ ms: performance.now() - since, position });
      served.add(slot);
      const crash = (granted.length + 1) % opts.crashEvery === 0;
      granted.push({ generation: lease.generation, sentAt: lease.expiresAt - lease.durationMs, crashed: crash });
      active--;
      if (!crash) {
        await sleep(opts.holdMs);
        await release(lease);
      } // a crash: never released; the lease runs out, and the process comes back as a new owner
      await sleep(opts.awayMs);
    }
  };
  let end = Number.POSITIVE_INFINITY;
  stop.addEventListener('abort', () => (end = performance.now()), { once: true });
  await Promise.all(Array.from({ length: opts.contenders }, (_, i) => contender(i)));
  // The window is the run, up to the stop; what the loops do after it (their last releases) is counted, not timed.
  end = Math.min(end, performance.now());
  const periods = (end - start) / opts.leaseMs;
  const all = [...waits, ...[...open.values()].map((o) => ({ ms: end - o.since, position: o.position }))];
  const perPosition = all.map((w) => w.ms / (Math.max(1, w.position) * opts.leaseMs));
  const c = count();
  const byToken = [...granted].sort((a, b) => a.generation - b.generation);
  const takeovers = byToken.flatMap((g, i) => (g.crashed && byToken[i + 1] !== undefined ? [byToken[i + 1]!.sentAt - g.sentAt] : []));
  return {
    requests: c.all,
    requestsPerContenderPerLease: c.all / opts.contenders / periods,
    leaseRequestsPerLease: c.lease / periods,
    grants: granted.length,
    neverServed: opts.contenders - served.size,
    maxWaitMs: max(all.map((w) => w.ms)),
    maxWaitPerPosition: max(perPosition),
    medianWaitPerPosition: median(perPosition),
    crashes: takeovers.length,
    takeoverMedianMs: median(takeovers),
    takeoverMaxMs: max(takeovers),
    tokensInOrder: byToken.every((g, i) => i === 0 || g.generation === byToken[i - 1]!.generation + 1),
  };
}

export async function measureFairness(env: BenchEnv, opts: FairnessOptions): Promise<Fairness> {
  const tables = await env.tables('fairness');
  const waiters = tables.leases.replace(/leases$/, 'waiters');
  const sides = { plain: env.dynamo(), fair: env.dynamo() };
  await sides.fair.client.send(new CreateTableCommand(waitersTableInput(waiters)));
  const counters = { plain: countByTable(sides.plain.client), fair: countByTable(sides.fair.client) };
  const counted = (side: 'plain' | 'fair') => () => {
    const m = counters[side];
    return { all: [...m.values()].reduce((a, b) => a + b, 0), lease: m.get(tables.leases) ?? 0 };
  };
  const mode = { kind: 'wall-clock' as const, maxClockSkewMs: opts.maxClockSkewMs };
  const manager = (side: 'plain' | 'fair', owner: string) =>
    new LeaseManager({ doc: sides[side].doc, table: tables.leases, owner, epoch: 0, durationMs: opts.leaseMs, mode });
  const keys = { plain: `plain-${randomUUID().slice(0, 8)}`, fair: `fair-${randomUUID().slice(0, 8)}` };
  const settings = { ...opts, holdMs: opts.leaseMs / 2, awayMs: opts.leaseMs };
  // Warm-up, not counted: DynamoDB Local's first requests on fresh tables take up to a second,
  // which would scramble the crowd's arrival order (tickets are taken in the order requests land).
  for (let i = 0; i < 5; i++) {
    const plainLease = await manager('plain', `warm-${i}`).acquire(`warm-${keys.plain}`);
    await manager('plain', plainLease.owner).release(plainLease);
    const fairLease = await new FairAcquirer(manager('fair', `warm-${i}`), { doc: sides.fair.doc, table: waiters }).acquire(`warm-${keys.fair}`);
    await manager('fair', fairLease.owner).release(fairLease);
  }
  counters.plain.clear();
  counters.fair.clear();
  const stop = new AbortController();
  setMaxListeners(opts.contenders * 4, stop.signal);
  const runMs = opts.periods * opts.leaseMs;
  const started = performance.now();
  const timer = setTimeout(() => stop.abort(new BenchError('run over')), runMs);
  const progress = setInterval(() => opts.onProgress?.(`fair waiting ${Math.min(100, Math.round(((performance.now() - started) / runMs) * 100))}%`), 1_000);
  try {
    const [plain, fair] = await Promise.all([
      runSide(settings, (owner, signal) => manager('plain', owner).acquire(keys.plain, { signal }), (l) => manager('plain', l.owner).release(l), stop.signal, counted('plain')),
      runSide(
        settings,
        (owner, signal) => new FairAcquirer(manager('fair', owner), { doc: sides.fair.doc, table: waiters }).acquire(keys.fair, { signal }),
        (l) => manager('fair', l.owner).release(l),
        stop.signal,
        counted('fair'),
      ),
    ]);
    const { onProgress: _, ...figures } = settings;
    return { ...figures, seconds: (performance.now() - started) / 1000, plain, fair };
  } finally {
    clearTimeout(timer);
    clearInterval(progress);
  }
}

/** The docs/benchmarks.md section. */
export function fairnessMarkdown(r: Fairness): string[] {
  const row = (label: string, get: (s: FairnessSide) => string) => `| ${label} | ${get(r.plain)} | ${get(r.fair)} |`;
  return [
    '## Fair waiting',
    '',
    `${r.contenders} contenders want one key over and over for ${r.periods} lease periods (lease ${r.leaseMs} ms, clock bound ${r.maxClockSkewMs} ms): each waits,`,
    `holds ${r.holdMs} ms, releases, is away ${r.awayMs} ms and wants it again; every ${r.crashEvery}th grant is a crash (never released; the process comes back`,
    'as a new owner). Both sides run at once on the same DynamoDB Local, each on its own key and client: `LeaseManager.acquire` (today)',
    'and `FairAcquirer` (a ticket, a waiter item, a watch on the predecessor only; lib/protocol/fair-acquire.ts).',
    '',
    '| | today\'s acquire | fair acquire |',
    '| --- | --- | --- |',
    row('requests per contender per lease period (goal ≤ 1)', (s) => `**${f(s.requestsPerContenderPerLease)}**`),
    row('requests on the lease item per lease period', (s) => f(s.leaseRequestsPerLease, 1)),
    row('contenders never served (goal 0)', (s) => `**${s.neverServed}** of ${r.contenders}`),
    row('grants', (s) => String(s.grants)),
    row('longest wait', (s) => `${f(s.maxWaitMs, 0)} ms`),
    row('longest wait ÷ (position × lease period)', (s) => `**${f(s.maxWaitPerPosition)}**`),
    row('median wait ÷ (position × lease period)', (s) => f(s.medianWaitPerPosition)),
    row('takeover after a holder crash (crashed grant → next grant), median / max', (s) => `${f(s.takeoverMedianMs, 0)} / ${f(s.takeoverMaxMs, 0)} ms (${s.crashes} crashes)`),
    row('generations one apart, none repeated', (s) => (s.tokensInOrder ? 'yes' : 'NO')),
    '',
    'Today every waiting contender tries the lease item at each expiry it learned, and whoever is first wins; a contender back',
    'from its time away can also take a lease just released, ahead of those sleeping until its expiry (hence more grants on that',
    'side): some contenders lose turn after turn. The fair acquire lets only the head of the queue try the lease; the others each',
    'read their predecessor\'s item when its promise is due, one turn (lease + clock bound + jitter) per waiter ahead, so a wait is',
    'about position × turn, and the key passes about once per turn. A crashed holder costs a full turn, as does one that releases',
    'after the next waiter has looked.',
    'Position counts the contenders waiting or holding when a wait began; arrivals closer together than a round trip have no',
    'order to keep (their tickets are taken in the order their requests land).',
    '',
  ];
}
