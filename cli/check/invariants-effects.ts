/**
 * DOCS and DELIVERY (DESIGN.md, "Invariants every run must satisfy"), computed from the tables,
 * their streams, the bucket (ListObjectVersions, HEAD and GET by ETag) and the providers' own
 * records (the SMTP sink's received messages, parsed here; the payment provider's record), never
 * through the worker's, sender's or reconciler's code.
 *
 * DOCS      every invoice's documentKey exists with its documentEtag and embeds the invoice's
 *           generation (and the object says so); no object key is written twice; no stale
 *           generation's object is referenced, now or in any invoice write of the stream.
 * DELIVERY  every outbox item was created by a committed unit (the tie to a fence write), is
 *           never changed in what the unit wrote, says what its job's input says (recipient,
 *           text, target, destination, request: Workload.checks.outbox) and is one the input
 *           demands, and ends SENT (or FAILED/UNKNOWN with its reason, counted); what the
 *           provider itself received says the same; the provider received exactly one message per outbox id, none for
 *           an id no committed unit created, and every duplicate matches a recorded ambiguous send.
 *           A takeover (SENDING under one claim token → SENDING under another, in the stream) of a
 *           claim younger than the reconciler's claim timeout took over a live sender: a violation,
 *           and the ambiguous send it recorded explains no duplicate (it caused it).
 *           An http item: the provider performed it once, under one key and one charge; no request
 *           for a key came after the provider's declared key retention from the key's first
 *           request (a resend past retention is a second charge at a provider that forgot it).
 */
import { fenceKeyOfJob } from './wire-check.js';
import { GetObjectCommand, HeadObjectCommand, ListObjectVersionsCommand, type S3Client } from '@aws-sdk/client-s3';
import { simpleParser } from 'mailparser';
import { isDeepStrictEqual } from 'node:util';
import { messageIdentity, type ExpectedEffect, type Workload } from '../../lib/workflow/index.js';
import type { StreamChange } from '../local/streams.js';
import { checkChains, type ChainStats } from './invariants-chains.js';
import { withAttempts } from './invariants-attempts.js';

export interface EffectsSources {
  /** `prefix`: the workload's documents folder (its descriptor's `documents.prefix`). */
  s3?: { client: S3Client; bucket: string; set: string; prefix: string };
  /** The email provider's record (raw messages), or undefined when the run delivered elsewhere (--smtp). */
  mails?: readonly { raw: string }[];
  /**
   * The payment provider's record: per key, its charges (more than one: performed again after the
   * key was forgotten) and when each request came (`at`, the provider's clock).
   */
  payments?: readonly { key: string; outboxId?: string | undefined; outboxTable?: string | undefined; path?: string | undefined; body?: string | undefined; requests: number; charges?: readonly string[]; at?: readonly number[]; declined?: string | undefined }[];
  /** How long the payment provider keeps a key (its declared retention): a request for a key older than this is a resend past retention. */
  paymentsKeyRetentionMs?: number;
  /**
   * The reconciler's claim timeout (ms), the operator's setting: a takeover of a claim younger
   * than this is a violation. Undefined: takeovers' ages are not judged.
   */
  claimTimeoutMs?: number;
  /**
   * The events the email provider emitted after accepting a message (bounces, complaints), from its
   * own record: each must be on its outbox item (`providerEvents` `<EVENT>:…`), SENT or not.
   */
  troubleEvents?: readonly { outboxId: string; outboxTable: string; event: 'BOUNCE' | 'SUPPRESSED' | 'SOFTBOUNCE' | 'COMPLAINT' | 'REJECT' }[];
  /**
   * The outbox ids the providers refused for good, from their own records. Given, a FAILED item
   * outside it is a violation: it was failed for a state that lifts (throttled, held, a 5xx).
   */
  refusedForGood?: ReadonlySet<string>;
  /** What the providers did on the fault plan (their own counters: throttled, 5xx after or before taking, paused, sandbox, bounced, complained…), reported as given. */
  providerFaults?: Readonly<Record<string, number>>;
  /** What the run could not give the checker, and why (e.g. an external SMTP server's record): reported with the invariant it leaves partly unchecked. */
  unread?: Partial<Record<'DOCS' | 'DELIVERY', string[]>>;
}

