// tier: full
/**
 * A small fixed chaos set in `npm test` (the long runs are `npm run chaos` on DynamoDB Local and
 * `npm run simulate`): the chaos harness's runs of the real handlers, in the simulator's virtual
 * time (test/sim), keep every invariant under their seeded faults, and every negative control is
 * caught by the same independent checker: the evidence that the checker has teeth. In virtual
 * time no verdict here depends on the machine's speed; the real engine under real time is `.ci/run`'s
 * short `npm run chaos`.
 */
import { describe, expect, it } from 'vitest';
import { METRIC } from '../lib/workflow/index.js';
import { DEFAULT_WORKLOAD, WORKLOADS } from '../lib/workloads/index.js';
import { BREAKS, controlAppliesTo, CONTROLS } from './chaos/controls.js';
import { RESTART_FAULT, type RunRecord } from './chaos/harness.js';
import { RUNS_SHORT, withInvocationRunningShort } from './chaos/schedule.js';
import { simSchedule, simulateOne } from './sim/run.js';
import { stallVerdict } from './chaos/stall-verdict.js';
import { recordAwsCalls } from '../cli/local/aws-calls.js';
import { StackIam, type TemplateJson } from './infra/iam-eval.js';
import { templateOf } from './infra/support.js';

/**
 * The real protocol's seeds, each schedule exactly as `npm run chaos` draws it (the simulator's
 * shape `chaos`): 100 version-watch, the successor crashing after its fence raise, a restart with
 * another input; 101 wall-clock with clock skew beyond the bound; 102 version-watch, the successor
 * committing the paused unit; 103 wall-clock with throttling and conflicts, and an invocation
 * running short (a hand-off); 110 wall-clock, the payment provider down past its key retention
 * after a lost answer; 189 a DR drill in wall-clock mode; 305 a DR drill in version-watch mode (a
 * drill drawn late, as seed 104's at 3.7 s, can fall after the run has ended in virtual time: the
 * drill assertion and COVERS then fail). COVERS below holds the set to these claims.
 */
const SEEDS = [100, 101, 102, 103, 110, 189, 305];
const HAND_OFF_SEED = 103;

/** How a stalled worker's late write ends: refused by the fence, or given up (lease lost or unsafe to retry). */
const STOPPED = /"message":"(commit-rejected|commit-uncertain|commit-contended|lease-uncertain|lease-lost|superseded)"/;

const skewBeyondBound = (r: RunRecord) => r.schedule.skews.some((s) => Math.abs(s) > r.schedule.maxClockSkewMs / 2);
/** Each case the seeds are chosen for, seen in a run's record: a set where no run shows one fails. */
const COVERS: Record<string, (r: RunRecord) => boolean> = {
  'version-watch leases': (r) => r.schedule.leaseMode === 'version-watch',
  'wall-clock leases': (r) => r.schedule.leaseMode === 'wall-clock',
  'the successor crashing after its fence raise': (r) => r.faultsFired.includes('successor crashes after its fence raise'),
  'the successor committing the paused unit': (r) => r.schedule.incident === 'successor-commits',
  'clock skew beyond the bound': skewBeyondBound,
  'throttling and transaction conflicts': (r) => r.schedule.throttleP > 0 && r.schedule.conflictP > 0,
  'a DR drill in version-watch mode': (r) => r.drill !== undefined && r.schedule.leaseMode === 'version-watch',
  'a DR drill in wall-clock mode': (r) => r.drill !== undefined && r.schedule.leaseMode === 'wall-clock',
  'the payment provider down past its key retention': (r) => r.faultsFired.includes('the payment provider down past its key retention after an answer lost'),
  'a running period started again with another input': (r) => r.faultsFired.includes(RESTART_FAULT),
  'a duplicate start message': (r) => r.history.some((h) => h.includes(' DUPLICATE ')),
  'a worker handing off when its invocation runs short': (r) => r.faultsFired.includes(RUNS_SHORT) && r.history.some((h) => h.includes('"message":"handed-off"')),
  'an S3 put answer lost, its resend refused (412) and resolved': (r) => r.faultsFired.includes('an S3 put answer lost (the retry meets 412, resolved by HEAD)'),
};

/** The set's cases no run of it showed. */
export const uncovered = (runs: readonly RunRecord[]): string[] => Object.entries(COVERS).filter(([, shows]) => !runs.some(shows)).map(([name]) => name);

/**
 * Records of this file's runs that the verdict test reuses (vitest runs a file's tests in order):
 * a run of the real protocol and the leaseOnly control's. Run alone (-t), it makes its own.
 */
const kept: { real?: RunRecord; control?: RunRecord } = {};

