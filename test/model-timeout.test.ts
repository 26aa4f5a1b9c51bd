// tier: full
/**
 * A check that hits its time limit is not a counterexample: `npm run model` says TIMEOUT (not a
 * counterexample), names the --timeout to rerun with, and exits 3, not 1 (which means a check
 * came out wrong). Held against a real run with a limit too small to finish (1 s for safe-seal,
 * whose full search takes minutes), so no long verification runs here.
 */
import { describe, expect, it } from 'vitest';
import { defaultTimeoutSec, EXIT, formatTable, runModel, VARIANTS, verdictLine } from '../model/run.js';
import { TIMEOUT_FLOOR_SEC } from '../model/variants.js';
import { tsx } from './support/spawn.js';

describe('model check time limits', () => {
  it('reports a check cut off by its limit as TIMEOUT, not as a failure, and exits 3', async () => {
    const report = await runModel({ only: ['safe-seal', 'NO_FENCE'], timeoutSec: 1, jobs: 2 });
    const seal = report.variants['safe-seal']!;
    expect(seal.checks.safety?.timedOut).toBe(true);
    expect(seal.timedOut).toBe(true);
    expect(report.ok).toBe(false);
    expect(report.verdict).toBe('timeout');
    const { code, line } = verdictLine(report);
    expect(code).toBe(EXIT.timeout);
    expect(line).toMatch(/^TIMEOUT \(not a counterexample\): rerun with --timeout 2\b/);
    const table = formatTable(report);
    expect(table).toContain('TIMEOUT (not a counterexample): rerun with --timeout');
    expect(table).not.toMatch(/UNEXPECTED|FAILED/);
  }, 60_000);

  it('npm run model exits 3 on a timeout and says so', async () => {
    const r = await tsx('model/run.ts', ['--only', 'safe-seal', '--timeout', '1']);
    expect(r.code, r.stderr).toBe(EXIT.timeout);
    expect(r.stdout).toMatch(/TIMEOUT \(not a counterexample\): rerun with --timeout \d+/);
    expect(r.stdout + r.stderr).not.toMatch(/UNEXPECTED|FAILED/);
    const help = await tsx('model/run.ts', ['--help']);
    expect(help.stdout).toMatch(/3 TIMEOUT only/);
  }, 60_000);

  it('a wrong result outranks a timeout: exit 1', () => {
    const report = { variants: {}, verdict: 'unexpected' } as unknown as Parameters<typeof verdictLine>[0];
    expect(verdictLine(report).code).toBe(EXIT.unexpected);
  });

  it('sizes each verification’s default limit from its measured states, past what a loaded 2-core machine took', () => {
    for (const v of VARIANTS.filter((x) => x.expect === 'verify')) {
      for (const kind of v.checks) expect(v.measuredStates?.[kind], `${v.name} ${kind} has no measured states`).toBeGreaterThan(0);
    }
    const seal = VARIANTS.find((v) => v.name === 'safe-seal')!;
    const vw = VARIANTS.find((v) => v.name === 'safe-vw')!;
    // Measured at load 6-8 on 2 cores: safe-seal 151 s, safe-vw liveness 199 s (model/README.md); the old limit was 120 s.
    expect(defaultTimeoutSec(seal, 'safety', 'full')).toBeGreaterThan(2 * 151);
    expect(defaultTimeoutSec(vw, 'liveness', 'full')).toBeGreaterThan(2 * 199);
    expect(defaultTimeoutSec(seal, 'safety', 'quick')).toBe(TIMEOUT_FLOOR_SEC);
    expect(defaultTimeoutSec(seal, 'safety', 'full', ['LAPSES=2'])).toBe(TIMEOUT_FLOOR_SEC);
  });
});
