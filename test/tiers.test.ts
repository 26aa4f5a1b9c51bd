// tier: quick
/**
 * Every test file says which tier it belongs to on its first line (test/support/tiers.ts), and
 * vitest.config.ts builds its projects from those lines: a file that says none would silently
 * leave `npm run test:quick` or run where it does not belong.
 */
import { describe, expect, it } from 'vitest';
import { declaredTier, tiersOf } from './support/tiers.js';
import { root } from './support/spawn.js';

describe('test tiers', () => {
  it('every test file declares its tier on its first line', () => {
    expect(tiersOf(root).undeclared).toEqual([]);
  });

  it('the quick tier has the protocol, the workflow, the workloads, the checker and the simulator, and none of the files that bundle, synthesize or check the model', () => {
    const { quick, full, isolated } = tiersOf(root);
    for (const f of ['test/fence.test.ts', 'test/lease.test.ts', 'test/workflow.test.ts', 'test/workloads.test.ts', 'test/checker.test.ts', 'test/sim-world.test.ts']) expect(quick).toContain(f);
    expect(quick.filter((f) => f.startsWith('test/infra/') || /^test\/(model[^/]*|chaos|chaos-cli|cli-errors|prerequisites|main-job|ops-loop)\.test\.ts$/.test(f))).toEqual([]);
    expect(isolated).toEqual(['test/infra/iam-calls.test.ts']);
    expect(quick.length + full.length + isolated.length).toBeGreaterThan(70);
  });

  it('reads a tier line and refuses a malformed one', () => {
    expect(declaredTier('// tier: quick\n/** doc */')).toEqual({ tier: 'quick', isolated: false });
    expect(declaredTier('// tier: full, isolated\n')).toEqual({ tier: 'full', isolated: true });
    expect(declaredTier('/**\n * tier: quick\n */')).toBeUndefined();
    expect(declaredTier('// tier: fast\n')).toBeUndefined();
    expect(declaredTier('// tier: quick, isolated\n')).toBeUndefined();
    expect(declaredTier('import x from "y";\n// tier: quick\n')).toBeUndefined();
  });
});
