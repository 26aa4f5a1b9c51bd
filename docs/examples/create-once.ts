// A payment recorded at most once, whoever delivers the request and however often: the payment id
// is the record's key, and a second creation is refused.
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { putOnce } from '../../lib/protocol/index.js';

export async function recordPayment(doc: DynamoDBDocumentClient, table: string, paymentId: string, cents: number): Promise<'recorded' | 'duplicate' | 'conflict'> {
  const item = { pk: `payment#${paymentId}`, cents };
  const created = await putOnce(doc, table, item);
  if (created.ok) return 'recorded';
  // Refused: this id exists. The same content is a repeat (or our own resend after a lost answer);
  // other content under the same id is a caller's bug, not something to overwrite.
  return created.error.existing?.cents === cents ? 'duplicate' : 'conflict';
}
