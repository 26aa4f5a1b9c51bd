/**
 * Where the timeline's labels go. Each label sits in a row under its lane's track, starting just
 * after its mark (or ending before it, near the right edge); rows are added until every label fits, so
 * none is cut or dropped and no two overlap. A thin leader joins a label to its mark wherever
 * it can be drawn without crossing another label; a label wider than the picture wraps.
 */
import { textWidth, wrapText } from './text-width.js';

export const LABEL_FONT = 10;
/** One row of labels: 10 px text plus its ascender and descender and a gap. */
export const ROW_H = 14;
/** Space kept between two labels in a row. */
const GAP = 6;

export interface LabelRequest {
  /** The mark's x. */
  at: number;
  text: string;
}

export interface PlacedLabel {
  at: number;
  /** First row (0 = just under the track); the lines take one row each from there. */
  row: number;
  lines: string[];
  /** Left edge and width of the label (every line starts at x). */
  x: number;
  w: number;
  /** A leader from the mark down to the label crosses no other label. */
  leader: boolean;
}

type Span = [number, number];
const hits = (spans: readonly Span[], from: number, to: number) => spans.some(([a, b]) => from < b + GAP && to > a - GAP);

/** Marks closer than this form a burst: their labels start after the burst, so no label hides a leader of its burst. */
const BURST = 8;
/** A leader keeps this far from any label it passes. */
const LEADER_GAP = 1.5;

/**
 * The label's lines and left edge: right of its burst of marks if it fits, else left of it,
 * else as near as the picture allows.
 */
function shape(req: LabelRequest, burst: { from: number; to: number }, minX: number, maxX: number): { lines: string[]; x: number; w: number } {
  const lines = wrapText(req.text, LABEL_FONT, maxX - minX);
  const w = Math.max(...lines.map((l) => textWidth(l, LABEL_FONT)));
  const x = burst.to + 3 + w <= maxX ? burst.to + 3 : burst.from - 3 - w >= minX ? burst.from - 3 - w : Math.max(minX, Math.min(req.at - w / 2, maxX - w));
  return { lines, x, w };
}

/** For each mark, the extent of the burst it belongs to (marks in the order given, by position). */
function bursts(at: readonly number[]): { from: number; to: number }[] {
  const sorted = [...at].sort((a, b) => a - b);
  const groups: { from: number; to: number }[] = [];
  for (const x of sorted) {
    const last = groups[groups.length - 1];
    if (last !== undefined && x - last.to < BURST) last.to = x;
    else groups.push({ from: x, to: x });
  }
  return at.map((x) => groups.find((g) => x >= g.from && x <= g.to)!);
}

/**
 * Packs labels (in the order given, usually time) into rows between `minX` and `maxX`. Each
 * label takes the first row where it fits and its leader would cross nothing, or, if no row
 * down to one past the last has both, the first row where it fits. Always terminates: a row
 * below every placed label is free.
 */
export function packLabels(requests: readonly LabelRequest[], minX: number, maxX: number): { labels: PlacedLabel[]; rows: number } {
  const rows: Span[][] = [];
  // Reading a row never creates it: the searches below are bounded by rows.length.
  const row = (i: number): readonly Span[] => rows[i] ?? [];
  const leaders: { at: number; row: number }[] = [];
  const fits = (r: number, k: number, x: number, w: number) =>
    Array.from({ length: k }, (_, j) => r + j).every((i) => !hits(row(i), x, x + w) && !leaders.some((l) => l.row > i && l.at > x - LEADER_GAP && l.at < x + w + LEADER_GAP));
  const leaderFree = (at: number, r: number) =>
    Array.from({ length: r }, (_, i) => row(i)).every((spans) => spans.every(([a, b]) => at <= a - LEADER_GAP || at >= b + LEADER_GAP));
  const placed: Omit<PlacedLabel, 'leader'>[] = [];
  const burstOf = bursts(requests.map((r) => r.at));
  for (const [i, req] of requests.entries()) {
    const { lines, x, w } = shape(req, burstOf[i]!, minX, maxX);
    let r = 0;
    while (r <= rows.length && !(fits(r, lines.length, x, w) && leaderFree(req.at, r))) r++;
    if (r > rows.length) for (r = 0; !fits(r, lines.length, x, w); r++);
    lines.forEach((_, j) => (rows[r + j] ??= []).push([x, x + w]));
    if (r > 0) leaders.push({ at: req.at, row: r });
    placed.push({ at: req.at, row: r, lines, x, w });
  }
  // A leader is drawn only where, in the final layout, it crosses no label.
  const labels = placed.map((p) => ({ ...p, leader: leaderFree(p.at, p.row) }));
  return { labels, rows: rows.reduce((last, spans, i) => (spans.length > 0 ? i + 1 : last), 0) };
}
