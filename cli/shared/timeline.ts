/**
 * A timeline of what happened, per actor (worker, sweeper): lease grants, fence raises,
 * commits, rejections, pauses, crashes, requeues. Rendered as a self-contained SVG so people
 * can SEE the incident: who held which generation when, and whose write the fence refused.
 * Every label is shown whole (cli/shared/timeline-layout.ts stacks them in rows under their lane), and
 * every mark, band and colour is in the legend.
 */
import { LABEL_FONT, packLabels, ROW_H } from './timeline-layout.js';
import { textWidth } from './text-width.js';

export type TimelineKind =
  | 'acquire'
  | 'renew'
  | 'busy'
  | 'fence'
  | 'read'
  | 'commit'
  | 'reject'
  | 'overwrite'
  | 'pause'
  | 'resume'
  | 'crash'
  | 'release'
  | 'lost'
  | 'requeue'
  | 'duplicate'
  | 'done'
  | 'document'
  | 'email'
  | 'collect'
  | 'note';

export interface TimelineEvent {
  t: number;
  actor: string;
  kind: TimelineKind;
  text: string;
  generation?: number;
  /** For acquire/renew: the lease duration granted, to draw the lease until it lapses. */
  leaseMs?: number;
}

export class Timeline {
  readonly events: TimelineEvent[] = [];
  private readonly start: number;
  constructor(private readonly now: () => number) {
    this.start = now();
  }
  add(actor: string, kind: TimelineKind, text: string, generation?: number, leaseMs?: number): TimelineEvent {
    const e: TimelineEvent = {
      t: Math.round(this.now() - this.start),
      actor,
      kind,
      text,
      ...(generation === undefined ? {} : { generation }),
      ...(leaseMs === undefined ? {} : { leaseMs }),
    };
    this.events.push(e);
    return e;
  }
}

export type Shape = 'dot' | 'small' | 'square' | 'small-square' | 'cross' | 'triangle' | 'diamond' | 'none';
/** The legend's rows, one per kind of lane: a reader finds a mark among a handful, not among twenty. */
export type LegendGroup = 'leases' | 'writes' | 'faults' | 'recovery' | 'delivery';
export const GROUPS: Record<LegendGroup, string> = { leases: 'Leases', writes: 'Writes', faults: 'Faults', recovery: 'Recovery', delivery: 'Delivery' };

/**
 * How each kind is drawn: a colour and a shape per legend entry (kinds that share an entry share
 * both). Hues are held apart by test/timeline.test.ts (a minimum CIE76 distance), and the shape
 * tells the groups apart where colours are hard to tell: circles for the lease's life, squares
 * for writes, crosses for what went wrong, a triangle for a duplicate, a diamond for a requeue.
 * Renewals and resumes extend a band instead.
 */
export const STYLE: Record<TimelineKind, { color: string; shape: Shape; legend: string; group: LegendGroup }> = {
  acquire: { color: '#1f63d6', shape: 'dot', legend: 'lease granted', group: 'leases' },
  renew: { color: '#1f63d6', shape: 'none', legend: 'renewed', group: 'leases' },
  release: { color: '#17becf', shape: 'dot', legend: 'released', group: 'leases' },
  lost: { color: '#8c564b', shape: 'dot', legend: 'lease lost / uncertain', group: 'leases' },
  done: { color: '#0b5e2a', shape: 'dot', legend: 'job done', group: 'leases' },
  fence: { color: '#7b3fbf', shape: 'square', legend: 'fence raised', group: 'writes' },
  read: { color: '#a8a8a8', shape: 'small-square', legend: 'checkpoint read', group: 'writes' },
  commit: { color: '#2ca02c', shape: 'small-square', legend: 'unit committed', group: 'writes' },
  reject: { color: '#d62728', shape: 'cross', legend: 'stale write rejected', group: 'writes' },
  overwrite: { color: '#ff7f0e', shape: 'cross', legend: 'overwrite (no fence)', group: 'writes' },
  // One entry with the band it starts: the dot and the band say the same thing.
  pause: { color: '#e0b000', shape: 'dot', legend: 'paused', group: 'faults' },
  resume: { color: '#e0b000', shape: 'none', legend: 'resumed', group: 'faults' },
  crash: { color: '#000000', shape: 'cross', legend: 'crash', group: 'faults' },
  busy: { color: '#6b8e23', shape: 'triangle', legend: 'duplicate delivery (dropped: lease busy)', group: 'faults' },
  duplicate: { color: '#6b8e23', shape: 'triangle', legend: 'duplicate delivery (dropped: lease busy)', group: 'faults' },
  requeue: { color: '#e0409a', shape: 'diamond', legend: 'requeued by the sweeper', group: 'recovery' },
  document: { color: '#0a2f6b', shape: 'small-square', legend: 'documents put', group: 'delivery' },
  email: { color: '#b000b0', shape: 'small', legend: 'email / provider call sent', group: 'delivery' },
  collect: { color: '#a6d854', shape: 'small', legend: 'orphan collected', group: 'delivery' },
  note: { color: '#3f6f78', shape: 'dot', legend: 'note', group: 'delivery' },
};
/** The two bands: a lease held, and a worker paused. */
export const BANDS = { lease: { fill: '#bee3f8', legend: 'lease held (to release, loss or lapse)' }, pause: { fill: '#faf089', stroke: '#c8a000', legend: 'paused' } };

