// tier: quick
/**
 * The timeline picture (cli/shared/timeline.ts) as a reader sees it: every label whole (none cut at
 * 60 characters, none dropped because it would overlap), inside its lane, overlapping no other,
 * and drawn by a real SVG renderer inside the box the layout gave it; every mark and band in the
 * legend, in colours no two alike; fault labels that do not repeat themselves.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../lib/protocol/index.js';
import { FaultPlan } from '../cli/demo/faults.js';
import { defaultFaults, LEASE_MS } from '../cli/demo/run.js';
import { BANDS, GROUPS, labelled, legendEntries, renderSvg, splitDelivery, STYLE, Timeline, type TimelineEvent, type TimelineKind, type TimelineSection } from '../cli/shared/timeline.js';
import { deltaE, labelsOf, labelTexts, layoutProblems, renderedMisfits, renderPng } from './support/timeline-check.js';

const dir = mkdtempSync(join(tmpdir(), 'timeline-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ev = (t: number, actor: string, kind: TimelineKind, text: string, leaseMs?: number): TimelineEvent => ({ t, actor, kind, text, ...(leaseMs ? { leaseMs } : {}) });

/** The cases the picture got wrong: long labels, crowded sweeps, crash and busy marks, marks at the right edge. */
const crowded: TimelineSection[] = [
  {
    title: 'The incident',
    labels: 'all',
    events: [
      ev(0, 'worker-A', 'acquire', 'acquired lease, generation 0:7 (1000 ms)', 1_000),
      ev(5, 'worker-A', 'fence', 'raised fence to 0:7'),
      ev(9, 'worker-A', 'read', 'read checkpoint: cursor 0'),
      ev(12, 'worker-A', 'pause', 'paused 3000 ms (GC) with unit 0 built; lease expires meanwhile'),
      ev(1_100, 'worker-B', 'acquire', 'acquired expired lease, generation 0:8', 1_000),
      ev(1_130, 'worker-B', 'commit', 'committed unit 0 (3 invoices + charges) at 0:8'),
      ev(1_150, 'worker-B', 'done', 'job DONE; released'),
      ev(3_012, 'worker-A', 'resume', 'woke up; writes unit 0 built from its stale read'),
      ev(3_050, 'worker-A', 'reject', 'REJECTED: stale generation 0:7, fence at 0:8; nothing written'),
      ev(3_060, 'worker-A', 'release', 'late release: no effect (owner+generation no longer match)'),
    ],
  },
  {
    title: 'A run',
    events: [
      ev(0, 'queue', 'duplicate', 'duplicate delivery of invoice-run#2026-09'),
      ev(3, 'lambda w1', 'acquire', 'invoice-run#2026-09 gen 0:1', 1_500),
      ev(4, 'lambda w2', 'busy', 'duplicate: lease busy (0:1)'),
      ev(6, 'lambda w1', 'crash', 'CRASH after fence raise, before the first unit'),
      ...Array.from({ length: 8 }, (_, i) => ev(2_000 + i * 10, 'sweeper', 'requeue', `requeued invoice-run#2026-${String(9 + (i % 3)).padStart(2, '0')}`)),
      ...Array.from({ length: 30 }, (_, i) => ev(2_100 + i * 50, 'lambda w2', 'commit', `unit ${i}`)),
      ev(4_000, 'lambda w2', 'lost', `lease lost ${'with a reason long enough to need more than one line, '.repeat(6)}`),
      ev(6_000, 'lambda w2', 'done', 'invoice-run#2026-09 DONE'),
      ev(6_000, 'lambda w2', 'release', 'released 0:2'),
    ],
  },
];

