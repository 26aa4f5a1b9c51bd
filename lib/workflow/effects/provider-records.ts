/**
 * The recorder's writes (recorder.ts): the provider's own record of a delivery on the outbox item
 * it names, and a hard bounce recorded with the follow-ups of its `bounced` steps.
 */
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../../protocol/index.js';
import { OUTBOX_ATTR as O } from '../schema.js';
import { change, type FollowUpWrite } from './outbox.js';

/**
 * The recorder, for a hard bounce of an email whose workload follows bounces (follow-ups.ts): the
 * event and its `bounced` follow-ups in one TransactWriteItems, listed in `bounceFollowUps`, each
 * under `attribute_not_exists(pk)`, conditional on none listed yet, so a repeated event (EventBridge
 * delivers at least once) creates them once. false: they were listed already (a repeat, or another
 * message of the item bounced too): record the event alone (recordProviderEvent).
 */
export function recordBounce(doc: DynamoDBDocumentClient, table: string, pk: string, event: string, messageId: string, next: FollowUpWrite): Promise<boolean> {
  const once = { condition: 'attribute_exists(#pk) AND attribute_not_exists(#bounceFollowUps)', values: {}, names: ['pk', O.bounceFollowUps] };
  return change(doc, table, pk, { set: {}, add: { [O.providerEvents]: new Set([`${event}:${messageId}`]) }, ...once }, { ...next, listAs: O.bounceFollowUps });
}

/** The recorder: the provider's own record of a delivery (an SES SEND event, the local sink), on the item it names. */
export async function recordProviderEvent(doc: DynamoDBDocumentClient, table: string, pk: string, event: string, messageId: string): Promise<boolean> {
  try {
    await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: { pk },
        UpdateExpression: 'ADD #events :e',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#events': O.providerEvents },
        ExpressionAttributeValues: { ':e': new Set([`${event}:${messageId}`]) },
      }),
    );
    return true;
  } catch (e) {
    if (isConditionalCheckFailed(e)) return false;
    throw e;
  }
}
