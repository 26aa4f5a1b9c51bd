/**
 * runJob: one job, the worker protocol's steps in order (DESIGN.md, "Worker protocol").
 * Each step either ends the run with an outcome or hands the next step what it established.
 */
import { acquireLease, raiseJobFence, readCheckpoint, screenMessage, startRun } from './job-steps.js';
import { runUnits } from './unit-loop.js';
import type { WorkerDeps, WorkOutcome, WorkRequest } from './worker.js';

export async function runJob(deps: WorkerDeps, req: WorkRequest): Promise<WorkOutcome> {
  const run = startRun(deps, req);
  // 0. A message for a job that does not exist, or that has ended, writes nothing.
  const ended = await screenMessage(run);
  if (ended !== undefined) return ended;
  // 1. Acquire the job's lease: a live holder means a duplicate delivery.
  const held = await acquireLease(run);
  if ('kind' in held) return held;
  // 2. Raise the fence BEFORE reading: from here on no lower generation can commit.
  const stale = await raiseJobFence(held);
  if (stale !== undefined) return stale;
  // 3. The checkpoint, read consistently after the raise; the input, parsed by the processor.
  const ready = await readCheckpoint(held);
  if ('kind' in ready) return ready;
  // 4-5. Units until done, superseded, uncertain or out of time.
  return runUnits(ready);
}
