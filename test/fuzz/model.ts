/**
 * Model-based property of the lease and fence API, shared by vitest (test/property.test.ts)
 * and the long-run CLI (`npm run fuzz`, test/fuzz/main.ts).
 *
 * fast-check generates a run configuration (2-4 owners, lease mode, clock skew and per-owner
 * wall-clock offsets, epochs, durations) and a short random sequence of commands:
 *   tryAcquire, acquire (with a timeout: it sleeps on the shared ManualClock), fairAcquire (the
 *   same contract through the waiter queue, which it must leave empty), renew, release,
 *   raiseFence (+ checkpoint read), commit (one fenced unit: an upsert + a once-only effect),
 *   retry (resend the owner's last commit request exactly, as after a lost response),
 *   advance (move the shared clock so leases expire).
 * Each command runs against the real library on DynamoDB Local AND against a small pure
 * reference model written from DESIGN.md, not from the library's code. After every command the
 * outcome (granted / contended / lost / stale / moved / duplicate ...) and the real table state
 * (lease, fence, checkpoint, invoices, charges) must equal the model's, and a few invariants are
 * checked on the real state alone (TOKENS, FENCE, ONCE). Every run uses its own key namespace
 * (job id, lease key, fence key, invoice keys) in the shared tables: no table per run.
 */
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual, inspect } from 'node:util';
import fc from 'fast-check';
import { BatchGetCommand, GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  AcquireTimeoutError,
  CheckpointMovedError,
  commitFencedUnit,
  EffectAlreadyExistsError,
  EpochBehindError,
  FairAcquirer,
  LeaseLostError,
  LeaseManager,
  ManualClock,
  onceOnly,
  raiseFence,
  StaleGenerationError,
  upsert,
  type Clock,
  type FencedUnit,
  type Generation,
  type Lease,
  type Observation,
} from '../../lib/protocol/index.js';
import type { TableNames } from '../../lib/workflow/index.js';

// ---------------------------------------------------------------------------------------------
// Configuration

const SEQ = 2 ** 32;
const WALL0 = 1_700_000_000_000;
const MAX_DRIFT = 0.01;
const CUSTOMERS = 3;
const TOTAL_UNITS = 1_000;

export interface OwnerConfig {
  epoch: number;
  durationMs: number;
  /** This owner's wall clock minus the shared one (skewed hosts). */
  wallOffsetMs: number;
}

export interface RunConfig {
  mode: 'wall-clock' | 'version-watch';
  maxClockSkewMs: number;
  /** The value every owner's `random()` returns (jitter); dyadic so clock arithmetic stays exact. */
  random: number;
  owners: OwnerConfig[];
}

const ownerArb = (skewed: boolean, mixedEpochs: boolean): fc.Arbitrary<OwnerConfig> =>
  fc.record({
    epoch: mixedEpochs ? fc.constantFrom(0, 1, 2) : fc.constant(0),
    durationMs: fc.constantFrom(600, 1_000),
    wallOffsetMs: skewed ? fc.integer({ min: -60, max: 60 }) : fc.constant(0),
  });

export const runConfigArb: fc.Arbitrary<RunConfig> = fc
  .record({
    mode: fc.constantFrom('wall-clock' as const, 'version-watch' as const),
    maxClockSkewMs: fc.constantFrom(0, 0, 50),
    random: fc.constantFrom(0.5, 0.25, 0.75),
    count: fc.integer({ min: 2, max: 4 }),
    skewed: fc.boolean(),
    mixedEpochs: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  })
  .chain(({ count, skewed, mixedEpochs, ...rest }) =>
    fc.array(ownerArb(skewed, mixedEpochs), { minLength: count, maxLength: count }).map((owners) => ({ ...rest, owners })),
  );

const ownerName = (i: number): string => `o${i}`;
const marginOf = (durationMs: number): number => Math.min(1_000, durationMs / 10);
/** DESIGN.md: local deadline = sendTime + duration * (1 - maxDrift) - margin. */
const deadlineOf = (sendTime: number, durationMs: number): number => sendTime + durationMs * (1 - MAX_DRIFT) - marginOf(durationMs);

// ---------------------------------------------------------------------------------------------
// Outcomes: plain data, compared with deep equality

export type Outcome =
  | { granted: { generation: number; takeoverFrom?: string; expiresAt: number; deadline: number } }
  | { contended: { holder: Record<string, unknown>; observation?: { version: number; at: number; waitMs: number } } }
  | { timeout: true }
  | { error: string; detail?: unknown }
  | { renewed: { expiresAt: number; deadline: number } }
  | { lost: { holder: Record<string, unknown> } }
  | { released: boolean }
  | { raised: { previous?: number; seen: number } }
  | { stale: { current?: number } }
  | { status: 'committed' | 'already-committed'; attempts: number }
  | { moved: { actual?: number } }
  | { duplicate: { key: string } };

/** What each run observed, summed over a property check: proves the sequences reach the interesting cases. */
export type Coverage = Record<string, number>;
export const coverage: Coverage = {};
const cover = (what: string): void => {
  coverage[what] = (coverage[what] ?? 0) + 1;
};

// ---------------------------------------------------------------------------------------------
// The reference model (DESIGN.md, "Lease protocol", "Worker protocol", "Tables")

interface ModelLease {
  owner?: number;
  generation: number;
  expiresAt?: number;
  version: number;
  durationMs: number;
  takenFrom: string;
}

interface ModelObservation {
  version: number;
  at: number;
  waitMs: number;
}

interface CommitParams {
  generation: number;
  expected: number;
  now: number;
  invoice: number;
  charge: number | null;
  amount: number;
}

interface ModelOwner {
  /** Every lease this owner was granted, oldest first (index-aligned with the real side). */
  leases: { generation: number }[];
  /** The checkpoint cursor this owner last read or advanced to. */
  seen: number;
  observation?: ModelObservation;
  lastCommit?: CommitParams;
}

