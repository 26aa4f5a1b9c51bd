// tier: full
/**
 * What an idle stack costs a month (`npm run cli -- cost`, cli/ops/cost.ts), read from its own
 * synthesized template: every figure follows from what the template holds (counted here again,
 * independently, from the template's resources), so adding an alarm or a schedule changes the
 * cost the docs show; the two samples' figures are the ones docs/deploy.md prints.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { costCommand, idleCost, invocationsAMonth, renderIdleCost } from '../../cli/ops/cost.js';
import { InvalidInputError } from '../../lib/protocol/index.js';
import { IDLE_PRICES_US_EAST_1 } from '../../lib/workflow/index.js';
import { PROJECT_ROOT, tempDir, templateOf } from './support.js';
import { readFileSync } from 'node:fs';

type Template = Parameters<typeof idleCost>[0];
const json = (context: Record<string, unknown> = {}, workload?: string) => templateOf({ context, ...(workload === undefined ? {} : { workload }) }).template.toJSON() as Template;
const line = (t: Template, prefix: string) => idleCost(t).lines.find((l) => l.what.startsWith(prefix))!;
const ofType = (t: Template, type: string) => Object.values(t.Resources).filter((r) => r.Type === type);

describe('the idle cost, from the template', () => {
  it('the invoice stack in the sandbox: one dashboard, each alarm metric, one key, the sweeper and reconciler every minute and the collector hourly (the starter\'s schedule is disabled)', () => {
    const t = json();
    const metrics = ofType(t, 'AWS::CloudWatch::Alarm').reduce((n, a) => n + (Array.isArray(a.Properties!.Metrics) ? a.Properties!.Metrics.filter((m: { MetricStat?: unknown }) => m.MetricStat).length : 1), 0);
    expect(line(t, 'CloudWatch dashboards')).toMatchObject({ count: 1, dollars: 3 });
    expect(line(t, 'CloudWatch alarms')).toMatchObject({ count: metrics, dollars: metrics * IDLE_PRICES_US_EAST_1.alarmMetricPerMonth });
    expect(line(t, 'KMS keys').count).toBe(1);
    expect(line(t, 'Secrets Manager').count).toBe(0);
    expect(line(t, 'EventBridge Scheduler').count).toBe(43_200 + 43_200 + 720);
    const total = idleCost(t).total;
    expect(total).toBeGreaterThan(8);
    expect(total).toBeLessThan(10);
  });

  it('a live stack adds its secret; an enabled starter schedule adds its one run a month', () => {
    const sandbox = idleCost(json()).total;
    const live = json({ live: 'true', paymentsUrl: 'https://api.payments.fenced-workflow.dev/v1/charges' });
    expect(line(live, 'Secrets Manager')).toMatchObject({ count: 1, dollars: 0.4 });
    expect(idleCost(live).total).toBeCloseTo(sandbox + 0.4, 1);
    expect(line(json({ scheduleRuns: 'true' }), 'EventBridge Scheduler').count).toBe(43_200 + 43_200 + 720 + 1);
  });

  it('the reports stack: no recorder (no email), its own alarms', () => {
    const t = json({}, 'reports');
    expect(line(t, 'CloudWatch alarms').count).toBeLessThan(line(json(), 'CloudWatch alarms').count);
    expect(idleCost(t).total).toBeLessThan(idleCost(json()).total);
  });

  it('schedule expressions: rates exactly; the monthly cron once', () => {
    expect(invocationsAMonth('rate(1 minute)')).toBe(43_200);
    expect(invocationsAMonth('rate(1 hour)')).toBe(720);
    expect(invocationsAMonth('rate(2 days)')).toBe(15);
    expect(invocationsAMonth('cron(0 2 1 * ? *)')).toBe(1);
    expect(invocationsAMonth('cron(0 2 * * ? *)')).toBe(30);
  });

  it("docs/deploy.md shows both samples' idle cost as the command prints it", () => {
    const docs = readFileSync(join(PROJECT_ROOT, 'docs', 'deploy.md'), 'utf8');
    for (const [stack, t] of [['FencedWorkflow', json()], ['FencedWorkflow-reports', json({}, 'reports')]] as const) {
      expect(docs).toContain(renderIdleCost(idleCost(t), stack).split('\n')[0]!);
    }
  });
});

describe('npm run cli -- cost', () => {
  it('reads a synthesized template; a missing or unreadable one is one line, nothing printed', () => {
    const dir = tempDir('fenced-cost-');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'FencedWorkflow.template.json');
    writeFileSync(file, JSON.stringify(json()));
    const writes: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string) => (writes.push(s), true)) as typeof process.stdout.write;
    try {
      expect(costCommand(['--template', file, '--json'])).toBe(0);
    } finally {
      process.stdout.write = write;
    }
    expect(JSON.parse(writes.join(''))).toMatchObject({ stack: 'FencedWorkflow', total: idleCost(json()).total });
    for (const argv of [[], ['--template', join(dir, 'missing.json')], ['--template', join(PROJECT_ROOT, 'package.json')]]) {
      expect(() => costCommand(argv)).toThrow(InvalidInputError);
    }
  });
});
