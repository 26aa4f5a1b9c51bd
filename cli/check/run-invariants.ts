/**
 * RUNS, the invariant of sharded runs (lib/workflow/runs.ts), checked like the others from the
 * tables alone, by the attribute contract, never through the starter's or the worker's code:
 *
 *   per run    its record lists shardCount distinct jobs, each of which exists and carries the
 *              run's own input cut to its range (shardOf); their ranges tile the run's items [0, N) with no gap and no
 *              overlap; no job outside the list claims the run (an id `<run>#shard-...`);
 *              exactly one record per item across all shards, each written by the shard whose
 *              range holds the item (the workload's expected records); their count is the run's, computed
 *              from the run's input (not summed from the shards: a shard counted twice shows);
 *              `doneAt` is set if and only if every listed shard is DONE.
 *   per shard  a DONE shard's expected records (Workload.checks.records of its input) are there, written by it.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Workload } from '../../lib/workflow/index.js';

type Item = Record<string, unknown>;

export interface RunsReport {
  runs: number;
  shards: number;
  /** Runs whose every listed shard is DONE. */
  completeRuns: number;
}

interface Shard {
  id: string;
  input: unknown;
  from: number;
  to: number;
}

/** The checks above over the Jobs items (`runRecords`: kind = run; `jobs`: the rest) and the Records items. */
export function checkRuns(w: Workload<any>, runRecords: readonly Item[], jobs: readonly Item[], records: readonly Item[], add: (msg: string) => void): RunsReport {
  const jobById = new Map(jobs.map((j) => [String(j.pk), j]));
  const recordByKey = new Map(records.map((i) => [String(i.pk), i]));
  let shardsSeen = 0;
  let complete = 0;
  for (const record of runRecords) {
    const runId = String(record.pk).replace(/^run#/, '');
    const input = inputOf(w, record);
    if (input === undefined) {
      add(`run ${runId}: its input is not a ${w.name} run's`);
      continue;
    }
    const listed = Array.isArray(record.shards) ? record.shards.map(String) : [];
    shardsSeen += listed.length;
    checkListing(runId, record, listed, jobs, add);
    const shards = checkShardInputs(w, runId, input, listed, jobById, add);
    checkTiling(runId, w.start.itemsOf(input), shards, add);
    const allDone = listed.length > 0 && listed.every((id) => jobById.get(id)?.status === 'DONE');
    if (allDone) complete++;
    checkDoneMark(runId, record, listed, allDone, jobById, add);
    for (const s of shards) if (jobById.get(s.id)?.status === 'DONE') checkShardRecords(w, runId, s, recordByKey, add);
    if (allDone) checkRunTotal(w, runId, input, shards, add);
  }
  return { runs: runRecords.length, shards: shardsSeen, completeRuns: complete };
}

const inputOf = (w: Workload<any>, item: Item | undefined): unknown => {
  try {
    return w.processor.parseInput(item?.input);
  } catch {
    return undefined;
  }
};

function checkListing(runId: string, record: Item, listed: readonly string[], jobs: readonly Item[], add: (msg: string) => void): void {
  if (listed.length !== record.shardCount) add(`run ${runId}: lists ${listed.length} shards, shardCount ${String(record.shardCount)}`);
  for (const id of new Set(listed.filter((id, i) => listed.indexOf(id) !== i))) add(`run ${runId}: shard ${id} listed more than once`);
  for (const j of jobs) {
    const id = String(j.pk);
    if (id.startsWith(`${runId}#shard-`) && !listed.includes(id)) add(`run ${runId}: job ${id} claims the run but is not one of its shards`);
  }
}

function checkDoneMark(runId: string, record: Item, listed: readonly string[], allDone: boolean, jobById: ReadonlyMap<string, Item>, add: (msg: string) => void): void {
  if (typeof record.doneAt === 'number' && !allDone) {
    const open = listed.filter((id) => jobById.get(id)?.status !== 'DONE');
    add(`run ${runId}: marked done while ${open.length} shard(s) are not DONE (${open.slice(0, 3).map((id) => `${id}: ${String(jobById.get(id)?.status ?? 'missing')}`).join(', ')})`);
  }
  if (allDone && typeof record.doneAt !== 'number') add(`run ${runId}: every shard is DONE but the run was never marked done`);
}

/** Every listed shard exists and is this run's input cut to its own range: the run's input with nothing else changed. */
function checkShardInputs(w: Workload<any>, runId: string, run: unknown, listed: readonly string[], jobById: ReadonlyMap<string, Item>, add: (msg: string) => void): Shard[] {
  const out: Shard[] = [];
  for (const id of listed) {
    const job = jobById.get(id);
    const input = inputOf(w, job);
    if (job === undefined) add(`run ${runId}: shard ${id} does not exist`);
    else if (input === undefined) add(`run ${runId}: shard ${id} has no ${w.name} input`);
    else {
      const range = w.start.rangeOf(input);
      if (!isDeepStrictEqual(w.start.shardOf(run, range), input)) add(`run ${runId}: shard ${id} covers another run (${JSON.stringify(job.input).slice(0, 160)})`);
      else out.push({ id, input, ...range });
    }
  }
  return out;
}

/** The shards' ranges tile [0, n): no gap, no overlap. */
function checkTiling(runId: string, n: number, shards: readonly Shard[], add: (msg: string) => void): void {
  let at = 0;
  for (const s of [...shards].sort((a, b) => a.from - b.from)) {
    if (s.from < at) add(`run ${runId}: shard ${s.id} [${s.from}, ${s.to}) overlaps the items before ${at}`);
    else if (s.from > at) add(`run ${runId}: items [${at}, ${s.from}) are in no shard`);
    at = Math.max(at, s.to);
  }
  if (at < n) add(`run ${runId}: items [${at}, ${n}) are in no shard`);
}

/** A DONE shard's records are there, each written by that shard (the one whose range holds its item). */
function checkShardRecords(w: Workload<any>, runId: string, s: Shard, recordByKey: ReadonlyMap<string, Item>, add: (msg: string) => void): void {
  let wrong = 0;
  for (const r of w.checks.records(s.input)) {
    const item = recordByKey.get(r.pk);
    if (item === undefined) add(`run ${runId}: ${r.pk} of shard ${s.id} is missing`);
    else if (item.jobId !== s.id && wrong++ < 3) add(`run ${runId}: ${r.pk} written by ${String(item.jobId)}, held by shard ${s.id}`);
  }
}

/** The shards' expected records add up to the run's own, from its input alone. */
function checkRunTotal(w: Workload<any>, runId: string, run: unknown, shards: readonly Shard[], add: (msg: string) => void): void {
  const count = (input: unknown) => [...w.checks.records(input)].length;
  const summed = shards.reduce((n, s) => n + count(s.input), 0);
  const whole = count(run);
  if (summed !== whole) add(`run ${runId}: its shards demand ${summed} records, the run ${whole}`);
}
