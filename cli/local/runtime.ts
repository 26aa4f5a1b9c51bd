/**
 * Drives the SAME handlers Lambda runs, in-process:
 * - an event source mapping: N concurrent pollers receive batches from the LocalQueue, invoke
 *   the worker handler with a real SQS event shape and a Lambda-like context (remaining time),
 *   delete the records that succeeded, and leave failed ones to come back after the
 *   visibility timeout (to the DLQ after max receives);
 * - an invocation timeout: a handler that has not returned by then is abandoned like a killed
 *   Lambda (its messages reappear); a crashed worker (a hook that never resolves) is exactly that;
 * - a scheduler that runs the sweeper at a fixed rate.
 */
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Clock } from '../../lib/protocol/index.js';
import type { SweeperHandler } from '../../functions/sweeper-handler.js';
import type { WorkerHandler } from '../../functions/worker-handler.js';
import { sqsEvent, type LocalQueue } from './queue.js';
import { asFunction } from './aws-calls.js';

/** The local runtime's lease: short, so a lease left by an interrupted run lapses at once. */
export const LEASE_MS = 1_500;
/**
 * The run gives up waiting for its jobs (then reports what it found) when no unit has committed
 * for this long: far above any recovery the faults need (a paused worker's successor taking over, a requeue after 2 leases),
 * and independent of the run's size, so --customers 1000000 runs as long as it takes.
 */
export const STALL_MS = 60_000;

export interface LocalRuntimeOptions {
  clock: Clock;
  queue: LocalQueue;
  worker: WorkerHandler;
  sweeper?: SweeperHandler;
  concurrency: number;
  batchSize: number;
  invocationTimeoutMs: number;
  sweepIntervalMs: number;
  pollIdleMs?: number;
  onInvocation?: (e: { requestId: string; records: number; failed: number; timedOut: boolean; ms: number }) => void;
  onSweep?: (report: Awaited<ReturnType<SweeperHandler>>) => void;
  onError?: (e: unknown) => void;
}

/**
 * Owner ids of the workers this runtime invokes: `<request id>/<record index>` (functions/worker-handler.ts),
 * and a request id names its concurrency slot first: `w3-17-ab12cd34/0`.
 */
const requestIdOf = (owner: string): string => owner.split('/')[0] ?? owner;

/** The concurrency slot of an owner id or request id: `w3-17-ab12cd34/0` → `w3`. */
export const slotOf = (owner: string): string => owner.split('-')[0] ?? owner;

export class LocalRuntime {
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly stopController = new AbortController();
  invocations = 0;
  timeouts = 0;
  crashes = 0;
  sweeps = 0;
  private readonly crashSignals = new Map<string, () => void>();

  constructor(private readonly opts: LocalRuntimeOptions) {
    // Every idle poller and the scheduler sleep on this one stop signal, so it has one abort
    // listener each (removed on wake): with more than 10 pollers Node would warn of a leak.
    setMaxListeners(opts.concurrency + 2, this.stopController.signal);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    for (let i = 0; i < this.opts.concurrency; i++) this.loops.push(this.poll(i + 1));
    if (this.opts.sweeper) this.loops.push(this.schedule(this.opts.sweeper));
  }

  /**
   * The process behind this invocation died (fault injection): the invocation ends now, its
   * records are not deleted and come back after the visibility timeout, the slot is free.
   * `owner`: a worker's owner id (or the invocation's request id).
   */
  crash(owner: string): void {
    this.crashSignals.get(requestIdOf(owner))?.();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopController.abort();
    await Promise.allSettled(this.loops);
    this.loops = [];
  }

  private async pause(ms: number): Promise<boolean> {
    try {
      await this.opts.clock.sleep(ms, this.stopController.signal);
      return true;
    } catch {
      return false;
    }
  }

  private async poll(slot: number): Promise<void> {
    let n = 0;
    const { clock, queue } = this.opts;
    while (this.running) {
      const batch = queue.receive(this.opts.batchSize);
      if (batch.length === 0) {
        if (!(await this.pause(Math.min(this.opts.pollIdleMs ?? 20, queue.nextVisibleIn() ?? Infinity)))) return;
        continue;
      }
      this.invocations++;
      // The request id names the concurrency slot, so logs and the timeline can group by it.
      const requestId = `w${slot}-${++n}-${randomUUID().slice(0, 8)}`;
      const started = clock.monotonicNow();
      const context = {
        awsRequestId: requestId,
        getRemainingTimeInMillis: () => Math.max(0, this.opts.invocationTimeoutMs - (clock.monotonicNow() - started)),
      };
      // Every AWS call of the invocation is the worker's (cli/local/aws-calls.ts attributes them by this mark).
      const invocation = asFunction('worker', () => this.opts.worker(sqsEvent(batch), context));
      const timeout = new AbortController();
      const crashed = new Promise<'crashed'>((resolve) => this.crashSignals.set(requestId, () => resolve('crashed')));
      const result = await Promise.race([
        crashed,
        invocation.catch((e: unknown) => {
          this.opts.onError?.(e);
          return { batchItemFailures: batch.map((m) => ({ itemIdentifier: m.messageId })) };
        }),
        clock.sleep(this.opts.invocationTimeoutMs, timeout.signal).then(
          () => 'timeout' as const,
          () => 'stopped' as const,
        ),
      ]);
      timeout.abort();
      this.crashSignals.delete(requestId);
      if (result === 'timeout' || result === 'stopped' || result === 'crashed') {
        // Like a Lambda killed at its timeout, or whose process died: nothing is deleted; the records come back later.
        if (result === 'timeout') this.timeouts++;
        if (result === 'crashed') this.crashes++;
        this.opts.onInvocation?.({ requestId, records: batch.length, failed: batch.length, timedOut: true, ms: clock.monotonicNow() - started });
        continue;
      }
      const failed = new Set(result.batchItemFailures.map((f) => f.itemIdentifier));
      for (const m of batch) if (!failed.has(m.messageId) && m.receiptHandle) queue.delete(m.receiptHandle);
      this.opts.onInvocation?.({ requestId, records: batch.length, failed: failed.size, timedOut: false, ms: clock.monotonicNow() - started });
    }
  }

  private async schedule(sweeper: SweeperHandler): Promise<void> {
    while (this.running) {
      if (!(await this.pause(this.opts.sweepIntervalMs))) return;
      try {
        const report = await asFunction('sweeper', () => sweeper({}));
        this.sweeps++;
        this.opts.onSweep?.(report);
      } catch (e) {
        this.opts.onError?.(e);
      }
    }
  }
}
