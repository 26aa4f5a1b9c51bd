/**
 * The invariant checker (DESIGN.md, "Invariants every run must satisfy"). Independent of the
 * worker: it reads only the tables and their streams, by the attribute contract, and
 * recomputes what the input demands from the input alone.
 *
 * FENCE    every effect write is tied to a fence write of the same generation and updatedAt (the
 *          stream tie, which also works on AWS); no record write replaces a higher generation with
 *          a lower one; fences never go down; per job, committed units' generations never go down.
 *          Where a proxy recorded the wire (locally), the structural check of cli/check/wire-check.ts as
 *          well: every applied effect write was inside a transaction with the fence's action
 *          conditioned on its generation, and none was sent after a higher fence was answered.
 * ONCE, PROGRESS  by the workload's own checks (cli/check/records.ts): once-only records inserted
 *          once; every record a finished job's input demands, with its fields; nothing more.
 * TOKENS   per lease key, every grant to a new owner carries a strictly greater generation;
 *          no lease or fence item is ever removed; a fence never exceeds its lease counter.
 * DOCS, DELIVERY  the protected file and the unprotected email: cli/check/invariants-effects.ts, from
 *          the bucket and the providers' own records as well.
 * RUNS     sharded runs, per shard and per run (cli/check/run-invariants.ts).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { scanAll as scan } from '../../lib/protocol/index.js';
import { isJobItem, type TableNames, type Workload } from '../../lib/workflow/index.js';
import { DEFAULT_WORKLOAD, workloadNamed } from '../../lib/workloads/index.js';
import { checkRecords, type RecordsReport } from './records.js';
import { checkDelivery, checkDocs, type EffectsSources, type EffectsStats } from './invariants-effects.js';
import { checkRuns, type RunsReport } from './run-invariants.js';
import { readStream, type StreamChange } from '../local/streams.js';
import { fenceKeyOfJob, type WireReport } from './wire-check.js';

export type InvariantName = 'FENCE' | 'ONCE' | 'PROGRESS' | 'TOKENS' | 'DOCS' | 'DELIVERY' | 'CHAIN' | 'RUNS';

/** A grant that replaced an owner who had not released (from the Leases stream). */
export interface Takeover {
  key: string;
  from: string;
  to: string;
  /** The replaced holder's expiry, on ITS wall clock. */
  fromExpiresAt: number;
  /** When the new holder was granted the lease, on ITS wall clock (its expiresAt - durationMs). */
  grantedAt: number;
}

/**
 * Takeovers granted before the replaced holder's expiry in true time, given each writer's known
 * wall-clock offset (`skewOf`, 0 when the clocks agree): a lease held by two at once.
 */
export function overlapsOf(takeovers: readonly Takeover[], skewOf: (owner: string) => number = () => 0): Takeover[] {
  return takeovers.filter((x) => x.grantedAt - skewOf(x.to) < x.fromExpiresAt - skewOf(x.from));
}

export interface InvariantReport {
  ok: boolean;
  /** `unchecked`: what the check could not read (EffectsSources.unread): a PASS covers only the rest. */
  invariants: Record<InvariantName, { ok: boolean; violations: string[]; unchecked?: string[] }>;
  /** Every takeover; with the writers' clocks in step, one granted before the old expiry is an overlap. */
  takeovers: Takeover[];
  stats: RecordsReport & {
    jobs: number;
    streamRecords: number;
    takeovers: number;
    /** Takeovers granted before the replaced holder's expiry by the writers' own wall clocks. */
    leaseOverlaps: number;
    effects: EffectsStats;
    /** Run records, the shards they list, and the runs whose every shard is DONE. */
    runs: RunsReport;
    /** The structural FENCE check's counts, when the wire was recorded (absent: the stream tie only). */
    wire?: Omit<WireReport, 'violations'> & { violations: number };
  };
}

const MAX_LISTED = 20;
/** What FENCE says it could not check when no proxy recorded the wire (on AWS, or a bare checker run). */
export const NO_WIRE = 'the wire (no proxy recorded the requests): effects tied to fence writes by the streams only, not proven to share their transaction';
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