describe('chaos (fixed seeds, virtual time)', () => {
  it(`seeds ${SEEDS.join(', ')}: the real protocol keeps FENCE, ONCE, PROGRESS, TOKENS, DOCS, DELIVERY, RUNS and no lease held by two; the fence refuses the stale writes; every call is granted`, async () => {
    // Every AWS call of the runs, evaluated against the synthesized stack (test/infra/iam-calls.test.ts does the same for npm start's run).
    const stack = new StackIam(templateOf().template.toJSON() as TemplateJson);
    const calls = recordAwsCalls(stack.arnNames());
    const runs: RunRecord[] = [];
    // One world per process: the seeds run one after another.
    for (const seed of SEEDS) {
      const drawn = simSchedule(seed, 'fenced', 'chaos');
      const schedule = seed === HAND_OFF_SEED ? withInvocationRunningShort(drawn) : drawn;
      const sim = await simulateOne(seed, 'fenced', { shape: 'chaos', schedule, keepRecord: true, calls });
      expect({ seed, unsupported: sim.unsupported, world: sim.worldError }).toEqual({ seed, unsupported: [], world: undefined });
      runs.push(sim.record!);
    }
    kept.real = runs[0];
    for (const r of runs) {
      const story = `seed ${r.seed}: ${r.history.slice(-40).join('\n')}`;
      expect(r.error, story).toBeUndefined();
      expect(Object.fromEntries(Object.entries(r.report.invariants).map(([k, v]) => [k, v.violations])), story).toEqual({ FENCE: [], ONCE: [], PROGRESS: [], TOKENS: [], DOCS: [], DELIVERY: [], CHAIN: [], RUNS: [] });
      expect(r.leaseViolation, story).toBe(false);
      // The schedule's incident really happened.
      expect(r.faultsFired, story).toContain('paused between read and write');
      if (r.schedule.incident === 'successor-crashes') expect(r.faultsFired, story).toContain('successor crashes after its fence raise');
      // And the external effects' faults fired, not only were armed.
      for (const f of ['a duplicate stream delivery', 'two senders racing for one batch', 'an SMTP acknowledgement lost (an ambiguous send)', 'sender killed after the provider accepted']) expect(r.faultsFired, story).toContain(f);
      if (r.schedule.drill !== undefined) expect(r.drill?.reports.map((x) => x.table), story).toEqual([expect.stringMatching(/leases$/), expect.stringMatching(/fences$/)]);
    }
    expect(uncovered(runs), 'cases no seed of the set shows').toEqual([]);
    // The paused worker woke, tried its write and was stopped: refused by the fence, or given up
    // as uncertain when the wire's fault on that one late request (a lost response, an injected
    // conflict) left its expired lease unsafe to retry. Which of the two a seed shows depends on
    // the order of requests, so per seed the test asserts the write was stopped, and across the
    // set that the fence refused at least one (the long runs report the rate: fenceRefusals).
    for (const r of runs) {
      const ends = r.history.filter((l) => l.includes(`"owner":"${r.stalledOwner}"`) && STOPPED.test(l));
      expect(ends.length, `seed ${r.seed}: the stalled ${r.stalledOwner} was never stopped\n${r.history.slice(-40).join('\n')}`).toBeGreaterThan(0);
    }
    const refused = runs.filter((r) => (r.metrics[METRIC.staleGenerationRejected] ?? 0) >= 1).map((r) => r.seed);
    expect(refused.length, `seeds whose fence refused a stale write: ${refused.join(' ')}`).toBeGreaterThanOrEqual(1);
    // The drills' raise-epoch and seal are the operator's (counterWriters), not a function's: unrecorded.
    const { decisions, denied } = await stack.evaluate(calls.records);
    process.stdout.write(`IAM from the chaos calls: ${calls.records.length} calls, ${decisions.length} distinct, ${decisions.length - denied.length} allowed\n`);
    expect(denied, `${decisions.length} distinct calls of the chaos runs`).toEqual([]);
    // The grants only these paths reach were evaluated: the hand-off's SendMessage, the HEAD after a refused put (s3:GetObject).
    const evaluated = new Set(decisions.map((d) => `${d.fn} ${d.auth.action}`));
    expect(['worker sqs:SendMessage', 'worker s3:GetObject', 'worker s3:PutObject'].filter((a) => !evaluated.has(a))).toEqual([]);
  }, 300_000);

  it('holds the set to its cases: a set without a drill, or without the hand-off, fails', () => {
    const fake = (over: Partial<RunRecord>): RunRecord => ({ schedule: simSchedule(102, 'fenced', 'chaos'), faultsFired: [], history: [], ...over }) as RunRecord;
    const all = uncovered([fake({})]);
    expect(all).toContain('a DR drill in version-watch mode');
    expect(all).toContain('a worker handing off when its invocation runs short');
    const drilled = fake({ drill: { sealedAtMs: 1, reports: [] } });
    expect(uncovered([drilled])).not.toContain('a DR drill in version-watch mode');
    expect(uncovered([drilled])).toContain('a DR drill in wall-clock mode');
  });

  // Each control once, both ways across the set: the incident's interleaving forced (seed 102,
  // even) for every other control, left to timing (seed 103, odd) for the rest, on the first
  // registered workload its mistake can show in. The long runs (`npm run chaos`, `npm run
  // simulate`) run every control both ways on many seeds.
  const showsIn = (c: (typeof CONTROLS)[number]) => WORKLOADS.find((w) => controlAppliesTo(c, w))!;
  it.each(CONTROLS.map((c, i) => [c, i % 2 === 0 ? 102 : 103, BREAKS[c], showsIn(c).name] as const))('negative control %s (seed %i) is caught by the checker (%s, workload %s)', async (variant, seed, expected) => {
    const workload = showsIn(variant);
    const sim = await simulateOne(seed, variant, { shape: 'chaos', keepRecord: true, ...(workload.name === DEFAULT_WORKLOAD ? {} : { workload }) });
    expect({ unsupported: sim.unsupported, world: sim.worldError }).toEqual({ unsupported: [], world: undefined });
    const r = sim.record!;
    if (variant === 'leaseOnly') kept.control = r;
    if (expected === 'LEASE') {
      expect(r.leaseViolation, JSON.stringify(r.report.takeovers)).toBe(true);
    } else {
      expect(r.report.ok).toBe(false);
      expect(r.report.invariants[expected].ok, JSON.stringify(r.report.invariants)).toBe(false);
    }
  }, 120_000);

  // The verdict `.ci/run`'s short real-time run (`npm run chaos -- --stalls-allowed`) is judged by.
  it('the short real-time run\'s verdict: a control fails it, stalled or not; a stall of the real protocol does not, unless no run finished', async () => {
    const stall = (r: RunRecord, pending: string): RunRecord => ({
      ...r,
      history: [...r.history, 'DEADLINE with jobs j:RUNNING:1/3'],
      report: { ...r.report, invariants: { ...r.report.invariants, PROGRESS: { ok: false, violations: ['job j: status RUNNING at cursor 1/3'] }, DELIVERY: { ok: false, violations: [`${pending}: ends PENDING, not delivered`] } } },
    });
    const control = kept.control ?? (await simulateOne(2, 'leaseOnly', { shape: 'small', keepRecord: true })).record!;
    const real = kept.real ?? (await simulateOne(1, 'fenced', { shape: 'small', keepRecord: true })).record!;
    const [r, c] = [real.seed, control.seed];
    expect(stallVerdict([real])).toEqual({ finished: [r], stalled: [], failures: [] });
    // A broken protocol fails it, finished or cut short: its partial state is checked for safety.
    expect(stallVerdict([real, control]).failures).toContainEqual(expect.stringMatching(new RegExp(`^seed ${c}: FENCE `)));
    expect(stallVerdict([real, stall(control, 'email#x')]).failures).toContainEqual(expect.stringMatching(new RegExp(`^seed ${c}: FENCE `)));
    // The real protocol cut short: a stall, its undelivered items and unfinished jobs no failure.
    const slow = stall(real, 'email#y');
    expect(stallVerdict([real, { ...slow, seed: 7 }])).toEqual({ finished: [r], stalled: [7], failures: [] });
    // But at least one run must finish, and a run that was not cut short must have made progress.
    expect(stallVerdict([slow]).failures).toEqual([expect.stringMatching(/^no run finished/)]);
    const stuck = { ...real, report: { ...real.report, invariants: { ...real.report.invariants, PROGRESS: { ok: false, violations: ['job j: status RUNNING at cursor 1/3'] } } } };
    expect(stallVerdict([stuck]).failures).toEqual([expect.stringMatching(new RegExp(`^seed ${r}: PROGRESS `))]);
    // A duplicate delivery is safety: never excused by a stall.
    const twice = stall(real, 'email#z');
    twice.report.invariants.DELIVERY.violations.push('email#z: the provider received 2 messages; 0 recorded ambiguous send(s) not caused by a premature takeover explain at most 1');
    expect(stallVerdict([real, twice]).failures).toEqual([expect.stringMatching(new RegExp(`^seed ${r}: DELIVERY email#z: the provider received 2 messages`))]);
  }, 60_000);
});
