/**
 * Checks a timeline SVG (cli/shared/timeline.ts) the way a reader sees it: every label whole, inside
 * its lane, overlapping no other; and, with a real SVG renderer (resvg, with the DejaVu Sans the
 * layout measures by), that each label's drawn text lies inside the box the layout gave it.
 */
import { createRequire } from 'node:module';
import { Resvg } from '@resvg/resvg-js';

const require = createRequire(import.meta.url);
/** The font the layout measures by, shipped by an npm package: no system font is needed. */
export const FONT_FILES = ['DejaVuSans.ttf', 'DejaVuSans-Bold.ttf'].map((f) => require.resolve(`dejavu-fonts-ttf/ttf/${f}`));
const FONTS = { loadSystemFonts: false, fontFiles: FONT_FILES, defaultFontFamily: 'DejaVu Sans', sansSerifFamily: 'DejaVu Sans' };

export interface SvgLabel {
  text: string;
  x: number;
  y: number;
  fontSize: number;
  fill: string;
  box: { x: number; y: number; w: number; h: number };
  lane: { top: number; bottom: number };
  event: string;
}

const unescape = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&');

export function labelsOf(svg: string): SvgLabel[] {
  const out: SvgLabel[] = [];
  for (const m of svg.matchAll(/<text class="label" ([^>]*)>([^<]*)<\/text>/g)) {
    const attr = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(m[1]!)?.[1] ?? '';
    const [bx, by, bw, bh] = attr('data-box').split(' ').map(Number) as [number, number, number, number];
    const [top, bottom] = attr('data-lane').split(' ').map(Number) as [number, number];
    out.push({
      text: unescape(m[2]!),
      x: Number(attr('x')),
      y: Number(attr('y')),
      fontSize: Number(attr('font-size')),
      fill: attr('fill'),
      box: { x: bx, y: by, w: bw, h: bh },
      lane: { top, bottom },
      event: attr('data-event'),
    });
  }
  return out;
}

/** Each label's lines joined: the text a reader gets for each labelled event. */
export function labelTexts(labels: readonly SvgLabel[]): string[] {
  const byEvent = new Map<string, string[]>();
  for (const l of labels) byEvent.set(l.event, [...(byEvent.get(l.event) ?? []), l.text]);
  return [...byEvent.values()].map((lines) => lines.join(' '));
}

const overlap = (a: SvgLabel['box'], b: SvgLabel['box']) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

/** What is wrong with the layout the SVG claims: overlapping labels, labels out of their lane or the picture. */
export function layoutProblems(svg: string): string[] {
  const width = Number(/<svg [^>]*width="(\d+)"/.exec(svg)?.[1]);
  const labels = labelsOf(svg);
  const problems: string[] = [];
  labels.forEach((a, i) => {
    if (a.box.x < 0 || a.box.x + a.box.w > width) problems.push(`"${a.text}" leaves the picture (${a.box.x}..${a.box.x + a.box.w} of ${width})`);
    if (a.box.y < a.lane.top || a.box.y + a.box.h > a.lane.bottom) problems.push(`"${a.text}" leaves its lane (${a.box.y}..${a.box.y + a.box.h} of ${a.lane.top}..${a.lane.bottom})`);
    for (const b of labels.slice(i + 1)) if (overlap(a.box, b.box)) problems.push(`"${a.text}" overlaps "${b.text}"`);
  });
  // A leader (mark to label) may end at its own label, and cross no other.
  for (const m of svg.matchAll(/<line class="leader" x1="([^"]*)" y1="([^"]*)" x2="[^"]*" y2="([^"]*)"/g)) {
    const [x, y1, y2] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const crossed = labels.filter((l) => x > l.box.x && x < l.box.x + l.box.w && y1 < l.box.y && y2 > l.box.y + l.box.h);
    for (const l of crossed) problems.push(`the leader at x=${x} crosses "${l.text}"`);
  }
  return problems;
}

/**
 * Renders each label alone with resvg and compares the ink it draws with the label's box:
 * the layout's text widths must hold for a real renderer and font. Returns the misfits.
 */
export function renderedMisfits(svg: string): string[] {
  const family = /<svg [^>]*font-family="([^"]*)"/.exec(svg)?.[1] ?? 'sans-serif';
  const width = /<svg [^>]*width="(\d+)"/.exec(svg)?.[1];
  const height = /<svg [^>]*height="(\d+)"/.exec(svg)?.[1];
  const misfits: string[] = [];
  for (const l of labelsOf(svg)) {
    const one = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="${family}"><text x="${l.x}" y="${l.y}" font-size="${l.fontSize}">${l.text.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</text></svg>`;
    const ink = new Resvg(one, { font: FONTS }).getBBox();
    if (ink === undefined) {
      misfits.push(`"${l.text}" drew nothing (no font?)`);
      continue;
    }
    const inside = ink.x >= l.box.x - 0.5 && ink.x + ink.width <= l.box.x + l.box.w + 0.5 && ink.y >= l.box.y - 0.5 && ink.y + ink.height <= l.box.y + l.box.h + 0.5;
    if (!inside) misfits.push(`"${l.text}" drawn at ${ink.x.toFixed(1)},${ink.y.toFixed(1)} ${ink.width.toFixed(1)}x${ink.height.toFixed(1)}, outside its box ${JSON.stringify(l.box)}`);
  }
  return misfits;
}

/** The whole picture as a PNG, by the same renderer. */
export function renderPng(svg: string): { png: Buffer; width: number; height: number } {
  const r = new Resvg(svg, { font: FONTS }).render();
  return { png: r.asPng(), width: r.width, height: r.height };
}

/** CIE76 colour difference of two #rrggbb colours (about 2.3 is "just noticeable"). */
export function deltaE(a: string, b: string): number {
  const [l1, a1, b1] = lab(a);
  const [l2, a2, b2] = lab(b);
  return Math.hypot(l1 - l2, a1 - a2, b1 - b2);
}

function lab(hex: string): [number, number, number] {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  const x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
  const y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  const z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
  const f = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : (24389 / 27 * t + 16) / 116);
  return [116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))];
}
