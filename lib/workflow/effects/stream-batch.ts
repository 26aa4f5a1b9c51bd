/**
 * The sender's stream batch: the Outbox stream's records of one invocation, in order, each item
 * delivered (sender.ts) while the invocation's time covers one more send; what it cannot take now
 * is handed back to the stream's retry from that record, and a provider that asked to wait defers
 * the batch's later items for it unsent.
 */
import { deferUnclaimed, type OutboxItem } from './outbox.js';
import { DEFAULT_SEND_TIMEOUT_MS, deferred, deliver, providerKeyOf, SETTLE_RESERVE_MS, WAIT, type DeliveryOutcome, type SenderDeps } from './sender.js';

const outboxError = (deps: SenderDeps, pk: string, e: unknown) => deps.telemetry.event('outbox-error', { table: deps.table, pk, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });

/** One record of the Outbox stream, as the sender needs it. */
export interface OutboxRecord {
  /** The stream sequence number: the partial batch response names a failed record by it. */
  readonly sequence: string;
  readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  readonly item?: OutboxItem;
}

/**
 * A batch of stream records, in order. Only INSERTs are deliveries (the AWS event source filters
 * the rest out; locally they are skipped here). Returns the sequence numbers to report as
 * failed: the first record the provider could not take now (released), and everything after
 * it, so the stream retries from there in order (ReportBatchItemFailures semantics).
 */
export async function handleOutboxRecords(deps: SenderDeps, records: readonly OutboxRecord[], budget?: { remainingTimeMs(): number }): Promise<string[]> {
  // The providers that asked to wait in this batch: their later items are deferred unsent.
  const waiting = new Map<string, DeliveryOutcome>();
  for (const [i, r] of records.entries()) {
    if (r.eventName !== 'INSERT' || r.item === undefined) continue;
    // Out of time: no claim the invocation could not finish (a timed-out invocation would leave its
    // claim to the reconciler and retry the whole batch). The rest is retried from here.
    const needed = timeForOneSend(deps, r.item);
    if (budget !== undefined && budget.remainingTimeMs() < needed) {
      deps.telemetry.event('outbox-batch-out-of-time', { table: deps.table, remainingMs: budget.remainingTimeMs(), neededMs: needed, retried: records.length - i });
      return records.slice(i).map((x) => x.sequence);
    }
    const provider = providerKeyOf(r.item);
    const wait = waiting.get(provider);
    let outcome: DeliveryOutcome;
    try {
      outcome = wait === undefined ? await deliver(deps, r.item) : await deferWithBatch(deps, r.item, wait);
    } catch (e) {
      outboxError(deps, r.item.pk, e);
      outcome = 'released';
    }
    if (outcome === 'released') return records.slice(i).map((x) => x.sequence);
    if (wait === undefined && WAIT.has(outcome)) waiting.set(provider, outcome);
  }
  return [];
}

/** What one more item takes at most: its wait for the email pacer, one send, and its settle. */
function timeForOneSend(deps: SenderDeps, item: OutboxItem): number {
  const paced = item.kind === 'email' ? (deps.pacer?.delayMs() ?? 0) : 0;
  return paced + (deps.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS) + SETTLE_RESERVE_MS;
}

/**
 * Its provider asked to wait (throttled, or the account held) on an earlier item of the batch:
 * this one is not sent now but deferred like it, unsent, with its own jittered time, and the batch
 * succeeds (the reconciler sends it when its time comes). A stream retry instead would come back
 * at once, be refused again and end in the dead-letter queue.
 */
async function deferWithBatch(deps: SenderDeps, item: OutboxItem, why: DeliveryOutcome): Promise<DeliveryOutcome> {
  const result = why === 'held' ? ({ kind: 'held', reason: 'held with the batch: the provider refused an earlier item for the account\'s state' } as const) : ({ kind: 'throttled', reason: 'deferred with the batch: the provider throttled an earlier item' } as const);
  await deferred(deps, item, result, (d) => deferUnclaimed(deps.doc, deps.table, item.pk, d), false);
  return why;
}
