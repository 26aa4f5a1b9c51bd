/**
 * The ops CLI against a deployed stack's `cdk deploy --outputs-file` JSON: which stack's outputs
 * it reads, on DynamoDB Local.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { InvalidInputError } from '../lib/protocol/index.js';
import { OUTPUTS } from '../infra/outputs.js';
import { opsCommand, tablesFromOutputs } from '../cli/ops.js';
import { tempDir } from './infra/support.js';
import { makeTables, type TestTables } from './support/tables.js';

let t: TestTables;
beforeAll(async () => {
  t = await makeTables(import.meta.filename);
});
afterEach(() => {
  vi.restoreAllMocks();
});

const outputsOf = (names: Record<'leases' | 'fences' | 'jobs' | 'invoices', string>, extra: Record<string, string> = {}) => ({
  [OUTPUTS.leases]: names.leases,
  [OUTPUTS.fences]: names.fences,
  [OUTPUTS.jobs]: names.jobs,
  [OUTPUTS.invoices]: names.invoices,
  [OUTPUTS.queueUrl]: 'https://sqs.eu-west-1.amazonaws.com/111111111111/q',
  ...extra,
});
const other = { leases: 'Other-Leases-1', fences: 'Other-Fences-1', jobs: 'Other-Jobs-1', invoices: 'Other-Invoices-1' };

/** Runs an ops command and returns what it printed on stdout. */
async function ops(command: Parameters<typeof opsCommand>[0], argv: string[]): Promise<{ code: number; stdout: string }> {
  const chunks: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk));
    return true;
  });
  const code = await opsCommand(command, argv);
  vi.restoreAllMocks();
  return { code, stdout: chunks.join('') };
}

describe('an outputs file with several stacks', () => {
  it('one stack: its outputs are used without --stack', () => {
    expect(tablesFromOutputs({ FencedWorkflow: outputsOf(other) }).tables).toEqual(other);
  });

  it('several stacks and no --stack: refused, naming them, instead of mixing their outputs', () => {
    const json = { FencedWorkflow: outputsOf(t.names), Staging: outputsOf(other) };
    expect(() => tablesFromOutputs(json)).toThrow(InvalidInputError);
    expect(() => tablesFromOutputs(json)).toThrow(/--stack: the outputs file holds 2 stacks \(FencedWorkflow, Staging\); pick one with --stack NAME/);
  });

  it('several stacks and --stack: that stack only; an unknown name is refused', () => {
    const json = { FencedWorkflow: outputsOf(t.names), Staging: outputsOf(other) };
    expect(tablesFromOutputs(json, 'Staging').tables).toEqual(other);
    expect(tablesFromOutputs(json, 'FencedWorkflow').tables).toEqual(t.names);
    expect(() => tablesFromOutputs(json, 'Prod')).toThrow(/--stack: no stack "Prod" in the outputs file \(FencedWorkflow, Staging\)/);
  });

  it('status --outputs FILE --stack NAME reads that stack\'s tables', async () => {
    const file = join(tempDir('fenced-ops-'), 'cdk-outputs.json');
    writeFileSync(file, JSON.stringify({ Staging: outputsOf(other), FencedWorkflow: outputsOf(t.names) }));
    await expect(opsCommand('status', ['--outputs', file, '--endpoint', t.endpoint, '--json'])).rejects.toThrow(/--stack/);
    const r = await ops('status', ['--outputs', file, '--stack', 'FencedWorkflow', '--endpoint', t.endpoint, '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ leases: [], fences: [], jobs: [] });
  });
});
