/**
 * RUNS, the invariant of sharded runs (lib/workflow/runs.ts), checked like the others from the
 * tables alone, by the attribute contract, never through the starter's or the worker's code:
 *
 *   per run    its record lists shardCount distinct jobs, each of which exists and carries the
 *              run's own input; their ranges tile the run's customers [0, N) with no gap and no
 *              overlap; no job outside the list claims the run (an id `<run>#shard-...`);
 *              exactly one charge per customer across all shards, each written by the shard whose
 *              range holds the customer; the charges' count and total are the run's, computed
 *              from the run's input (not summed from the shards: a shard counted twice shows);
 *              `doneAt` is set if and only if every listed shard is DONE.
 *   per shard  a DONE shard's charges are exactly its range, with its range's total.
 */
import { amountCents, customerId, parseInvoiceInput, type InvoiceRunInput } from '../../lib/workloads/invoices.js';

type Item = Record<string, unknown>;

export interface RunsReport {
  runs: number;
  shards: number;
  /** Runs whose every listed shard is DONE. */
  completeRuns: number;
}

const inputOf = (item: Item | undefined): InvoiceRunInput | undefined => {
  try {
    return parseInvoiceInput(item?.input);
  } catch {
    return undefined;
  }
};

/** The checks above over the Jobs items (`runRecords`: kind = run; `jobs`: the rest) and the Invoices items. */
export function checkRuns(runRecords: readonly Item[], jobs: readonly Item[], invoiceItems: readonly Item[], add: (msg: string) => void): RunsReport {
  const jobById = new Map(jobs.map((j) => [String(j.pk), j]));
  const charges = new Map(invoiceItems.filter((i) => String(i.pk).startsWith('charge#')).map((i) => [String(i.pk), i]));
  let shardsSeen = 0;
  let complete = 0;
  for (const record of runRecords) {
    const runId = String(record.pk).replace(/^run#/, '');
    const input = inputOf(record);
    if (input === undefined) {
      add(`run ${runId}: its input is not an invoice run's`);
      continue;
    }
    const listed = Array.isArray(record.shards) ? record.shards.map(String) : [];
    shardsSeen += listed.length;
    if (listed.length !== record.shardCount) add(`run ${runId}: lists ${listed.length} shards, shardCount ${String(record.shardCount)}`);
    for (const id of new Set(listed.filter((id, i) => listed.indexOf(id) !== i))) add(`run ${runId}: shard ${id} listed more than once`);
    for (const j of jobs) {
      const id = String(j.pk);
      if (id.startsWith(`${runId}#shard-`) && !listed.includes(id)) add(`run ${runId}: job ${id} claims the run but is not one of its shards`);
    }
    const shards = checkShardInputs(runId, input, listed, jobById, add);
    checkTiling(runId, input.customers, shards, add);
    const allDone = listed.length > 0 && listed.every((id) => jobById.get(id)?.status === 'DONE');
    if (allDone) complete++;
    if (typeof record.doneAt === 'number' && !allDone) {
      const open = listed.filter((id) => jobById.get(id)?.status !== 'DONE');
      add(`run ${runId}: marked done while ${open.length} shard(s) are not DONE (${open.slice(0, 3).map((id) => `${id}: ${String(jobById.get(id)?.status ?? 'missing')}`).join(', ')})`);
    }
    if (allDone && typeof record.doneAt !== 'number') add(`run ${runId}: every shard is DONE but the run was never marked done`);
    for (const s of shards) if (jobById.get(s.id)?.status === 'DONE') checkShardCharges(input, s, charges, add);
    if (allDone) checkRunCharges(runId, input, shards, charges, add);
  }
  return { runs: runRecords.length, shards: shardsSeen, completeRuns: complete };
}

interface Shard {
  id: string;
  from: number;
  to: number;
}

/** Every listed shard exists and bills a part of this run's customers with this run's seed and currency. */
function checkShardInputs(runId: string, run: InvoiceRunInput, listed: readonly string[], jobById: Map<string, Item>, add: (msg: string) => void): Shard[] {
  const out: Shard[] = [];
  for (const id of listed) {
    const job = jobById.get(id);
    const input = inputOf(job);
    if (job === undefined) add(`run ${runId}: shard ${id} does not exist`);
    else if (input === undefined) add(`run ${runId}: shard ${id} has no invoice input`);
    else if (input.period !== run.period || input.seed !== run.seed || input.customers !== run.customers || input.currency !== run.currency) {
      add(`run ${runId}: shard ${id} bills another run (period ${input.period}, seed ${input.seed}, ${input.customers} customers)`);
    } else out.push({ id, from: input.from ?? 0, to: input.to ?? input.customers });
  }
  return out;
}

/** The ranges, in order, tile [0, n): each starts where the one before ended. */
function checkTiling(runId: string, n: number, shards: readonly Shard[], add: (msg: string) => void): void {
  const sorted = [...shards].sort((a, b) => a.from - b.from || a.to - b.to);
  let at = 0;
  for (const s of sorted) {
    if (s.from < at) add(`run ${runId}: shard ${s.id} [${s.from}, ${s.to}) overlaps the customers before ${at}`);
    else if (s.from > at) add(`run ${runId}: customers [${at}, ${s.from}) are in no shard`);
    at = Math.max(at, s.to);
  }
  if (at < n) add(`run ${runId}: customers [${at}, ${n}) are in no shard`);
}

function checkShardCharges(run: InvoiceRunInput, s: Shard, charges: Map<string, Item>, add: (msg: string) => void): void {
  let count = 0;
  let cents = 0;
  let expectedCents = 0;
  for (const c of charges.values()) {
    if (c.jobId !== s.id) continue;
    count++;
    cents += Number(c.amountCents);
  }
  for (let i = s.from; i < s.to; i++) expectedCents += amountCents(run.seed, i);
  if (count !== s.to - s.from || cents !== expectedCents) {
    add(`shard ${s.id}: ${count} charges totalling ${cents}, expected ${s.to - s.from} totalling ${expectedCents} (its range [${s.from}, ${s.to}))`);
  }
}

/** Exactly one charge per customer of the run, by the shard that holds it; the run's count and total from its own input. */
function checkRunCharges(runId: string, run: InvoiceRunInput, shards: readonly Shard[], charges: Map<string, Item>, add: (msg: string) => void): void {
  let count = 0;
  let cents = 0;
  let expectedCents = 0;
  let wrong = 0;
  for (let i = 0; i < run.customers; i++) {
    expectedCents += amountCents(run.seed, i);
    const c = charges.get(`charge#${run.period}#${customerId(i)}`);
    if (c === undefined) continue;
    count++;
    cents += Number(c.amountCents);
    const holders = shards.filter((s) => s.from <= i && i < s.to).map((s) => s.id);
    if (holders.length !== 1 || c.jobId !== holders[0]) {
      if (wrong++ < 3) add(`run ${runId}: charge for customer ${i} written by ${String(c.jobId)}, held by ${holders.join(' and ') || 'no shard'}`);
    }
  }
  const extra = [...charges.keys()].filter((k) => k.startsWith(`charge#${run.period}#`)).length - count;
  if (count !== run.customers || extra !== 0 || cents !== expectedCents) {
    add(`run ${runId}: ${count} charges (+${extra} for customers outside the run) totalling ${cents}, expected ${run.customers} totalling ${expectedCents}`);
  }
  const summed = shards.reduce((n, s) => n + (s.to - s.from), 0);
  if (summed !== run.customers) add(`run ${runId}: its shards add up to ${summed} customers, the run has ${run.customers}`);
}
