// tier: full
/**
 * `npm run synth` (cdk synth runs infra/app.ts) ends with one line saying the compliance checks
 * found nothing, instead of ending silently; a bad setting ends it with status 1 and that line
 * alone. The app as cdk runs it: its own process, context and output folder from the environment
 * (bundling and CloudFormation validation off: seconds). The other refusals call the same entry
 * (synthesizeApp) in the test's process: support.ts's synthAsCdk.
 */
import { describe, expect, it } from 'vitest';
import { NO_FINDINGS_LINE } from '../../infra/constructs/checks.js';
import { tsx } from '../support/spawn.js';
import { CDK_JSON_CONTEXT, NO_BUNDLING, tempDir } from './support.js';

describe('npm run synth', () => {
  it('says the compliance checks found nothing', async () => {
    const env = {
      ...process.env,
      CDK_OUTDIR: tempDir('fenced-synth-'),
      CDK_VALIDATION: 'false',
      CDK_CONTEXT_JSON: JSON.stringify({ ...CDK_JSON_CONTEXT, ...NO_BUNDLING }),
    };
    const r = await tsx('infra/app.ts', [], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.trim().split('\n')).toContain(NO_FINDINGS_LINE);
  }, 120_000);

  it('a bad setting exits 1 with its line alone, before any synth', async () => {
    const env = {
      ...process.env,
      CDK_OUTDIR: tempDir('fenced-synth-'),
      CDK_CONTEXT_JSON: JSON.stringify({ ...CDK_JSON_CONTEXT, workload: 'payroll', ...NO_BUNDLING }),
    };
    const r = await tsx('infra/app.ts', [], { env });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual(['workload: no workload "payroll" is registered (lib/workloads/index.ts: invoices, reports)']);
  }, 60_000);
});