export interface EffectsStats {
  documents: { written: number; referenced: number; orphaned: number; collected: number; checked: boolean };
  emails: { items: number; sent: number; delivered: number; duplicated: number; ambiguous: number; unknown: number; failed: number; recordChecked: boolean };
  /** pastRetention: items given up UNKNOWN as past the provider's key retention (refused, not resent); resentPastRetention: requests that came anyway. */
  payments: { items: number; sent: number; performed: number; requests: number; pastRetention: number; resentPastRetention: number };
  /**
   * The providers' misbehaviour as their own records counted it (`faults`: per kind), what became of
   * it on the items: deferred (throttled, held: `deferrals`), held now, and the trouble events
   * recorded on their items.
   */
  providers: { throttled: number; ambiguous5xx: number; paused: number; sandbox: number; bounced: number; complained: number; deferredItems: number; troubleRecorded: number };
  /** The steps that followed an outcome (CHAIN: invariants-chains.ts). */
  chains: ChainStats;
}

type Add = (name: 'DOCS' | 'DELIVERY' | 'CHAIN', msg: string) => void;
type Item = Record<string, unknown>;
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** `[<set>/]<prefix><period>/<customer>/<generation>.json` → the generation, or undefined. */
const generationInKey = (key: string): number | undefined => {
  const m = /\/(\d+)\.json$/.exec(key);
  return m === null ? undefined : Number(m[1]);
};

async function listVersions(s3: NonNullable<EffectsSources['s3']>, prefix: string) {
  const versions: { key: string; marker: boolean; latest: boolean; etag?: string }[] = [];
  let keyMarker: string | undefined;
  let versionMarker: string | undefined;
  for (;;) {
    const page = await s3.client.send(new ListObjectVersionsCommand({ Bucket: s3.bucket, Prefix: prefix, ...(keyMarker ? { KeyMarker: keyMarker } : {}), ...(versionMarker ? { VersionIdMarker: versionMarker } : {}) }));
    for (const v of page.Versions ?? []) versions.push({ key: v.Key ?? '', marker: false, latest: v.IsLatest === true, ...(v.ETag ? { etag: v.ETag } : {}) });
    for (const d of page.DeleteMarkers ?? []) versions.push({ key: d.Key ?? '', marker: true, latest: d.IsLatest === true });
    if (!page.IsTruncated) return versions;
    keyMarker = page.NextKeyMarker;
    versionMarker = page.NextVersionIdMarker;
  }
}

