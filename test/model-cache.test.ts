// tier: full
/**
 * Kept verifiers (model/verifier-cache.ts): a check whose model text, defines, compile flags and
 * tools are unchanged reuses the compiled `pan` and reports what it reported before; a change to
 * any of them compiles anew, and so does a run without the cache. Two checks of one input in one
 * run share one compile.
 */
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkTools, runCheck } from '../model/check.js';
import { MODEL_FILES, runModel, VARIANTS, type ModelReport, type RunOptions } from '../model/run.js';

const dir = mkdtempSync(join(tmpdir(), 'model-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const once = (cacheDir: string | null, opts: RunOptions = {}) =>
  runModel({ only: ['NO_FENCE'], profile: 'quick', trailsDir: join(dir, 'trails'), jobs: 1, cacheDir, ...opts });
const verdictOf = (r: ModelReport) => {
  const { ok, errors, violation, states, depth, complete } = r.variants.NO_FENCE!;
  return { ok, errors, violation, states, depth, complete, story: r.variants.NO_FENCE!.checks.safety?.story };
};

describe('kept verifiers', () => {
  it('the same check again reuses the kept verifier and reports the same refutation, trail and story', async () => {
    const cacheDir = join(dir, 'same');
    const first = await once(cacheDir);
    expect(first.verifiers).toEqual({ compiled: 1, reused: 0, cacheDir });
    expect(first.variants.NO_FENCE!.checks.safety?.verifierCached).toBe(false);
    expect(readdirSync(cacheDir)).toHaveLength(1);
    const second = await once(cacheDir);
    expect(second.verifiers).toEqual({ compiled: 0, reused: 1, cacheDir });
    expect(second.variants.NO_FENCE!.checks.safety?.verifierCached).toBe(true);
    expect(verdictOf(second)).toEqual(verdictOf(first));
    expect(verdictOf(second)).toMatchObject({ ok: true, violation: expect.stringContaining('g>=started') });
    expect(second.variants.NO_FENCE!.trail).toBeDefined();
  });

  it('a changed define, a changed model text, or no cache compiles anew', async () => {
    const cacheDir = join(dir, 'changes');
    expect((await once(cacheDir)).verifiers.compiled).toBe(1);
    expect((await once(cacheDir, { extraDefines: ['U=1'] })).verifiers).toMatchObject({ compiled: 1, reused: 0 });
    const edited = join(dir, 'fenced.pml');
    copyFileSync(MODEL_FILES.fenced, edited);
    appendFileSync(edited, '\n/* an edit: the same protocol, another text */\n');
    expect((await once(cacheDir, { modelFiles: { fenced: edited } })).verifiers).toMatchObject({ compiled: 1, reused: 0 });
    expect(readdirSync(cacheDir)).toHaveLength(3);
    expect((await once(null)).verifiers).toEqual({ compiled: 1, reused: 0 });
    expect((await once(cacheDir)).verifiers).toMatchObject({ compiled: 0, reused: 1 });
  });

  it('two checks of the same input at once compile it once', async () => {
    const cacheDir = join(dir, 'together');
    const { tools } = await checkTools();
    const spec = VARIANTS.find((v) => v.name === 'NO_FENCE')!;
    mkdirSync(join(dir, 'trails'), { recursive: true });
    const opts = { timeoutSec: 120, memLimitMb: 512, extraDefines: [], profile: 'quick' as const, modelFile: MODEL_FILES.fenced, trailsDir: join(dir, 'trails'), cache: { dir: cacheDir, tools } };
    const both = await Promise.all([runCheck(spec, 'safety', opts), runCheck(spec, 'safety', opts)]);
    expect(both.map((c) => c.verifierCached).sort()).toEqual([false, true]);
    expect(both.map((c) => c.errors).every((e) => e >= 1)).toBe(true);
    expect(readdirSync(cacheDir)).toHaveLength(1);
  });
});
