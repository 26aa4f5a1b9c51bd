/**
 * The simulator's pool: P worker threads (one per core by default), each with its own globals,
 * so each installs its own world; tasks handed out in chunks as threads ask for them. With P = 1
 * the tasks run in this thread (what the bounded simulation in `npm test` does).
 */
import { Worker } from 'node:worker_threads';
import { runTask, type SimOutcome, type SimTask } from './task.js';

export interface PoolOptions {
  parallel: number;
  saveDir?: string;
  chunk?: number;
  onOutcome?: (o: SimOutcome) => void;
}

/** Runs every task; outcomes come back in completion order. */
export async function runPool(tasks: readonly SimTask[], opts: PoolOptions): Promise<SimOutcome[]> {
  const out: SimOutcome[] = [];
  const take = (o: SimOutcome) => {
    out.push(o);
    opts.onOutcome?.(o);
  };
  if (opts.parallel <= 1) {
    for (const t of tasks) take(await runTask(t, opts.saveDir));
    return out;
  }
  const chunk = opts.chunk ?? 20;
  let next = 0;
  const child = new URL('./thread.ts', import.meta.url).href;
  await Promise.all(
    Array.from({ length: opts.parallel }, () => {
      // tsx's hooks, registered in the thread: a worker does not inherit the parent's loader.
      const w = new Worker(`import { register } from 'tsx/esm/api'; register(); await import(${JSON.stringify(child)});`, { eval: true, workerData: { saveDir: opts.saveDir } });
      return new Promise<void>((resolve, reject) => {
        const give = () => {
          const slice = tasks.slice(next, next + chunk);
          next += slice.length;
          if (slice.length === 0) void w.terminate().then(() => resolve());
          else w.postMessage(slice);
        };
        w.on('message', (m: { ready?: true; outcome?: SimOutcome; done?: true }) => {
          if (m.outcome) take(m.outcome);
          if (m.ready || m.done) give();
        });
        w.on('error', reject);
      });
    }),
  );
  return out;
}
