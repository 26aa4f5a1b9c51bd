/**
 * The recorder: keeps the email provider's own record of each delivery on the outbox item it
 * names, where the reconciler reads it. In AWS it receives SES event publishing's events
 * (configuration set → EventBridge → this handler); locally the SMTP sink's received messages
 * are turned into the same event shape and go through the same code.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError } from '../../protocol/index.js';
import { messageIdentity, recordProviderEvent } from './outbox.js';

/** The part of an SES event (EventBridge `detail`) the recorder reads. */
export interface SesEventDetail {
  readonly eventType: string;
  readonly mail: { readonly messageId: string; readonly tags?: Readonly<Record<string, readonly string[]>> };
}

const RECORDED = new Map([
  ['Send', 'SEND'],
  ['Delivery', 'DELIVERY'],
]);

/** Records one event; false when it names no outbox item of `table` (another sender's mail, an unknown item). */
export async function recordSesEvent(doc: DynamoDBDocumentClient, table: string, detail: SesEventDetail): Promise<boolean> {
  const kind = RECORDED.get(detail?.eventType);
  if (kind === undefined) return false;
  if (typeof detail.mail?.messageId !== 'string') throw new InvalidInputError('detail.mail.messageId', 'must be a string');
  const id = detail.mail.tags?.outboxId?.[0];
  const tagTable = detail.mail.tags?.outboxTable?.[0];
  if (id === undefined || tagTable === undefined || messageIdentity.untag(tagTable) !== table) return false;
  return recordProviderEvent(doc, table, messageIdentity.untag(id), kind, detail.mail.messageId);
}
