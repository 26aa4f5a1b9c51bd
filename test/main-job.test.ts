// tier: full
/**
 * The main job end to end, as a user runs it (`npx tsx cli/main.ts --json ...`, a child
 * process against the test run's DynamoDB Local), then the ops CLI against the tables it left.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { expectedTotals, parseInvoiceInput } from '../lib/workloads/invoices/invoices.js';
import { invoices } from '../lib/workloads/invoices/index.js';
import { runCli } from './support/cli.js';
import { tsx } from './support/spawn.js';
import { labelsOf, labelTexts, layoutProblems, renderedMisfits } from './support/timeline-check.js';

/** The CLI as a user runs it: `npx tsx cli/main.ts ...args`, a child process. */
const run = (args: string[]) => tsx('cli/main.ts', args, { killAfterMs: 90_000 });

/** The CLI in-process (main() returns the exit code), stdout and stderr captured. */
const cli = runCli;

const endpoint = inject('dynamoEndpoint');
const prefix = `t-mainjob-${randomBytes(4).toString('hex')}-`;
const where = ['--endpoint', endpoint, '--table-prefix', prefix];
let dir: string;
let report: Record<string, any>;
let stdout: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fenced-main-'));
  const r = await run(['demo', '--json', ...where, '--customers', '30', '--workers', '3', '--out', join(dir, 'timeline.svg')]);
  if (r.code !== 0) throw new Error(`main job exited ${r.code}\n${r.stdout}\n${r.stderr}`);
  stdout = r.stdout;
  report = JSON.parse(r.stdout);
}, 90_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the main job (--json)', () => {
  it('prints one JSON report and nothing else; every invariant holds', () => {
    expect(stdout.trim().split('\n')).toHaveLength(1);
    expect(report.ok).toBe(true);
    expect(report).toMatchObject({ endpoint, tablePrefix: prefix });
    for (const name of ['FENCE', 'ONCE', 'PROGRESS', 'TOKENS']) {
      expect(report.invariants[name], name).toEqual({ ok: true, violations: [] });
    }
    expect(report.stats).toMatchObject({ jobs: 3, records: 180, expectedRecords: 180, figures: { invoices: 90, charges: 90 } });
    // The structural FENCE check ran on the run's wire: every unit's effects inside its fenced transaction.
    expect(report.stats.wire).toMatchObject({ violations: 0 });
    expect(report.stats.wire.effectWritesChecked).toBeGreaterThanOrEqual(90 * 4);
    // The charges' total is the one the three periods' inputs demand (seed 1, the demo's default), recomputed here.
    const demanded = invoices.local.payloads(30, 1).reduce((n, p) => n + expectedTotals(parseInvoiceInput({ ...p, unitSize: 10, currency: 'EUR' })).totalCents, 0);
    expect(report.stats.figures.totalCents).toBe(demanded);
    expect(report.run.jobs).toHaveLength(3);
    // The units' time and the delivery's apart: every outbox item (an email and a payment per customer, and each payment's follow-up) delivered after the last unit.
    expect(report.stats.effects.chains.followUps).toBeGreaterThan(80);
    expect(report.run.delivery).toMatchObject({ items: 180 + report.stats.effects.chains.followUps, unsent: 0 });
    expect(report.run.unitsMs).toBeGreaterThan(0);
    expect(report.run.delivery.ms).toBeGreaterThanOrEqual(0);
    expect(report.run.unitsMs + report.run.delivery.ms).toBeLessThanOrEqual(report.run.elapsedMs);
    for (const j of report.run.jobs) expect(j).toMatchObject({ status: 'DONE', cursor: j.totalUnits });
    // The incident: with the fence A's late write is rejected; without it, A overwrites B.
    expect(report.incident.fenced.staleWriteRejected).toBe(true);
    expect(report.incident.unsafe.invoicesOverwritten).toBeGreaterThan(0);
    // The injected faults did happen and were survived.
    expect(report.run.faults.map((f: { name: string }) => f.name)).toEqual(
      expect.arrayContaining(['crash after fence raise, before the first unit', 'paused between read and write']),
    );
    // The crashed holder's job finished: someone took its lease over.
    expect(report.run.metrics.LeaseTakeover).toBeGreaterThanOrEqual(1);
    // The external effects' faults fired (not only armed), and the checker saw what each leaves.
    expect(report.run.effects).toMatchObject({ notInjected: [], senderKilled: true });
    expect(report.run.effects.faults).toEqual([
      'an S3 put answer lost (the retry meets 412, resolved by HEAD)',
      'a duplicate stream delivery',
      'two senders racing for one batch',
      'an SMTP acknowledgement lost (an ambiguous send)',
      "a payment provider's answer lost (the resend with its Idempotency-Key is replayed)",
      expect.stringMatching(/^email and payment providers down for \d+ ms$/),
    ]);
    const { documents, emails, payments } = report.stats.effects;
    // The paused holder's unit: its 10 documents were put, its commit never landed: orphans (or collected).
    expect(documents.written - documents.referenced).toBeGreaterThanOrEqual(10);
    expect(documents.orphaned + documents.collected).toBe(documents.written - documents.referenced);
    // ...and it created no outbox item: one email and one payment per customer, and each payment's
    // follow-up email (its receipt, or the declined card's), every one delivered once.
    const { chains } = report.stats.effects;
    expect(chains).toMatchObject({ followUps: 90, accepted: 90 - chains.declined, refusedForGood: chains.declined });
    expect(chains.declined).toBeGreaterThan(0);
    expect(emails).toMatchObject({ items: 180, sent: 180, delivered: 180, unknown: 0, failed: 0, recordChecked: true });
    expect(emails.ambiguous).toBeGreaterThanOrEqual(1);
    expect(emails.duplicated).toBeLessThanOrEqual(emails.ambiguous);
    expect(payments).toMatchObject({ items: 90, sent: 90 - chains.declined, performed: 90 - chains.declined });
    // The sender killed after the provider accepted: resolved from the provider's record, not resent.
    expect(report.run.effects.reconciled.fromRecord).toBeGreaterThanOrEqual(1);
    for (const name of ['DOCS', 'DELIVERY']) expect(report.invariants[name], name).toEqual({ ok: true, violations: [] });
    expect(existsSync(report.timelineSvg)).toBe(true);
    expect(readFileSync(report.timelineSvg, 'utf8')).toMatch(/^<svg|<\?xml/);
  });

  it('draws a timeline whose labels are whole, apart, inside their lanes, and fit when rendered', () => {
    const svg = readFileSync(report.timelineSvg, 'utf8');
    expect(labelsOf(svg).length).toBeGreaterThan(20);
    expect(labelTexts(labelsOf(svg))).toEqual(expect.arrayContaining(["REJECTED: stale generation 0:7, fence at 0:8; nothing written", 'CRASH after fence raise, before the first unit']));
    expect(layoutProblems(svg)).toEqual([]);
    expect(renderedMisfits(svg)).toEqual([]);
  });
});