/** DOCS over the records (final), the Records stream and the bucket: the records the workload says point to a document. */
export async function checkDocs(w: Workload<any>, s3: EffectsSources['s3'], records: readonly Item[], recordStream: readonly StreamChange[], add: Add): Promise<EffectsStats['documents']> {
  const stats = { written: 0, referenced: 0, orphaned: 0, collected: 0, checked: s3 !== undefined };
  const docs = w.checks.documents;
  if (s3 === undefined || docs === undefined) return { ...stats, checked: false };
  const prefix = `${s3.set === '' ? '' : `${s3.set}/`}${s3.prefix}`;
  const versions = await listVersions(s3, prefix);
  const writes = new Map<string, number>();
  for (const v of versions) if (!v.marker) writes.set(v.key, (writes.get(v.key) ?? 0) + 1);
  for (const [key, n] of writes) if (n > 1) add('DOCS', `${key}: written ${n} times (an object must never be replaced)`);
  stats.written = [...writes.values()].reduce((a, b) => a + b, 0);
  stats.collected = versions.filter((v) => v.marker).length;
  const referenced = new Set<string>();
  for (const inv of records.filter((i) => docs.pointsTo(String(i.pk)))) {
    const key = inv.documentKey;
    const etag = inv.documentEtag;
    const g = num(inv.generation);
    if (typeof key !== 'string' || typeof etag !== 'string') {
      add('DOCS', `${String(inv.pk)}: no documentKey/documentEtag (the record points to no document)`);
      continue;
    }
    referenced.add(key);
    if (!key.startsWith(prefix) || generationInKey(key) !== g) add('DOCS', `${String(inv.pk)}: documentKey ${key} does not embed the record's generation ${String(g)}`);
    try {
      await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key, IfMatch: etag }));
      const body = await (await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key, IfMatch: etag }))).Body!.transformToString();
      const content = JSON.parse(body) as Item;
      const differ = ['generation', ...docs.sameFields].filter((f) => content[f] !== inv[f]);
      if (differ.length > 0) add('DOCS', `${String(inv.pk)}: its document differs from the record in ${differ.map((f) => `${f} (${String(content[f])} vs ${String(inv[f])})`).join(', ')}`);
    } catch (e) {
      add('DOCS', `${String(inv.pk)}: ${key} with ETag ${etag} cannot be read (${(e as Error).name})`);
    }
  }
  // The history too: a pointer to a stale generation's object, even if later replaced.
  for (const c of recordStream) {
    const key = c.newImage?.documentKey;
    if (typeof key === 'string' && generationInKey(key) !== num(c.newImage?.generation)) add('DOCS', `${c.key}: written pointing to ${key} at generation ${String(c.newImage?.generation)}`);
  }
  stats.referenced = referenced.size;
  // A key is live when its latest entry is a version, not a delete marker.
  stats.orphaned = versions.filter((v) => v.latest && !v.marker && !referenced.has(v.key)).length;
  return stats;
}

/**
 * The outbox items the jobs' inputs demand, by id, each with what it must say
 * (Workload.checks.outbox: a shard's range, or the whole run): of the finished jobs (`done`: each
 * must exist), or of every job whose input reads (`any`: no committed unit may create another).
 */
export function expectedEffects(w: Workload<any>, jobs: readonly Item[], which: 'done' | 'any'): Map<string, ExpectedEffect> {
  const out = new Map<string, ExpectedEffect>();
  for (const job of jobs) {
    if (which === 'done' && job.status !== 'DONE') continue;
    const read = inputOf(w, job);
    if (read !== undefined) for (const e of w.checks.outbox(read.input)) out.set(e.id, e);
  }
  return out;
}

/** A job's stored input as its workload reads it; undefined when it cannot (a job that never started may hold another). */
function inputOf(w: Workload<any>, job: Item): { input: unknown } | undefined {
  try {
    return { input: w.processor.parseInput(job.input) };
  } catch {
    return undefined;
  }
}

/** The outbox ids the finished jobs' inputs demand whatever happens (a follow-up is demanded only after its parent's outcome: CHAIN). */
export const expectedOutboxIds = (w: Workload<any>, jobs: readonly Item[]): Set<string> => new Set([...expectedEffects(w, jobs, 'done').values()].filter((e) => e.after === undefined).map((e) => e.id));

const same = (a: unknown, b: unknown): boolean => isDeepStrictEqual(a, b);
const shown = (v: unknown): string => (v === undefined ? '(none)' : JSON.stringify(v));

/** How an email (its recipient, its subject and body) differs from what its input says. */
function emailDiffers(e: Extract<ExpectedEffect, { kind: 'email' }>, to: unknown, text: string): string[] {
  const out = to === e.to ? [] : [`addressed to ${shown(to)}, its input says ${e.to}`];
  for (const s of e.says) if (!text.includes(s)) out.push(`does not say ${JSON.stringify(s)}, as its input does`);
  return out;
}