interface ModelEffect {
  generation: number;
  amountCents: number;
  unit: number;
  updatedAt: number;
}

export class LeaseFenceModel {
  mono = 0;
  wall = WALL0;
  lease: ModelLease | undefined;
  private versions = 0;
  fence: { generation: number; updatedAt: number } | undefined;
  job: { cursor: number; generation?: number; heartbeatAt: number } = { cursor: 0, heartbeatAt: 0 };
  invoices = new Map<number, ModelEffect>();
  charges = new Map<number, ModelEffect>();
  owners: ModelOwner[];
  /** ClientRequestTokens of transactions that committed (DynamoDB remembers those, with their parameters). */
  private tokens = new Map<string, string>();

  constructor(readonly cfg: RunConfig) {
    this.owners = cfg.owners.map(() => ({ leases: [], seen: 0 }));
  }

  owner(i: number): ModelOwner {
    return this.owners[i]!;
  }

  private wallOf(i: number, wall = this.wall): number {
    return wall + this.cfg.owners[i]!.wallOffsetMs;
  }

  private newVersion(): number {
    return ++this.versions;
  }

  private holder(): Record<string, unknown> {
    const l = this.lease!;
    return {
      ...(l.owner === undefined ? {} : { owner: ownerName(l.owner) }),
      generation: l.generation,
      ...(l.expiresAt === undefined ? {} : { expiresAt: l.expiresAt }),
      version: l.version,
      durationMs: l.durationMs,
    };
  }

  /** Free for owner i at shared wall time `wall` (wall-clock), or with a matured observation (version-watch). */
  private isFree(i: number, wall: number, observation: ModelObservation | undefined, mono: number): boolean {
    const l = this.lease;
    if (l === undefined || l.owner === undefined) return true;
    if (this.cfg.mode === 'wall-clock') return l.expiresAt! < this.wallOf(i, wall) - this.cfg.maxClockSkewMs;
    return observation !== undefined && mono - observation.at >= observation.waitMs && observation.version === l.version;
  }

  /** The grant when the lease is free for owner i: the next token of the counter, or the first of the owner's epoch. */
  private grant(i: number): Outcome {
    const o = this.cfg.owners[i]!;
    const floor = o.epoch * SEQ;
    const g = this.lease?.generation ?? 0;
    if (g >= floor + SEQ) return { error: 'EpochBehindError' };
    // A counter never goes down: the next token is above every token issued before.
    const generation = this.lease === undefined ? floor + 1 : Math.max(g, floor) + 1;
    const takeoverFrom = this.lease?.owner === undefined ? undefined : ownerName(this.lease.owner);
    const expiresAt = this.wallOf(i) + o.durationMs;
    this.lease = { owner: i, generation, expiresAt, version: this.newVersion(), durationMs: o.durationMs, takenFrom: takeoverFrom ?? '-' };
    this.owner(i).leases.push({ generation });
    delete this.owner(i).observation;
    return { granted: { generation, ...(takeoverFrom === undefined ? {} : { takeoverFrom }), expiresAt, deadline: deadlineOf(this.mono, o.durationMs) } };
  }

  tryAcquire(i: number): Outcome {
    const o = this.owner(i);
    const observation = this.cfg.mode === 'version-watch' ? o.observation : undefined;
    if (this.isFree(i, this.wall, observation, this.mono)) return this.grant(i);
    const l = this.lease!;
    if (this.cfg.mode === 'wall-clock') return { contended: { holder: this.holder() } };
    // Version-watch: the watch restarts whenever the version moved.
    const next: ModelObservation =
      observation !== undefined && observation.version === l.version
        ? observation
        : { version: l.version, at: this.mono, waitMs: Math.max(l.durationMs, this.cfg.owners[i]!.durationMs) * (1 + MAX_DRIFT) };
    o.observation = next;
    return { contended: { holder: this.holder(), observation: { ...next } } };
  }

  /**
   * acquire(timeoutMs): attempts until granted or the timeout's last attempt (at start + T).
   * Nothing else happens meanwhile, so it succeeds iff the lease is free at start + T; the
   * instant it succeeded is read from the clock (`end`) and must be a moment the lease was free.
   */
  acquire(i: number, timeoutMs: number, end: { mono: number; wall: number }): { outcome: Outcome; problems: string[] } {
    const problems: string[] = [];
    const start = { mono: this.mono, wall: this.wall };
    const l = this.lease;
    const watch: ModelObservation | undefined =
      this.cfg.mode === 'version-watch' && l?.owner !== undefined
        ? { version: l.version, at: start.mono, waitMs: Math.max(l.durationMs, this.cfg.owners[i]!.durationMs) * (1 + MAX_DRIFT) }
        : undefined;
    const freeAt = (mono: number, wall: number) => this.isFree(i, wall, watch, mono);
    const eps = 1e-6;
    if (end.mono < start.mono - eps || end.mono > start.mono + timeoutMs + eps) problems.push(`acquire ended at ${end.mono}, outside [${start.mono}, ${start.mono + timeoutMs}]`);
    const freeAtStart = freeAt(start.mono, start.wall);
    const freeByDeadline = freeAt(start.mono + timeoutMs, start.wall + timeoutMs);
    this.mono = end.mono;
    this.wall = end.wall;
    if (freeAtStart && end.mono !== start.mono) problems.push(`the lease was free at the start (t=${start.mono}) but acquire waited until ${end.mono}`);
    if (!freeByDeadline) {
      if (Math.abs(end.mono - (start.mono + timeoutMs)) > eps) problems.push(`acquire gave up at ${end.mono}, not at its timeout ${start.mono + timeoutMs}`);
      return { outcome: { timeout: true }, problems };
    }
    if (!freeAt(end.mono, end.wall)) problems.push(`acquire returned at ${end.mono}, when the lease was not free yet`);
    return { outcome: this.grant(i), problems };
  }

