/**
 * The article's incident, replayed on the real engine with the library:
 *   A takes generation 7, reads the invoice state, pauses past its lease (a GC pause);
 *   B takes generation 8, raises the fence, finishes the run;
 *   A wakes and writes.
 * With the fence, A's write is rejected as stale and nothing of it lands. Then the same
 * schedule with the fence switched off (the UNSAFE variant, demo code only, its own tables
 * whose names contain "unsafe"): A overwrites B's invoices. The operation keys still stop A's
 * duplicate charges: idempotency is not the fence, and the fence is not idempotency.
 */
import { PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  commitFencedUnit,
  formatGeneration,
  LeaseManager,
  putOnce,
  raiseFence,
  scanAll,
  StaleGenerationError,
  type Clock,
  type Effect,
  type Generation,
} from '../../lib/protocol/index.js';
import { invoiceJobId, invoiceProcessor, type InvoiceRunInput } from '../../lib/workloads/invoices/invoices.js';
import { invoices } from '../../lib/workloads/invoices/index.js';
import { createJob, fenceKeyOf, JOB_ATTR as J, leaseKeyOf, readJob, type PublishedDocument, type TableNames } from '../../lib/workflow/index.js';
import { deliverCommitted, emailDirectly, emailsPerCustomer, overwriteDocuments, putDocuments, type IncidentEffects } from './incident-effects.js';
import { Timeline } from '../shared/timeline.js';
import { plural } from './report-lines.js';

/** The sample the incident replays, whatever workload the run after it takes. */
export const INCIDENT_WORKLOAD = invoices.name;

/** `npm start`'s first heading: the incident, and the sample it is replayed on when the run after it is another workload's. */
export const incidentHeading = (runWorkload: string): string =>
  `1. The incident (source article), replayed on the ${INCIDENT_WORKLOAD} sample${runWorkload === INCIDENT_WORKLOAD ? '' : ` (section 2 runs ${runWorkload})`}: A pauses past its lease; B takes over; A wakes and writes.`;

export interface IncidentOptions {
  doc: DynamoDBDocumentClient;
  tables: TableNames;
  clock: Clock;
  fenced: boolean;
  log?: (line: string) => void;
  /** The file and the email: the bucket, the providers, the Outbox stream. Without it, the tables alone. */
  effects?: IncidentEffects;
}

export interface IncidentResult {
  fenced: boolean;
  generations: { A: number; B: number };
  aRejected: boolean;
  overwritten: string[];
  chargesSuppressed: number;
  timeline: Timeline;
  /** The file: A's and B's objects, how many of A's an invoice points to, how many B's A overwrote in place. */
  documents?: { aKeys: string[]; bKeys: string[]; aReferenced: number; overwrittenInPlace: number };
  /** The email: how many each worker's run got delivered; per customer, what the provider received (undefined: no record, --smtp). */
  emails?: { fromA: number; fromB: number; perCustomer: Record<string, number> | undefined; customersWithTwo: number };
}

const INPUT: InvoiceRunInput = { period: '2026-10', customers: 6, seed: 7, unitSize: 3, currency: 'EUR' };
const LEASE_MS = 1_000;
/** A's GC pause: well past its lease, so B takes over meanwhile. */
const PAUSE_MS = LEASE_MS * 3;

