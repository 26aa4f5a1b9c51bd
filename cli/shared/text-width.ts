/**
 * How wide a line of text is drawn, for laying out the timeline's labels without a browser.
 * Advance widths of DejaVu Sans (per 1000 em), the widest of the fonts the SVG names or falls
 * back to (Helvetica, Arial, Liberation Sans are narrower): a label laid out with these fits
 * in any of them. A character not in the table counts as 1.1 em.
 */
const FIRST = 32;
/** U+0020..U+007E, DejaVu Sans Book. */
const REGULAR = [
  318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838,
  838, 531, 1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390,
  337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592,
  525, 636, 337, 636, 838,
];
/** U+0020..U+007E, DejaVu Sans Bold. */
const BOLD = [
  348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365, 696, 696, 696, 696, 696, 696, 696, 696, 696, 696, 400, 400, 838, 838,
  838, 580, 1000, 774, 762, 734, 830, 683, 683, 821, 837, 372, 372, 775, 637, 995, 837, 850, 733, 850, 770, 720, 682, 812, 774, 1103, 771, 724, 725, 457,
  365, 457, 838, 500, 500, 675, 716, 593, 716, 678, 435, 716, 712, 343, 343, 665, 343, 1042, 712, 687, 716, 716, 493, 595, 478, 712, 652, 924, 645, 652,
  582, 712, 365, 712, 838,
];
const EXTRA: Record<string, number> = { '…': 1000, '×': 838, '→': 838, '≥': 838, '≤': 838, '·': 318, '–': 500, '—': 1000, 'λ': 592, '€': 636 };
const UNKNOWN = 1100;

/** Width in px of `text` at `fontSize`, in DejaVu Sans (bold or not). */
export function textWidth(text: string, fontSize: number, bold = false): number {
  const table = bold ? BOLD : REGULAR;
  let units = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    units += table[code - FIRST] ?? EXTRA[ch] ?? UNKNOWN;
  }
  return (units / 1000) * fontSize;
}

/** `text` broken at spaces into lines no wider than `maxWidth` (a word wider than that is split). */
export function wrapText(text: string, fontSize: number, maxWidth: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const candidate = line === '' ? word : `${line} ${word}`;
    if (textWidth(candidate, fontSize) <= maxWidth) {
      line = candidate;
      continue;
    }
    if (line !== '') lines.push(line);
    line = word;
    while (textWidth(line, fontSize) > maxWidth) {
      let cut = line.length - 1;
      while (cut > 1 && textWidth(line.slice(0, cut), fontSize) > maxWidth) cut--;
      lines.push(line.slice(0, cut));
      line = line.slice(cut);
    }
  }
  lines.push(line);
  return lines;
}
