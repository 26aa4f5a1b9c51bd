// tier: full
/**
 * The bounded simulation `npm test` runs (the long runs are `npm run simulate`): small schedules
 * of the real protocol in the deterministic simulator pass every invariant; a seed replays to the
 * same digest; a failing run shrinks and its saved schedule replays; and a simulated run opens
 * no socket. That the simulator catches every negative control is test/chaos.test.ts's: each
 * control runs there in the simulator, on the chaos shape, and must fail the invariant it breaks.
 */
import net from 'node:net';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { simulateOne } from './sim/run.js';
import { comparedShapes } from './sim/dynamodb/shape.js';
import { runTask } from './sim/task.js';
import { cli as simulateEntry, simPlan } from './sim/main.js';
import { summarize, summaryLines } from './sim/summary.js';
import { controlCannotShow } from './chaos/controls.js';
import { workloadNamed } from '../lib/workloads/index.js';
import { expectOneLineError, inProcess, tsx } from './support/spawn.js';

/** Seeds of the bounded run: enough to cross both lease modes, drills, skews and successor crashes. */
const SEEDS = Array.from({ length: 3 }, (_, i) => 1 + i);
/** Each seed's digest and event count in the bounded run: the replay test compares against them. */
const digests = new Map<number, string>();
const events = new Map<number, number>();