export async function replayIncident(opts: IncidentOptions): Promise<IncidentResult> {
  const { doc, tables, clock } = opts;
  const tl = new Timeline(() => clock.monotonicNow());
  const say = (actor: string, kind: Parameters<Timeline['add']>[1], text: string, g?: number) => {
    const e = tl.add(actor, kind, text, g, kind === 'acquire' ? LEASE_MS : undefined);
    opts.log?.(`  t=${String(e.t).padStart(5)} ms  ${actor.padEnd(8)} ${text}`);
  };
  const jobId = invoiceJobId(INPUT.period);
  const mk = (owner: string) =>
    new LeaseManager({ doc, table: tables.leases, owner, epoch: 0, durationMs: LEASE_MS, mode: { kind: 'wall-clock', maxClockSkewMs: 0 }, clock });
  const A = mk('worker-A');
  const B = mk('worker-B');

  // Six earlier runs issued generations 1..6: the counter survives every release.
  const history = mk('earlier-runs');
  for (let i = 0; i < 6; i++) await history.release(await history.acquire(leaseKeyOf(jobId)));
  const totalUnits = invoiceProcessor.totalUnits(INPUT);
  await createJob(doc, tables.jobs, { id: jobId, totalUnits, input: { ...INPUT } }, clock);
  // The invoice workload's fence key, as its stack's workers raise it (the checker reads that one).
  const fence = { table: tables.fences, resource: fenceKeyOf(jobId, invoices.fenceKeyPrefix) };
  // A unit has ONE `now`: its effects, its fence write and its heartbeat carry it (the tie the checker reads).
  const fx = opts.effects;
  const effectsOf = (g: Generation, unit: number, writer: string, now: number, documents?: Map<string, PublishedDocument>): Effect[] =>
    invoiceProcessor
      .unitEffects(INPUT, { jobId, generation: g, unit, tables, now, ...(documents === undefined ? {} : { documents }) })
      // The hand-written path has no outbox: it emails directly (incident-effects.ts).
      .filter((e) => opts.fenced || e.table !== tables.outbox)
      .map((e) => ({ ...e, item: { ...e.item, writer } }));
  const docs = { aKeys: [] as string[], bKeys: [] as string[], overwrittenInPlace: 0 };
  const mails = { fromA: 0, fromB: 0 };
  /** The unit's documents: new objects (fenced) or overwritten in place (unsafe). */
  const documentsOf = async (who: 'A' | 'B', g: Generation, unit: number): Promise<Map<string, PublishedDocument> | undefined> => {
    if (fx === undefined) return undefined;
    const actor = `worker-${who}`;
    if (!opts.fenced) {
      const keys = await overwriteDocuments(fx, INPUT, jobId, g, unit, tables);
      if (who === 'A') docs.overwrittenInPlace += keys.length;
      (who === 'A' ? docs.aKeys : docs.bKeys).push(...keys);
      say(actor, 'document', `${who === 'A' ? 'OVERWROTE in place' : 'wrote in place'} ${plural(keys.length, 'document')} (${keys[0]?.split('/').slice(-2).join('/')}...)`, g);
      return undefined;
    }
    const published = await putDocuments(fx, INPUT, jobId, g, unit, tables);
    const keys = [...published.values()].map((d) => d.key);
    (who === 'A' ? docs.aKeys : docs.bKeys).push(...keys);
    say(actor, 'document', `put ${plural(keys.length, 'document')} as new objects (${keys[0]?.split('/').slice(-2).join('/')}...)`, g);
    return published;
  };

  // A: acquire, (fence), read, then the pause.
  const a = await A.acquire(leaseKeyOf(jobId));
  say('worker-A', 'acquire', `acquired lease, generation ${formatGeneration(a.generation)} (${LEASE_MS} ms)`, a.generation);
  if (opts.fenced) {
    await raiseFence({ doc, clock }, fence, a.generation);
    say('worker-A', 'fence', `raised fence to ${formatGeneration(a.generation)}`, a.generation);
  }
  const aJob = await readJob(doc, tables.jobs, jobId);
  say('worker-A', 'read', `read checkpoint: cursor ${aJob?.cursor}`);
  const aNow = clock.wallNow();
  const aEffects = effectsOf(a.generation, 0, 'worker-A', aNow, await documentsOf('A', a.generation, 0));
  say('worker-A', 'pause', `paused ${PAUSE_MS} ms (GC) with unit 0 built; lease expires meanwhile`);
  const pausedAt = clock.monotonicNow();

  // B: waits for A's lease to expire, takes generation 8, raises the fence, runs the job.
  const b = await B.acquire(leaseKeyOf(jobId));
  say('worker-B', 'acquire', `acquired expired lease, generation ${formatGeneration(b.generation)}`, b.generation);
  if (opts.fenced) {
    await raiseFence({ doc, clock }, fence, b.generation);
    say('worker-B', 'fence', `raised fence to ${formatGeneration(b.generation)} BEFORE reading`, b.generation);
  }
  const bJob = await readJob(doc, tables.jobs, jobId);
  say('worker-B', 'read', `read checkpoint: cursor ${bJob?.cursor}`);
  for (let unit = bJob?.cursor ?? 0; unit < totalUnits; unit++) {
    const now = clock.wallNow();
    const effects = effectsOf(b.generation, unit, 'worker-B', now, await documentsOf('B', b.generation, unit));
    const last = unit + 1 === totalUnits;
    if (opts.fenced) {
      await commitFencedUnit(
        { doc, clock },
        {
          fence,
          generation: b.generation,
          checkpoint: { table: tables.jobs, key: jobId, expected: unit, next: unit + 1, set: { [J.status]: last ? 'DONE' : 'RUNNING', [J.heartbeatAt]: now }, ...(last ? { remove: [J.unfinished] } : {}) },
          effects,
          token: { job: jobId, unit },
        },
        { now },
      );
    } else {
      await unsafeWrite(doc, tables, jobId, unit, effects, last);
    }
    const customers = effects.filter((e) => e.item.pk.startsWith('invoice#')).length;
    say('worker-B', 'commit', `committed unit ${unit} (${plural(customers, 'invoice')} + charges${opts.fenced && fx ? ' + outbox items' : ''}) at ${formatGeneration(b.generation)}`, b.generation);
    if (!opts.fenced && fx !== undefined) {
      mails.fromB += await emailDirectly(fx, INPUT, b.generation, unit, tables, 'worker-B');
      say('worker-B', 'email', `emailed ${plural(customers, 'customer')} directly (no outbox)`, b.generation);
    }
  }
  say('worker-B', 'done', 'job DONE; released', b.generation);
  await B.release(b);
  if (opts.fenced && fx !== undefined) {
    await deliverCommitted(fx, tables);
    mails.fromB = (await scanAll(doc, tables.outbox)).filter((i) => i.kind === 'email' && i.status === 'SENT').length;
    say('sender', 'email', `sent ${plural(mails.fromB, 'email')}: the outbox items B's units created`);
  }

  // A wakes up, still believing in its lease, and writes what it built before the pause.
  await clock.sleep(Math.max(0, PAUSE_MS - (clock.monotonicNow() - pausedAt)));
  say('worker-A', 'resume', 'woke up; writes unit 0 built from its stale read');
  let aRejected = false;
  let overwritten: string[] = [];
  let chargesSuppressed = 0;
  if (opts.fenced) {
    try {
      await commitFencedUnit(
        { doc, clock },
        { fence, generation: a.generation, checkpoint: { table: tables.jobs, key: jobId, expected: 0, next: 1, set: { [J.heartbeatAt]: aNow } }, effects: aEffects, token: { job: jobId, unit: 0 } },
        { now: aNow },
      );
    } catch (e) {
      if (!(e instanceof StaleGenerationError)) throw e;
      aRejected = true;
      say('worker-A', 'reject', `REJECTED: stale generation ${formatGeneration(a.generation)}, fence at ${e.current === undefined ? '?' : formatGeneration(e.current)}; nothing written`, a.generation);
      if (fx !== undefined) {
        say('worker-A', 'note', `its ${docs.aKeys.length} documents are orphans nobody points to; it created no outbox item, so it emails nobody`);
        await deliverCommitted(fx, tables);
      }
    }
  } else {
    const r = await unsafeWrite(doc, tables, jobId, 0, aEffects, false);
    overwritten = r.overwritten;
    chargesSuppressed = r.chargesSuppressed;
    say('worker-A', 'overwrite', `OVERWROTE ${overwritten.length} of B's invoices with generation ${formatGeneration(a.generation)} data`, a.generation);
    if (chargesSuppressed > 0) say('worker-A', 'note', `${chargesSuppressed} duplicate charges stopped by their operation keys (not by a fence)`);
    if (fx !== undefined) {
      mails.fromA = await emailDirectly(fx, INPUT, a.generation, 0, tables, 'worker-A');
      say('worker-A', 'email', `emailed ${plural(mails.fromA, 'customer')} AGAIN, with its stale invoice`, a.generation);
    }
  }
  const late = await A.release(a);
  say('worker-A', 'release', `late release: ${late.released ? 'released' : 'no effect (owner+generation no longer match)'}`);
  const result: IncidentResult = { fenced: opts.fenced, generations: { A: a.generation, B: b.generation }, aRejected, overwritten, chargesSuppressed, timeline: tl };
  if (fx === undefined) return result;
  const pointers = new Set((await invoicePointers(doc, tables)).filter((k) => k !== undefined));
  const perCustomer = emailsPerCustomer(fx, tables.outbox);
  return {
    ...result,
    documents: { ...docs, aReferenced: docs.aKeys.filter((k) => opts.fenced && pointers.has(k)).length },
    emails: {
      ...mails,
      perCustomer: perCustomer === undefined ? undefined : Object.fromEntries(perCustomer),
      customersWithTwo: perCustomer === undefined ? 0 : [...perCustomer.values()].filter((n) => n > 1).length,
    },
  };
}