/** How an http call (its target, its destination, its request) differs from what its input says. */
function callDiffers(e: Extract<ExpectedEffect, { kind: 'http' }>, call: { target?: unknown; path: unknown; request: unknown }): string[] {
  const out: string[] = [];
  if ('target' in call && call.target !== e.target) out.push(`for target ${shown(call.target)}, its input says ${e.target}`);
  if (call.path !== e.path) out.push(`to destination ${shown(call.path)}, its input says ${shown(e.path)}`);
  const request = (call.request ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(e.request)) if (!same(request[k], v)) out.push(`request.${k} is ${shown(request[k])}, its input says ${shown(v)}`);
  return out;
}

/** An outbox item's own fields against what its input says. */
function itemDiffers(i: Item, e: ExpectedEffect): string[] {
  if (i.kind !== e.kind) return [`a ${String(i.kind)} item, its input says ${e.kind}`];
  if (e.kind === 'email') return emailDiffers(e, i.to, `${String(i.subject)}\n${String(i.body)}`);
  return callDiffers(e, { target: i.target, path: i.path, request: i.request });
}

/**
 * Takeovers of live claims, per outbox id, from the stream: a MODIFY from SENDING under one claim
 * token to SENDING under another, whose new `claimedAt` (the takeover's time) is less than
 * `claimTimeoutMs` after the old one (the replaced claim's time).
 */
function prematureTakeovers(outboxStream: readonly StreamChange[], claimTimeoutMs: number | undefined, add: Add): Map<string, number> {
  const premature = new Map<string, number>();
  if (claimTimeoutMs === undefined) return premature;
  for (const c of outboxStream) {
    const o = c.oldImage;
    const n = c.newImage;
    if (c.event !== 'MODIFY' || o?.status !== 'SENDING' || n?.status !== 'SENDING' || o.claimToken === undefined || n.claimToken === undefined || o.claimToken === n.claimToken) continue;
    const from = num(o.claimedAt);
    const at = num(n.claimedAt);
    if (from !== undefined && at !== undefined && at - from >= claimTimeoutMs) continue;
    add('DELIVERY', `${c.key}: a claim taken over ${from === undefined || at === undefined ? 'at an unknown age' : `${at - from} ms after it was made`}, younger than the claim timeout ${claimTimeoutMs} ms: a live sender's claim was taken over`);
    premature.set(c.key, (premature.get(c.key) ?? 0) + 1);
  }
  return premature;
}

/** The provider's record on an item (`providerEvents`, `<EVENT>:<id>`: a set as DynamoDB keeps it, or a list). */
const eventsOf = (image: Item | undefined): string[] => {
  const e = image?.providerEvents;
  return e instanceof Set ? [...(e as Set<string>)] : Array.isArray(e) ? (e as string[]) : [];
};

/**
 * No claim is granted on an item that already carries its provider's record: the record settles it
 * (a send the provider took, or its refusal), and a claim is a send to come. Read in the item's
 * own stream order, so no clock is compared: a MODIFY whose old image has the record and whose new
 * image holds a claim token it did not have.
 */
function claimsAfterRecord(outboxStream: readonly StreamChange[], add: Add): void {
  for (const c of outboxStream) {
    const o = c.oldImage;
    const n = c.newImage;
    const record = eventsOf(o);
    if (c.event !== 'MODIFY' || n?.status !== 'SENDING' || n.claimToken === undefined || n.claimToken === o?.claimToken || record.length === 0) continue;
    add('DELIVERY', `${c.key}: claimed to be sent again after its provider's record (${record.join(', ')}) was on it`);
  }
}

/** What the unit wrote on an outbox item: immutable after its creation (its tie, and every field its provider sees). */
const WRITTEN_BY_UNIT = ['kind', 'jobId', 'generation', 'unit', 'updatedAt', 'to', 'subject', 'body', 'target', 'request', 'path'];

