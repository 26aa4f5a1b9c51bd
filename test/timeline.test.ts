/**
 * The timeline picture (cli/timeline.ts) as a reader sees it: every label whole (none cut at
 * 60 characters, none dropped because it would overlap), inside its lane, overlapping no other,
 * and drawn by a real SVG renderer inside the box the layout gave it; every mark and band in the
 * legend, in colours no two alike; fault labels that do not repeat themselves.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../lib/protocol/index.js';
import { FaultPlan } from '../cli/faults.js';
import { BANDS, labelled, renderSvg, STYLE, Timeline, type TimelineEvent, type TimelineKind, type TimelineSection } from '../cli/timeline.js';
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

  it('has every drawn mark and both bands in the legend, in colours no two alike', () => {
    const svg = renderSvg('t', crowded);
    const legend = [...svg.matchAll(/<text class="legend"[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
    const drawn = (Object.keys(STYLE) as TimelineKind[]).filter((k) => STYLE[k].shape !== 'none');
    expect(legend).toEqual(expect.arrayContaining([BANDS.lease.legend, BANDS.pause.legend, ...drawn.map((k) => STYLE[k].legend).map((t) => t.replace(/&/g, '&amp;'))]));
    const colours = [...new Set(drawn.map((k) => STYLE[k].color)), BANDS.lease.fill, BANDS.pause.fill];
    expect(colours).toHaveLength(drawn.length + 2);
    const close: string[] = [];
    colours.forEach((a, i) => colours.slice(i + 1).forEach((b) => deltaE(a, b) < 15 && close.push(`${a}~${b} (${deltaE(a, b).toFixed(1)})`)));
    expect(close).toEqual([]);
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

describe('the picture in the README (docs/img/timeline.svg, written by npm start)', () => {
  it('passes the same checks', () => {
    const svg = readFileSync(new URL('../docs/img/timeline.svg', import.meta.url), 'utf8');
    expect(labelsOf(svg).length).toBeGreaterThan(20);
    expect(layoutProblems(svg)).toEqual([]);
    expect(renderedMisfits(svg)).toEqual([]);
  });
});
