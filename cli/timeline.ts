/**
 * A timeline of what happened, per actor (worker, sweeper): lease grants, fence raises,
 * commits, rejections, pauses, crashes, requeues. Rendered as a self-contained SVG so people
 * can SEE the incident: who held which generation when, and whose write the fence refused.
 */
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

const COLORS: Record<TimelineKind, string> = {
  acquire: '#2b6cb0',
  renew: '#90cdf4',
  busy: '#a0aec0',
  fence: '#6b46c1',
  read: '#718096',
  commit: '#2f855a',
  reject: '#c53030',
  overwrite: '#c53030',
  pause: '#d69e2e',
  resume: '#d69e2e',
  crash: '#1a202c',
  release: '#4a5568',
  lost: '#dd6b20',
  requeue: '#805ad5',
  duplicate: '#a0aec0',
  done: '#276749',
  note: '#718096',
};

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export interface TimelineSection {
  title: string;
  subtitle?: string;
  events: readonly TimelineEvent[];
  /** 'all': every event gets a label (a short story); 'story' (default): all but the routine commits and renewals. */
  labels?: 'all' | 'story';
}

/** One SVG with a section per timeline (e.g. the incident with the fence, without it, the run). */
export function renderSvg(title: string, sections: readonly TimelineSection[]): string {
  const width = 1200;
  const left = 170;
  const right = 30;
  const laneH = 46;
  let y = 50;
  const parts: string[] = [];
  parts.push(`<text x="20" y="30" font-size="20" font-weight="bold">${esc(title)}</text>`);
  for (const section of sections) {
    const actors = [...new Set(section.events.map((e) => e.actor))];
    const tMax = Math.max(1, ...section.events.map((e) => e.t));
    const x = (t: number) => left + (t / tMax) * (width - left - right);
    parts.push(`<text x="20" y="${y + 10}" font-size="16" font-weight="bold">${esc(section.title)}</text>`);
    if (section.subtitle) parts.push(`<text x="20" y="${y + 28}" font-size="12" fill="#4a5568">${esc(section.subtitle)}</text>`);
    y += 45;
    const top = y;
    actors.forEach((actor, i) => {
      const ly = top + i * laneH;
      parts.push(`<line x1="${left}" y1="${ly}" x2="${width - right}" y2="${ly}" stroke="#e2e8f0"/>`);
      parts.push(`<text x="20" y="${ly + 4}" font-size="12">${esc(actor)}</text>`);
      const own = section.events.filter((e) => e.actor === actor);
      // Lease bars: from a grant until it ends (release, loss, crash, next grant) or lapses
      // (last grant or renewal + its duration): the lease is drawn as the holder's permission.
      own.forEach((e, j) => {
        if (e.kind !== 'acquire') return;
        const rest = own.slice(j + 1);
        const end = rest.find((n) => ['release', 'lost', 'crash', 'acquire', 'reject', 'done'].includes(n.kind));
        const renewals = rest.filter((n) => n.kind === 'renew' && (end === undefined || n.t <= end.t));
        const lastGrant = renewals[renewals.length - 1] ?? e;
        const lapse = lastGrant.leaseMs === undefined ? Infinity : lastGrant.t + lastGrant.leaseMs;
        const x1 = x(e.t);
        const x2 = x(Math.min(end?.t ?? tMax, lapse, tMax));
        parts.push(
          `<rect x="${x1}" y="${ly - 7}" width="${Math.max(2, x2 - x1)}" height="14" rx="3" fill="#bee3f8" opacity="0.9"><title>${esc(`${actor}: lease, ${e.text}`)}</title></rect>`,
        );
      });
      own.forEach((e) => {
        if (e.kind !== 'pause') return;
        const resume = own.find((n) => n.kind === 'resume' && n.t >= e.t);
        const x1 = x(e.t);
        parts.push(`<rect x="${x1}" y="${ly - 3}" width="${Math.max(2, x(resume?.t ?? tMax) - x1)}" height="6" fill="#faf089" stroke="#d69e2e"><title>${esc(e.text)}</title></rect>`);
      });
    });
    section.events.forEach((e) => {
      if (e.kind === 'renew') return;
      const ly = top + actors.indexOf(e.actor) * laneH;
      const cx = x(e.t);
      const color = COLORS[e.kind];
      const shape =
        e.kind === 'reject' || e.kind === 'overwrite' || e.kind === 'crash'
          ? `<path d="M${cx - 6},${ly - 6} L${cx + 6},${ly + 6} M${cx + 6},${ly - 6} L${cx - 6},${ly + 6}" stroke="${color}" stroke-width="3"/>`
          : `<circle cx="${cx}" cy="${ly}" r="${e.kind === 'commit' ? 3 : 5}" fill="${color}"/>`;
      parts.push(`<g><title>${esc(`t=${e.t} ms ${e.actor}: ${e.text}`)}</title>${shape}</g>`);
    });
    // Labels for the events that tell the story, in two rows per lane (above, below), skipping
    // any that would overlap: every event keeps its full text as a hover title.
    const taken = new Map<string, { from: number; to: number }[]>();
    const CHAR = 5.6;
    for (const e of section.events) {
      if (['commit', 'read', 'busy', 'release', 'renew', 'resume'].includes(e.kind)) continue;
      const lane = actors.indexOf(e.actor);
      const ly = top + lane * laneH;
      const text = e.text.slice(0, 60);
      const w = text.length * CHAR;
      const anchorEnd = x(e.t) + 7 + w > width - 5;
      const from = anchorEnd ? x(e.t) - 7 - w : x(e.t) + 7;
      for (const [row, dy] of [['a', -10], ['b', 19]] as const) {
        const key = `${lane}${row}`;
        const spans = taken.get(key) ?? [];
        if (spans.some((sp) => from < sp.to + 4 && from + w > sp.from - 4)) continue;
        spans.push({ from, to: from + w });
        taken.set(key, spans);
        parts.push(`<text x="${from}" y="${ly + dy}" font-size="10" fill="${COLORS[e.kind]}">${esc(text)}</text>`);
        break;
      }
    }
    y = top + actors.length * laneH + 10;
    parts.push(`<line x1="${left}" y1="${y}" x2="${width - right}" y2="${y}" stroke="#a0aec0"/>`);
    for (let i = 0; i <= 5; i++) {
      const t = (tMax * i) / 5;
      parts.push(`<text x="${x(t)}" y="${y + 14}" font-size="10" text-anchor="middle" fill="#4a5568">${Math.round(t)} ms</text>`);
    }
    y += 45;
  }
  const legend = (Object.keys(COLORS) as TimelineKind[]).filter((k) => !['note', 'resume', 'renew'].includes(k));
  legend.forEach((k, i) => {
    const lx = 20 + (i % 8) * 140;
    const ly = y + Math.floor(i / 8) * 18;
    parts.push(`<circle cx="${lx + 5}" cy="${ly - 4}" r="5" fill="${COLORS[k]}"/><text x="${lx + 14}" y="${ly}" font-size="11">${k}</text>`);
  });
  y += 50;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}" font-family="Helvetica, Arial, sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n${parts.join('\n')}\n</svg>\n`;
}