/** DELIVERY over the outbox items, the Outbox stream, the fence writes and the providers' records. */
export async function checkDelivery(
  w: Workload<any>,
  table: string,
  outbox: readonly Item[],
  outboxStream: readonly StreamChange[],
  fenceWrites: ReadonlySet<string>,
  jobs: readonly Item[],
  sources: EffectsSources,
  add: Add,
): Promise<Omit<EffectsStats, 'documents'>> {
  const created = new Set<string>();
  for (const c of outboxStream) {
    const n = c.newImage;
    // A follow-up has no tie: its parent's settle created it (CHAIN); nor has a new attempt: a retry of the item it replaces did (CHAIN).
    if (c.event === 'INSERT' && n !== undefined && n.parent === undefined && n.attemptOf === undefined) {
      const tie = `${fenceKeyOfJob(String(n.jobId), w.fenceKeyPrefix)}\u0000${String(n.generation)}\u0000${String(n.updatedAt)}`;
      if (!fenceWrites.has(tie)) add('DELIVERY', `${c.key}: created at generation ${String(n.generation)} with no fence write of that generation and updatedAt: no committed unit created it`);
      else created.add(c.key);
    }
    if (c.event === 'MODIFY') {
      const changed = WRITTEN_BY_UNIT.filter((a) => JSON.stringify(c.oldImage?.[a]) !== JSON.stringify(n?.[a]));
      if (changed.length > 0) add('DELIVERY', `${c.key}: delivery changed what the unit wrote (${changed.join(', ')})`);
    }
    if (c.event === 'REMOVE') add('DELIVERY', `${c.key}: outbox item removed`);
  }
  const byId = new Map(outbox.map((i) => [String(i.pk), i]));
  for (const id of expectedOutboxIds(w, jobs)) if (!byId.has(id)) add('DELIVERY', `${id}: the finished job's outbox item is missing`);
  // What each item a committed unit (or a parent's settle) created says, against its job's input: none its input does not demand.
  const demanded = withAttempts(expectedEffects(w, jobs, 'any'), outbox);
  const chains = checkChains(table, outbox, outboxStream, demanded, sources, add);
  for (const id of chains.created) created.add(id);
  const read = new Set(jobs.filter((j) => inputOf(w, j) !== undefined).map((j) => String(j.pk)));
  for (const i of outbox.filter((x) => created.has(String(x.pk)) && read.has(String(x.jobId)))) {
    const e = demanded.get(String(i.pk));
    if (e === undefined) add('DELIVERY', `${String(i.pk)}: an effect its job's input does not demand (an extra call)`);
    else for (const d of itemDiffers(i, e)) add('DELIVERY', `${String(i.pk)}: ${d}`);
  }
  for (const i of outbox) {
    const s = i.status;
    if (s === 'FAILED' || s === 'UNKNOWN') {
      if (typeof i.failureReason !== 'string' || i.failureReason === '') add('DELIVERY', `${String(i.pk)}: ${s} without a reason`);
    } else if (s !== 'SENT') add('DELIVERY', `${String(i.pk)}: ends ${String(s)}, not delivered`);
  }
  const premature = prematureTakeovers(outboxStream, sources.claimTimeoutMs, add);
  claimsAfterRecord(outboxStream, add);
  const emails = await checkMails(table, outbox, byId, created, premature, sources.mails, demanded, add);
  const payments = checkPayments(table, outbox, created, sources, demanded, add);
  return { emails, payments, providers: checkProviderFaults(table, outbox, byId, sources, add), chains: chains.stats };
}

/**
 * What the providers' fault plan demands of the items: every trouble event the provider emitted
 * is on its item, and nothing is FAILED that its provider did not refuse for good (a throttle, a
 * paused account that lifted, a 5xx: none is a reason to give an effect up).
 */