/** Every invoice's documentKey, read back from the table. */
async function invoicePointers(doc: DynamoDBDocumentClient, tables: TableNames): Promise<(string | undefined)[]> {
  const items = await scanAll(doc, tables.records);
  return items.filter((i) => String(i.pk).startsWith('invoice#')).map((i) => (typeof i.documentKey === 'string' ? i.documentKey : undefined));
}

/**
 * UNSAFE, for the demo only: the lease-only writer. Upserts land unconditionally, the
 * checkpoint is overwritten, only the charges keep their operation keys.
 */
async function unsafeWrite(
  doc: DynamoDBDocumentClient,
  tables: TableNames,
  jobId: string,
  unit: number,
  effects: Effect[],
  last: boolean,
): Promise<{ overwritten: string[]; chargesSuppressed: number }> {
  const overwritten: string[] = [];
  let chargesSuppressed = 0;
  for (const e of effects) {
    if (e.kind === 'once') {
      const r = await putOnce(doc, e.table, e.item);
      if (!r.ok) chargesSuppressed++;
    } else {
      const out = await doc.send(new PutCommand({ TableName: e.table, Item: e.item, ReturnValues: 'ALL_OLD' }));
      if (out.Attributes !== undefined && out.Attributes.writer !== e.item.writer) overwritten.push(e.item.pk);
    }
  }
  await doc.send(
    new UpdateCommand({
      TableName: tables.jobs,
      Key: { [J.key]: jobId },
      UpdateExpression: last ? 'SET #c = :n, #s = :done REMOVE #u' : 'SET #c = :n',
      ExpressionAttributeNames: last ? { '#c': J.cursor, '#s': J.status, '#u': J.unfinished } : { '#c': J.cursor },
      ExpressionAttributeValues: last ? { ':n': unit + 1, ':done': 'DONE' } : { ':n': unit + 1 },
    }),
  );
  return { overwritten, chargesSuppressed };
}
