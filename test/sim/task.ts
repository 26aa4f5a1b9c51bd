/**
 * One schedule as a task of the simulator's pool, and what comes back of it: small enough to
 * cross a thread boundary by the million. A run that did not go as it should is shrunk where it
 * ran and saved whole (its history, its shrunk schedule) for `--replay`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Variant } from '../chaos/controls.js';
import type { Schedule } from '../chaos/schedule.js';
import { simulateOne, type SimRun } from './run.js';
import type { Shape } from './shapes.js';
import { faultCount, shrink } from './shrink.js';
import { wireTotal } from './wire.js';
import { workloadNamed } from '../../lib/workloads/index.js';
import { METRIC, type MetricName } from '../../lib/workflow/index.js';

export interface SimTask {
  seed: number;
  variant: Variant;
  shape: Shape;
  /** A saved schedule to run instead of the seed's (a replay). */
  schedule?: Schedule;
  /** A registered workload's name (default the registry's default). */
  workload?: string;
}

export interface SimOutcome {
  seed: number;
  variant: Variant;
  shape: Shape;
  ok: boolean;
  failed: string[];
  /** CPU time the run took in its thread (ms). */
  ms: number;
  events: number;
  /** DynamoDB requests the run sent (the code's, the harness's and the checker's), each through the real SDK. */
  requests: number;
  virtualMs: number;
  digest: string;
  covered: string[];
  /** The races the run hit (RACES), read off what the code itself counted. */
  races: string[];
  faultsFired: string[];
  /** A failing (or uncaught) run: where its record is, and its shrunk form. */
  saved?: { file: string; replay: string; first: string; faultsBefore: number; faultsAfter: number; eventsBefore: number; eventsAfter: number; tries: number };
}

/**
 * The races a schedule is for, each as the metric the code counts when it meets one: a schedule
 * may draw an incident and still not hit it (the successor never came, the duplicate found the
 * job done). The summary reports per shape the share of schedules that hit each.
 */
export const RACES: Readonly<Record<string, MetricName>> = {
  'a successor took over an expired lease': METRIC.leaseTakeover,
  'the fence refused a stale holder': METRIC.staleGenerationRejected,
  'a holder found its lease lost': METRIC.leaseLost,
  'two workers wanted one lease': METRIC.leaseBusy,
  'an operation key suppressed a duplicate': METRIC.duplicatesSuppressed,
  'the sweeper requeued a stalled job': METRIC.jobsRequeued,
  'a send whose outcome went unseen': METRIC.outboxAmbiguous,
};

const racesOf = (metrics: Record<string, number> | undefined): string[] => Object.entries(RACES).filter(([, m]) => (metrics?.[m] ?? 0) > 0).map(([race]) => race);

/** What a schedule exercised, for the summary's coverage table. */
function coveredBy(s: Schedule, r: SimRun): string[] {
  const out: string[] = [s.leaseMode];
  if (s.drill) out.push('drill');
  if (s.skews.some((x) => Math.abs(x) > s.maxClockSkewMs / 2)) out.push('skew beyond bound');
  else if (s.skews.some((x) => x !== 0)) out.push('skew');
  if (s.incident === 'successor-crashes') out.push('successor crashes');
  if ((s.shards ?? 1) > 1) out.push('shards');
  if (s.duplicates.length > 0) out.push('duplicate deliveries');
  if (s.restart) out.push('restart with other input');
  if (s.retentionOutage) out.push('provider outage past key retention');
  if (s.dropCommitP > 0) out.push('lost commit answers');
  if (s.throttleP > 0) out.push('throttling');
  if (s.conflictP > 0) out.push('transaction conflicts');
  if (s.providerFaults.pause) out.push('paused provider account');
  if ((s.providerFaults.cut2xxPayments ?? 0) > 0) out.push('cut 2xx body');
  if ((s.providerFaults.redirectPayments ?? 0) > 0) out.push('redirect');
  if (s.providerFaults.lateRecord) out.push('late record after a throttled resend');
  if ((r.record?.report.stats.effects.documents.written ?? 0) > 0) out.push('documents');
  if ((r.record?.report.stats.effects.emails.items ?? 0) > 0) out.push('emails');
  if ((r.record?.report.stats.effects.payments.items ?? 0) > 0) out.push('payments');
  const chains = r.record?.report.stats.effects.chains;
  if ((chains?.accepted ?? 0) > 0) out.push('follow-ups after acceptance');
  if ((chains?.refusedForGood ?? 0) > 0) out.push('follow-ups after a decline');
  if ((chains?.bounced ?? 0) > 0) out.push('follow-ups after a hard bounce');
  return out;
}

