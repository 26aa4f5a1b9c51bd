/**
 * The worker's contract for one job (DESIGN.md, "Worker protocol"): what it needs, where fault
 * injection may stop it, and how a run ends. The protocol itself reads as its steps:
 *
 *   run-job.ts    runJob: the steps in order
 *   job-steps.ts  screen the message ─> acquire the lease ─> raise the fence ─> read the checkpoint
 *   unit-loop.ts  units: keep the lease safe ─> ONE fenced transaction per unit ─> finish or hand off
 *   unit-draft.ts a unit's transaction, built (and marshalled) while the previous one is in flight
 *
 * The lease decides who may START; the fence (inside every commit) decides whose writes
 * LAND; operation keys stop the current holder from repeating a once-only effect.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  commitFencedUnit,
  raiseFence,
  type Clock,
  type Contended,
  type Generation,
  type Lease,
  type LeaseManager,
  type LeaseMode,
  type Observation,
  type Result,
} from '../protocol/index.js';
import { publishDocuments, type DocumentTarget } from './effects/documents.js';
import type { Telemetry, WorkMessage, WorkQueue } from './ports.js';
import type { Processor } from './processor.js';
import type { TableNames } from './schema.js';

/** Named points in the protocol where fault injection (local runtime, chaos) may pause or crash. */
export type WorkerPoint =
  | 'after-acquire'
  | 'after-fence-raise'
  | 'after-checkpoint-read'
  | 'before-commit'
  | 'after-commit'
  | 'before-renew';

export interface WorkerHooks {
  /**
   * Awaited at each point. Resolve later to model a pause (GC, page fault, a stalled host);
   * never resolve to model a crash: nothing after it runs, nothing is released.
   */
  at(point: WorkerPoint, info: { jobId: string; owner: string; generation?: Generation; unit?: number }): Promise<void>;
}

/**
 * The protocol's write operations. The defaults are the library's; the seam exists so the
 * chaos harness can run deliberately broken variants (negative controls, test code only) and
 * prove that its independent checker catches them.
 */
export interface ProtocolOps {
  raiseFence: typeof raiseFence;
  commitUnit: typeof commitFencedUnit;
  release: (leases: LeaseManager, lease: Lease) => Promise<{ released: boolean }>;
  /** Version-watch: wait out the observation `seen` on this worker's own clock, then claim if the version is unchanged. */
  watch: (leases: LeaseManager, key: string, seen: Contended & { observation: Observation }, clock: Clock) => Promise<Result<Lease, Contended>>;
  /** Puts a unit's documents before its transaction (each a new object: documents.ts). */
  publish: typeof publishDocuments;
}

export const fencedProtocol: ProtocolOps = {
  raiseFence,
  commitUnit: commitFencedUnit,
  release: (leases, lease) => leases.release(lease),
  watch: async (leases, key, seen, clock) => {
    await clock.sleep(seen.retryAfterMs);
    return leases.tryAcquire(key, { observation: seen.observation });
  },
  publish: publishDocuments,
};

export interface WorkerDeps {
  doc: DynamoDBDocumentClient;
  tables: TableNames;
  clock: Clock;
  queue: WorkQueue;
  telemetry: Telemetry;
  // The worker never inspects the input type: the processor parses and consumes it.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  processor: Processor<any>;
  /** The workload's fence key prefix (Workload.fenceKeyPrefix). @default 'fence#' */
  fenceKeyPrefix?: string;
  lease: { epoch: number; durationMs: number; mode: LeaseMode; maxDrift?: number; marginMs?: number };
  hooks?: WorkerHooks;
  /** Attempts to resend an ambiguous commit (response lost, timeout) before giving up. Default 3. */
  commitAttempts?: number;
  /**
   * How often a running job's `heartbeatAt` is stamped, at most (ms). Default: a quarter of the
   * lease duration; 0 stamps every unit. The heartbeat is the sort key of the sweeper's index, so
   * each stamp moves the job in the index (two index writes, billed): stamping every unit costs
   * more than the fence. The sweeper needs no more: it reads progress from the cursor (its
   * requeue is conditional on cursor AND heartbeat) and acts only on a heartbeat older than
   * `staleAfterMs`, which exceeds the lease duration. The first unit of a run and the last unit
   * always stamp.
   */
  heartbeatEveryMs?: number;
  protocol?: ProtocolOps;
  /** Where the processor's documents go (unitDocuments); without it no document is written. */
  documents?: DocumentTarget;
}

export interface WorkRequest {
  message: WorkMessage;
  /** Unique per invocation: the lease owner id. */
  owner?: string;
  /** Time left in this invocation (Lambda's getRemainingTimeInMillis). */
  remainingTimeMs: () => number;
  /** Stop starting units when less than this remains. Default 10 s. */
  safetyMarginMs?: number;
}

export type WorkOutcome =
  /** The job is DONE (by this run or before it). */
  | { kind: 'done'; jobId: string; units: number; generation?: Generation }
  /** A live holder has the lease: a duplicate delivery. Acknowledge and drop. */
  | { kind: 'busy'; jobId: string; holder: string | undefined }
  /** Ran out of invocation time: released and enqueued a continuation. */
  | { kind: 'handed-off'; jobId: string; units: number; generation: Generation }
  /** A newer generation owns the job (fence or lease said so). Acknowledge: it continues. */
  | { kind: 'superseded'; jobId: string; units: number; generation: Generation; by?: number }
  /** Renewal or commit could not be confirmed: stopped protected work. Retry the message. */
  | { kind: 'uncertain'; jobId: string; units: number; generation: Generation; cause: unknown }
  /** Bad input: the job is FAILED with the reason, never retried. */
  | { kind: 'failed'; jobId: string; reason: string }
  | { kind: 'not-found'; jobId: string };

/** Outcomes after which the queue message must be redelivered. */
export const shouldRetry = (o: WorkOutcome): boolean => o.kind === 'uncertain';