  renew(i: number, index: number): Outcome {
    const mine = this.owner(i).leases[index]!;
    const l = this.lease!;
    if (l.owner !== i || l.generation !== mine.generation) return { lost: { holder: this.holder() } };
    const d = this.cfg.owners[i]!.durationMs;
    l.expiresAt = this.wallOf(i) + d;
    l.version = this.newVersion();
    l.durationMs = d;
    return { renewed: { expiresAt: l.expiresAt, deadline: deadlineOf(this.mono, d) } };
  }

  release(i: number, index: number): Outcome {
    const mine = this.owner(i).leases[index]!;
    const l = this.lease!;
    if (l.owner !== i || l.generation !== mine.generation) return { released: false };
    delete l.owner;
    delete l.expiresAt;
    l.version = this.newVersion();
    return { released: true };
  }

  /** Raise the fence to the lease's generation, then read the checkpoint (the worker's order). */
  raise(i: number, index: number): Outcome {
    const g = this.owner(i).leases[index]!.generation;
    if (this.fence !== undefined && this.fence.generation > g) return { stale: { current: this.fence.generation } };
    const previous = this.fence?.generation;
    this.fence = { generation: g, updatedAt: this.wallOf(i) };
    this.owner(i).seen = this.job.cursor;
    return { raised: { ...(previous === undefined ? {} : { previous }), seen: this.job.cursor } };
  }

  commitParams(i: number, index: number, invoice: number, charge: number | null, amount: number, previousUnit: boolean): CommitParams {
    const o = this.owner(i);
    return {
      generation: o.leases[index]!.generation,
      expected: previousUnit ? Math.max(0, o.seen - 1) : o.seen,
      now: this.wallOf(i),
      invoice,
      charge,
      amount,
    };
  }

  /**
   * One fenced unit. The fence verdict first (generation >= fence), then the checkpoint
   * (cursor = expected; a cursor our own generation already moved past = already committed),
   * then the once-only effect's key. All or nothing.
   */
  commit(i: number, p: CommitParams): Outcome {
    const o = this.owner(i);
    o.lastCommit = p;
    const token = `${p.generation}/${p.expected}`;
    const params = JSON.stringify(p);
    const next = p.expected + 1;
    // DynamoDB: a committed transaction's token + identical parameters = the same request, applied once.
    if (this.tokens.get(token) === params) {
      o.seen = next;
      return { status: 'committed', attempts: 1 };
    }
    // Same token, other parameters: the library resends without the token (a second attempt).
    const mismatch = this.tokens.has(token);
    const attempts = mismatch ? 2 : 1;
    if (this.fence !== undefined && this.fence.generation > p.generation) return { stale: { current: this.fence.generation } };
    if (this.job.cursor !== p.expected) {
      if (this.job.cursor >= next && this.job.generation === p.generation) {
        o.seen = next;
        return { status: 'already-committed', attempts };
      }
      return { moved: { actual: this.job.cursor } };
    }
    if (p.charge !== null && this.charges.has(p.charge)) return { duplicate: { key: `charge#${p.charge}` } };
    const effect: ModelEffect = { generation: p.generation, amountCents: p.amount, unit: p.expected, updatedAt: p.now };
    this.fence = { generation: p.generation, updatedAt: p.now };
    this.job = { cursor: next, generation: p.generation, heartbeatAt: p.now };
    this.invoices.set(p.invoice, effect);
    if (p.charge !== null) this.charges.set(p.charge, effect);
    if (!mismatch) this.tokens.set(token, params);
    o.seen = next;
    return { status: 'committed', attempts };
  }

  advance(ms: number): void {
    const target = this.mono + ms;
    this.wall += target - this.mono;
    this.mono = target;
  }

  /** The table state the model predicts, in the real state's shape (versions as model numbers). */
  expectedState(keys: RunKeys): StateSnapshot {
    const effectItem = (pk: string, c: number, e: ModelEffect) => ({ pk, customerId: `c${c}`, ...e });
    const l = this.lease;
    return {
      lease:
        l === undefined
          ? undefined
          : {
              pk: keys.lease,
              ...(l.owner === undefined ? {} : { owner: ownerName(l.owner) }),
              generation: l.generation,
              ...(l.expiresAt === undefined ? {} : { expiresAt: l.expiresAt }),
              version: l.version,
              durationMs: l.durationMs,
              takenFrom: l.takenFrom,
            },
      fence: this.fence === undefined ? undefined : { pk: keys.fence, ...this.fence },
      job: {
        pk: keys.job,
        status: 'RUNNING',
        totalUnits: TOTAL_UNITS,
        requeues: 0,
        cursor: this.job.cursor,
        heartbeatAt: this.job.heartbeatAt,
        ...(this.job.generation === undefined ? {} : { generation: this.job.generation }),
      },
      invoices: Object.fromEntries([...this.invoices].sort(([a], [b]) => a - b).map(([c, e]) => [c, effectItem(keys.invoice(c), c, e)])),
      charges: Object.fromEntries([...this.charges].sort(([a], [b]) => a - b).map(([c, e]) => [c, effectItem(keys.charge(c), c, e)])),
    };
  }
}

// ---------------------------------------------------------------------------------------------
// The real system: the library on DynamoDB Local, one shared ManualClock

export interface FuzzEnv {
  doc: DynamoDBDocumentClient;
  tables: TableNames;
  /** The fair acquire's waiter table (waitersTableInput). */
  waiters: string;
}

interface RunKeys {
  job: string;
  lease: string;
  fence: string;
  invoice(c: number): string;
  charge(c: number): string;
}

