/**
 * ONCE and PROGRESS from the Records table, its stream and the Jobs table, by the workload's own
 * checks (Workload.checks): what a finished job must have written is recomputed from its input
 * alone, never through the processor's code path.
 *
 * ONCE     every once-only record inserted once, never modified or removed; per finished group
 *          (every job of a period or a day DONE), every expected record present with its fields,
 *          and no record more than expected; no record of a group no job has.
 * PROGRESS every job reached DONE with its cursor at totalUnits (a job whose input can never
 *          parse must be FAILED).
 */
import type { Workload } from '../../lib/workflow/index.js';
import type { StreamChange } from '../local/streams.js';

type Item = Record<string, unknown>;
type Add = (name: 'ONCE' | 'PROGRESS', msg: string) => void;

export interface RecordsReport {
  /** Records of the finished groups, and what their jobs' inputs demand. */
  records: number;
  expectedRecords: number;
  /** The workload's own figures over those records (Workload.checks.figures: charges and their total, reports...). */
  figures: Record<string, number>;
}

/** A once-only record: one INSERT in the stream, then nothing. */
function checkOnceOnly(w: Workload<any>, stream: readonly StreamChange[], add: Add): void {
  const inserts = new Map<string, number>();
  for (const c of stream) {
    if (!w.checks.isOnce(c.key)) continue;
    if (c.event === 'INSERT') inserts.set(c.key, (inserts.get(c.key) ?? 0) + 1);
    else add('ONCE', `${c.key}: once-only record ${c.event === 'MODIFY' ? 'modified' : 'removed'} after creation`);
  }
  for (const [key, n] of inserts) if (n > 1) add('ONCE', `${key}: once-only record inserted ${n} times`);
}

/** Each DONE job's expected records against the final items; returns the expected count per group. */
function checkJobs(w: Workload<any>, jobs: readonly Item[], items: ReadonlyMap<string, Item>, add: Add) {
  const open = new Set<string>();
  const known = new Set<string>();
  const expected = new Map<string, number>();
  for (const job of jobs) {
    const id = String(job.pk);
    let input: unknown;
    try {
      input = w.processor.parseInput(job.input);
    } catch {
      if (job.status !== 'FAILED') add('PROGRESS', `job ${id}: invalid input and not FAILED`);
      continue;
    }
    if (job.status !== 'DONE' || job.cursor !== job.totalUnits) add('PROGRESS', `job ${id}: status ${String(job.status)} at cursor ${String(job.cursor)}/${String(job.totalUnits)}`);
    const group = w.checks.groupOfInput(input);
    known.add(group);
    if (job.status !== 'DONE') {
      open.add(group);
      continue;
    }
    let n = 0;
    for (const r of w.checks.records(input)) {
      n++;
      const item = items.get(r.pk);
      if (item === undefined) {
        add('ONCE', `${r.pk}: missing`);
        continue;
      }
      for (const [field, want] of Object.entries(r.fields)) if (item[field] !== want) add('ONCE', `${r.pk}: ${field} ${String(item[field])}, expected ${String(want)}`);
    }
    expected.set(group, (expected.get(group) ?? 0) + n);
  }
  for (const g of open) expected.delete(g);
  return { known, expected };
}

export function checkRecords(w: Workload<any>, jobs: readonly Item[], records: readonly Item[], stream: readonly StreamChange[], add: Add): RecordsReport {
  checkOnceOnly(w, stream, add);
  const { known, expected } = checkJobs(w, jobs, new Map(records.map((i) => [String(i.pk), i])), add);
  const groupOf = (i: Item) => w.checks.groupOfRecord(String(i.pk));
  for (const i of records) {
    const g = groupOf(i);
    if (g === undefined || !known.has(g)) add('ONCE', `${String(i.pk)}: written for no known job`);
  }
  // Counted per finished group: a group with an unfinished job is PROGRESS's business, its partial output no ONCE violation.
  const counted = records.filter((i) => expected.has(groupOf(i) ?? ''));
  const expectedRecords = [...expected.values()].reduce((a, b) => a + b, 0);
  if (counted.length !== expectedRecords) add('ONCE', `${counted.length} records in the finished runs, expected ${expectedRecords}`);
  return { records: counted.length, expectedRecords, figures: w.checks.figures?.(counted) ?? {} };
}
