/** Small pieces of the lines `npm start` prints: counted nouns, an invariant's verdict, the metrics. */

/** "1 ambiguous send", "2 ambiguous sends": a count and its noun in the number it takes. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * An invariant's line of the report: "PASS  NAME", "FAIL  NAME: violations". A PASS that covers
 * only part of the invariant says so, "PASS (partly unchecked)  NAME: what was not read", and
 * one that covers none of it is no PASS: "UNCHECKED  NAME: why".
 */
export function invariantLine(name: string, r: { ok: boolean; violations: readonly string[]; unchecked?: readonly string[]; nothingChecked?: boolean }): string {
  if (!r.ok) return `FAIL  ${name}: ${r.violations.join('; ')}`;
  if (r.unchecked === undefined || r.unchecked.length === 0) return `PASS  ${name}`;
  return `${r.nothingChecked === true ? 'UNCHECKED' : 'PASS (partly unchecked)'}  ${name}: ${r.unchecked.join('; ')}`;
}

/** What a metric counts, where its name alone would read as something else beside the run's other counts. */
const METRIC_NOTES: Readonly<Record<string, string>> = {
  OutboxRecordsFailed: 'stream records the sender handed back for the event source to retry, not emails that failed',
};

/** "metrics: A=1 B=2", then what a nonzero metric whose name misleads counts. */
export function metricsLine(metrics: Readonly<Record<string, number>>): string {
  const entries = Object.entries(metrics);
  const notes = entries.filter(([k, v]) => v > 0 && METRIC_NOTES[k] !== undefined).map(([k]) => `${k}: ${METRIC_NOTES[k]}`);
  return `metrics: ${entries.map(([k, v]) => `${k}=${v}`).join(' ')}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`;
}
