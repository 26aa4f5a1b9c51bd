/**
 * The invariant checker (DESIGN.md, "Invariants every run must satisfy"). Independent of the
 * worker: it reads only the tables and their streams, by the attribute contract, and
 * recomputes what the input demands from the input alone.
 *
 * FENCE    every effect write is tied to a fence write of the same generation and updatedAt (the
 *          stream tie, which also works on AWS); no invoice write replaces a higher generation with
 *          a lower one; fences never go down; per job, committed units' generations never go down.
 *          Where a proxy recorded the wire (locally), the structural check of cli/check/wire-check.ts as
 *          well: every applied effect write was inside a transaction with the fence's action
 *          conditioned on its generation, and none was sent after a higher fence was answered.
 * ONCE     exactly one charge per (period, customer), inserted once, never modified or removed;
 *          invoice and charge counts and amounts match the input.
 * PROGRESS every job reached DONE with its cursor at totalUnits.
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
import { amountCents, customerId, customerRange, expectedTotals, parseInvoiceInput } from '../../lib/workloads/invoices.js';
import { isJobItem, type TableNames } from '../../lib/workflow/index.js';
import { checkDelivery, checkDocs, type EffectsSources, type EffectsStats } from './invariants-effects.js';
import { checkRuns, type RunsReport } from './run-invariants.js';
import { readStream, type StreamChange } from '../local/streams.js';
import { fenceKeyOfJob, type WireReport } from './wire-check.js';

export type InvariantName = 'FENCE' | 'ONCE' | 'PROGRESS' | 'TOKENS' | 'DOCS' | 'DELIVERY' | 'RUNS';

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
  stats: {
    jobs: number;
    invoices: number;
    charges: number;
    totalCents: number;
    expectedInvoices: number;
    expectedTotalCents: number;
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
): Promise<InvariantReport> {
  const v: Record<InvariantName, string[]> = { FENCE: [], ONCE: [], PROGRESS: [], TOKENS: [], DOCS: [], DELIVERY: [], RUNS: [] };
  const add = (name: InvariantName, msg: string) => {
    if (v[name].length < MAX_LISTED) v[name].push(msg);
    else if (v[name].length === MAX_LISTED) v[name].push('…');
  };
  const [jobItems, invoiceItems, fenceItems, leaseItems, outboxItems, invoiceStream, fenceStream, leaseStream, outboxStream] = await Promise.all([
    scan(clients.doc, tables.jobs),
    scan(clients.doc, tables.invoices),
    scan(clients.doc, tables.fences),
    scan(clients.doc, tables.leases),
    scan(clients.doc, tables.outbox),
    readStream(clients.client, clients.streams, tables.invoices),
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
  for (const c of [...invoiceStream, ...outboxStream.filter((x) => x.event === 'INSERT')]) {
    if (c.newImage === undefined) continue;
    const jobId = c.newImage.jobId;
    const g = c.newImage.generation;
    const u = c.newImage.updatedAt;
    const fence = fenceKeyOfJob(String(jobId));
    if (typeof jobId !== 'string') add('FENCE', `${c.key}: written for no job (no jobId), so no fence can have protected it`);
    else if (!fenceWrites.has(`${fence}\u0000${String(g)}\u0000${String(u)}`)) {
      add('FENCE', `${c.key}: written at generation ${String(g)} (updatedAt ${String(u)}) with no fence write of that generation and updatedAt on ${fence}`);
    }
  }
  // FENCE: per item, never lower over higher.
  for (const c of invoiceStream) {
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
  for (const c of invoiceStream) {
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

  // ONCE: charges inserted once, never modified or removed.
  const chargeInserts = new Map<string, number>();
  for (const c of invoiceStream) {
    if (!c.key.startsWith('charge#')) continue;
    if (c.event === 'INSERT') chargeInserts.set(c.key, (chargeInserts.get(c.key) ?? 0) + 1);
    else add('ONCE', `${c.key}: charge ${c.event === 'MODIFY' ? 'modified' : 'removed'} after creation`);
  }
  for (const [key, n] of chargeInserts) if (n > 1) add('ONCE', `${key}: charge inserted ${n} times`);

  const items = new Map(invoiceItems.map((i) => [String(i.pk), i]));
  // Counts are compared per finished period; an unfinished job is PROGRESS's business, and its
  // partial output is not an ONCE violation.
  const periodOf = (pk: string) => pk.split('#')[1] ?? '';
  // A period is counted when every job of it (every shard of its run) is DONE.
  const openPeriods = new Set<string>();
  const donePeriods = new Set<string>();
  const expectedByPeriod = new Map<string, { invoices: number; cents: number }>();
  const knownPeriods = new Set<string>();
  let expectedInvoices = 0;
  let expectedTotalCents = 0;
  let totalCents = 0;
  for (const job of jobs) {
    const id = String(job.pk);
    let input;
    try {
      input = parseInvoiceInput(job.input);
    } catch {
      if (job.status !== 'FAILED') add('PROGRESS', `job ${id}: invalid input and not FAILED`);
      continue;
    }
    // PROGRESS
    if (job.status !== 'DONE' || job.cursor !== job.totalUnits) {
      add('PROGRESS', `job ${id}: status ${String(job.status)} at cursor ${String(job.cursor)}/${String(job.totalUnits)}`);
    }
    knownPeriods.add(input.period);
    if (job.status !== 'DONE') {
      openPeriods.add(input.period);
      continue;
    }
    donePeriods.add(input.period);
    const expected = expectedTotals(input);
    const sum = expectedByPeriod.get(input.period) ?? { invoices: 0, cents: 0 };
    expectedByPeriod.set(input.period, { invoices: sum.invoices + expected.invoices, cents: sum.cents + expected.totalCents });
    const { from, to } = customerRange(input);
    for (let i = from; i < to; i++) {
      const amount = amountCents(input.seed, i);
      for (const kind of ['invoice', 'charge'] as const) {
        const key = `${kind}#${input.period}#${customerId(i)}`;
        const item = items.get(key);
        if (item === undefined) add('ONCE', `${key}: missing`);
        else if (item.amountCents !== amount) add('ONCE', `${key}: amount ${String(item.amountCents)}, expected ${amount}`);
        else if (kind === 'charge') totalCents += amount;
      }
    }
  }
  for (const p of openPeriods) donePeriods.delete(p);
  for (const p of donePeriods) {
    expectedInvoices += expectedByPeriod.get(p)?.invoices ?? 0;
    expectedTotalCents += expectedByPeriod.get(p)?.cents ?? 0;
  }
  const counted = invoiceItems.filter((i) => donePeriods.has(periodOf(String(i.pk))));
  for (const i of invoiceItems) if (!knownPeriods.has(periodOf(String(i.pk)))) add('ONCE', `${String(i.pk)}: written for no known job`);
  const charges = counted.filter((i) => String(i.pk).startsWith('charge#')).length;
  const invoices = counted.filter((i) => String(i.pk).startsWith('invoice#')).length;
  if (charges !== expectedInvoices) add('ONCE', `${charges} charges, expected ${expectedInvoices}`);
  if (invoices !== expectedInvoices) add('ONCE', `${invoices} invoices, expected ${expectedInvoices}`);

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
    const jobKey = String(f.pk).replace(/^invoices#/, 'job#');
    const lg = leaseGen.get(jobKey);
    const fg = num(f.generation);
    if (fg !== undefined && (lg === undefined || fg > lg)) add('TOKENS', `fence ${String(f.pk)} at ${fg} exceeds lease counter ${lg}`);
  }

  const docStats = await checkDocs(effects.s3, invoiceItems, invoiceStream, add);
  const delivery = await checkDelivery(tables.outbox, outboxItems, outboxStream, fenceWrites, jobs, effects, add);
  const runs = checkRuns(runRecords, jobs, invoiceItems, (msg) => add('RUNS', msg));

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
      invoices,
      charges,
      totalCents,
      expectedInvoices,
      expectedTotalCents,
      streamRecords: invoiceStream.length + fenceStream.length + leaseStream.length + outboxStream.length,
      takeovers: takeovers.length,
      leaseOverlaps: overlapsOf(takeovers).length,
      effects: { documents: docStats, ...delivery },
      runs,
      ...(wire === undefined ? {} : { wire: { ...wire, violations: wire.violations.length } }),
    },
  };
}
