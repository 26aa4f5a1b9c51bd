// tier: full
/**
 * The model check (model/fenced.pml, model/effects.pml, model/run.ts) as a test: the safe
 * protocol verifies for safety (FENCE, ONCE, TOKENS, EXCL, end state) and for liveness (PROGRESS
 * under weak fairness), the documents and the outbox verify for DOCS and DELIVERY, and every
 * broken variant is refuted with a counterexample trail.
 *
 * Runs the runner's function directly, with its quick bounds (same variants, smaller bounds
 * where a check is expensive). Nothing is skipped: without spin the test FAILS, saying how to
 * install it (CI's .ci/run installs it with apt).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runModel, VARIANTS, type ModelReport } from '../model/run.js';

const BROKEN = ['NO_FENCE', 'CHECK_THEN_ACT', 'RELEASE_NO_GEN', 'COUNTER_RESET', 'SWEEPER_COUNT', 'SEAL_SKIPS_ABSENT', 'sendFromWorker', 'documentInPlace', 'collectPointerFirst'] as const;
const SAFE_EFFECTS = ['effects', 'effects-2u', 'effects-2r', 'effects-collect'] as const;

describe('model check (spin)', () => {
  let report: ModelReport;
  const trails = mkdtempSync(join(tmpdir(), 'model-test-trails-'));

  beforeAll(async () => {
    try {
      report = await runModel({ profile: 'quick', trailsDir: trails, jobs: 2, timeoutSec: 90 });
    } catch (e) {
      // ToolMissingError carries the install hint; fail loudly rather than skip.
      throw new Error(`model check could not run: ${(e as Error).message}`, { cause: e });
    }
  }, 180_000);

  afterAll(() => {
    rmSync(trails, { recursive: true, force: true });
  });

  it('checks the same variants as npm run model, including every broken one', () => {
    expect(Object.keys(report.variants)).toEqual(VARIANTS.map((v) => v.name));
    for (const name of BROKEN) expect(VARIANTS.find((v) => v.name === name)?.expect).toBe('refute');
  });

  it('verifies the safe model: safety and PROGRESS, complete searches, no errors', () => {
    for (const name of ['safe', 'safe-3w', 'safe-vw', 'safe-seal']) {
      const v = report.variants[name]!;
      expect(v.ok, `${name}: ${JSON.stringify(v.checks)}`).toBe(true);
      expect(v.errors).toBe(0);
      expect(v.complete).toBe(true);
      expect(v.states).toBeGreaterThan(10_000);
    }
    for (const name of ['safe', 'safe-vw']) {
      const live = report.variants[name]!.checks.liveness;
      expect(live?.errors).toBe(0);
      expect(live?.complete).toBe(true);
      expect(live?.panArgs).toEqual(expect.arrayContaining(['-a', '-f']));
    }
  });

  it.each(BROKEN)('refutes %s with a counterexample trail', (name) => {
    const v = report.variants[name]!;
    expect(v.ok, JSON.stringify(v.checks)).toBe(true);
    expect(v.errors).toBeGreaterThanOrEqual(1);
    expect(v.violation).toMatch(/assertion violated/);
    expect(v.trail).toBeDefined();
    expect(existsSync(v.trail!)).toBe(true);
    expect(readFileSync(v.trail!, 'utf8').trim().length).toBeGreaterThan(0);
    expect(v.checks.safety?.story?.length ?? 0).toBeGreaterThan(2);
  });

  it('catches each broken variant with the invariant it breaks', () => {
    expect(report.variants.NO_FENCE!.violation).toContain('g>=started'); // FENCE: an older generation commits after a newer one read
    expect(report.variants.CHECK_THEN_ACT!.violation).toContain('g>=fence'); // FENCE: the fence item goes down
    expect(report.variants.RELEASE_NO_GEN!.violation).toContain('live_grant==0'); // EXCL: a live lease is freed and re-granted
    expect(report.variants.COUNTER_RESET!.violation).toMatch(/fence<=lease_gen|g>max_issued/); // TOKENS
    expect(report.variants.SWEEPER_COUNT!.violation).toContain('live_grant==0'); // EXCL: a live lease handed to a second holder
    expect(report.variants.SEAL_SKIPS_ABSENT!.violation).toContain('g>=sealed'); // SEAL: an old-epoch token commits after the seal
  });

  it('verifies documents and the outbox: DOCS and DELIVERY, complete searches, no errors', () => {
    for (const name of SAFE_EFFECTS) {
      const v = report.variants[name]!;
      expect(v.model).toBe('effects');
      expect(v.ok, `${name}: ${JSON.stringify(v.checks)}`).toBe(true);
      expect(v.errors).toBe(0);
      expect(v.complete).toBe(true);
      expect(v.states).toBeGreaterThan(10_000);
    }
    expect(report.models.effects).toMatch(/effects\.pml$/);
    expect(report.variants['effects-collect']!.defines).toContain('COLLECTOR');
    expect(report.variants['effects-2r']!.defines).toContain('NR=2');
  });

  it('tells how each broken effect fails: a second email, a stale document published, a published document deleted', () => {
    // sendFromWorker: the stale holder's own email and its successor's, no ambiguous send between them.
    const mail = report.variants.sendFromWorker!.checks.safety!.story!;
    expect(report.variants.sendFromWorker!.violation).toContain('delivered[cur]<=(1+ob_amb[cur])');
    expect(mail.filter((l) => l.includes('emails the customer of unit 0 itself'))).toHaveLength(2);
    expect(mail.some((l) => l.includes('took over a running holder: 1'))).toBe(true);
    // documentInPlace: generation 1 overwrites what generation 2 publishes.
    const doc = report.variants.documentInPlace!.checks.safety!.story!;
    expect(report.variants.documentInPlace!.violation).toContain('obj_gen[du]==inv_gen[du]');
    expect(doc.findIndex((l) => l.includes('(generation 1) puts the document of unit 0 in place (it held generation 2'))).toBeGreaterThan(-1);
    // collectPointerFirst: the pointer read before the commit, the obsolete check after it.
    const gc = report.variants.collectPointerFirst!.checks.safety!.story!;
    expect(report.variants.collectPointerFirst!.violation).toContain('obj_gen[inv_key[du]]==inv_gen[du]');
    const at = (s: string) => gc.findIndex((l) => l.includes(s));
    expect(at('the collector reads the pointer')).toBeGreaterThan(-1);
    expect(at('the collector reads the pointer')).toBeLessThan(at('COMMITS unit 0'));
    expect(at('COMMITS unit 0')).toBeLessThan(at('the collector deletes'));
  });

  it('has a PROGRESS property with teeth: without the sweeper a crash leaves the job unfinished forever', () => {
    const v = report.variants.NO_SWEEPER!;
    expect(v.ok).toBe(true);
    expect(v.violation).toBe('acceptance cycle');
    expect(v.checks.liveness?.story?.some((l) => l.includes('crashes'))).toBe(true);
  });

  it('reports an overall verdict', () => {
    expect(report.ok).toBe(true);
  });
});
