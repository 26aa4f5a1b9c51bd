/**
 * The bounded simulation `npm test` runs (the long runs are `npm run simulate`): small schedules
 * of the real protocol in the deterministic simulator pass every invariant; a seed replays to the
 * same digest; every negative control is caught; a failing run shrinks and its saved schedule
 * replays; and a simulated run opens no socket.
 */
import net from 'node:net';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTROLS } from './chaos/controls.js';
import { simulateOne } from './sim/run.js';
import { runTask } from './sim/task.js';
import { simPlan } from './sim/main.js';

/** Seeds of the bounded run: enough to cross both lease modes, drills, skews and successor crashes. */
const SEEDS = Array.from({ length: 12 }, (_, i) => 1 + i);

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
        expect({ seed, failed: r.failed, unsupported: r.unsupported, world: r.worldError }).toEqual({ seed, failed: [], unsupported: [], world: undefined });
        expect(r.ok).toBe(true);
      }
    } finally {
      net.Socket.prototype.connect = connect;
    }
    expect(sockets).toBe(0);
  }, 120_000);

  it('replays a seed exactly: the same history, report and faults, twice', async () => {
    const a = await simulateOne(5, 'fenced', { shape: 'small' });
    const b = await simulateOne(5, 'fenced', { shape: 'small' });
    const c = await simulateOne(6, 'fenced', { shape: 'small' });
    expect(b.digest).toBe(a.digest);
    expect(b.events).toBe(a.events);
    expect(c.digest).not.toBe(a.digest);
  }, 60_000);

  it.each(CONTROLS)('catches the %s control on a forcing seed', async (variant) => {
    const r = await simulateOne(2, variant, { shape: 'small' });
    expect({ variant, caught: r.ok, failed: r.failed.map((f) => f.name), world: r.worldError }).toMatchObject({ variant, caught: true });
  }, 60_000);

  it('shrinks a failing run, saves it, and its replay fails the same way', async () => {
    // A control's catch is the failure to keep: the leaseOnly control breaks FENCE.
    const dir = mkdtempSync(join(tmpdir(), 'sim-'));
    const out = await runTask({ seed: 2, variant: 'leaseOnly', shape: 'small' }, dir, { shrinkCaught: true });
    expect(out.saved).toBeDefined();
    const saved = JSON.parse(readFileSync(out.saved!.file, 'utf8')) as { shrunk: { after: { faults: number }; before: { faults: number } } };
    expect(saved.shrunk.after.faults).toBeLessThan(saved.shrunk.before.faults);
    const plan = simPlan(['--replay', out.saved!.file]) as Exclude<ReturnType<typeof simPlan>, 'help'>;
    const replayed = await runTask(plan.tasks[0]!, undefined);
    expect(replayed.ok).toBe(true); // still caught, from the shrunk schedule alone
    expect(replayed.failed).toContain('FENCE');
  }, 120_000);
});