export async function checkInvariants(
  clients: { client: DynamoDBClient; doc: DynamoDBDocumentClient; streams: DynamoDBStreamsClient },
  tables: TableNames,
  effects: EffectsSources = {},
  /** What the proxy saw on the wire (WireCheck.report()); without it FENCE is the stream tie alone, and says so. */
  wire?: WireReport,
  /** The workload whose jobs these are: its checks say what a finished job must have written, its prefix which fence guards it. */
  workload: Workload<any> = workloadNamed(DEFAULT_WORKLOAD),
): Promise<InvariantReport> {
  const fencePrefix = workload.fenceKeyPrefix ?? 'fence#';
  const v: Record<InvariantName, string[]> = { FENCE: [], ONCE: [], PROGRESS: [], TOKENS: [], DOCS: [], DELIVERY: [], CHAIN: [], RUNS: [] };
  const add = (name: InvariantName, msg: string) => {
    if (v[name].length < MAX_LISTED) v[name].push(msg);
    else if (v[name].length === MAX_LISTED) v[name].push('…');
  };
  const [jobItems, recordItems, fenceItems, leaseItems, outboxItems, recordStream, fenceStream, leaseStream, outboxStream] = await Promise.all([
    scan(clients.doc, tables.jobs),
    scan(clients.doc, tables.records),
    scan(clients.doc, tables.fences),
    scan(clients.doc, tables.leases),
    scan(clients.doc, tables.outbox),
    readStream(clients.client, clients.streams, tables.records),
    readStream(clients.client, clients.streams, tables.fences),
    readStream(clients.client, clients.streams, tables.leases),
    readStream(clients.client, clients.streams, tables.outbox),
  ]);
  // The Jobs table also holds run records (kind = run) and the collector's cursors (kind =
  // collector-cursor): neither is a job.
  const runRecords = jobItems.filter((j) => j.kind === 'run');
  const jobs = jobItems.filter(isJobItem);

  // FENCE, structurally, from the wire (first: the list is capped, and these say the most).
  for (const msg of wire?.violations ?? []) add('FENCE', `wire: ${msg}`);
  // FENCE: the tie. A fenced unit writes its fence with (generation, updatedAt) and stamps every
  // effect with the same pair; an effect with no such fence write was written without the fence.
  // (A unit whose fence write changed nothing leaves no fence record, but then an earlier record
  // carries that very pair.)
  const fenceWrites = new Set(fenceStream.filter((c) => c.newImage !== undefined).map((c) => `${c.key}\u0000${String(c.newImage?.generation)}\u0000${String(c.newImage?.updatedAt)}`));
  // A follow-up (`parent`) has no tie: its parent's settle created it, and CHAIN holds it to that.
  for (const c of [...recordStream, ...outboxStream.filter((x) => x.event === 'INSERT' && x.newImage?.parent === undefined)]) {
    if (c.newImage === undefined) continue;
    const jobId = c.newImage.jobId;
    const g = c.newImage.generation;
    const u = c.newImage.updatedAt;
    const fence = fenceKeyOfJob(String(jobId), fencePrefix);
    if (typeof jobId !== 'string') add('FENCE', `${c.key}: written for no job (no jobId), so no fence can have protected it`);
    else if (!fenceWrites.has(`${fence}\u0000${String(g)}\u0000${String(u)}`)) {
      add('FENCE', `${c.key}: written at generation ${String(g)} (updatedAt ${String(u)}) with no fence write of that generation and updatedAt on ${fence}`);
    }
  }
  // FENCE: per item, never lower over higher.
  for (const c of recordStream) {
    const o = num(c.oldImage?.generation);
    const n = num(c.newImage?.generation);
    if (c.event === 'MODIFY' && o !== undefined && n !== undefined && n < o) {
      add('FENCE', `${c.key}: generation ${o} overwritten by lower ${n}`);
    }
  }
  for (const c of fenceStream) {
    const o = num(c.oldImage?.generation);
    const n = num(c.newImage?.generation);
    if (c.event === 'REMOVE') add('TOKENS', `fence ${c.key} was removed`);
    if (o !== undefined && (n === undefined || n < o)) add('FENCE', `fence ${c.key} moved down from ${o} to ${n}`);
  }
  // FENCE: per job, in stream order (per shard), committed units' generations never go down.
  const byJobShard = new Map<string, StreamChange[]>();
  for (const c of recordStream) {
    const jobId = c.newImage?.jobId;
    if (typeof jobId !== 'string') continue;
    const k = `${jobId}\u0000${c.shard}`;
    const list = byJobShard.get(k) ?? [];
    list.push(c);
    byJobShard.set(k, list);
  }
  for (const [k, list] of byJobShard) {
    list.sort((a, b) => (a.sequence < b.sequence ? -1 : a.sequence > b.sequence ? 1 : 0));
    let high = -1;
    for (const c of list) {
      const g = num(c.newImage?.generation) ?? -1;
      if (g < high) {
        add('FENCE', `job ${k.split('\u0000')[0]}: unit ${String(c.newImage?.unit)} committed at generation ${g} after generation ${high}`);
      }
      high = Math.max(high, g);
    }
  }

  const records = checkRecords(workload, jobs, recordItems, recordStream, add);

  // TOKENS: every grant to a new owner strictly raises the generation; nothing is ever removed.
  for (const c of leaseStream) {
    if (c.event === 'REMOVE') {
      add('TOKENS', `lease ${c.key} was deleted (its counter with it)`);
      continue;
    }
    const o = num(c.oldImage?.generation);
    const n = num(c.newImage?.generation);
    if (o !== undefined && (n === undefined || n < o)) add('TOKENS', `lease ${c.key}: counter moved from ${o} to ${n}`);
    const newOwner = c.newImage?.owner;
    const grant = typeof newOwner === 'string' && c.newImage?.version !== c.oldImage?.version && newOwner !== c.oldImage?.owner;
    if (grant && o !== undefined && !(n !== undefined && n > o)) {
      add('TOKENS', `lease ${c.key}: granted to ${newOwner} at generation ${n}, not above ${o}`);
    }
  }
  const takeovers: Takeover[] = [];
  for (const c of leaseStream) {
    const from = c.newImage?.takenFrom;
    const to = c.newImage?.owner;
    // A grant to a new owner over one that had not released (a renewal keeps `takenFrom` but not the owner change).
    if (c.event !== 'MODIFY' || typeof from !== 'string' || typeof to !== 'string' || c.oldImage?.owner !== from || to === from) continue;
    const fromExpiresAt = num(c.oldImage?.expiresAt);
    const expiresAt = num(c.newImage?.expiresAt);
    const durationMs = num(c.newImage?.durationMs);
    if (fromExpiresAt === undefined || expiresAt === undefined || durationMs === undefined) continue;
    takeovers.push({ key: c.key, from, to, fromExpiresAt, grantedAt: expiresAt - durationMs });
  }
  const leaseGen = new Map(leaseItems.map((l) => [String(l.pk), num(l.generation)]));
  for (const f of fenceItems) {
    const jobKey = String(f.pk).startsWith(fencePrefix) ? `job#${String(f.pk).slice(fencePrefix.length)}` : String(f.pk);
    const lg = leaseGen.get(jobKey);
    const fg = num(f.generation);
    if (fg !== undefined && (lg === undefined || fg > lg)) add('TOKENS', `fence ${String(f.pk)} at ${fg} exceeds lease counter ${lg}`);
  }

  const docStats = await checkDocs(workload, effects.s3, recordItems, recordStream, add);
  const delivery = await checkDelivery(workload, tables.outbox, outboxItems, outboxStream, fenceWrites, jobs, effects, add);
  const runs = checkRuns(workload, runRecords, jobs, recordItems, (msg) => add('RUNS', msg));

  const invariants = Object.fromEntries(
    (Object.keys(v) as InvariantName[]).map((k) => {
      const unread = [...((effects.unread as Partial<Record<InvariantName, string[]>> | undefined)?.[k] ?? []), ...(k === 'FENCE' && wire === undefined ? [NO_WIRE] : [])];
      return [k, { ok: v[k].length === 0, violations: v[k], ...(unread?.length ? { unchecked: unread } : {}) }];
    }),
  ) as InvariantReport['invariants'];
  return {
    ok: Object.values(invariants).every((i) => i.ok),
    invariants,
    takeovers,
    stats: {
      jobs: jobs.length,
      ...records,
      streamRecords: recordStream.length + fenceStream.length + leaseStream.length + outboxStream.length,
      takeovers: takeovers.length,
      leaseOverlaps: overlapsOf(takeovers).length,
      effects: { documents: docStats, ...delivery },
      runs,
      ...(wire === undefined ? {} : { wire: { ...wire, violations: wire.violations.length } }),
    },
  };
}
