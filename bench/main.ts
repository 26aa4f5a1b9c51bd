/**
 * `npm run bench [-- --json] [-- --quick] [-- --only a,b] [-- --endpoint URL] [-- --write-docs]`
 *
 * Starts its own DynamoDB Local, then measures, each figure against its baseline in the same run:
 * the worker bundle and its init against the runtime-SDK variant, the client's own cost per unit,
 * fenced vs unsafe BatchWriteItem and vs a bare TransactWriteItems with the request mix and WCU,
 * DynamoDB Local's SDK-free floor and the library against it, lease cycles, takeover and contention
 * vs the peer libraries, fair waiting, once-only effects vs Powertools idempotency; then, on a
 * fresh DynamoDB Local, throughput with and without streams and K-shard runs of one period.
 * Progress on stderr. Without --json: a table on
 * stdout. With --json: exactly one JSON object on stdout. The committed figures
 * (docs/benchmarks.md + docs/img/bench-*.svg) are rewritten only with --write-docs, and only by a
 * full run (not --quick, not --only): a smoke run never leaves noisy figures in the tree. A quick
 * run's table is headed as smoke figures and carries no verdict. A job that ends uncertain (the
 * worker stopping, as it must, on a renewal or commit unconfirmed on a loaded machine) is run again
 * with fresh jobs a bounded number of times, counted in the report (bench/throughput.ts).
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE = '1';

import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import cliProgress from 'cli-progress';
import { checkEndpoint } from '../cli/local/endpoint.js';
import { runScript, stackOf } from '../cli/shared/entry.js';
import { parseFlags, urlFlag } from '../cli/shared/flags.js';
import { InvalidInputError } from '../lib/protocol/index.js';
import { measureBundle } from './bundle.js';
import { measureClientCost } from './client.js';
import { measureContention } from './contention.js';
import { measureFairness } from './fairness.js';
import { measureIdempotency } from './idempotency.js';
import { measurePeerWaits } from './peer-waits.js';
import { measureSharding } from './sharding.js';
import { measureStreams } from './streams.js';
import { openEnv, type BenchEnv } from './env.js';
import { BenchError } from './errors.js';
import { openFloor, type Floor } from './floor.js';
import { measureLeaseCycles } from './leases.js';
import { describeMachine, type Machine } from './machine.js';
import { goalsSvg, renderMarkdown, renderTable, splitSvg } from './report.js';
import { jsonReport, type BenchRun } from './results.js';
import { round } from './stats.js';
import { measureTakeover } from './takeover.js';
import { measureThroughput } from './throughput.js';

// Light measurements first, the heavy writers last (see bench/env.ts: DynamoDB Local slows down with every stream record);
// streams, idempotency and sharding on a DynamoDB Local of their own, started fresh after the others.
const STEPS = ['bundle', 'client', 'leases', 'contention', 'fairness', 'takeover', 'peers', 'throughput', 'floor', 'streams', 'idempotency', 'sharding'] as const;
type Step = (typeof STEPS)[number];

const HELP = `npm run bench [-- options]

  --json            print one JSON object on stdout
  --quick           a smoke run (about a minute): every step with the least work, on one
                    DynamoDB Local; its figures are labelled smoke figures and judged against no goal
  --only a,b        run a subset of: ${STEPS.join(', ')}
  --endpoint URL    use a running DynamoDB Local (npm run dynamodb) instead of starting one
  --write-docs      rewrite the committed figures (docs/benchmarks.md, docs/img/bench-*.svg) from
                    this run; a full run only (not with --quick or --only), on a quiet machine
`;

export interface BenchFlags {
  json: boolean;
  quick: boolean;
  only?: Step[];
  endpoint?: string;
  writeDocs: boolean;
}

/** The flags, checked: bad input is an InvalidInputError (one line, exit 2) before anything runs. */
export function parseBenchFlags(argv: string[]): BenchFlags | 'help' {
  const { values } = parseFlags({
    args: argv,
    options: {
      json: { type: 'boolean', default: false },
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      endpoint: { type: 'string' },
      'write-docs': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: false,
  });
  if (values.help) return 'help';
  const endpoint = urlFlag('endpoint', values.endpoint);
  const only = values.only?.split(',').map((s) => s.trim()) as Step[] | undefined;
  for (const s of only ?? []) if (!STEPS.includes(s)) throw new InvalidInputError('--only', `unknown step "${s}" (${STEPS.join(', ')})`);
  const writeDocs = values['write-docs'];
  // The committed figures come from one full run: a smoke run or a subset would replace them with noise or holes.
  if (writeDocs && values.quick) throw new InvalidInputError('--write-docs', 'needs a full run: leave out --quick');
  if (writeDocs && only !== undefined) throw new InvalidInputError('--write-docs', 'needs a full run: leave out --only');
  return { json: values.json, quick: values.quick, writeDocs, ...(only ? { only } : {}), ...(endpoint ? { endpoint } : {}) };
}

/**
 * A quick run is a smoke run: every step once, with the least work that still exercises it, on ONE
 * DynamoDB Local (no fresh instance per heavy step, no warm-up rounds), so that it ends in about a
 * minute on 2 cores. Its figures are printed as smoke figures, never judged against a goal.
 */
function settings(quick: boolean) {
  return quick
    ? {
        bundle: { initRounds: 2 },
        client: { rounds: 3, calls: 20 },
        throughput: { rounds: 1, warmupRounds: 0, units: 6, parallelJobs: 2, parallelUnits: 4 },
        floor: { requests: 3, parallel: 2 },
        leases: { rounds: 1, cycles: 6 },
        takeover: { trials: 2, leaseMs: 1_000, maxClockSkewMs: 100, spacingMs: 200 },
        contention: { contenders: 8, periods: 3, leaseMs: 500, maxClockSkewMs: 100 },
        fairness: { contenders: 8, periods: 10, leaseMs: 300, maxClockSkewMs: 60, crashEvery: 4 },
        peers: { leaseMs: 500, trials: 2, contenders: 4, periods: 2 },
        idempotency: { rounds: 1, units: 1 },
        streams: { rounds: 1, jobs: 1, units: 3 },
        sharding: { rounds: 1, customers: 48, shardCounts: [1, 2], warmup: false },
        freshInstances: false,
      }
    : {
        bundle: { initRounds: 16 },
        client: { rounds: 25, calls: 100 },
        throughput: { rounds: 8, warmupRounds: 1, units: 16, parallelJobs: 4, parallelUnits: 8 },
        floor: { requests: 6, parallel: 4 },
        leases: { rounds: 6, cycles: 40 },
        takeover: { trials: 24, leaseMs: 5_000, maxClockSkewMs: 100, spacingMs: 400 },
        contention: { contenders: 32, periods: 10, leaseMs: 500, maxClockSkewMs: 100 },
        fairness: { contenders: 32, periods: 48, leaseMs: 500, maxClockSkewMs: 100, crashEvery: 8 },
        peers: { leaseMs: 1_000, trials: 6, contenders: 8, periods: 6 },
        idempotency: { rounds: 5, units: 4 },
        streams: { rounds: 5, jobs: 1, units: 16 },
        sharding: { rounds: 3, customers: 1_200 },
        freshInstances: true,
      };
}

/** Resolves once the text is handed to the OS: the process exits right after. */
const write = (text: string): Promise<void> => new Promise((resolve) => process.stdout.write(text, () => resolve()));

export async function main(argv: string[]): Promise<number> {
  const values = parseBenchFlags(argv);
  if (values === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  const { endpoint, only } = values;
  if (endpoint !== undefined) await checkEndpoint(endpoint);
  const wants = (s: Step) => only === undefined || only.includes(s);
  const cfg = settings(values.quick);

  // Progress: one tick per round/trial/second of each measurement, on stderr.
  const ticks: Record<Step, number> = {
    bundle: 1,
    client: 1,
    throughput: (cfg.throughput.rounds + cfg.throughput.warmupRounds) * 2,
    floor: 0, // set below
    leases: cfg.leases.rounds,
    takeover: cfg.takeover.trials,
    contention: Math.ceil((cfg.contention.periods * cfg.contention.leaseMs) / 1000),
    fairness: Math.ceil((cfg.fairness.periods * cfg.fairness.leaseMs) / 1000),
    peers: 4,
    idempotency: cfg.idempotency.rounds,
    streams: cfg.streams.rounds,
    sharding: cfg.sharding.rounds,
  };
  // The floor's rounds run inside the throughput's, unless the floor runs alone.
  if (!wants('throughput')) ticks.floor = cfg.throughput.rounds;
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format: 'bench [{bar}] {percentage}% | {value}/{total} | {step}', hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  );
  bar.start(1 + STEPS.filter(wants).reduce((n, s) => n + ticks[s], 0), 0, { step: 'describing the machine' });
  const tick = (step: string) => bar.increment(1, { step });
  const stepSeconds: Record<string, number> = {};
  const timed = async <T>(step: Step, fn: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      stepSeconds[step] = Math.round((performance.now() - t0) / 100) / 10;
    }
  };

  const started = performance.now();
  let machine: Machine;
  let env: BenchEnv | undefined;
  const run: Partial<BenchRun> = { quick: values.quick };
  try {
    // Before any measurement: its `java -version` must not compete with the first step for the CPU.
    machine = await describeMachine();
    bar.update({ step: 'starting DynamoDB Local' });
    if (wants('bundle')) {
      bar.update({ step: 'bundling the worker' });
      run.bundle = await timed('bundle', () => measureBundle({ initRounds: cfg.bundle.initRounds }));
      tick('bundle');
    }
    if (wants('client')) {
      bar.update({ step: 'client cost per unit' });
      run.client = await timed('client', () => measureClientCost(cfg.client));
      tick('client cost');
    }
    const needsDb = (['throughput', 'floor', 'leases', 'takeover', 'contention', 'fairness', 'peers'] as const).some(wants);
    if (needsDb) {
      env = await openEnv(endpoint === undefined ? {} : { endpoint });
    }
    tick('DynamoDB Local ready');
    const db = env;
    if (db && wants('leases')) run.leases = await timed('leases', () => measureLeaseCycles(db, { ...cfg.leases, onProgress: tick }));
    if (db && wants('contention')) run.contention = await timed('contention', () => measureContention(db, { ...cfg.contention, onProgress: tick }));
    if (db && wants('fairness')) run.fairness = await timed('fairness', () => measureFairness(db, { ...cfg.fairness, onProgress: tick }));
    if (db && wants('takeover')) run.takeover = await timed('takeover', () => measureTakeover(db, { ...cfg.takeover, onProgress: tick }));
    if (db && wants('peers')) run.peerWaits = await timed('peers', () => measurePeerWaits(db, { ...cfg.peers, onProgress: tick }));
    if (db && wants('throughput')) {
      // The floor's rounds run between the throughput's, on the same server state.
      const floor: Floor | undefined = wants('floor') ? await openFloor(db, cfg.floor) : undefined;
      try {
        run.throughput = await timed('throughput', () =>
          measureThroughput(db, {
            ...cfg.throughput,
            onProgress: tick,
            ...(floor
              ? { between: (mode: 'sequential' | 'parallel', record: boolean) => (mode === 'sequential' ? floor.sequentialRound(record) : floor.parallelRound(record)) }
              : {}),
          }),
        );
        if (floor) run.floor = floor.result();
      } finally {
        floor?.close();
      }
    } else if (db && wants('floor')) {
      const floor = await openFloor(db, cfg.floor);
      try {
        await timed('floor', async () => {
          for (let r = 0; r < cfg.throughput.rounds; r++) {
            await floor.sequentialRound();
            await floor.parallelRound();
            tick(`DynamoDB Local floor round ${r + 1}`);
          }
        });
        run.floor = floor.result();
      } finally {
        floor.close();
      }
    }
    // Each on a DynamoDB Local of its own, the one before stopped (the sharding step: each of its
    // runs): DynamoDB Local slows down every write to a streamed table as the stream records of all
    // its tables pile up (deleted tables' too), and these three write streams hard. On one instance
    // the sharding step's renewals took seconds by its third round (a shard ended uncertain 5 times).
    // A quick run keeps the one instance: its figures are smoke figures, and each start costs seconds.
    const openFresh = () => openEnv(endpoint === undefined ? {} : { endpoint });
    const onFresh = async <T>(step: Step, measure: (fresh: BenchEnv) => Promise<T>): Promise<T> => {
      if (cfg.freshInstances || env === undefined) {
        await env?.close();
        env = await openFresh();
      }
      const fresh = env;
      return timed(step, () => measure(fresh));
    };
    if (wants('streams')) run.streams = await onFresh('streams', (fresh) => measureStreams(fresh, { ...cfg.streams, onProgress: tick }));
    if (wants('idempotency')) run.idempotency = await onFresh('idempotency', (fresh) => measureIdempotency(fresh, { ...cfg.idempotency, onProgress: tick }));
    if (wants('sharding')) {
      if (cfg.freshInstances) {
        await env?.close();
        env = undefined;
        run.sharding = await timed('sharding', () => measureSharding(openFresh, { ...cfg.sharding, onProgress: tick }));
      } else {
        env ??= await openFresh();
        const shared = env;
        // Every run on the one instance: closing a run's view leaves the instance for the next.
        const view = async (): Promise<BenchEnv> => ({ ...shared, close: async () => undefined });
        run.sharding = await timed('sharding', () => measureSharding(view, { ...cfg.sharding, onProgress: tick }));
      }
    }
  } finally {
    bar.stop();
    await env?.close();
  }
  machine.loadAverage.end = loadavg().map((x) => round(x));
  const full: BenchRun = { ...run, machine, quick: values.quick, seconds: (performance.now() - started) / 1000, stepSeconds };

  await write(values.json ? `${JSON.stringify(jsonReport(full))}\n` : `${renderTable(full)}\n`);
  // Progress notes go to stderr with --json: stdout is the one JSON object.
  const note = (line: string) => (values.json ? process.stderr.write(`${line}\n`) : write(`\n${line}\n`));
  if (values.writeDocs) {
    const written = writeDocs(full);
    await note(`wrote ${written.join(', ')} (${Math.round(full.seconds)} s)`);
  } else if (!values.json) {
    await note('(docs/benchmarks.md not rewritten: --write-docs does that, from a full run)');
  }
  return 0;
}

/** The committed figures: docs/benchmarks.md and its charts, from one full run. */
function writeDocs(full: BenchRun): string[] {
  const docs = fileURLToPath(new URL('../docs/', import.meta.url));
  mkdirSync(`${docs}img`, { recursive: true });
  writeFileSync(`${docs}img/bench-goals.svg`, `${goalsSvg(full)}\n`);
  const split = splitSvg(full);
  if (split) writeFileSync(`${docs}img/bench-split.svg`, `${split}\n`);
  writeFileSync(`${docs}benchmarks.md`, renderMarkdown(full, { goals: 'img/bench-goals.svg', ...(split ? { split: 'img/bench-split.svg' } : {}) }));
  return ['docs/benchmarks.md', 'docs/img/bench-goals.svg', ...(split ? ['docs/img/bench-split.svg'] : [])];
}

// A bad flag, an endpoint that is not DynamoDB: one line and exit status 2, as the other CLIs. A
// measurement that could not be made (BenchError) is one line too; anything else is a bug: its stack.
if (process.argv[1]?.endsWith('bench/main.ts')) runScript(main, { bugLine: (e) => `bench failed: ${e instanceof BenchError ? e.message : stackOf(e)}` });
