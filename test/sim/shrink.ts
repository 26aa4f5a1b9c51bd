/**
 * Shrinking a failing schedule: take away what it does not need to fail — faults, probabilities,
 * duplicates, the drill, the restart, skews, provider faults, workers, periods, customers — one
 * at a time, keeping each cut after which the same seed still fails the same way, until no cut
 * helps. Every candidate is a full simulated run of the same seed, so the result replays exactly
 * (`--replay FILE`), and it names the fewest faults and events that still fail.
 */
import type { Workload } from '../../lib/workflow/index.js';
import type { Schedule } from '../chaos/schedule.js';
import { simulateOne, type SimRun } from './run.js';
import type { Shape } from './shapes.js';

export interface Shrunk {
  schedule: Schedule;
  run: SimRun;
  /** Candidate runs tried. */
  tries: number;
  before: { faults: number; events: number };
  after: { faults: number; events: number };
}

/** The failure a shrink must keep: the first failed invariant's name (for a control: an uncaught run stays uncaught). */
const verdictOf = (r: SimRun): string => (r.variant === 'fenced' ? (r.failed[0]?.name ?? r.worldError ?? (r.unsupported.length > 0 ? 'UNSUPPORTED' : 'PASS')) : r.ok ? 'CAUGHT' : 'MISSED');

/** Faults in a schedule: the worker faults, the wire's fault kinds, and every other disturbance. */
export function faultCount(s: Schedule): number {
  const p = s.providerFaults;
  return (
    s.faults.length +
    [s.dropCommitP, s.delayP, s.renewDelayP, s.throttleP, s.conflictP].filter((x) => x > 0).length +
    s.duplicates.length +
    (s.drill ? 1 : 0) +
    (s.restart ? 1 : 0) +
    (s.retentionOutage ? 1 : 0) +
    (s.requeueOnPause ? 1 : 0) +
    (s.overlappingSweeps ? 1 : 0) +
    (s.sweepBurst > 1 ? 1 : 0) +
    s.skews.filter((x) => x !== 0).length +
    (s.drifts ?? []).filter((x) => x !== 0).length +
    [p.throttleEmails, p.throttlePayments, p.fail5xxAfter, p.fail5xxBefore, p.cut2xxPayments ?? 0, p.redirectPayments ?? 0].filter((x) => x > 0).length +
    (p.pause ? 1 : 0) +
    (p.sandbox ? 1 : 0) +
    (p.lateRecord ? 1 : 0)
  );
}

/** Every one-step cut of a schedule, smallest effect first. */
function cuts(s: Schedule): Schedule[] {
  const out: Schedule[] = [];
  for (let i = s.faults.length - 1; i >= 0; i--) out.push({ ...s, faults: s.faults.filter((_, k) => k !== i) });
  for (const k of ['dropCommitP', 'delayP', 'renewDelayP', 'throttleP', 'conflictP'] as const) if (s[k] > 0) out.push({ ...s, [k]: 0 });
  for (let i = s.duplicates.length - 1; i >= 0; i--) out.push({ ...s, duplicates: s.duplicates.filter((_, k) => k !== i) });
  const { drill, restart, retentionOutage, ...bare } = s;
  if (drill) out.push({ ...bare, ...(restart ? { restart } : {}), ...(retentionOutage ? { retentionOutage } : {}) });
  if (restart) out.push({ ...bare, ...(drill ? { drill } : {}), ...(retentionOutage ? { retentionOutage } : {}) });
  if (retentionOutage) out.push({ ...bare, ...(drill ? { drill } : {}), ...(restart ? { restart } : {}) });
  if (s.requeueOnPause) out.push({ ...s, requeueOnPause: false });
  if (s.overlappingSweeps) out.push({ ...s, overlappingSweeps: false });
  if (s.sweepBurst > 1) out.push({ ...s, sweepBurst: 1 });
  if (s.skews.some((x) => x !== 0)) out.push({ ...s, skews: s.skews.map(() => 0) });
  if (s.drifts?.some((x) => x !== 0)) out.push({ ...s, drifts: s.drifts.map(() => 0) });
  const p = s.providerFaults;
  for (const k of ['throttleEmails', 'throttlePayments', 'fail5xxAfter', 'fail5xxBefore', 'cut2xxPayments', 'redirectPayments'] as const) if ((p[k] ?? 0) > 0) out.push({ ...s, providerFaults: { ...p, [k]: 0 } });
  if (p.pause) out.push({ ...s, providerFaults: { ...p, pause: undefined } as Schedule['providerFaults'] });
  if (p.sandbox) out.push({ ...s, providerFaults: { ...p, sandbox: undefined } as Schedule['providerFaults'] });
  if (p.lateRecord) out.push({ ...s, providerFaults: { ...p, lateRecord: false } });
  if (s.workers > 1) out.push({ ...s, workers: s.workers - 1, skews: s.skews.slice(0, s.workers - 1), ...(s.drifts ? { drifts: s.drifts.slice(0, s.workers - 1) } : {}) });
  for (const [i, j] of s.jobs.entries()) if (j.customers > s.unitSize) out.push({ ...s, jobs: s.jobs.map((x, k) => (k === i ? { ...x, customers: x.customers - s.unitSize } : x)) });
  return out;
}

/** Shrinks `failing` (a run that did not go as it should) within `maxTries` candidate runs. */
export async function shrink(failing: SimRun, opts: { shape: Shape; maxTries?: number; workload?: Workload<any> } = { shape: 'small' }): Promise<Shrunk> {
  const want = verdictOf(failing);
  const maxTries = opts.maxTries ?? 200;
  let best = failing;
  let tries = 0;
  for (let improved = true; improved && tries < maxTries; ) {
    improved = false;
    for (const candidate of cuts(best.schedule)) {
      if (tries++ >= maxTries) break;
      const r = await simulateOne(failing.seed, failing.variant, { shape: opts.shape, schedule: candidate, ...(opts.workload ? { workload: opts.workload } : {}) });
      if (verdictOf(r) !== want) continue;
      best = r;
      improved = true;
      break;
    }
  }
  return {
    schedule: best.schedule,
    run: best,
    tries,
    before: { faults: faultCount(failing.schedule), events: failing.events },
    after: { faults: faultCount(best.schedule), events: best.events },
  };
}