/** Kinds not labelled in a 'story' section (a long run): the many routine commits, and what a band already shows. */
const ROUTINE: readonly TimelineKind[] = ['commit', 'renew', 'resume', 'document', 'email', 'collect'];
/** Never labelled: drawn as part of a band. */
const UNLABELLED: readonly TimelineKind[] = ['renew', 'resume'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export interface TimelineSection {
  title: string;
  subtitle?: string;
  events: readonly TimelineEvent[];
  /** 'all': every event gets a label (a short story); 'story' (default): all but the routine commits and renewals. */
  labels?: 'all' | 'story';
}

/** Does this event get a label in this section? */
export const labelled = (e: TimelineEvent, mode: TimelineSection['labels']): boolean =>
  !(mode === 'all' ? UNLABELLED : ROUTINE).includes(e.kind);

const WIDTH = 1200;
const LEFT = 170;
const RIGHT = 30;
/** Where labels may go: from the picture's left margin (under the lane names) to its right edge. */
const LABEL_MIN_X = 20;
const LABEL_MAX_X = WIDTH - 8;
const TRACK = 14;

function mark(kind: TimelineKind, cx: number, cy: number): string {
  const { color, shape } = STYLE[kind];
  switch (shape) {
    case 'none':
      return '';
    case 'cross':
      return `<path d="M${cx - 6},${cy - 6} L${cx + 6},${cy + 6} M${cx + 6},${cy - 6} L${cx - 6},${cy + 6}" stroke="${color}" stroke-width="3"/>`;
    case 'square':
    case 'small-square': {
      const h = shape === 'square' ? 5 : 3;
      return `<rect x="${cx - h}" y="${cy - h}" width="${2 * h}" height="${2 * h}" fill="${color}"/>`;
    }
    case 'triangle':
      return `<path d="M${cx},${cy - 6} L${cx + 6},${cy + 5} L${cx - 6},${cy + 5} Z" fill="${color}"/>`;
    case 'diamond':
      return `<path d="M${cx},${cy - 6} L${cx + 6},${cy} L${cx},${cy + 6} L${cx - 6},${cy} Z" fill="${color}"/>`;
    default:
      return `<circle cx="${cx}" cy="${cy}" r="${shape === 'small' ? 3 : 5}" fill="${color}"/>`;
  }
}

/** Lease bands: from a grant until it ends (release, loss, crash, next grant) or lapses (last grant or renewal + its duration). */
function leaseBands(own: readonly TimelineEvent[], x: (t: number) => number, tMax: number, ly: number, actor: string): string[] {
  const parts: string[] = [];
  own.forEach((e, j) => {
    if (e.kind !== 'acquire') return;
    const rest = own.slice(j + 1);
    const end = rest.find((n) => ['release', 'lost', 'crash', 'acquire', 'reject', 'done'].includes(n.kind));
    const renewals = rest.filter((n) => n.kind === 'renew' && (end === undefined || n.t <= end.t));
    const lastGrant = renewals[renewals.length - 1] ?? e;
    const lapse = lastGrant.leaseMs === undefined ? Infinity : lastGrant.t + lastGrant.leaseMs;
    const x1 = x(e.t);
    const x2 = x(Math.min(end?.t ?? tMax, lapse, tMax));
    parts.push(`<rect x="${x1}" y="${ly - 7}" width="${Math.max(2, x2 - x1)}" height="14" rx="3" fill="${BANDS.lease.fill}" opacity="0.9"><title>${esc(`${actor}: lease, ${e.text}`)}</title></rect>`);
  });
  for (const e of own) {
    if (e.kind !== 'pause') continue;
    const resume = own.find((n) => n.kind === 'resume' && n.t >= e.t);
    const x1 = x(e.t);
    parts.push(`<rect x="${x1}" y="${ly - 3}" width="${Math.max(2, x(resume?.t ?? tMax) - x1)}" height="6" fill="${BANDS.pause.fill}" stroke="${BANDS.pause.stroke}"><title>${esc(e.text)}</title></rect>`);
  }
  return parts;
}

/** Unlabelled marks of one kind closer than this draw as one: they are one streak to the eye, and thousands of them made the SVG weigh 450 kB. */
const MERGE_PX = 2;

/** The lane's marks, a run of unlabelled same-kind marks within MERGE_PX drawn once, its title counting them. */
function marks(own: readonly TimelineEvent[], x: (t: number) => number, isLabelled: typeof labelled, mode: TimelineSection['labels']): { kind: TimelineKind; x: number; title: string }[] {
  const out: { kind: TimelineKind; x: number; title: string; first: TimelineEvent; last: TimelineEvent; n: number }[] = [];
  for (const e of own) {
    if (STYLE[e.kind].shape === 'none') continue;
    const prev = out[out.length - 1];
    if (prev !== undefined && prev.kind === e.kind && !isLabelled(e, mode) && !isLabelled(prev.first, mode) && x(e.t) - prev.x < MERGE_PX) {
      [prev.last, prev.n] = [e, prev.n + 1];
      continue;
    }
    out.push({ kind: e.kind, x: x(e.t), title: '', first: e, last: e, n: 1 });
  }
  return out.map((m) => ({
    kind: m.kind,
    x: m.x,
    title: m.n === 1 ? `t=${m.first.t} ms ${m.first.actor}: ${m.first.text}` : `t=${m.first.t}..${m.last.t} ms ${m.first.actor}: ${m.n} x ${STYLE[m.kind].legend} (${m.first.text} .. ${m.last.text})`,
  }));
}

/** One lane: its track, bands, marks, and its labels in as many rows as they need. Returns the lane's height. */
function lane(parts: string[], section: TimelineSection, actor: string, top: number, x: (t: number) => number, tMax: number, id: string): number {
  const ly = top + TRACK;
  const own = section.events.filter((e) => e.actor === actor);
  parts.push(`<line x1="${LEFT}" y1="${ly}" x2="${WIDTH - RIGHT}" y2="${ly}" stroke="#e2e8f0"/>`);
  parts.push(`<text x="20" y="${ly + 4}" font-size="12">${esc(actor)}</text>`);
  parts.push(...leaseBands(own, x, tMax, ly, actor));
  for (const m of marks(own, x, labelled, section.labels)) parts.push(`<g><title>${esc(m.title)}</title>${mark(m.kind, m.x, ly)}</g>`);
  const shown = own.filter((e) => labelled(e, section.labels));
  const { labels, rows } = packLabels(shown.map((e) => ({ at: x(e.t), text: e.text })), LABEL_MIN_X, LABEL_MAX_X);
  const rowsTop = ly + 9;
  const bottom = rowsTop + Math.max(1, rows) * ROW_H + 6;
  labels.forEach((l, i) => {
    const e = shown[i]!;
    const y = rowsTop + l.row * ROW_H;
    if (l.leader) parts.push(`<line class="leader" x1="${l.at}" y1="${ly + 6}" x2="${l.at}" y2="${y + ROW_H / 2}" stroke="#a0aec0" stroke-width="0.75"/>`);
    l.lines.forEach((line, k) => {
      const box = `${l.x} ${y + k * ROW_H} ${l.w} ${ROW_H}`;
      parts.push(
        `<text class="label" x="${l.x}" y="${y + k * ROW_H + 10}" font-size="${LABEL_FONT}" fill="${STYLE[e.kind].color}" data-box="${box}" data-lane="${top} ${bottom}" data-event="${id}.${i}">${esc(line)}</text>`,
      );
    });
  });
  return bottom - top;
}

/** The legend's entries: the bands, then one per distinct legend text of the kinds drawn, each in its group's row. */
export function legendEntries(): { group: LegendGroup; text: string; draw: (lx: number, ly: number) => string }[] {
  const entries: { group: LegendGroup; text: string; draw: (lx: number, ly: number) => string }[] = [
    { group: 'leases', text: BANDS.lease.legend, draw: (lx, ly) => `<rect x="${lx}" y="${ly - 9}" width="22" height="10" rx="3" fill="${BANDS.lease.fill}"/>` },
    { group: 'faults', text: BANDS.pause.legend, draw: (lx, ly) => `<rect x="${lx}" y="${ly - 7}" width="22" height="6" fill="${BANDS.pause.fill}" stroke="${BANDS.pause.stroke}"/>${mark('pause', lx, ly - 4)}` },
  ];
  for (const k of Object.keys(STYLE) as TimelineKind[]) {
    const { shape, legend, group } = STYLE[k];
    if (shape === 'none' || entries.some((e) => e.text === legend)) continue;
    entries.push({ group, text: legend, draw: (lx, ly) => mark(k, lx + 11, ly - 4) });
  }
  return entries;
}

function legend(parts: string[], y: number): number {
  const entries = legendEntries();
  let ly = y;
  for (const group of Object.keys(GROUPS) as LegendGroup[]) {
    parts.push(`<text x="20" y="${ly}" font-size="11" font-weight="bold">${GROUPS[group]}</text>`);
    let lx = 100;
    for (const item of entries.filter((e) => e.group === group)) {
      const w = 30 + textWidth(item.text, 11) + 18;
      if (lx + w > WIDTH - 10) [lx, ly] = [100, ly + 20];
      parts.push(`${item.draw(lx, ly)}<text class="legend" x="${lx + 28}" y="${ly}" font-size="11">${esc(item.text)}</text>`);
      lx += w;
    }
    ly += 20;
  }
  return ly + 4;
}

/** Lanes of the outbox's delivery and the effects' background work (the sender, the reconciler, the collector, S3's armed fault). */
export const DELIVERY_LANES: readonly string[] = ['sender', 'reconciler', 'collector', 's3'];

/**
 * A long run as two panels, each on its own time axis: the workers' story (the queue, the
 * workers, the sweeper), up to its last event, and the delivery that goes on long after the
 * last unit. On one axis the delivery's minute squeezes the story into its first fifth.
 */
export function splitDelivery(section: TimelineSection, delivery: { title: string; subtitle?: string }): TimelineSection[] {
  const isDelivery = (e: TimelineEvent) => DELIVERY_LANES.includes(e.actor);
  const story = section.events.filter((e) => !isDelivery(e));
  const rest = section.events.filter(isDelivery);
  if (story.length === 0 || rest.length === 0) return [section];
  return [
    { ...section, events: story },
    { ...delivery, events: rest, ...(section.labels === undefined ? {} : { labels: section.labels }) },
  ];
}

/** Lanes top to bottom: the queue, the workers by name and number (w2 before w10), the sweeper. */
function byLane(a: string, b: string): number {
  const rank = (n: string) => (n === 'queue' ? 0 : n === 'sweeper' ? 2 : n.startsWith('lambda') ? 1 : 3);
  return rank(a) - rank(b) || a.localeCompare(b, 'en', { numeric: true });
}

/** One SVG with a section per timeline (e.g. the incident with the fence, without it, the run). */
export function renderSvg(title: string, sections: readonly TimelineSection[]): string {
  let y = 50;
  const parts: string[] = [`<text x="20" y="30" font-size="20" font-weight="bold">${esc(title)}</text>`];
  sections.forEach((section, s) => {
    const actors = [...new Set(section.events.map((e) => e.actor))].sort(byLane);
    const tMax = Math.max(1, ...section.events.map((e) => e.t));
    const x = (t: number) => LEFT + (t / tMax) * (WIDTH - LEFT - RIGHT);
    parts.push(`<text x="20" y="${y + 10}" font-size="16" font-weight="bold">${esc(section.title)}</text>`);
    if (section.subtitle) parts.push(`<text x="20" y="${y + 28}" font-size="12" fill="#4a5568">${esc(section.subtitle)}</text>`);
    y += 38;
    actors.forEach((actor, i) => (y += lane(parts, section, actor, y, x, tMax, `${s}.${i}`)));
    parts.push(`<line x1="${LEFT}" y1="${y}" x2="${WIDTH - RIGHT}" y2="${y}" stroke="#a0aec0"/>`);
    for (let i = 0; i <= 5; i++) {
      const t = (tMax * i) / 5;
      // Seconds once the axis is long: "171446 ms" asks the reader to count digits.
      const tick = tMax >= 10_000 ? `${(t / 1000).toFixed(1)} s` : `${Math.round(t)} ms`;
      parts.push(`<text x="${x(t)}" y="${y + 14}" font-size="10" text-anchor="middle" fill="#4a5568">${tick}</text>`);
    }
    y += 45;
  });
  y = legend(parts, y);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${y}" viewBox="0 0 ${WIDTH} ${y}" font-family="Helvetica, Arial, 'DejaVu Sans', sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n${parts.join('\n')}\n</svg>\n`;
}
