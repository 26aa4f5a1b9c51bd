/**
 * The recorder: keeps the email provider's own record of each delivery on the outbox item it
 * names, where the reconciler reads it. In AWS it receives SES event publishing's events
 * (configuration set → EventBridge → this handler); locally the SMTP sink's received messages
 * are turned into the same event shape and go through the same code.
 *
 * The record is written only where it can still settle something: an item that is not SENT. SES's
 * event usually arrives after the sender marked the item SENT, and SENT is final (nothing reads a
 * SENT item's record to decide anything), so the recorder reads the item's status first (an
 * eventually consistent GetItem, half a read unit) and skips the write (a write unit, which a
 * failed condition would still bill). A stale read can only show an earlier state: one write too
 * many, never one too few.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError } from '../../protocol/index.js';
import { OUTBOX_ATTR as O } from '../schema.js';
import { messageIdentity, recordProviderEvent } from './outbox.js';

/** The part of an SES event (EventBridge `detail`) the recorder reads. */
export interface SesEventDetail {
  readonly eventType: string;
  readonly mail: { readonly messageId: string; readonly tags?: Readonly<Record<string, readonly string[]>> };
}

/**
 * Only SES's Send event (SES accepted the message) is recorded: it is the proof of acceptance
 * the reconciler needs to settle a claim whose sender died. A Delivery event would prove no more
 * for that question and cost one more write per email; the configuration set no longer
 * publishes it (infra), and one that arrives (an older stack) is not written. Items recorded
 * before still carry DELIVERY entries, which the reconciler still reads (providers.ts).
 */
const RECORDED = new Map([['Send', 'SEND']]);

/** Records one event; false when nothing was written: it names no outbox item of `table` (another sender's mail, an unknown item), or the item is SENT already. */
export async function recordSesEvent(doc: DynamoDBDocumentClient, table: string, detail: SesEventDetail): Promise<boolean> {
  const kind = RECORDED.get(detail?.eventType);
  if (kind === undefined) return false;
  if (typeof detail.mail?.messageId !== 'string') throw new InvalidInputError('detail.mail.messageId', 'must be a string');
  const id = detail.mail.tags?.outboxId?.[0];
  const tagTable = detail.mail.tags?.outboxTable?.[0];
  if (id === undefined || tagTable === undefined || messageIdentity.untag(tagTable) !== table) return false;
  const pk = messageIdentity.untag(id);
  const now = await doc.send(new GetCommand({ TableName: table, Key: { pk }, ProjectionExpression: '#status', ExpressionAttributeNames: { '#status': O.status } }));
  if (now.Item?.[O.status] === 'SENT') return false;
  return recordProviderEvent(doc, table, pk, kind, detail.mail.messageId);
}