interface StateSnapshot {
  lease: Record<string, unknown> | undefined;
  fence: Record<string, unknown> | undefined;
  job: Record<string, unknown> | undefined;
  invoices: Record<string, Record<string, unknown>>;
  charges: Record<string, Record<string, unknown>>;
}

/** An owner's view of the shared ManualClock: its own wall offset; tells the driver when it sleeps. */
class OwnerClock implements Clock {
  constructor(
    private readonly base: ManualClock,
    private readonly offset: number,
    private readonly onSleep: (ms: number) => void,
  ) {}
  monotonicNow(): number {
    return this.base.monotonicNow();
  }
  wallNow(): number {
    return this.base.wallNow() + this.offset;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    const p = this.base.sleep(ms, signal);
    this.onSleep(ms);
    return p;
  }
}

interface RealOwner {
  manager: LeaseManager;
  fair: FairAcquirer;
  clock: OwnerClock;
  leases: Lease[];
  observation?: Observation;
  lastCommit?: { unit: FencedUnit; now: number };
}

let runCounter = 0;

export class LeaseFenceReal {
  readonly clock = new ManualClock({ monotonic: 0, wall: WALL0 });
  readonly keys: RunKeys;
  readonly owners: RealOwner[];
  /** Real version strings (UUIDs) ↔ model version numbers, learned from the table after each command. */
  private readonly versions = new Map<string, number>();
  private sleepWaiter: ((ms: number) => void) | undefined;
  private previous: StateSnapshot | undefined;
  private issued: number[] = [];

  private constructor(
    readonly env: FuzzEnv,
    readonly cfg: RunConfig,
    readonly runId: string,
  ) {
    const job = `fz-${runId}`;
    this.keys = {
      job,
      lease: `job#${job}`,
      fence: `invoices#${job}`,
      invoice: (c) => `invoice#${runId}#c${c}`,
      charge: (c) => `charge#${runId}#c${c}`,
    };
    this.owners = cfg.owners.map((o, i) => {
      const clock = new OwnerClock(this.clock, o.wallOffsetMs, (ms) => this.sleepWaiter?.(ms));
      const manager = new LeaseManager({
          doc: env.doc,
          table: env.tables.leases,
          owner: ownerName(i),
          epoch: o.epoch,
          durationMs: o.durationMs,
          maxDrift: MAX_DRIFT,
          mode: cfg.mode === 'wall-clock' ? { kind: 'wall-clock', maxClockSkewMs: cfg.maxClockSkewMs } : { kind: 'version-watch' },
          clock,
          random: () => cfg.random,
        });
      return { clock, leases: [], manager, fair: new FairAcquirer(manager, { doc: env.doc, table: env.waiters, random: () => cfg.random }) };
    });
  }