describe('the timeline picture', () => {
  it('shows every labelled event whole: not cut, not dropped', () => {
    const svg = renderSvg('t', crowded);
    for (const section of crowded) {
      const expected = section.events.filter((e) => labelled(e, section.labels)).map((e) => e.text);
      const shown = labelTexts(labelsOf(renderSvg('t', [section])));
      expect(shown.sort()).toEqual(expected.sort());
    }
    // The story marks of the run, crash and busy among them, are labelled; the routine commits are not.
    const texts = labelTexts(labelsOf(svg));
    expect(texts).toEqual(expect.arrayContaining(['CRASH after fence raise, before the first unit', 'duplicate: lease busy (0:1)']));
    expect(texts).not.toContain('unit 3');
    // A label wider than the picture wraps onto several lines rather than being cut.
    expect(labelsOf(svg).filter((l) => l.text.startsWith('lease lost') || l.text.includes('long enough')).length).toBeGreaterThan(1);
  });

  it('lays labels out inside their lane and the picture, no two overlapping', () => {
    expect(layoutProblems(renderSvg('t', crowded))).toEqual([]);
  });

  it('a real renderer draws each label inside the box the layout gave it, and renders the whole picture to PNG', () => {
    const svg = renderSvg('t', crowded);
    expect(renderedMisfits(svg)).toEqual([]);
    const { png, width, height } = renderPng(svg);
    expect(width).toBe(1200);
    expect(height).toBe(Number(/height="(\d+)"/.exec(svg)?.[1]));
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    writeFileSync(join(process.env.TIMELINE_PNG_DIR ?? dir, 'crowded.png'), png);
  });

  it('has every drawn mark and both bands in the legend, grouped in a row per kind of lane, in colours a reader tells apart', () => {
    const svg = renderSvg('t', crowded);
    const legend = [...svg.matchAll(/<text class="legend"[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
    const drawn = (Object.keys(STYLE) as TimelineKind[]).filter((k) => STYLE[k].shape !== 'none');
    const entries = [...new Set([BANDS.lease.legend, BANDS.pause.legend, ...drawn.map((k) => STYLE[k].legend)])];
    expect(legend.sort()).toEqual(entries.map((t) => t.replace(/&/g, '&amp;')).sort());
    // Fewer entries than kinds: kinds that mean the same to a reader share one, and its colour and shape.
    expect(entries.length).toBeLessThanOrEqual(18);
    for (const k of drawn) for (const j of drawn) if (STYLE[k].legend === STYLE[j].legend) expect([STYLE[k].color, STYLE[k].shape], `${k} ~ ${j}`).toEqual([STYLE[j].color, STYLE[j].shape]);
    // Each group's heading, in order, each entry in its group.
    const headings = [...svg.matchAll(/<text x="20" y="(\d+)" font-size="11" font-weight="bold">([^<]*)<\/text>/g)].map((m) => m[2]);
    expect(headings).toEqual(Object.values(GROUPS));
    expect(legendEntries().map((e) => e.text).sort()).toEqual([...entries].sort());
    // Every two entries' colours at least 20 apart (CIE76; about 2.3 is just noticeable): not two blues, not two greens.
    const byEntry = new Map<string, string>([...drawn.map((k) => [STYLE[k].legend, STYLE[k].color] as [string, string]), [BANDS.lease.legend, BANDS.lease.fill], ['paused (band)', BANDS.pause.fill]]);
    const colours = [...byEntry.entries()];
    const close: string[] = [];
    colours.forEach(([ta, a], i) => colours.slice(i + 1).forEach(([tb, b]) => deltaE(a, b) < 20 && close.push(`${ta} ${a} ~ ${tb} ${b} (${deltaE(a, b).toFixed(1)})`)));
    expect(close).toEqual([]);
    // The shapes carry what a colour alone would not: the lease's life, writes, what went wrong, recovery.
    expect(new Set(drawn.map((k) => STYLE[k].shape)).size).toBeGreaterThanOrEqual(6);
  });

  it("gives the delivery its own panel and time axis: the workers' story spans the width, not its first fifth", () => {
    // A run like npm start's: the workers' story in the first 10 s, the outbox's delivery for a minute after it.
    const story = [
      ev(0, 'queue', 'duplicate', 'duplicate delivery of invoice-run#2026-09'),
      ev(5, 'lambda w1', 'acquire', 'invoice-run#2026-09 gen 0:1', 1_500),
      ev(400, 'lambda w2', 'crash', 'CRASH after fence raise, before the first unit'),
      ...Array.from({ length: 40 }, (_, i) => ev(200 + i * 240, `lambda w${1 + (i % 3)}`, 'commit', `unit ${i}`)),
      ev(4_000, 'sweeper', 'requeue', 'requeued invoice-run#2026-10'),
      ev(9_800, 'lambda w1', 'done', 'invoice-run#2026-09 DONE'),
    ];
    const delivery = Array.from({ length: 200 }, (_, i) => ev(300 + i * 300, i % 2 ? 'sender' : 'reconciler', 'email', `sent email#${i}`));
    const run: TimelineSection = { title: 'Invoice run', events: [...story, ...delivery], labels: 'story' };
    const split = splitDelivery(run, { title: 'Delivery' });
    expect(split.map((s) => s.title)).toEqual(['Invoice run', 'Delivery']);
    expect(split[1]!.events.every((e) => e.actor === 'sender' || e.actor === 'reconciler')).toBe(true);
    const track = 1200 - 170 - 30;
    const share = (svg: string) => {
      const xs = [...svg.matchAll(/<g><title>t=\d+ ms (?:lambda w\d+|queue|sweeper): [^<]*<\/title><(?:circle cx="([\d.]+)"|rect x="([\d.]+)"|path d="M([\d.]+),)/g)].map((m) => Number(m[1] ?? m[2] ?? m[3]));
      return (Math.max(...xs) - Math.min(...xs)) / track;
    };
    // On the run's one axis the story would take a sixth of the width; on its own, nearly all of it.
    expect(share(renderSvg('t', [run]))).toBeLessThan(0.2);
    expect(share(renderSvg('t', split))).toBeGreaterThan(0.95);
    // Commits 240 ms apart are marks apart, not a bar: at least a mark's width between neighbours in a lane.
    const svg = renderSvg('t', split);
    expect(layoutProblems(svg)).toEqual([]);
    const { png } = renderPng(svg);
    writeFileSync(join(process.env.TIMELINE_PNG_DIR ?? dir, 'split.png'), png);
  });

  it('labels a crash and a pause without repeating the fault name\'s first word', () => {
    const clock = new ManualClock();
    const timeline = new Timeline(() => clock.monotonicNow());
    const plan = new FaultPlan(
      [
        { name: 'crash mid-run, after a commit', point: 'after-commit', jobId: 'j', action: { kind: 'crash' } },
        { name: 'paused between read and write', point: 'before-commit', jobId: 'j', action: { kind: 'pause', ms: 10 } },
      ],
      clock,
      timeline,
    );
    void plan.at('after-commit', { jobId: 'j', owner: 'w1-1-abc/0', unit: 1 });
    void plan.at('before-commit', { jobId: 'j', owner: 'w2-1-abc/0', unit: 2 });
    expect(timeline.events.map((e) => e.text)).toEqual(['CRASH mid-run, after a commit', 'PAUSE 10 ms between read and write']);
  });
});

describe("npm start's paused worker", () => {
  it('stays paused until a successor has committed its unit, however long that takes, then resumes (a timed pause would resume first on a slow machine)', async () => {
    const pause = defaultFaults(['j1', 'j2', 'j3'], 5).find((f) => f.action.kind === 'pause')!;
    const clock = new ManualClock();
    const timeline = new Timeline(() => clock.monotonicNow());
    let committed = false;
    const probes = { unitCommitted: async () => committed, fencedAbove: async () => false };
    const plan = new FaultPlan([pause], clock, timeline, undefined, probes);
    let resumed = false;
    const paused = plan.at('before-commit', { jobId: 'j1', owner: 'w1-1-abc/0', unit: pause.unit! }).then(() => (resumed = true));
    // Thirty leases (the bound is the run's stall watchdog, 40): seven times the pause the run used to take, and the successor has not committed yet.
    for (let i = 0; i < 30; i++) await clock.advance(LEASE_MS);
    expect(resumed).toBe(false);
    expect(plan.activePauses).toBe(1);
    committed = true;
    await clock.advance(100);
    await paused;
    expect(resumed).toBe(true);
    expect(timeline.events.map((e) => e.text)).toEqual(['PAUSE until a successor commits its unit between read and write', 'resumed after paused between read and write']);
  });
});

describe('the picture in the README (docs/img/timeline.svg, written by npm start)', () => {
  it('passes the same checks', () => {
    const svg = readFileSync(new URL('../docs/img/timeline.svg', import.meta.url), 'utf8');
    expect(labelsOf(svg).length).toBeGreaterThan(20);
    expect(layoutProblems(svg)).toEqual([]);
    expect(renderedMisfits(svg)).toEqual([]);
  });
});