describe('the ops CLI against the tables the main job left', () => {
  it('status --json lists the leases, fences and jobs', async () => {
    const r = await cli(['status', '--json', ...where]);
    expect(r.code).toBe(0);
    const status = JSON.parse(r.stdout);
    expect(status.jobs.map((j: { pk: string }) => j.pk).sort()).toEqual(report.run.jobs.map((j: { id: string }) => j.id).sort());
    expect(status.jobs.every((j: { status: string }) => j.status === 'DONE')).toBe(true);
    expect(status.runs.map((r: { runId: string; status: string; shards: number }) => [r.runId, r.status, r.shards]).sort()).toEqual(report.run.jobs.map((j: { id: string }) => [j.id, 'DONE', 1]).sort());
    expect(status.fences).toHaveLength(3);
    expect(status.leases.filter((l: { pk: string }) => l.pk.startsWith('job#'))).toHaveLength(3);
    // Every job's lease is released, its counter kept.
    for (const l of status.leases) expect(l.owner).toBeUndefined();
  });

  it('requeue on a DONE job is refused with a clear error (exit 2), and changes nothing', async () => {
    const jobId = report.run.jobs[0].id as string;
    const before = JSON.parse((await cli(['status', '--json', ...where])).stdout);
    const r = await cli(['requeue', jobId, ...where]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`job ${jobId} is DONE; nothing to requeue`);
    expect(r.stdout).toBe('');
    expect(JSON.parse((await cli(['status', '--json', ...where])).stdout)).toEqual(before);
    const missing = await cli(['requeue', 'invoice-run#1999-01', ...where]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no job invoice-run#1999-01');
  });

  it('bad flags exit 2 with a message', async () => {
    const cases: [string[], RegExp][] = [
      [['status', '--bogus', ...where], /Unknown option '--bogus'/],
      [['seal', ...where], /--epoch: is required/],
      [['seal', '--epoch', '-1', ...where], /epoch/],
      [['requeue', ...where], /exactly one job id/],
      [['status', '--endpoint', endpoint], /--table-prefix/],
      [['frobnicate'], /unknown command "frobnicate"/],
      [['demo', '--customers', 'many'], /--customers: must be an integer/],
      [['demo', '--customers', '3', '--shards', '4'], /--shards: must be an integer in \[1, 3\]/],
      [['demo', '--workers', '0'], /--workers: must be an integer/],
      [['demo', '--leave-unfinished'], /--leave-unfinished: needs --endpoint/],
      [['demo', '--endpoint', 'localhost:8000'], /--endpoint: must be an http\(s\) URL/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr).toContain('--help');
    }
    // And as a real process: the exit code reaches the shell.
    const proc = await run(['status', '--bogus']);
    expect(proc.code).toBe(2);
    expect(proc.stderr).toMatch(/Unknown option '--bogus'/);
    expect(proc.stdout).toBe('');
  });

  it('seal refuses an epoch that is not the recorded one; raise-epoch 1 + seal --epoch 1, then status shows every fence and lease counter at 1:0', async () => {
    const typo = await cli(['seal', '--epoch', '1', ...where]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^error: epoch: the recorded epoch is 0; seal seals the recorded epoch only/);
    expect((await cli(['raise-epoch', '--epoch', '1', ...where])).code).toBe(0);
    const sealed = await cli(['seal', '--epoch', '1', '--json', ...where]);
    expect(sealed.code).toBe(0);
    expect(JSON.parse(sealed.stdout)).toMatchObject({ epoch: 1 });

    const text = await cli(['status', ...where]);
    expect(text.code).toBe(0);
    const fences = text.stdout.split('\n').filter((l) => l.trim().startsWith('invoices#'));
    expect(fences).toHaveLength(3);
    for (const line of fences) expect(line).toMatch(/accepts >= 1:0\s*$/);
    const leases = text.stdout.split('\n').filter((l) => l.trim().startsWith('job#'));
    expect(leases).toHaveLength(3);
    for (const line of leases) expect(line).toMatch(/gen 1:0\s/);

    const json = JSON.parse((await cli(['status', '--json', ...where])).stdout);
    for (const f of json.fences) expect(f.generation).toBe(2 ** 32);
    // Sealing again is a no-op.
    const again = await cli(['seal', '--epoch', '1', '--json', ...where]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).tables.every((t: { raised: number; created?: number }) => t.raised === 0 && (t.created ?? 0) === 0)).toBe(true);
  });
});

