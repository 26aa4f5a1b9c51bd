// tier: quick
/**
 * The layers a reader can see (DESIGN.md, "Layers"), held by a test: a fork may replace
 * lib/workloads/ and must not need to touch lib/protocol/, and the protocol can be taken alone.
 * Each rule is also shown to fire on a tree that breaks it, so a green run means something.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { importCycles, layerViolations, MAX_FILE_LINES, MAX_FUNCTION_LINES, sizeViolations } from './support/layers.js';

const root = new URL('..', import.meta.url).pathname;
const tracked = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f !== '' && !f.startsWith('node_modules/'));
const tree = new Map(tracked.map((f) => [f, readFileSync(root + f, 'utf8')] as const));
const withFile = (path: string, text: string) => new Map([...tree, [path, text]]);

describe('the layers of lib/', () => {
  it('no file breaks a layering rule (protocol below workflow below workloads; no CDK, functions, infra or cli in lib/; indexes from outside; the rooms of cli/ one way)', () => {
    expect(layerViolations(tree)).toEqual([]);
  });

  it('there is no import circle inside lib/', () => {
    expect(importCycles(tree)).toEqual([]);
  });

  it(`no file in lib/ is longer than ${MAX_FILE_LINES} lines, no function longer than ${MAX_FUNCTION_LINES}`, () => {
    expect(sizeViolations(tree)).toEqual([]);
  });

  it('lib/protocol/ has an index that exports the lease, the fence and idempotency; lib/workflow/ one that exports runJob and sweep', async () => {
    const protocol = await import('../lib/protocol/index.js');
    const workflow = await import('../lib/workflow/index.js');
    expect(Object.keys(protocol)).toEqual(expect.arrayContaining(['LeaseManager', 'raiseFence', 'commitFencedUnit', 'onceOnly', 'seal']));
    expect(Object.keys(workflow)).toEqual(expect.arrayContaining(['runJob', 'sweep', 'createJob', 'TABLES']));
  });
});

describe('the layering check has teeth', () => {
  it.each([
    ['lib/protocol/lease.ts', "import { JOB_ATTR } from '../workflow/schema.js';", 'lib/protocol/ imports nothing above it'],
    ['lib/protocol/fence.ts', "import type { Processor } from '../workflow/index.js';", 'lib/protocol/ imports nothing above it'],
    ['lib/protocol/epochs.ts', "const m = await import('../workloads/invoices/invoices.js');", 'lib/protocol/ imports nothing above it'],
    ['lib/workflow/jobs.ts', "import { invoiceProcessor } from '../workloads/invoices/invoices.js';", 'lib/workflow/ does not import a workload'],
    ['lib/workflow/worker.ts', "import { Stack } from 'aws-cdk-lib';", 'lib/ imports no CDK'],
    ['lib/workloads/invoices/invoices.ts', "import { OUTPUTS } from '../../../infra/outputs.js';", 'lib/ imports neither functions/, infra/ nor cli/'],
    ['functions/worker.ts', "import { raiseFence } from '../lib/protocol/fence.js';", 'lib/protocol/ is imported through its index module'],
    ['cli/check/invariants.ts', "import { invoiceRun } from '../demo/run.js';", 'cli/check/ imports neither cli/demo/, cli/ops/ nor functions/'],
    ['cli/check/wire-check.ts', "import { opsCommand } from '../ops/ops.js';", 'cli/check/ imports neither cli/demo/, cli/ops/ nor functions/'],
    ['cli/check/invariants-effects.ts', "import type { WorkerHandler } from '../../functions/worker-handler.js';", 'cli/check/ imports neither cli/demo/, cli/ops/ nor functions/'],
    ['cli/local/runtime.ts', "import { FaultPlan } from '../demo/faults.js';", 'cli/local/ imports neither cli/demo/, cli/check/ nor cli/ops/'],
    ['cli/local/streams.ts', "const m = await import('../check/invariants.js');", 'cli/local/ imports neither cli/demo/, cli/check/ nor cli/ops/'],
    ['cli/local/queue.ts', "import type { PlanFlags } from '../ops/plan.js';", 'cli/local/ imports neither cli/demo/, cli/check/ nor cli/ops/'],
    ['cli/ops/local-requeue.ts', "import { LEASE_MS } from '../demo/run.js';", 'cli/ops/ imports nothing of cli/demo/'],
    ['cli/shared/timeline.ts', "import { slotOf } from '../local/runtime.js';", 'cli/shared/ imports no room of cli/'],
    ['cli/demo/demo.ts', "import { main } from '../main.js';", 'nothing in cli/ imports cli/main.ts'],
    ['cli/stray.ts', "export const x = 1;", 'every file of cli/ but main.ts is in a room'],
  ])('%s with `%s` breaks "%s"', (file, line, rule) => {
    const violations = layerViolations(withFile(file, `${line}\n${tree.get(file) ?? ''}`));
    expect(violations.map((v) => v.rule)).toContain(rule);
  });

  it('an import circle is found', () => {
    const cycles = importCycles(withFile('lib/protocol/errors.ts', `import type { Generation } from './generation.js';\n${tree.get('lib/protocol/errors.ts')}`));
    expect(cycles.some((c) => c.includes('lib/protocol/errors.ts') && c.includes('lib/protocol/generation.ts'))).toBe(true);
  });

  it('a long function and a long file are found', () => {
    const body = Array.from({ length: MAX_FUNCTION_LINES + 1 }, (_, i) => `  const x${i} = ${i};`).join('\n');
    const long = `export function tooLong(): void {\n${body}\n}\n` + '// filler\n'.repeat(300);
    expect(sizeViolations(withFile('lib/workflow/long.ts', long)).map((v) => v.detail)).toEqual(expect.arrayContaining([expect.stringMatching(/^tooLong: /), expect.stringMatching(/lines$/)]));
  });
});