  static async create(env: FuzzEnv, cfg: RunConfig): Promise<LeaseFenceReal> {
    const real = new LeaseFenceReal(env, cfg, `${++runCounter}-${randomBytes(4).toString('hex')}`);
    await env.doc.send(
      new PutCommand({
        TableName: env.tables.jobs,
        Item: { pk: real.keys.job, status: 'RUNNING', cursor: 0, totalUnits: TOTAL_UNITS, heartbeatAt: 0, requeues: 0 },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return real;
  }

  private version(v: unknown): number {
    return typeof v === 'string' ? (this.versions.get(v) ?? -1) : -1;
  }

  private holderOut(h: { owner?: string; generation?: number; expiresAt?: number; version?: string; durationMs?: number } | undefined): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (h?.owner !== undefined) out.owner = h.owner;
    if (h?.generation !== undefined) out.generation = h.generation;
    if (h?.expiresAt !== undefined) out.expiresAt = h.expiresAt;
    if (h?.version !== undefined) out.version = this.version(h.version);
    if (h?.durationMs !== undefined) out.durationMs = h.durationMs;
    return out;
  }

  private granted(i: number, lease: Lease): Outcome {
    this.owners[i]!.leases.push(lease);
    delete this.owners[i]!.observation;
    this.issued.push(lease.generation);
    return {
      granted: {
        generation: lease.generation,
        ...(lease.takeoverFrom === undefined ? {} : { takeoverFrom: lease.takeoverFrom }),
        expiresAt: lease.expiresAt,
        deadline: lease.deadline,
      },
    };
  }

  private errorOut(e: unknown): Outcome {
    if (e instanceof StaleGenerationError) return { stale: e.current === undefined ? {} : { current: e.current } };
    if (e instanceof CheckpointMovedError) return { moved: e.actual === undefined ? {} : { actual: e.actual } };
    if (e instanceof EffectAlreadyExistsError) {
      const m = /^charge#[^#]+#c(\d+)$/.exec(e.key);
      return { duplicate: { key: m ? `charge#${m[1]}` : e.key } };
    }
    if (e instanceof LeaseLostError) return { lost: { holder: this.holderOut(e.holder as never) } };
    if (e instanceof AcquireTimeoutError) return { timeout: true };
    if (e instanceof EpochBehindError) return { error: 'EpochBehindError' };
    // Anything else is a failure of the property: surface it as is.
    throw e;
  }

  async tryAcquire(i: number): Promise<Outcome> {
    const o = this.owners[i]!;
    let r: Awaited<ReturnType<LeaseManager['tryAcquire']>>;
    try {
      r = await o.manager.tryAcquire(this.keys.lease, o.observation === undefined ? {} : { observation: o.observation });
    } catch (e) {
      return this.errorOut(e);
    }
    if (r.ok) return this.granted(i, r.value);
    if (r.error.observation !== undefined) o.observation = r.error.observation;
    const obs = r.error.observation;
    return {
      contended: {
        holder: this.holderOut(r.error.holder),
        ...(obs === undefined ? {} : { observation: { version: this.version(obs.version), at: obs.at, waitMs: obs.waitMs } }),
      },
    };
  }

  /** acquire() (plain or fair) with a timeout, driving the shared clock to each sleep's wake-up time exactly. */
  async acquire(i: number, timeoutMs: number, fair = false): Promise<{ outcome: Outcome; end: { mono: number; wall: number } }> {
    const o = this.owners[i]!;
    let sleeping!: Promise<number>;
    const arm = () => {
      sleeping = new Promise<number>((resolve) => (this.sleepWaiter = resolve));
    };
    arm();
    const done = (fair ? o.fair : o.manager).acquire(this.keys.lease, { timeoutMs }).then(
      (lease) => ({ lease }),
      (error: unknown) => ({ error }),
    );
    try {
      for (let steps = 0; ; steps++) {
        if (steps > 1_000) throw new Error('acquire did not finish within 1000 sleeps');
        const r = await Promise.race([done, sleeping]);
        if (typeof r !== 'number') {
          const end = { mono: this.clock.monotonicNow(), wall: this.clock.wallNow() };
          return { outcome: 'lease' in r ? this.granted(i, r.lease) : this.errorOut(r.error), end };
        }
        arm();
        // Exactly the requested sleep: ManualClock wakes the sleeper at mono + ms, computed the same way.
        await this.clock.advance(r);
      }
    } finally {
      this.sleepWaiter = undefined;
    }
  }

  /** The run's waiter queue: every fair acquire leaves it when it ends, granted or not. */
  async queued(): Promise<number> {
    const out = await this.env.doc.send(
      new QueryCommand({ TableName: this.env.waiters, KeyConditionExpression: 'pk = :k AND sk > :z', ExpressionAttributeValues: { ':k': this.keys.lease, ':z': 0 }, ConsistentRead: true }),
    );
    return out.Items?.length ?? 0;
  }

  async renew(i: number, index: number): Promise<Outcome> {
    const o = this.owners[i]!;
    try {
      const lease = await o.manager.renew(o.leases[index]!);
      o.leases[index] = lease;
      return { renewed: { expiresAt: lease.expiresAt, deadline: lease.deadline } };
    } catch (e) {
      return this.errorOut(e);
    }
  }

  async release(i: number, index: number): Promise<Outcome> {
    const o = this.owners[i]!;
    return o.manager.release(o.leases[index]!);
  }

  async raise(i: number, index: number): Promise<Outcome> {
    const o = this.owners[i]!;
    try {
      const previous = await raiseFence({ doc: this.env.doc, clock: o.clock }, { table: this.env.tables.fences, resource: this.keys.fence }, o.leases[index]!.generation);
      const job = await this.env.doc.send(new GetCommand({ TableName: this.env.tables.jobs, Key: { pk: this.keys.job }, ConsistentRead: true }));
      return { raised: { ...(previous === undefined ? {} : { previous }), seen: job.Item?.cursor as number } };
    } catch (e) {
      return this.errorOut(e);
    }
  }

  unitFor(p: CommitParams): FencedUnit {
    const g = p.generation as Generation;
    const fields = (c: number) => ({ customerId: `c${c}`, generation: g, amountCents: p.amount, unit: p.expected, updatedAt: p.now });
    return {
      fence: { table: this.env.tables.fences, resource: this.keys.fence },
      generation: g,
      checkpoint: { table: this.env.tables.jobs, key: this.keys.job, expected: p.expected, next: p.expected + 1, set: { heartbeatAt: p.now } },
      effects: [
        upsert(this.env.tables.records, { pk: this.keys.invoice(p.invoice), ...fields(p.invoice) }),
        ...(p.charge === null ? [] : [onceOnly(this.env.tables.records, { pk: this.keys.charge(p.charge), ...fields(p.charge) })]),
      ],
      // The worker's token: (job, generation, unit); a retry of the same unit is the same request.
      token: { job: this.keys.job, unit: p.expected },
    };
  }

  async commit(i: number, unit: FencedUnit, now: number): Promise<Outcome> {
    const o = this.owners[i]!;
    o.lastCommit = { unit, now };
    try {
      const r = await commitFencedUnit({ doc: this.env.doc, clock: o.clock, random: () => this.cfg.random }, unit, { now });
      return { status: r.status, attempts: r.attempts };
    } catch (e) {
      return this.errorOut(e);
    }
  }

  async advance(ms: number): Promise<void> {
    await this.clock.advance(ms);
  }

  /** Reads this run's items (one BatchGetItem, strongly consistent) in the model's shape. */
  async snapshot(): Promise<StateSnapshot> {
    const { tables } = this.env;
    const invoiceKeys = Array.from({ length: CUSTOMERS }, (_, c) => [{ pk: this.keys.invoice(c) }, { pk: this.keys.charge(c) }]).flat();
    let request: Record<string, { Keys: Record<string, unknown>[]; ConsistentRead: boolean }> | undefined = {
      [tables.leases]: { Keys: [{ pk: this.keys.lease }], ConsistentRead: true },
      [tables.fences]: { Keys: [{ pk: this.keys.fence }], ConsistentRead: true },
      [tables.jobs]: { Keys: [{ pk: this.keys.job }], ConsistentRead: true },
      [tables.records]: { Keys: invoiceKeys, ConsistentRead: true },
    };
    const items: Record<string, Record<string, unknown>[]> = {};
    for (let pass = 0; request !== undefined && Object.keys(request).length > 0; pass++) {
      if (pass > 20) throw new Error('BatchGetItem kept returning unprocessed keys');
      const out = await this.env.doc.send(new BatchGetCommand({ RequestItems: request }));
      for (const [table, rows] of Object.entries(out.Responses ?? {})) (items[table] ??= []).push(...rows);
      request = out.UnprocessedKeys as typeof request;
    }
    const one = (table: string) => items[table]?.[0];
    const byCustomer = (kind: 'invoice' | 'charge') =>
      Object.fromEntries(
        (items[tables.records] ?? [])
          .filter((it) => String(it.pk).startsWith(`${kind}#`))
          .map((it) => [Number(String(it.pk).replace(/^.*#c/, '')), it] as const)
          .sort(([a], [b]) => a - b),
      );
    return {
      lease: one(tables.leases),
      fence: one(tables.fences),
      job: one(tables.jobs),
      invoices: byCustomer('invoice'),
      charges: byCustomer('charge'),
    };
  }

  /**
   * Compares the real tables with the model and checks invariants on the real state alone.
   * Learns the real version string for each model version as it first appears.
   */
  async verify(model: LeaseFenceModel, step: string): Promise<void> {
    const actual = await this.snapshot();
    const problems: string[] = [];
    // Version: a new model version must be a never-seen real version; an unchanged one the same string.
    if (actual.lease !== undefined && model.lease !== undefined) {
      const v = actual.lease.version as string;
      const known = this.versions.get(v);
      if (known === undefined) {
        if ([...this.versions.values()].includes(model.lease.version)) problems.push(`lease version changed (${v}) where the model kept version ${model.lease.version}`);
        else this.versions.set(v, model.lease.version);
      }
      actual.lease = { ...actual.lease, version: this.versions.get(v) ?? -1 };
    }
    const expected = model.expectedState(this.keys);
    for (const part of ['lease', 'fence', 'job', 'invoices', 'charges'] as const) {
      if (!isDeepStrictEqual(actual[part], expected[part])) {
        problems.push(`${part}: table ${inspect(actual[part], { depth: 4, breakLength: Infinity })} != model ${inspect(expected[part], { depth: 4, breakLength: Infinity })}`);
      }
    }
    // Invariants on the real state alone (DESIGN.md), independent of the model.
    const prev = this.previous;
    const num = (x: unknown) => (typeof x === 'number' ? x : undefined);
    const leaseGen = num(actual.lease?.generation) ?? 0;
    const fenceGen = num(actual.fence?.generation);
    if (fenceGen !== undefined && fenceGen > leaseGen) problems.push(`TOKENS: fence ${fenceGen} above the lease counter ${leaseGen}`);
    if (prev !== undefined) {
      if (leaseGen < (num(prev.lease?.generation) ?? 0)) problems.push(`TOKENS: lease counter went down ${String(prev.lease?.generation)} -> ${leaseGen}`);
      if ((fenceGen ?? 0) < (num(prev.fence?.generation) ?? 0)) problems.push(`FENCE: fence went down ${String(prev.fence?.generation)} -> ${fenceGen}`);
      if ((num(actual.job?.generation) ?? 0) < (num(prev.job?.generation) ?? 0)) problems.push('FENCE: the generation of committed units went down');
      for (const [c, inv] of Object.entries(actual.invoices)) {
        const before = prev.invoices[c];
        if (before !== undefined && (num(inv.generation) ?? 0) < (num(before.generation) ?? 0)) problems.push(`FENCE: invoice c${c} generation ${String(before.generation)} -> ${String(inv.generation)}`);
      }
      for (const [c, before] of Object.entries(prev.charges)) {
        if (!isDeepStrictEqual(actual.charges[c], before)) problems.push(`ONCE: charge c${c} changed or vanished`);
      }
    }
    for (let k = 1; k < this.issued.length; k++) {
      if (!(this.issued[k]! > this.issued[k - 1]!)) problems.push(`TOKENS: issued generations not strictly increasing: ${this.issued.join(', ')}`);
    }
    this.previous = actual;
    if (problems.length > 0) throw new Error(`after ${step}:\n  ${problems.join('\n  ')}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Commands

type Cmd = fc.AsyncCommand<LeaseFenceModel, LeaseFenceReal>;

function expectSame(step: string, actual: Outcome, expected: Outcome): void {
  if (!isDeepStrictEqual(actual, expected)) {
    throw new Error(`${step}: library returned ${inspect(actual, { depth: 5, breakLength: Infinity })}, model expected ${inspect(expected, { depth: 5, breakLength: Infinity })}`);
  }
}

function kindOf(o: Outcome): string {
  if ('status' in o) return o.status;
  if ('error' in o) return o.error;
  if ('released' in o) return o.released ? 'released' : 'release-refused';
  if ('granted' in o) return o.granted.takeoverFrom === undefined ? 'granted' : 'granted-takeover';
  return Object.keys(o)[0]!;
}

async function step(m: LeaseFenceModel, r: LeaseFenceReal, name: string, actual: Outcome, expected: Outcome, kind = name.replace(/\(.*$/, '')): Promise<void> {
  cover('commands');
  cover(`${kind}:${kindOf(expected)}`);
  expectSame(name, actual, expected);
  // Only acquire moves the clock by itself (and syncs the model); nothing else may.
  if (r.clock.monotonicNow() !== m.mono || r.clock.wallNow() !== m.wall) throw new Error(`${name}: the clock moved without advance`);
  await r.verify(m, name);
}

/** The first owner from `o` on (cyclically) that satisfies `has`: fewer skipped commands in short sequences. */
function ownerFrom(m: Readonly<LeaseFenceModel>, o: number, has: (x: ModelOwner) => boolean): number | undefined {
  const n = m.owners.length;
  for (let d = 0; d < n; d++) if (has(m.owners[(o + d) % n]!)) return (o + d) % n;
  return undefined;
}
const withLease = (x: ModelOwner) => x.leases.length > 0;
const pickLease = (m: Readonly<LeaseFenceModel>, o: number, k: number) => k % m.owners[o]!.leases.length;

/**
 * A command of owner `o` on one of its leases (#k, modulo how many it has), or, when `k` is
 * OLDEST, on the oldest lease any owner holds: an obsolete holder acting late.
 */
export const OLDEST = -1;
abstract class LeaseCmd implements Cmd {
  protected who = -1;
  constructor(
    readonly o: number,
    readonly k: number,
  ) {}
  check = (m: Readonly<LeaseFenceModel>) => ownerFrom(m, this.o, withLease) !== undefined;
  async run(m: LeaseFenceModel, r: LeaseFenceReal): Promise<void> {
    if (this.k === OLDEST) {
      const [o] = m.owners
        .map((x, i) => [i, x.leases[0]?.generation ?? Infinity] as const)
        .reduce((a, b) => (b[1] < a[1] ? b : a));
      this.who = o;
      await this.exec(m, r, o, 0);
      return;
    }
    this.who = ownerFrom(m, this.o, withLease)!;
    await this.exec(m, r, this.who, pickLease(m, this.who, this.k));
  }
  protected abstract exec(m: LeaseFenceModel, r: LeaseFenceReal, o: number, k: number): Promise<void>;
  protected get by(): string {
    return `o${this.who < 0 ? this.o : this.who}, ${this.k === OLDEST ? 'oldest lease' : `lease #${this.k}`}`;
  }
}

class TryAcquire implements Cmd {
  constructor(readonly o: number) {}
  check = () => true;
  async run(m: LeaseFenceModel, r: LeaseFenceReal) {
    const actual = await r.tryAcquire(this.o);
    await step(m, r, this.toString(), actual, m.tryAcquire(this.o));
  }
  toString = () => `tryAcquire(o${this.o})`;
}

/**
 * acquire(timeout), plain or fair: the same contract (the model's `acquire`). The fair one is alone
 * on the key here, so it must also leave no waiter item behind, granted or not.
 */
class Acquire implements Cmd {
  constructor(
    readonly o: number,
    readonly timeoutMs: number,
    readonly fair = false,
  ) {}
  check = () => true;
  async run(m: LeaseFenceModel, r: LeaseFenceReal) {
    const { outcome, end } = await r.acquire(this.o, this.timeoutMs, this.fair);
    const { outcome: expected, problems } = m.acquire(this.o, this.timeoutMs, end);
    if (problems.length > 0) throw new Error(`${this.toString()}: ${problems.join('; ')}`);
    await step(m, r, this.toString(), outcome, expected);
    const left = this.fair ? await r.queued() : 0;
    if (left !== 0) throw new Error(`${this.toString()}: ${left} waiter item(s) left in the queue`);
  }
  toString = () => `${this.fair ? 'fairAcquire' : 'acquire'}(o${this.o}, timeout ${this.timeoutMs})`;
}

class Renew extends LeaseCmd {
  protected async exec(m: LeaseFenceModel, r: LeaseFenceReal, o: number, k: number) {
    const actual = await r.renew(o, k);
    await step(m, r, this.toString(), actual, m.renew(o, k));
  }
  override toString = () => `renew(${this.by})`;
}

class Release extends LeaseCmd {
  protected async exec(m: LeaseFenceModel, r: LeaseFenceReal, o: number, k: number) {
    const actual = await r.release(o, k);
    await step(m, r, this.toString(), actual, m.release(o, k));
  }
  override toString = () => `release(${this.by})`;
}

class RaiseFence extends LeaseCmd {
  protected async exec(m: LeaseFenceModel, r: LeaseFenceReal, o: number, k: number) {
    const actual = await r.raise(o, k);
    await step(m, r, this.toString(), actual, m.raise(o, k));
  }
  override toString = () => `raiseFence(${this.by})`;
}

class Commit extends LeaseCmd {
  constructor(
    o: number,
    k: number,
    readonly invoice: number,
    readonly charge: number | null,
    readonly amount: number,
    readonly previousUnit: boolean,
  ) {
    super(o, k);
  }
  protected async exec(m: LeaseFenceModel, r: LeaseFenceReal, o: number, k: number) {
    const p = m.commitParams(o, k, this.invoice, this.charge, this.amount, this.previousUnit);
    const actual = await r.commit(o, r.unitFor(p), p.now);
    await step(m, r, this.toString(), actual, m.commit(o, p));
  }
  override toString = () =>
    `commit(${this.by}, ${this.previousUnit ? 'previous unit' : 'next unit'}: upsert invoice c${this.invoice} = ${this.amount}${this.charge === null ? '' : `, once charge c${this.charge}`})`;
}

/** The owner resends its last commit exactly (same unit, same `now`): a retry after a lost response. */
class Retry implements Cmd {
  private who = -1;
  constructor(readonly o: number) {}
  check = (m: Readonly<LeaseFenceModel>) => ownerFrom(m, this.o, (x) => x.lastCommit !== undefined) !== undefined;
  async run(m: LeaseFenceModel, r: LeaseFenceReal) {
    const o = (this.who = ownerFrom(m, this.o, (x) => x.lastCommit !== undefined)!);
    const last = r.owners[o]!.lastCommit!;
    const actual = await r.commit(o, last.unit, last.now);
    await step(m, r, this.toString(), actual, m.commit(o, m.owners[o]!.lastCommit!));
  }
  toString = () => `retryLastCommit(o${this.who < 0 ? this.o : this.who})`;
}

class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: LeaseFenceModel, r: LeaseFenceReal) {
    await r.advance(this.ms);
    m.advance(this.ms);
    cover('commands');
    cover('advance');
    if (r.clock.monotonicNow() !== m.mono || r.clock.wallNow() !== m.wall) throw new Error(`${this.toString()}: clocks disagree`);
  }
  toString = () => `advance(${this.ms} ms)`;
}

/**
 * Moves the clock to just before, exactly at, or just after the instant the lease becomes free
 * for owner `o`: its expiry + skew on o's wall clock (wall-clock), or o's observation maturing
 * (version-watch). Random advances almost never hit these boundaries exactly.
 */
class AdvanceToBoundary implements Cmd {
  private who = -1;
  constructor(
    readonly o: number,
    readonly delta: -1 | 0 | 1,
    /** Then that owner tries to acquire, right at the boundary. */
    readonly thenTry: boolean,
  ) {}
  private msFor(m: Readonly<LeaseFenceModel>, o: number): number | undefined {
    const l = m.lease;
    if (l?.owner === undefined) return undefined;
    if (m.cfg.mode === 'wall-clock') return l.expiresAt! + m.cfg.maxClockSkewMs - m.cfg.owners[o]!.wallOffsetMs - m.wall + this.delta;
    const obs = m.owners[o]!.observation;
    return obs === undefined || obs.version !== l.version ? undefined : obs.at + obs.waitMs - m.mono + this.delta;
  }
  private target(m: Readonly<LeaseFenceModel>): number | undefined {
    for (let d = 0; d < m.owners.length; d++) {
      const o = (this.o + d) % m.owners.length;
      const ms = this.msFor(m, o);
      if (ms !== undefined && ms > 0) return o;
    }
    return undefined;
  }
  check = (m: Readonly<LeaseFenceModel>) => this.target(m) !== undefined;
  async run(m: LeaseFenceModel, r: LeaseFenceReal) {
    const o = (this.who = this.target(m)!);
    const ms = this.msFor(m, o)!;
    await r.advance(ms);
    m.advance(ms);
    cover('commands');
    cover('advanceToBoundary');
    if (r.clock.monotonicNow() !== m.mono || r.clock.wallNow() !== m.wall) throw new Error(`${this.toString()}: clocks disagree`);
    if (this.thenTry) {
      const actual = await r.tryAcquire(o);
      await step(m, r, `${this.toString()}: tryAcquire`, actual, m.tryAcquire(o), `boundary${this.delta >= 0 ? '+' : ''}${this.delta}-${m.cfg.mode}-tryAcquire`);
    }
  }
  toString = () => {
    const o = this.who < 0 ? this.o : this.who;
    return `advanceToBoundary(o${o}, ${this.delta >= 0 ? '+' : ''}${this.delta} ms${this.thenTry ? `, then tryAcquire(o${o})` : ''})`;
  };
}

/** Around the lease durations (600, 1000), the version-watch waits (x 1.01) and the skew (50). */
const ADVANCES = [1, 49, 50, 51, 300, 539, 540, 541, 600, 601, 606, 607, 899, 900, 901, 1_000, 1_001, 1_010, 1_011, 1_050, 1_051, 2_500];

function commandArbs(owners: number): fc.Arbitrary<Cmd> {
  const o = fc.integer({ min: 0, max: owners - 1 });
  // Often the oldest lease: an obsolete holder acting late is the interesting case.
  const k = fc.oneof(fc.constant(OLDEST), fc.constant(0), fc.nat({ max: 7 }));
  const c = fc.integer({ min: 0, max: CUSTOMERS - 1 });
  const w = (weight: number, arbitrary: fc.Arbitrary<Cmd>) => ({ weight, arbitrary });
  return fc.oneof(
    w(3, o.map((i) => new TryAcquire(i))),
    // One acquire in four is the fair one: its requests and its turns on the clock make it the costliest command.
    w(4, fc.tuple(o, fc.constantFrom(0, 1, 300, 600, 1_000, 1_100, 2_000), fc.nat(3)).map(([i, t, n]) => new Acquire(i, t, n === 0))),
    w(1, fc.tuple(o, k).map(([i, j]) => new Renew(i, j))),
    w(1, fc.tuple(o, k).map(([i, j]) => new Release(i, j))),
    w(2, fc.tuple(o, k).map(([i, j]) => new RaiseFence(i, j))),
    w(
      5,
      fc
        .tuple(o, k, c, fc.option(c, { freq: 4 }), fc.constantFrom(100, 250), fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }))
        .map(([i, j, inv, ch, amount, prev]) => new Commit(i, j, inv, ch, amount, prev)),
    ),
    w(1, o.map((i) => new Retry(i))),
    w(2, fc.tuple(o, fc.constantFrom(-1 as const, 0 as const, 1 as const), fc.boolean()).map(([i, d, t]) => new AdvanceToBoundary(i, d, t))),
    w(2, fc.oneof(fc.constantFrom(...ADVANCES), fc.integer({ min: 1, max: 2_000 })).map((ms) => new Advance(ms))),
  );
}

/** A removed command (what a command shrinks to): never runs. */
const SKIP: Cmd = { check: () => false, run: async () => undefined, toString: () => '-' };

export const MIN_COMMANDS = 8;
export const MAX_COMMANDS = 14;

/** The property: any configuration and command sequence, library and model agree throughout. */
export function leaseFenceProperty(env: FuzzEnv, opts: { minCommands?: number; maxCommands?: number } = {}) {
  return fc.asyncProperty(
    runConfigArb.chain((cfg) =>
      fc.tuple(
        fc.constant(cfg),
        // A plain array (not fc.commands): every sequence gets at least MIN_COMMANDS steps. A
        // command shrinks to SKIP, so a counterexample still shrinks below that length.
        fc.array(fc.option(commandArbs(cfg.owners.length), { nil: SKIP, freq: 100 }), {
          minLength: opts.minCommands ?? MIN_COMMANDS,
          maxLength: opts.maxCommands ?? MAX_COMMANDS,
          size: 'max',
        }),
      ),
    ),
    async ([cfg, cmds]) => {
      cover('sequences');
      await fc.asyncModelRun(async () => ({ model: new LeaseFenceModel(cfg), real: await LeaseFenceReal.create(env, cfg) }), cmds);
    },
  );
}
