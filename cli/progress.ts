/**
 * The invoice run's progress: a live bar on a terminal (stderr), a line per 10 % elsewhere,
 * nothing with --json; each with an estimate of the time left from the rate so far.
 */
export interface Progress {
  update: (done: number, total: number) => void;
  stop: () => void;
}

/** "about 2 min 10 s left" from the rate so far; "estimating the time left" until a unit is done. */
export function timeLeft(done: number, total: number, elapsedMs: number): string {
  if (done >= total) return 'done';
  if (done <= 0 || elapsedMs <= 0) return 'estimating the time left';
  const s = Math.ceil(((total - done) * elapsedMs) / done / 1000);
  if (s < 60) return `about ${s} s left`;
  const m = Math.floor(s / 60);
  if (m < 60) return `about ${m} min ${s % 60} s left`;
  return `about ${Math.floor(m / 60)} h ${m % 60} min left`;
}

/** The line printed (without a terminal) at each 10 % step. */
export function progressLine(done: number, total: number, elapsedMs: number): string {
  const pct = Math.floor((done / Math.max(1, total)) * 100);
  return `   progress: ${done}/${total} units (${pct}%), ${timeLeft(done, total, elapsedMs)}`;
}

export async function progressReporter(opts: { json: boolean; tty: boolean; out: (line: string) => void; now?: () => number }): Promise<Progress> {
  const now = opts.now ?? (() => performance.now());
  const started = now();
  if (opts.json) return { update: () => undefined, stop: () => undefined };
  if (opts.tty) {
    const { SingleBar, Presets } = await import('cli-progress');
    const bar = new SingleBar(
      { format: '   units {bar} {value}/{total} | {left}', stream: process.stderr, clearOnComplete: false, hideCursor: true },
      Presets.shades_classic,
    );
    bar.start(1, 0, { left: 'estimating the time left' });
    return {
      update: (done, total) => {
        bar.setTotal(Math.max(1, total));
        bar.update(done, { left: timeLeft(done, total, now() - started) });
      },
      stop: () => bar.stop(),
    };
  }
  let lastStep = -1;
  return {
    update: (done, total) => {
      const step = Math.floor((done / Math.max(1, total)) * 10);
      if (step !== lastStep) opts.out(progressLine(done, total, now() - started));
      lastStep = step;
    },
    stop: () => undefined,
  };
}
