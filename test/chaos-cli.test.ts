// tier: full
/**
 * `npm run chaos` as a person replays a seed: `--runs 1 --seed S` (or `--replay S`) runs that one
 * seed and no controls; `--replay CONTROL@S` the control run an uncaught control printed; a
 * summary shows only what ran, never "caught 0/0 (0%)" or "NaN runs/min".
 */
import { describe, expect, inject, it } from 'vitest';
import { InvalidInputError } from '../lib/protocol/index.js';
import { CONTROLS } from './chaos/controls.js';
import { chaos, chaosPlan, cli as chaosEntry, summaryLines, type ChaosSummary } from './chaos/main.js';
import { expectOneLineError, inProcess, tsx } from './support/spawn.js';

/** A summary as chaos() makes it (a run of nothing starts no DynamoDB Local), with some fields set. */
const summary = async (over: Partial<ChaosSummary>): Promise<ChaosSummary> => ({
  ...(await chaos({ runs: 0, seed: 1, controlRuns: 0, concurrency: 1, endpoint: 'http://127.0.0.1:9' })),
  ...over,
});

describe('what a chaos command runs', () => {
  it('--runs 1 --seed S is a replay of S alone; --replay names one run, of the protocol or of a control', () => {
    expect(chaosPlan({ runs: '1', seed: '417' })).toEqual({ runs: 1, seed: 417, controlRuns: 0, controls: CONTROLS });
    expect(chaosPlan({ replay: '417' })).toEqual({ runs: 1, seed: 417, controlRuns: 0, controls: [] });
    expect(chaosPlan({ replay: 'checkThenAct@5003' })).toEqual({ runs: 0, seed: 5003, controlRuns: 1, controls: ['checkThenAct'] });
    // Asked for: controls with one run.
    expect(chaosPlan({ runs: '1', seed: '417', 'control-runs': '2' })).toMatchObject({ runs: 1, controlRuns: 2 });
    // A subset of the controls, by name; an unknown name is refused in one line.
    expect(chaosPlan({ runs: '0', 'control-runs': '5', controls: 'fenceBypass,claimOnSweeperCount' })).toMatchObject({ controls: ['fenceBypass', 'claimOnSweeperCount'] });
    expect(() => chaosPlan({ runs: '0', 'control-runs': '5', controls: 'fenceBypass,nope' })).toThrow(/--controls: must be a comma-separated list of leaseOnly, .*got "fenceBypass,nope"/);
    // A longer run carries its controls, as before.
    expect(chaosPlan({ runs: '20' })).toMatchObject({ runs: 20, seed: 1, controlRuns: 10 });
    expect(chaosPlan({ runs: '1000' })).toMatchObject({ controlRuns: 100 });
  });

  it('refuses what would run nothing or is ambiguous', () => {
    expect(() => chaosPlan({ runs: '0', 'no-controls': true })).toThrow(InvalidInputError);
    expect(() => chaosPlan({ runs: '0', 'no-controls': true })).toThrow(/nothing to run/);
    expect(() => chaosPlan({ replay: 'nope@3' })).toThrow(/--replay: must be a seed/);
    expect(() => chaosPlan({ replay: '3', runs: '5' })).toThrow(/leave out --runs/);
  });
});

describe('the chaos summary', () => {
  it('without controls it says they did not run, and one run has no rate', async () => {
    const faults = { 'a duplicate stream delivery': 1, 'paused between read and write': 1 };
    const text = summaryLines(await summary({ runs: 1, elapsedMs: 9_000, runsPerMinute: 6.7, fenceRefusals: { runs: 1, writes: 1 }, faults })).join('\n');
    expect(text).toContain('1 run of the real protocol: violations FENCE=0 ONCE=0 PROGRESS=0 TOKENS=0 DOCS=0 DELIVERY=0 CHAIN=0 RUNS=0 LEASE=0');
    expect(text).toContain('faults fired (runs): a duplicate stream delivery 1; paused between read and write 1');
    expect(text).toContain('documents 0 written, 0 referenced, 0 orphaned, 0 collected; emails 0 queued, 0 received, 0 duplicated (0 ambiguous sends); payments 0 performed for 0 requests');
    expect(text).toContain('negative controls: not run');
    expect(text).not.toMatch(/0\/0|NaN|runs\/min/);
  });

  it('a controls-only run prints no protocol line, and each control that ran', async () => {
    const controls = { ...(await summary({})).controls, checkThenAct: { runs: 1, caught: 1, forced: { runs: 0, caught: 0 }, timed: { runs: 1, caught: 1 }, byWire: { runs: 1, caught: 1 } } };
    const text = summaryLines(await summary({ controls, elapsedMs: 5_000 })).join('\n');
    expect(text).not.toContain('runs of the real protocol');
    expect(text).toMatch(/control checkThenAct\s+caught 1\/1 \(100%\): timed 1\/1 \(100%\), on the wire 1\/1 \(100%\)$/m);
    expect(text).not.toMatch(/leaseOnly|0\/0|NaN/);
  });
});