describe('a second run on the tables of the first', () => {
  it('is refused before anything is written: one line naming the prefix, exit 2, tables unchanged', async () => {
    const before = JSON.parse((await cli(['status', '--json', ...where])).stdout);
    const r = await cli(['demo', ...where, '--customers', '3', '--out', join(dir, 'again.svg')]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`--table-prefix: tables with prefix "${prefix}" exist already at ${endpoint}`);
    expect(r.stdout).not.toContain('progress');
    expect(JSON.parse((await cli(['status', '--json', ...where])).stdout)).toEqual(before);
    expect(existsSync(join(dir, 'again.svg'))).toBe(false);
  });
});

describe('status after raise-epoch', () => {
  it('counts the leases it lists (the epoch record is not one) and --json carries the epoch', async () => {
    expect((await cli(['raise-epoch', '--epoch', '1', ...where])).code).toBe(0);
    const text = (await cli(['status', ...where])).stdout;
    expect(text).toMatch(/^Epoch recorded: 1$/m);
    const listed = text.split('\n').filter((l) => l.trim().startsWith('job#'));
    expect(listed).toHaveLength(3);
    expect(text).toContain(`Leases (${listed.length}):`);
    const json = JSON.parse((await cli(['status', '--json', ...where])).stdout);
    expect(json.epoch).toBe(1);
    expect(json.leases).toHaveLength(3);
  });
});

describe('npm run cli with no command', () => {
  it('prints the help and runs nothing', async () => {
    const r = await cli([]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Commands: demo, dynamodb, status, requeue');
    expect(r.stdout).not.toContain('Starting DynamoDB Local');
  }, 30_000);
});
