// tier: full
/**
 * Disaster recovery support (docs/runbook-dr.md): a restore creates a new table, so the stack
 * can point the functions at a restored Jobs or Records table (context `adoptTables`) while its
 * own tables stay retained in the template. Leases and Fences are never swapped for a copy.
 */
import { describe, expect, it } from 'vitest';
import { OUTPUTS } from '../../infra/stack.js';
import { ENV, UNFINISHED_INDEX } from '../../lib/workflow/index.js';
import { logicalId, permissionsOf, templateOf } from './support.js';

const RESTORED_JOBS = 'FencedWorkflow-Jobs-restored-20260301';

describe('adopting a restored table', () => {
  it('the functions and their permissions move to the restored Jobs table; the stack keeps its own, retained', () => {
    const { template, stack } = templateOf({ context: { adoptTables: JSON.stringify({ jobs: { tableName: RESTORED_JOBS } }) } });
    const w = stack.workflow;
    const resources = template.toJSON().Resources;
    for (const f of ['worker', 'sweeper', 'starter'] as const) {
      expect(resources[logicalId(w[f].fn)].Properties.Environment.Variables[ENV.jobsTable]).toBe(RESTORED_JOBS);
      const perms = permissionsOf(template, logicalId(w[f].role)).filter((p) => p.action.startsWith('dynamodb:'));
      // Nothing on the stack's own (now unused) Jobs table...
      expect(perms.filter((p) => p.resource.includes(logicalId(w.tables.jobs)))).toEqual([]);
      // ...and the same actions as before on the restored one.
      expect(perms.some((p) => p.resource.includes(`:table/${RESTORED_JOBS}`))).toBe(true);
    }
    const sweeperQuery = permissionsOf(template, logicalId(w.sweeper.role)).filter((p) => p.action === 'dynamodb:Query');
    expect(sweeperQuery.map((p) => p.resource)).toEqual([expect.stringContaining(`:table/${RESTORED_JOBS}/index/${UNFINISHED_INDEX}`)]);
    expect(resources[logicalId(w.tables.jobs)].DeletionPolicy).toBe('Retain');
    expect(template.toJSON().Outputs[OUTPUTS.jobs].Value).toBe(RESTORED_JOBS);
  });

  it('an adopted Records table without a stream ARN drops the stream output instead of pointing at the old stream', () => {
    const { template } = templateOf({ context: { adoptTables: { records: 'FencedWorkflow-Invoices-restored' } } });
    expect(template.toJSON().Outputs[OUTPUTS.recordsStreamArn]).toBeUndefined();
    expect(template.toJSON().Outputs[OUTPUTS.records].Value).toBe('FencedWorkflow-Invoices-restored');
  });

  it.each(['leases', 'fences'])('adopting a restored %s table is refused, saying why', (role) => {
    expect(() => templateOf({ context: { adoptTables: { [role]: { tableName: 'restored-copy' } } } })).toThrow(
      /cannot be replaced by a restored copy.*highest generations ever issued or accepted.*raise the epoch and seal/s,
    );
  });

  it.each([
    ['{not json', /must be JSON/],
    [JSON.stringify({ ledger: { tableName: 'abc' } }), /unknown table role "ledger"/],
    [JSON.stringify({ jobs: { tableName: 'a b' } }), /adoptTables.jobs.tableName: must be a DynamoDB table name/],
  ])('malformed adoptTables %s is refused', (value, message) => {
    expect(() => templateOf({ context: { adoptTables: value } })).toThrow(message);
  });
});
