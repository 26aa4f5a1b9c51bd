/**
 * The recorder: keeps the email provider's own record of each delivery on the outbox item it
 * names, where the reconciler reads it. In AWS it receives SES event publishing's events
 * (configuration set → EventBridge → this handler); locally the SMTP sink's received messages
 * are turned into the same event shape and go through the same code.
 *
 * A SEND is written only where it can still settle something: an item that is not SENT. SES's
 * event usually arrives after the sender marked the item SENT, and SENT is final (nothing reads a
 * SENT item's record to decide anything), so the recorder reads the item's status first (an
 * eventually consistent GetItem, half a read unit) and skips the write (a write unit, which a
 * failed condition would still bill). A stale read can only show an earlier state: one write too
 * many, never one too few.
 *
 * A hard bounce (SES's Permanent, the suppression list's included) of an email whose workload
 * declares `bounced` steps (follow-ups.ts) creates those steps' follow-ups in the write that
 * records it, once (provider-records.ts recordBounce): the item, read first, is what each step's next()
 * sees. A soft bounce, a complaint or a rejection is recorded and alarmed, and followed by nothing.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError, systemClock, type Clock } from '../../protocol/index.js';
import { METRIC, silentTelemetry, type MetricName, type Telemetry } from '../ports.js';
import { OUTBOX_ATTR as O } from '../schema.js';
import { PROVIDER_EVENT } from './providers.js';
import { followUps, type FollowUpStep } from './follow-ups.js';
import { messageIdentity, type OutboxItem } from './outbox.js';
import { recordBounce, recordProviderEvent } from './provider-records.js';

/** What the recorder writes with: the outbox table, and the workload's steps (a `bounced` step's follow-ups are the recorder's to create). */
export interface RecorderDeps {
  readonly doc: DynamoDBDocumentClient;
  readonly table: string;
  readonly telemetry?: Telemetry;
  readonly steps?: readonly FollowUpStep[] | undefined;
  readonly clock?: Clock;
}

/** The part of an SES event (EventBridge `detail`) the recorder reads. */
export interface SesEventDetail {
  readonly eventType: string;
  readonly mail: { readonly messageId: string; readonly tags?: Readonly<Record<string, readonly string[]>> };
  readonly bounce?: { readonly bounceType?: string; readonly bounceSubType?: string };
}

/** SES's suppression-list bounces: SES never tried the address (its own list, or the account's). */
const SUPPRESSED = new Set(['Suppressed', 'OnAccountSuppressionList']);

/**
 * What is recorded, by SES event type. SEND is the proof of acceptance the reconciler needs to
 * settle a claim whose sender died; a Delivery event proves no more for that question and costs a
 * write per email, so the configuration set does not publish it (infra) and one that arrives (an
 * older stack) is not written; items recorded before still carry DELIVERY entries, which the
 * reconciler still reads (providers.ts). The events that tell of trouble after acceptance (a
 * bounce, a suppression-list hit, a complaint, a rejection, a delay) are kept on the item even
 * when it is SENT, counted for the operator's alarms: a SENT item that bounced is not delivered.
 */
function recordedAs(detail: SesEventDetail): string | undefined {
  switch (detail.eventType) {
    case 'Send':
      return PROVIDER_EVENT.Send;
    case 'Bounce':
      if (detail.bounce?.bounceType !== 'Permanent') return PROVIDER_EVENT.SoftBounce;
      return SUPPRESSED.has(detail.bounce.bounceSubType ?? '') ? PROVIDER_EVENT.Suppressed : PROVIDER_EVENT.Bounce;
    case 'Complaint':
      return PROVIDER_EVENT.Complaint;
    case 'Reject':
      return PROVIDER_EVENT.Reject;
    case 'DeliveryDelay':
      return PROVIDER_EVENT.DeliveryDelay;
    default:
      return undefined;
  }
}

/** The alarm's metric of each trouble event (none for SEND and a delay). */
const ALARMED: Readonly<Record<string, MetricName>> = {
  [PROVIDER_EVENT.Bounce]: METRIC.outboxBounced,
  [PROVIDER_EVENT.Suppressed]: METRIC.outboxBounced,
  [PROVIDER_EVENT.SoftBounce]: METRIC.outboxBounced,
  [PROVIDER_EVENT.Reject]: METRIC.outboxBounced,
  [PROVIDER_EVENT.Complaint]: METRIC.outboxComplained,
};

/**
 * Records one event; false when nothing was written: it names no outbox item of `table`
 * (another sender's mail, an unknown item), it is a type not recorded, or it is a SEND for an
 * item SENT already.
 */
export async function recordSesEvent(deps: RecorderDeps, detail: SesEventDetail): Promise<boolean> {
  const { doc, table, telemetry } = deps;
  const kind = recordedAs(detail ?? { eventType: '' });
  if (kind === undefined) return false;
  if (typeof detail.mail?.messageId !== 'string') throw new InvalidInputError('detail.mail.messageId', 'must be a string');
  const id = detail.mail.tags?.outboxId?.[0];
  const tagTable = detail.mail.tags?.outboxTable?.[0];
  if (id === undefined || tagTable === undefined || messageIdentity.untag(tagTable) !== table) return false;
  const pk = messageIdentity.untag(id);
  if (kind === PROVIDER_EVENT.Send) {
    const now = await doc.send(new GetCommand({ TableName: table, Key: { pk }, ProjectionExpression: '#status', ExpressionAttributeNames: { '#status': O.status } }));
    if (now.Item?.[O.status] === 'SENT') return false;
  }
  const recorded = (await recordWithFollowUps(deps, pk, kind, detail.mail.messageId)) || (await recordProviderEvent(doc, table, pk, kind, detail.mail.messageId));
  const metric = ALARMED[kind];
  if (recorded && metric !== undefined) telemetry?.count(metric);
  if (recorded && kind !== PROVIDER_EVENT.Send) telemetry?.event('outbox-provider-event', { table, pk, event: kind, providerMessageId: detail.mail.messageId });
  return recorded;
}

/** The hard bounces: the address will never take mail (SES tried it, or its suppression list refused it). */
const HARD = new Set<string>([PROVIDER_EVENT.Bounce, PROVIDER_EVENT.Suppressed]);

/** A hard bounce of an item some `bounced` step follows: recorded with its follow-ups (recordBounce). false: not such a bounce, no follow-up to create, or listed already. */
async function recordWithFollowUps(deps: RecorderDeps, pk: string, kind: string, messageId: string): Promise<boolean> {
  if (!HARD.has(kind) || !(deps.steps ?? []).some((s) => s.on === 'bounced')) return false;
  const item = (await deps.doc.send(new GetCommand({ TableName: deps.table, Key: { pk } }))).Item as OutboxItem | undefined;
  if (item === undefined || item.bounceFollowUps !== undefined) return false;
  const next = followUps({ steps: deps.steps, table: deps.table, clock: deps.clock ?? systemClock, telemetry: deps.telemetry ?? silentTelemetry }, item, 'bounced');
  if (next.items.length === 0 && next.error === undefined) return false;
  return recordBounce(deps.doc, deps.table, pk, kind, messageId, next);
}
