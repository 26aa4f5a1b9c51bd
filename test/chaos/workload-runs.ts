/**
 * A chaos schedule's periods as a workload's runs. The schedule is drawn in the invoice sample's
 * terms (periods, customers, job ids) so that every seed keeps the schedule it always had; for
 * another workload each period is one of its local payloads (Workload.local.payloads, with the
 * period's item count and seed), its job ids are that workload's, and the schedule's faults are
 * re-aimed at them. A fork's workload runs under the same schedules for free.
 */
import { invoices } from '../../lib/workloads/invoices/index.js';
import { invoiceJobId } from '../../lib/workloads/invoices/invoices.js';
import { shardJobId, type Workload } from '../../lib/workflow/index.js';
import type { Schedule } from './schedule.js';

export interface ScheduleRuns {
  /** The starter payload of period `job`, with `items` items (default the period's own). */
  payload(job: number, items?: number): Record<string, unknown>;
  /** Every job the schedule's runs make: one per period, or its shards. */
  readonly jobIds: readonly string[];
  /** The schedule with its faults on this workload's jobs. */
  readonly schedule: Schedule;
}

export function scheduleRuns(workload: Workload<any>, drawn: Schedule): ScheduleRuns {
  const shards = drawn.shards ?? 1;
  const invoice = workload === invoices;
  const payload = (job: number, items?: number): Record<string, unknown> => {
    const j = drawn.jobs[job]!;
    if (invoice) return { period: j.period, customers: items ?? j.customers, seed: j.seed };
    const slots = workload.local.payloads(items ?? j.customers, j.seed);
    return slots[job % slots.length]!;
  };
  const runIds = drawn.jobs.map((j, i) => (invoice ? invoiceJobId(j.period) : workload.start.runOf({ payload: payload(i), time: new Date(), items: 0, unitSize: drawn.unitSize }).runId));
  const jobIds = runIds.flatMap((run) => Array.from({ length: shards }, (_, k) => shardJobId(run, k, shards)));
  // The drawn ids (the invoice sample's) to this workload's, shard for shard.
  const to = new Map(drawn.jobs.flatMap((j, i) => Array.from({ length: shards }, (_, k) => [shardJobId(invoiceJobId(j.period), k, shards), shardJobId(runIds[i]!, k, shards)] as const)));
  const schedule = invoice ? drawn : { ...drawn, faults: drawn.faults.map((f) => ({ ...f, jobId: to.get(f.jobId) ?? f.jobId })) };
  return { payload, jobIds, schedule };
}
