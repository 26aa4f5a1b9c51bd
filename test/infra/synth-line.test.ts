// tier: full
/**
 * `npm run synth` (cdk synth runs infra/app.ts) ends with one line saying the compliance checks
 * found nothing, instead of ending silently, and CloudFormation's own schema validation (CDK's
 * built-in plugin, on as `cdk synth` runs it) finds nothing in the template; a bad setting ends it
 * with status 1 and that line alone. The app as cdk runs it: its own process, context and output
 * folder from the environment (bundling off). This is the one synth of the suite with
 * CloudFormation's validation (seconds of WebAssembly); the other refusals call the same entry
 * (synthesizeApp) in the test's process: support.ts's synthAsCdk.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, CfnResource, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { NO_FINDINGS_LINE } from '../../infra/constructs/checks.js';
import { tsx } from '../support/spawn.js';
import { WORKLOADS } from '../../lib/workloads/index.js';
import { CDK_JSON_CONTEXT, NO_BUNDLING, tempDir } from './support.js';

describe('npm run synth', () => {
  it('says the compliance checks found nothing, and CloudFormation\'s validation finds nothing in the template', async () => {
    const outdir = tempDir('fenced-synth-');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      CDK_OUTDIR: outdir,
      CDK_CONTEXT_JSON: JSON.stringify({ ...CDK_JSON_CONTEXT, ...NO_BUNDLING }),
    };
    delete env.CDK_VALIDATION;
    const r = await tsx('infra/app.ts', [], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.trim().split('\n')).toContain(NO_FINDINGS_LINE);
    expect(r.stderr).not.toContain('Template validation found issues');
    expect(cfnFindings(outdir)).toEqual([]);
  }, 120_000);

  it('the validation has teeth: a template property CloudFormation does not know is a finding in the same report', () => {
    const outdir = tempDir('fenced-synth-');
    const app = new App({ outdir });
    new CfnResource(new Stack(app, 'Bad'), 'Queue', { type: 'AWS::SQS::Queue', properties: { NoSuchProperty: 1 } });
    app.synth();
    expect(cfnFindings(outdir)).toEqual([expect.stringMatching(/^F3002 .*'NoSuchProperty' was unexpected/)]);
  });

  it('a bad setting exits 1 with its line alone, before any synth', async () => {
    const env = {
      ...process.env,
      CDK_OUTDIR: tempDir('fenced-synth-'),
      CDK_CONTEXT_JSON: JSON.stringify({ ...CDK_JSON_CONTEXT, workload: 'payroll', ...NO_BUNDLING }),
    };
    const r = await tsx('infra/app.ts', [], { env });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([`workload: no workload "payroll" is registered (lib/workloads/index.ts: ${WORKLOADS.map((w) => w.name).join(', ')})`]);
  }, 60_000);
});

/** CloudFormation's own validation's findings in a synth's validation report (rule and description). */
function cfnFindings(outdir: string): string[] {
  const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as { pluginReports: { pluginName: string; violations: { ruleName: string; description: string }[] }[] };
  return report.pluginReports.filter((p) => p.pluginName === 'CloudFormation Validate').flatMap((p) => p.violations.map((v) => `${v.ruleName} ${v.description}`));
}
