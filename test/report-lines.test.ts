// tier: quick
/**
 * The pieces of npm start's report that read wrong before: "1 ambiguous sends", a PASS that
 * covered only part of DELIVERY printed as a plain PASS with a "(not checked: …)" tail,
 * OutboxRecordsFailed=2 beside "0 failed" with nothing to say they count different things.
 */
import { describe, expect, it } from 'vitest';
import { invariantLine, metricsLine, plural } from '../cli/demo/report-lines.js';
import { incidentHeading } from '../cli/demo/incident.js';

describe("npm start's report lines", () => {
  it('counts take the number of their noun', () => {
    expect(plural(1, 'ambiguous send')).toBe('1 ambiguous send');
    expect(plural(0, 'ambiguous send')).toBe('0 ambiguous sends');
    expect(plural(2, 'dead letter')).toBe('2 dead letters');
    expect(plural(1, 'orphan')).toBe('1 orphan');
  });

  it('a PASS says when it covers only part of the invariant, and covering none is UNCHECKED', () => {
    expect(invariantLine('FENCE', { ok: true, violations: [] })).toBe('PASS  FENCE');
    expect(invariantLine('DOCS', { ok: false, violations: ['a', 'b'] })).toBe('FAIL  DOCS: a; b');
    expect(invariantLine('DELIVERY', { ok: true, violations: [], unchecked: ['emails: not counted'] })).toBe('PASS (partly unchecked)  DELIVERY: emails: not counted');
    expect(invariantLine('DOCS', { ok: true, violations: [], unchecked: ['no store'], nothingChecked: true })).toBe('UNCHECKED  DOCS: no store');
    expect(invariantLine('DELIVERY', { ok: true, violations: [], unchecked: ['x'] })).not.toMatch(/^PASS  /);
  });

  it('OutboxRecordsFailed says it counts retried stream records, not failed emails', () => {
    expect(metricsLine({ OutboxSent: 3, OutboxRecordsFailed: 2 })).toBe(
      'metrics: OutboxSent=3 OutboxRecordsFailed=2 (OutboxRecordsFailed: stream records the sender handed back for the event source to retry, not emails that failed)',
    );
    expect(metricsLine({ OutboxSent: 3, OutboxRecordsFailed: 0 })).toBe('metrics: OutboxSent=3 OutboxRecordsFailed=0');
  });
});

describe('npm start -- --help', () => {
  it("prints the demo's own flags, not every command's help", async () => {
    const { runCli } = await import('./support/cli.js');
    const r = await runCli(['demo', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--customers N');
    expect(r.stdout).not.toContain('npm run dynamodb [-- --port N]:'); // npm run dynamodb's help
    expect(r.stdout).not.toMatch(/raise-epoch --epoch/); // the ops commands' help
    expect(r.stdout).toContain('npm run cli -- --help');
    expect(r.stdout.trim().split('\n').length).toBeLessThan(30);
  });
});

describe("npm start's first section", () => {
  it('says which sample the incident replays, and which workload the run after it takes when that is another', () => {
    expect(incidentHeading('invoices')).toBe('1. The incident (source article), replayed on the invoices sample: A pauses past its lease; B takes over; A wakes and writes.');
    expect(incidentHeading('reports')).toBe('1. The incident (source article), replayed on the invoices sample (section 2 runs reports): A pauses past its lease; B takes over; A wakes and writes.');
  });
});
