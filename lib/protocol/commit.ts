/**
 * Committing a fenced unit (fenced-unit.ts): ONE TransactWriteItems, retried as the identical
 * request (same ClientRequestToken) when its outcome is unknown, and its cancellation decoded
 * into typed errors: the fence's verdict first.
 */
import { TransactWriteItemsCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { defaultBackoff, fullJitter } from './backoff.js';
import { systemClock } from './clock.js';
import { conditionFailureItem, marshallOptionsOf, sendLowLevel } from './dynamo.js';
import {
  CheckpointMovedError,
  EffectAlreadyExistsError,
  StaleGenerationError,
  TransactionConflictError,
  TransactionFailedError,
} from './errors.js';
import type { FenceContext } from './fence.js';
import { prepareFencedUnit, type FencedUnit, type PreparedUnit } from './fenced-unit.js';
import { asGeneration } from './generation.js';
import { CHECKPOINT_ATTR, FENCE_ATTR } from './items.js';

/** How a commit ended, when it did not throw. */
export type CommitOutcome =
  /** This call's transaction committed. */
  | { readonly status: 'committed'; readonly attempts: number }
  /** The unit had already been committed under this generation (an ambiguous earlier attempt). */
  | { readonly status: 'already-committed'; readonly attempts: number };

const RETRYABLE_REASONS = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded', 'RequestLimitExceeded']);

/**
 * A transaction cancelled for contention or throttling (`ThrottlingError` is what an on-demand
 * table or GSI answers under a burst): nothing was written, and the same request may succeed
 * after a pause.
 */
export const retryableCancellation = (reasons: readonly { Code?: string }[]): boolean => reasons.some((r) => RETRYABLE_REASONS.has(r.Code ?? ''));

interface CancellationReason {
  Code?: string;
  Message?: string;
  Item?: Record<string, AttributeValue>;
}

const isCancelled = (e: unknown): e is Error & { CancellationReasons?: CancellationReason[] } =>
  e instanceof Error && e.name === 'TransactionCanceledException';

const isIdempotentMismatch = (e: unknown): boolean => e instanceof Error && e.name === 'IdempotentParameterMismatchException';

/** Worth sending the identical request again (same token) after a pause. */
const isTransient = (e: unknown): boolean =>
  e instanceof Error &&
  (e.name === 'TransactionInProgressException' ||
    e.name === 'ProvisionedThroughputExceededException' ||
    e.name === 'ThrottlingException' ||
    e.name === 'RequestLimitExceeded');
/**
 * Commits one fenced unit: ONE TransactWriteItems. Returns how it went, or throws:
 * StaleGenerationError (fence moved past us), CheckpointMovedError (someone else progressed),
 * EffectAlreadyExistsError (a once-only effect is a duplicate), TransactionConflictError.
 * In every thrown case nothing of the unit was written.
 *
 * The request is the low-level TransactWriteItems with items marshalled once (prepareFencedUnit),
 * sent through the document client's own stack (same connection pool, middleware and retries):
 * the document client's marshalling pass is skipped on the hot path, nothing else changes.
 */
export async function commitFencedUnit(
  ctx: FenceContext,
  unit: FencedUnit,
  opts: {
    now?: number;
    prepared?: PreparedUnit;
    /** Asked before every retry: a holder past its local deadline stops issuing protected work. */
    stillSafe?: () => boolean;
  } = {},
): Promise<CommitOutcome> {
  const clock = ctx.clock ?? systemClock;
  // A caller retrying an ambiguous commit passes the same `now`: identical parameters under
  // the same token are the same request to DynamoDB (different ones would be refused).
  const now = opts.now ?? opts.prepared?.now ?? clock.wallNow();
  const prepared =
    opts.prepared !== undefined && opts.prepared.unit === unit && opts.prepared.now === now
      ? opts.prepared
      : prepareFencedUnit(unit, now, marshallOptionsOf(ctx.doc));
  let command = new TransactWriteItemsCommand({ TransactItems: prepared.items, ClientRequestToken: prepared.token });
  const maxAttempts = ctx.maxConflictAttempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    try {
      // The identical command on every attempt: same token, same parameters.
      await sendLowLevel(ctx.doc, command);
      return { status: 'committed', attempts: attempt };
    } catch (e) {
      if (isCancelled(e)) {
        const decoded = decodeCancellation(unit, e.CancellationReasons ?? [], e);
        if (decoded === 'already-committed') return { status: 'already-committed', attempts: attempt };
        if (decoded !== 'conflict') throw decoded;
        if (attempt >= maxAttempts) throw new TransactionConflictError(attempt, { cause: e });
      } else if (isIdempotentMismatch(e) && command.input.ClientRequestToken !== undefined) {
        // The token was used within DynamoDB's 10-minute window by a request with other
        // parameters: an earlier call for this same unit (another `now`, another heartbeat),
        // which may have committed. Resend WITHOUT the token: every condition is evaluated
        // afresh and the checkpoint tells whether our generation already committed the unit.
        command = new TransactWriteItemsCommand({ TransactItems: prepared.items });
        continue;
      } else if (!isTransient(e) || attempt >= maxAttempts) {
        throw e;
      }
      await clock.sleep(fullJitter(attempt, ctx.backoff ?? defaultBackoff, ctx.random));
      // Nothing of the unit was written; past the deadline the holder gives up rather than send again.
      if (opts.stillSafe?.() === false) throw isCancelled(e) ? new TransactionConflictError(attempt, { cause: e }) : e;
    }
  }
}

/**
 * CancellationReasons are positional: [0] fence, [1] checkpoint, [2..] effects. The fence
 * verdict comes first: an obsolete holder is told it is obsolete, whatever else failed.
 */
export function decodeCancellation(
  unit: FencedUnit,
  reasons: readonly CancellationReason[],
  cause: unknown,
): Error | 'conflict' | 'already-committed' {
  const item = (r: CancellationReason | undefined) => (r === undefined ? undefined : conditionFailureItem(r));
  const failed = (r: CancellationReason | undefined) => r?.Code === 'ConditionalCheckFailed';

  const [fence, checkpoint, ...effects] = reasons;
  if (failed(fence)) {
    const current = item(fence)?.[FENCE_ATTR.generation];
    return new StaleGenerationError(unit.fence.resource, unit.generation, typeof current === 'number' ? asGeneration(current) : undefined);
  }
  if (failed(checkpoint)) {
    const old = item(checkpoint);
    const cursor = old?.[CHECKPOINT_ATTR.cursor];
    // Our generation moved the cursor past this unit: an earlier attempt of ours committed it.
    if (typeof cursor === 'number' && cursor >= unit.checkpoint.next && old?.[CHECKPOINT_ATTR.generation] === unit.generation) {
      return 'already-committed';
    }
    return new CheckpointMovedError(unit.checkpoint.key, unit.checkpoint.expected, typeof cursor === 'number' ? cursor : undefined);
  }
  const duplicates = unit.effects.filter((_, i) => failed(effects[i])).map((e) => ({ table: e.table, key: e.item.pk }));
  const first = duplicates[0];
  if (first !== undefined) return new EffectAlreadyExistsError(first.table, first.key, duplicates);
  if (retryableCancellation(reasons)) return 'conflict';
  return new TransactionFailedError(reasons, { cause });
}