describe('npm run chaos -- --runs 1 --seed S', () => {
  it('runs exactly that seed: one run, no controls', async () => {
    const r = await tsx('test/chaos/main.ts', ['--runs', '1', '--seed', '4170', '--json', '--endpoint', inject('dynamoEndpoint')], { killAfterMs: 80_000 });
    expect(r.code, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout);
    expect(s.runs).toBe(1);
    for (const c of CONTROLS) expect(s.controls[c], c).toEqual({ runs: 0, caught: 0, forced: { runs: 0, caught: 0 }, timed: { runs: 0, caught: 0 }, byWire: { runs: 0, caught: 0 } });
    // The structural FENCE check ran on that run's wire, and found the protocol's transactions whole.
    expect(s.wire).toMatchObject({ runs: 1, violations: 0 });
    expect(s.wire.effectWritesChecked).toBeGreaterThan(s.wire.transactions);
    expect(s.failedSeeds).toEqual([]);
    // The article's incident and every fault of the external effects fired (not only armed) in that run.
    expect(s.faults).toMatchObject(
      Object.fromEntries(
        [
          'paused between read and write',
          'an S3 put answer lost (the retry meets 412, resolved by HEAD)',
          'a duplicate stream delivery',
          'two senders racing for one batch',
          'an SMTP acknowledgement lost (an ambiguous send)',
          "a payment provider's answer lost (the resend with its Idempotency-Key is replayed)",
          'email and payment providers down',
          'sender killed after the provider accepted',
        ].map((f) => [f, 1]),
      ),
    );
    // The effects the checker counted in the bucket, the sink and the provider are summed in the summary.
    const { documents, emails, payments } = s.effects;
    expect(documents.referenced).toBeGreaterThan(0);
    expect(documents.written).toBeGreaterThanOrEqual(documents.referenced);
    expect(emails.delivered).toBeGreaterThan(0);
    expect(emails.duplicated).toBeLessThanOrEqual(emails.ambiguous);
    expect(payments.performed).toBeGreaterThan(0);
  }, 90_000);

  it('refuses --runs 0 --no-controls in one line', async () => {
    // Its entry in this process: cli-errors.test.ts runs the script as its own process once.
    expectOneLineError(await inProcess(chaosEntry, ['--runs', '0', '--no-controls']), '--runs: nothing to run');
  });
});

describe('npm run chaos -- --workload NAME', () => {
  it("runs a registered workload's runs; the controls whose mistake cannot show in it are listed with why, not run; an unknown name is refused in one line", async () => {
    const r = await inProcess(chaosEntry, ['--workload', 'renewals', '--runs', '0', '--control-runs', '1', '--controls', 'sendFromWorker,documentInPlace']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('control sendFromWorker: not run, its units create no email (only its steps do)');
    expect(r.stdout).toContain('control documentInPlace: not run, its units write no documents');
    expect(r.stdout).toContain('negative controls: not run');
    expectOneLineError(await inProcess(chaosEntry, ['--workload', 'nope', '--runs', '1']), '--workload');
    // A failing seed or an uncaught control names the workload in its replay line.
    const uncaught = summaryLines(await summary({ uncaughtControls: [{ variant: 'wrongRecipient', seed: 7 }], failedSeeds: [3] }), 'renewals').join('\n');
    expect(uncaught).toContain('(replay one: --replay 3 --workload renewals)');
    expect(uncaught).toContain('(replay one: --replay wrongRecipient@7 --workload renewals)');
    // What the steps did, when there were any: the chains' own line.
    const base = await summary({});
    const chained = summaryLines({ ...base, runs: 1, effects: { ...base.effects, chains: { followUps: 12, accepted: 10, refusedForGood: 2, bounced: 0, declined: 2 } } }).join('\n');
    expect(chained).toContain('steps: 12 follow-ups created, 10 after an acceptance, 2 after a decline (the provider declined 2), 0 after a hard bounce');
    expect(summaryLines({ ...base, runs: 1 }).join('\n')).not.toContain('steps:');
  });
});