describe('the deterministic simulator (bounded)', () => {
  it('runs small schedules of the real protocol with every invariant holding, and opens no socket', async () => {
    const connect = net.Socket.prototype.connect;
    let sockets = 0;
    net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
      sockets++;
      return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
    } as typeof connect;
    try {
      for (const seed of SEEDS) {
        const r = await simulateOne(seed, 'fenced', { shape: seed % 4 === 3 ? 'sharded' : 'small' });
        digests.set(seed, r.digest);
        events.set(seed, r.events);
        expect({ seed, failed: r.failed, unsupported: r.unsupported, world: r.worldError }).toEqual({ seed, failed: [], unsupported: [], world: undefined });
        expect(r.ok).toBe(true);
      }
    } finally {
      net.Socket.prototype.connect = connect;
    }
    expect(sockets).toBe(0);
  }, 120_000);

  it('refuses, as unsupported, a request shape the fidelity test never compared: the run is void, never a pass', async () => {
    const withoutQueries = new Set([...comparedShapes()].filter((s) => !s.startsWith('Query ')));
    const r = await simulateOne(1, 'fenced', { shape: 'small', shapes: withoutQueries });
    expect(r.ok).toBe(false);
    expect(r.unsupported.filter((u) => /a request shape the fidelity test never compared against DynamoDB Local: Query /.test(u)).length).toBeGreaterThan(0);
  }, 60_000);

  it('replays a seed exactly: the same history, report and faults, twice', async () => {
    // The bounded run's seed 2 is the first run; this is its replay, in the same process after
    // other seeds ran (so nothing a run leaves behind changes the next).
    const again = await simulateOne(2, 'fenced', { shape: 'small' });
    expect(again.digest).toBe(digests.get(2));
    expect(again.events).toBe(events.get(2));
    expect(digests.get(1)).not.toBe(again.digest);
  }, 60_000);

  it('simulates a fork\'s workload for free: the reports sample under the same schedules, and a control caught on it', async () => {
    const reports = workloadNamed('reports');
    const run = await simulateOne(1, 'fenced', { shape: 'small', workload: reports, keepRecord: true });
    expect({ failed: run.failed, unsupported: run.unsupported, world: run.worldError }).toEqual({ failed: [], unsupported: [], world: undefined });
    expect(run.record?.report.stats.records).toBe(run.record?.report.stats.expectedRecords);
    expect(run.record?.report.stats.figures).toHaveProperty('reports');
    const control = await simulateOne(2, 'documentInPlace', { shape: 'small', workload: reports });
    expect(control.failed.map((f) => f.name)).toContain('DOCS');
    // A control its mistake cannot show in (no emails in the reports sample) is not run for it.
    const plan = simPlan(['--schedules', '1', '--workload', 'reports', '--control-schedules', '1']) as Exclude<ReturnType<typeof simPlan>, 'help'>;
    expect(plan.tasks.map((t) => t.variant)).not.toContain('sendFromWorker');
    expect(plan.tasks.every((t) => t.workload === 'reports')).toBe(true);
    // ...and the summary says which were not run, and why.
    expect(plan.skippedControls).toEqual([
      { control: 'sendFromWorker', why: 'its units create no email' },
      { control: 'wrongRecipient', why: 'it sends no email' },
      { control: 'receiptOnDecline', why: 'none of its steps follows both an acceptance and a decline' },
      { control: 'followUpTwice', why: 'it declares no steps' },
      { control: 'followUpBeforeSettle', why: 'it declares no steps' },
      { control: 'bounceOnComplaint', why: 'none of its steps follows a bounce' },
    ]);
    expect(summaryLines(summarize(plan, [], 1_000))).toContain('  control sendFromWorker: not run, its units create no email');
    // The default workload is judged alike: the invoice sample follows no bounce, so bounceOnComplaint is listed, not run and "not caught".
    const invoicesPlan = simPlan(['--schedules', '1', '--control-schedules', '1']) as Exclude<ReturnType<typeof simPlan>, 'help'>;
    expect(invoicesPlan.skippedControls).toEqual([{ control: 'bounceOnComplaint', why: 'none of its steps follows a bounce' }]);
    expect(invoicesPlan.tasks.map((t) => t.variant)).not.toContain('bounceOnComplaint');
    // A workload that sends email only as its steps' follow-ups (a receipt after a charge): the worker has none to send itself, read off its checks.
    const stepsOnly = { ...reports, outbox: { ...reports.outbox, email: true } };
    expect(controlCannotShow('sendFromWorker', stepsOnly)).toBe('its units create no email (only its steps do)');
    expect(controlCannotShow('wrongRecipient', stepsOnly)).toBeUndefined();
  }, 60_000);

  it('runs the protocol alone in the protocol shape: its own workload (records only), no stream, reconciler or collector; its controls caught', async () => {
    const run = await simulateOne(4, 'fenced', { shape: 'protocol', keepRecord: true });
    expect({ failed: run.failed, unsupported: run.unsupported, world: run.worldError }).toEqual({ failed: [], unsupported: [], world: undefined });
    expect(run.record?.report.stats.records).toBe(run.record?.report.stats.expectedRecords);
    expect(run.record?.report.stats.records).toBeGreaterThan(0);
    // No outbox item, no reconciler pass, and the incident's race still hit: a successor took over the stalled holder's lease.
    expect(run.record?.history.some((l) => l.includes('"message":"reconcile-done"'))).toBe(false);
    expect(run.record?.metrics.LeaseTakeover ?? 0).toBeGreaterThan(0);
    const control = await simulateOne(4, 'leaseOnly', { shape: 'protocol' });
    expect(control.ok).toBe(true);
    expect(control.failed.map((f) => f.name)).toContain('FENCE');
    // Only the protocol's controls are run on it; a fork's workload cannot be asked for in that shape.
    const plan = simPlan(['--schedules', '1', '--shape', 'protocol', '--control-schedules', '1']) as Exclude<ReturnType<typeof simPlan>, 'help'>;
    expect([...new Set(plan.tasks.map((t) => t.variant))]).toEqual(['fenced', 'leaseOnly', 'checkThenAct', 'separateFenceWrite', 'counterReset', 'fenceBypass', 'claimOnSweeperCount']);
    expect(plan.workload).toBe('ledger');
    expect(() => simPlan(['--shape', 'protocol', '--workload', 'reports'])).toThrow(/the protocol shape runs its own workload/);
  }, 60_000);

  it('refuses bad input in one line, exit 2, and runs nothing', async () => {
    // One as its own process (the script's wiring), the others through its entry in this process.
    expectOneLineError(await tsx('test/sim/main.ts', ['--workload', 'nope']), '--workload');
    expectOneLineError(await inProcess(simulateEntry, ['--replay', 'no-such-file.json']), '--replay');
    const bad = await inProcess(simulateEntry, ['--schedules', 'x']);
    expectOneLineError(bad, '--schedules');
    // The flag as the user typed it (red before: "----schedules").
    expect(bad.stderr).toMatch(/(^|\s)--schedules: must be an integer/);
    expect(() => simPlan(['--controls', 'nope'])).toThrow(/--controls: unknown control "nope"/);
  }, 60_000);

  it('shrinks a failing run, saves it, and its replay fails the same way', async () => {
    // A control's catch is the failure to keep: the leaseOnly control breaks FENCE.
    const dir = mkdtempSync(join(tmpdir(), 'sim-'));
    const out = await runTask({ seed: 2, variant: 'leaseOnly', shape: 'small' }, dir, { shrinkCaught: true, shrinkTries: 3 });
    expect(out.saved).toBeDefined();
    const saved = JSON.parse(readFileSync(out.saved!.file, 'utf8')) as { shrunk: { after: { faults: number }; before: { faults: number } } };
    expect(saved.shrunk.after.faults).toBeLessThan(saved.shrunk.before.faults);
    const plan = simPlan(['--replay', out.saved!.file]) as Exclude<ReturnType<typeof simPlan>, 'help'>;
    const replayed = await runTask(plan.tasks[0]!, undefined);
    expect(replayed.ok).toBe(true); // still caught, from the shrunk schedule alone
    expect(replayed.failed).toContain('FENCE');
  }, 120_000);
});