function checkProviderFaults(table: string, outbox: readonly Item[], byId: ReadonlyMap<string, Item>, sources: EffectsSources, add: Add): EffectsStats['providers'] {
  let troubleRecorded = 0;
  for (const e of (sources.troubleEvents ?? []).filter((x) => x.outboxTable === table)) {
    const list = eventsOf(byId.get(e.outboxId));
    if (list.some((x) => x.startsWith(`${e.event}:`))) troubleRecorded++;
    else add('DELIVERY', `${e.outboxId}: the provider emitted a ${e.event} event for it, not recorded on the item`);
  }
  if (sources.refusedForGood !== undefined) {
    for (const i of outbox) {
      if (i.status === 'FAILED' && !sources.refusedForGood.has(String(i.pk))) add('DELIVERY', `${String(i.pk)}: FAILED (${String(i.failureReason)}), but its provider never refused it for good: given up for a state that lifts`);
    }
  }
  const f = sources.providerFaults ?? {};
  const n = (...keys: string[]) => keys.reduce((sum, k) => sum + (f[k] ?? 0), 0);
  return {
    throttled: n('throttled'),
    ambiguous5xx: n('5xx-after', '5xx-before', 'replayed-5xx'),
    paused: n('paused'),
    sandbox: n('sandbox'),
    bounced: n('bounced'),
    complained: n('complained'),
    deferredItems: outbox.filter((i) => (num(i.deferrals) ?? 0) > 0).length,
    troubleRecorded,
  };
}

async function checkMails(
  table: string,
  outbox: readonly Item[],
  byId: ReadonlyMap<string, Item>,
  created: ReadonlySet<string>,
  premature: ReadonlyMap<string, number>,
  mails: EffectsSources['mails'],
  demanded: ReadonlyMap<string, ExpectedEffect>,
  add: Add,
): Promise<EffectsStats['emails']> {
  const items = outbox.filter((i) => i.kind === 'email');
  const stats = {
    items: items.length,
    sent: items.filter((i) => i.status === 'SENT').length,
    delivered: 0,
    duplicated: 0,
    ambiguous: items.reduce((n, i) => n + (num(i.ambiguousSends) ?? 0), 0),
    unknown: items.filter((i) => i.status === 'UNKNOWN').length,
    failed: items.filter((i) => i.status === 'FAILED').length,
    recordChecked: mails !== undefined,
  };
  if (mails === undefined) return stats;
  const received = new Map<string, number>();
  for (const m of mails) {
    const parsed = await simpleParser(m.raw);
    if (parsed.headers.get('x-outbox-table') !== table) continue;
    const id = parsed.headers.get('x-outbox-id');
    if (typeof id !== 'string') continue;
    received.set(id, (received.get(id) ?? 0) + 1);
    if (parsed.messageId !== messageIdentity.messageId(table, id)) add('DELIVERY', `${id}: delivered with Message-ID ${String(parsed.messageId)}, not the one its identity derives`);
    // What the provider received, against what the input says (the recipient, the text).
    const e = demanded.get(id);
    const to = (Array.isArray(parsed.to) ? parsed.to : parsed.to === undefined ? [] : [parsed.to]).flatMap((a) => a.value.map((v) => v.address));
    if (e?.kind === 'email') for (const d of emailDiffers(e, to.length === 1 ? to[0] : to.join(', '), `${parsed.subject ?? ''}\n${parsed.text ?? ''}`)) add('DELIVERY', `${id}: the provider received it ${d}`);
  }
  for (const [id, n] of received) {
    const item = byId.get(id);
    if (!created.has(id) || item === undefined) add('DELIVERY', `${id}: the provider received ${n} message(s) for an id no committed unit created`);
    // A premature takeover's ambiguous send is the cause of a duplicate, not its explanation.
    const allowed = 1 + Math.max(0, (num(item?.ambiguousSends) ?? 0) - (premature.get(id) ?? 0));
    if (n > allowed) add('DELIVERY', `${id}: the provider received ${n} messages; ${allowed - 1} recorded ambiguous send(s) not caused by a premature takeover explain at most ${allowed}`);
    stats.delivered++;
    stats.duplicated += n - 1;
  }
  for (const i of items) if (i.status === 'SENT' && !received.has(String(i.pk))) add('DELIVERY', `${String(i.pk)}: SENT, but the provider never received it`);
  return stats;
}

const parsedBody = (body: string): unknown => {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
};

