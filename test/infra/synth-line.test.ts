/**
 * `npm run synth` (cdk synth runs infra/app.ts) ends with one line saying the compliance checks
 * found nothing, instead of ending silently. The app as cdk runs it: its own process, context
 * and output folder from the environment (bundling and CloudFormation validation off: seconds).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NO_FINDINGS_LINE } from '../../infra/constructs/checks.js';
import { root, tsx } from '../support/spawn.js';
import { tempDir } from './support.js';

const CDK_JSON_CONTEXT = (JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> }).context;

describe('npm run synth', () => {
  it('says the compliance checks found nothing', async () => {
    const env = {
      ...process.env,
      CDK_OUTDIR: tempDir('fenced-synth-'),
      CDK_VALIDATION: 'false',
      CDK_CONTEXT_JSON: JSON.stringify({ ...CDK_JSON_CONTEXT, 'aws:cdk:bundling-stacks': [] }),
    };
    const r = await tsx('infra/app.ts', [], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.trim().split('\n')).toContain(NO_FINDINGS_LINE);
  }, 120_000);
});
