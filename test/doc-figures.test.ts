// tier: quick
/**
 * The figures the docs quote, against the code that computes them: the planner's cost of a
 * 10,000-customer run (README, docs/deploy.md), every `plan` transcript in the docs, the counts
 * of broken variants and negative controls, and every link to the design page. No DynamoDB.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parsePlanFlags, renderPlan } from '../cli/ops/plan.js';
import { PRICES_US_EAST_1 } from '../lib/workflow/index.js';
import { planInvoiceRun } from '../lib/workloads/invoices/plan.js';
import { VARIANTS } from '../model/variants.js';
import { CONTROLS } from './chaos/controls.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const DOCS = [
  'README.md',
  'model/README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const read = (path: string) => readFileSync(join(root, path), 'utf8');
/** The text with every run of whitespace as one space: a figure may wrap across lines. */
const flat = (path: string) => read(path).replace(/\s+/g, ' ');
const n = (x: number) => Math.round(x).toLocaleString('en-US');
const usd = (x: number) => `$${x.toFixed(2)}`;
const wruCost = (wru: number) => (wru * PRICES_US_EAST_1.dynamoWriteRequestUnitPerMillion) / 1e6;

describe('the cost of 10,000 invoices, as the planner computes it', () => {
  const plan = planInvoiceRun(parsePlanFlags(['--customers', '10000']));
  const w = plan.writeUnits;

  it('docs/deploy.md: the write units by table, the total and its price', () => {
    const deploy = read('docs/deploy.md');
    const row = (table: string) => new RegExp(`^\\| ${table} \\|[^\\n]*\\| ([\\d,]+) \\|$`, 'm').exec(deploy)?.[1];
    expect(row('Invoices')).toBe(n(w.records));
    expect(row('Outbox')).toBe(n(w.outbox));
    expect(row('Fences')).toBe(n(w.fences));
    expect(row('Jobs')).toBe(n(w.jobs));
    expect(row('Leases')).toBe(n(w.leases));
    expect(deploy).toContain(`| **DynamoDB, the plan's total** | | **${n(w.total)} WRU ≈ ${usd(plan.cost.dynamodbWrites!)}**`);
    expect(deploy).toContain(`| S3: one document PUT per invoice ($0.005 per 1,000) | ${n(plan.s3Puts)} | **${usd(plan.cost.s3Puts!)}** |`);
    expect(deploy).toContain(`| SES: two emails per customer, the invoice and the payment's follow-up ($0.10 per 1,000) | ${n(plan.emails)} | **${usd(plan.cost.emails!)}** |`);
  });

  it('README: the same figures', () => {
    const readme = flat('README.md');
    expect(readme).toContain(`${n(plan.emails)} emails through SES **${usd(plan.cost.emails!)}** (the invoice and the payment's receipt or declined card's email), 10,000 document PUTs **${usd(plan.cost.s3Puts!)}**`);
    expect(readme).toContain(`DynamoDB **${n(w.total)} WRU ≈ ${usd(plan.cost.dynamodbWrites!)}** as \`npm run cli -- plan --customers ${plan.customers}\``);
    expect(readme).toContain(`${plan.writeUnitsPerCustomer.total.toFixed(2)} WRU per customer in all`);
  });

  it('every "N WRU ≈ $X" in the docs is priced at the list price', () => {
    for (const path of DOCS) {
      for (const m of flat(path).matchAll(/([\d,]+) WRU ≈ \$([\d.]+)/g)) {
        expect(`${path}: ${m[0]}`).toBe(`${path}: ${m[1]} WRU ≈ ${usd(wruCost(Number(m[1]!.replace(/,/g, ''))))}`);
      }
    }
  });
});

describe('every `plan` transcript in the docs is what the planner prints', () => {
  const transcripts = DOCS.flatMap((path) =>
    [...read(path).matchAll(/^\$ npm run cli -- plan ([^\n]*)\n((?:(?!\$ |```)[^\n]*\n)*)/gm)].map((m) => ({ path, args: m[1]!.trim().split(/\s+/), lines: m[2]!.split('\n') })),
  );

  it('finds the transcripts', () => {
    expect(transcripts.length).toBeGreaterThanOrEqual(3);
  });

  it.each(transcripts.map((t) => [`${t.path}: plan ${t.args.join(' ')}`, t] as const))('%s', (_, t) => {
    const { json: _json, ...input } = parsePlanFlags(t.args);
    const printed = new Set(renderPlan(planInvoiceRun(input)).split('\n'));
    // A transcript may leave lines out ("  ..."); every line it shows must be printed as shown.
    for (const line of t.lines.filter((l) => l.trim() !== '' && l.trim() !== '...')) expect(printed, line).toContain(line);
  });
});

describe('the counts of broken protocols the docs give', () => {
  const refuted = VARIANTS.filter((v) => v.expect === 'refute');
  const safetyRefuted = refuted.filter((v) => v.checks.includes('safety')).length;
  const livenessControls = refuted.filter((v) => !v.checks.includes('safety')).length;

  it('README: the chaos harness\'s negative controls and the model\'s broken variants', () => {
    const readme = flat('README.md');
    expect(readme).toContain(`+ ${CONTROLS.length} negative controls`);
    expect(livenessControls).toBe(1);
    expect(readme).toContain(`${safetyRefuted} broken variants and a liveness control are refuted`);
  });

  it('docs/verification.md: the same counts', () => {
    const v = flat('docs/verification.md');
    expect(v).toContain(`${CONTROLS.length} broken protocols`);
    expect(v).toContain(`${safetyRefuted} broken variants of the models (+${livenessControls} liveness control)`);
  });
});

describe('links to the design', () => {
  /** GitHub's anchor for a heading. */
  const slug = (heading: string) =>
    heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
  const anchors = (path: string) => new Set([...read(path).matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));

  it('no page names a DESIGN.md: the design is docs/design.md', () => {
    for (const path of DOCS) expect(read(path).includes('DESIGN.md'), path).toBe(false);
  });

  it('every link to design.md resolves to the file, and its anchor to a heading of it', () => {
    let links = 0;
    for (const path of DOCS) {
      for (const m of read(path).matchAll(/\]\(([^)\s]*design\.md)(#[^)\s]*)?\)/gi)) {
        links++;
        const target = resolve(dirname(join(root, path)), m[1]!);
        expect(existsSync(target), `${path}: ${m[0]}`).toBe(true);
        if (m[2]) expect(anchors(target.slice(root.length)), `${path}: ${m[0]}`).toContain(m[2].slice(1));
      }
    }
    expect(links).toBeGreaterThan(3);
  });
});