/** The provider's ledger alone: a key performed more than once, or asked for past its retention. */
function pastRetention(mine: NonNullable<EffectsSources['payments']>, retentionMs: number | undefined, add: Add): number {
  let late = 0;
  for (const r of mine) {
    const charges = r.charges?.length ?? 1;
    if (charges > 1) add('DELIVERY', `${String(r.outboxId)}: the payment provider performed it ${charges} times under one Idempotency-Key (a request after the key was forgotten)`);
    const first = r.at?.[0];
    if (retentionMs === undefined || first === undefined) continue;
    const after = (r.at ?? []).filter((t) => t - first >= retentionMs);
    late += after.length;
    if (after.length > 0) add('DELIVERY', `${String(r.outboxId)}: ${after.length} request(s) for its key ${after.map((t) => `${t - first} ms`).join(', ')} after the first, past the provider's key retention of ${retentionMs} ms`);
  }
  return late;
}

function checkPayments(table: string, outbox: readonly Item[], created: ReadonlySet<string>, sources: EffectsSources, demanded: ReadonlyMap<string, ExpectedEffect>, add: Add): EffectsStats['payments'] {
  const records = sources.payments;
  const items = outbox.filter((i) => i.kind === 'http');
  const mine = (records ?? []).filter((r) => r.outboxTable === table);
  for (const r of mine) {
    if (r.outboxId === undefined || !created.has(r.outboxId)) add('DELIVERY', `${String(r.outboxId)}: the payment provider performed a charge for an id no committed unit created`);
    else if (r.key !== messageIdentity.idempotencyKey(table, r.outboxId)) add('DELIVERY', `${r.outboxId}: sent with Idempotency-Key ${r.key}, not the one its identity derives`);
  }
  const performed = new Map<string, number>();
  // A declined charge was not performed: the provider refused the effect itself.
  for (const r of mine) if (r.outboxId !== undefined && r.declined === undefined) performed.set(r.outboxId, (performed.get(r.outboxId) ?? 0) + 1);
  for (const [id, n] of performed) if (n > 1) add('DELIVERY', `${id}: the payment provider performed it ${n} times (under ${n} keys)`);
  if (records !== undefined) {
    for (const i of items) if (i.status === 'SENT' && !performed.has(String(i.pk))) add('DELIVERY', `${String(i.pk)}: SENT, but the payment provider never performed it`);
    // Given up as not taken while the provider took it: the record says no effect where one happened.
    for (const i of items) if (i.status === 'FAILED' && performed.has(String(i.pk))) add('DELIVERY', `${String(i.pk)}: FAILED (${String(i.failureReason)}), but the payment provider performed it`);
  }
  // A per-recipient destination: the provider was called at the item's own path, not another recipient's.
  const byId = new Map(items.map((i) => [String(i.pk), i]));
  for (const r of mine) {
    const want = r.outboxId === undefined ? undefined : byId.get(r.outboxId)?.path;
    if (typeof want === 'string' && r.path !== undefined && r.path !== want) add('DELIVERY', `${String(r.outboxId)}: delivered to ${r.path}, its destination is ${want}`);
    // What the provider received (its first request's body), against the input. Its path is the
    // line above's: the item's own, which the item's check holds to the input's.
    const e = r.outboxId === undefined ? undefined : demanded.get(r.outboxId);
    if (e?.kind !== 'http' || r.body === undefined) continue;
    for (const d of callDiffers(e, { path: e.path, request: parsedBody(r.body) })) add('DELIVERY', `${String(r.outboxId)}: the provider received it ${d}`);
  }
  const resentPastRetention = pastRetention(mine, sources.paymentsKeyRetentionMs, add);
  // Counted from the items' own reason: what the operator's alarm shows.
  const refused = items.filter((i) => i.status === 'UNKNOWN' && typeof i.failureReason === 'string' && i.failureReason.includes('key retention')).length;
  return { items: items.length, sent: items.filter((i) => i.status === 'SENT').length, performed: performed.size, requests: mine.reduce((n, r) => n + r.requests, 0), pastRetention: refused, resentPastRetention };
}
