/**
 * The simulator's baseline, measured in the same run: the same schedules (seeds, shape, variant)
 * carried out by the same chaos harness on DynamoDB Local, with the fault proxy and the local
 * servers, one at a time, against the simulator's one thread. The ratio is what the simulator buys.
 */
import { createDynamo } from '../../lib/protocol/index.js';
import { startDynamoLocal } from '../../cli/local/dynamodb-local.js';
import { streamsClient } from '../../cli/local/streams.js';
import { chaosRun, localChaosEnv } from '../chaos/harness.js';
import { simSchedule } from './run.js';
import type { SimOutcome, SimTask } from './task.js';

export interface LocalBaseline {
  schedules: number;
  /** Wall ms per schedule on DynamoDB Local, one at a time (it waits on real time: a lease is real milliseconds there). */
  msPerSchedule: number;
  /** The same schedules' thread ms per schedule in the simulator. */
  simMsPerSchedule: number;
  /** How many times faster the simulator carries out a schedule than DynamoDB Local, per lane. */
  speedup: number;
  /** Whether every baseline run reached the same verdict as its simulated run (ok, or caught). */
  sameVerdicts: number;
}

export async function compareLocal(tasks: readonly SimTask[], outcomes: readonly SimOutcome[]): Promise<LocalBaseline> {
  const local = await startDynamoLocal();
  const direct = createDynamo({ endpoint: local.endpoint });
  const streams = streamsClient(local.endpoint);
  let wall = 0;
  let same = 0;
  try {
    for (const t of tasks) {
      const started = performance.now();
      const r = await chaosRun(localChaosEnv({ endpoint: local.endpoint, direct, streams }), t.seed, t.variant, { schedule: t.schedule ?? simSchedule(t.seed, t.variant, t.shape) });
      wall += performance.now() - started;
      const sim = outcomes.find((o) => o.seed === t.seed && o.variant === t.variant);
      const ok = t.variant === 'fenced' ? r.ok : !r.ok;
      if (sim !== undefined && sim.ok === ok) same++;
    }
  } finally {
    direct.client.destroy();
    streams.destroy();
    await local.stop();
  }
  const simMs = tasks.reduce((n, t) => n + (outcomes.find((o) => o.seed === t.seed && o.variant === t.variant)?.ms ?? 0), 0);
  const msPerSchedule = wall / Math.max(1, tasks.length);
  const simMsPerSchedule = simMs / Math.max(1, tasks.length);
  return { schedules: tasks.length, msPerSchedule: Math.round(msPerSchedule), simMsPerSchedule: Math.round(simMsPerSchedule), speedup: Math.round((msPerSchedule / Math.max(1, simMsPerSchedule)) * 10) / 10, sameVerdicts: same };
}
