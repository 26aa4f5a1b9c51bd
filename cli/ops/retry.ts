/**
 * retry <outboxId>: a new attempt of an effect its provider declined, once the cause is fixed (the
 * customer updated their card), or of an UNKNOWN one the provider has no record of
 * (lib/workflow/effects/attempts.ts): a new outbox item under a new id and key, never a resend of
 * the declined key. `--note` says why; it stays on the item replaced.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError, systemClock } from '../../lib/protocol/index.js';
import { retryAsNewAttempt, type TableNames } from '../../lib/workflow/index.js';

export const RETRY_USAGE = `retry <outboxId> --note TEXT: a new attempt of an outbox item its provider declined (FAILED,
refusal effect), once the cause is fixed, or of an UNKNOWN one the provider has no record of: a new
item under a new id and Idempotency-Key (<first id>#attempt-N), sent as any other, with its own
steps (a receipt once it is taken). Never a resend of the declined key; each item is retried once.
  npm run cli -- retry 'charge#2026-11#sub-0000007' --note "card updated, ticket 4411" --outputs cdk-outputs.json`;

/** The note the flags give: required, what the person says about why. */
export function retryNoteOf(note: string | undefined): string {
  if (note === undefined || note.trim() === '') throw new InvalidInputError('--note', 'say why it is tried again (kept on the item it replaces)');
  return note;
}

export async function retry(t: { doc: DynamoDBDocumentClient; tables: TableNames }, id: string | undefined, v: { note?: string; json: boolean }): Promise<number> {
  if (id === undefined || id === '') throw new InvalidInputError('outboxId', 'retry takes exactly one outbox item id');
  const attempt = await retryAsNewAttempt({ doc: t.doc, table: t.tables.outbox, clock: systemClock }, id, retryNoteOf(v.note));
  process.stdout.write(v.json ? `${JSON.stringify({ id, attempt })}\n` : `${id}: retried as ${attempt} (a new attempt under a new key; the sender sends it)\n`);
  return 0;
}