/** `shrinkCaught`: shrink and save a control's catch too (how a test shows shrinking on a run that fails on purpose). */
export async function runTask(task: SimTask, saveDir: string | undefined, opts: { shrinkCaught?: boolean; shrinkTries?: number } = {}): Promise<SimOutcome> {
  const started = performance.now();
  const requestsBefore = wireTotal.requests;
  let r: SimRun;
  try {
    r = await simulateOne(task.seed, task.variant, { shape: task.shape, keepRecord: true, ...(task.schedule ? { schedule: task.schedule } : {}), ...(task.workload ? { workload: workloadNamed(task.workload, '--workload') } : {}) });
  } catch (e) {
    // The simulator's own failure (or the code's, outside any invariant): reported as a failed run, never lost.
    const first = e instanceof Error ? (e.stack ?? e.message).split('\n').slice(0, 3).join(' | ') : String(e);
    return { seed: task.seed, variant: task.variant, shape: task.shape, ok: false, failed: ['CRASH'], ms: performance.now() - started, events: 0, requests: 0, virtualMs: 0, digest: '', covered: [], races: [], faultsFired: [], saved: { file: '', replay: `npm run simulate -- --schedules 1 --seed ${task.seed} --shape ${task.shape} --no-controls`, first, faultsBefore: 0, faultsAfter: 0, eventsBefore: 0, eventsAfter: 0, tries: 0 } };
  }
  const ms = performance.now() - started;
  const out: SimOutcome = {
    seed: r.seed,
    variant: r.variant,
    shape: r.shape,
    ok: r.ok,
    failed: [...r.failed.map((f) => f.name), ...(r.worldError ? ['WORLD'] : []), ...(r.unsupported.length > 0 ? ['UNSUPPORTED'] : [])],
    ms,
    events: r.events,
    requests: wireTotal.requests - requestsBefore,
    virtualMs: r.virtualMs,
    digest: r.digest,
    covered: coveredBy(r.schedule, r),
    races: racesOf(r.record?.metrics),
    faultsFired: r.record?.faultsFired ?? [],
  };
  const keep = !r.ok || (opts.shrinkCaught === true && task.variant !== 'fenced');
  if (!keep || saveDir === undefined || task.schedule !== undefined) return out;
  const shrunk = await shrink(r, { shape: task.shape, maxTries: opts.shrinkTries ?? 60, ...(task.workload ? { workload: workloadNamed(task.workload, '--workload') } : {}) });
  mkdirSync(saveDir, { recursive: true });
  const file = resolve(saveDir, `${task.workload ? `${task.workload}-` : ''}${task.variant}-${task.shape}-${task.seed}.json`);
  const first = r.failed[0]?.first ?? r.worldError ?? r.unsupported[0] ?? (task.variant === 'fenced' ? 'failed' : r.ok ? 'caught' : 'not caught');
  writeFileSync(file, JSON.stringify({ seed: r.seed, variant: r.variant, shape: r.shape, ...(task.workload ? { workload: task.workload } : {}), failed: r.failed, worldError: r.worldError, unsupported: r.unsupported, shrunk: { schedule: shrunk.schedule, before: shrunk.before, after: shrunk.after, failed: shrunk.run.failed }, schedule: r.schedule, history: r.record?.history }, null, 1));
  return {
    ...out,
    saved: { file, replay: `npm run simulate -- --replay ${file}`, first, faultsBefore: faultCount(r.schedule), faultsAfter: faultCount(shrunk.schedule), eventsBefore: shrunk.before.events, eventsAfter: shrunk.after.events, tries: shrunk.tries },
  };
}
