/**
 * A traced run of the outbox alone, for the request shapes no simulated schedule is sure to send:
 * an email's provider record that comes after the claim that sent it was given back (a takeover's
 * resend throttled, then SES's late SEND or Reject). The claim refused on the recorded item, and
 * the reconciler settling it from the record, SENT and FAILED, on the model that traces them; and
 * the takeover of a stale email claim with no record (conditional on none having come).
 * Then an http item to a provider that forgets keys, refused in every round (held, then refused
 * for now) past its key retention: each round counted, its window started again, then SENT.
 * And a hard bounce of a SENT email recorded with a `bounced` step's follow-up, then again
 * (refused: the follow-up listed already).
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { ManualClock } from '../../../lib/protocol/index.js';
import { claim, deferClaimed, deliver, ensureTables, reconcile, recordBounce, recordProviderEvent, silentTelemetry, tableNames, unsentKeyOf, type EmailProvider, type HttpProvider, type OutboxItem, type SendResult } from '../../../lib/workflow/index.js';
import { simDynamo } from '../dynamodb/clients.js';
import { DynamoModel, type DynamoModelOptions } from '../dynamodb/model.js';

const T0 = Date.UTC(2026, 6, 1);

export async function recordAfterRelease(onRequest: NonNullable<DynamoModelOptions['onRequest']>): Promise<void> {
  const { client, doc } = simDynamo(new DynamoModel({ onRequest }));
  const table = tableNames('record-').outbox;
  try {
    await ensureTables(client, tableNames('record-'));
    for (const [pk, event] of [['email#sent', 'SEND'], ['email#rejected', 'REJECT']] as const) {
      const item = { pk, kind: 'email', jobId: 'j', generation: 1, unit: 0, updatedAt: T0 - 3_600_000, status: 'PENDING', attempts: 0, unsent: unsentKeyOf(pk), to: 'c@customers.example', subject: 's', body: 'b' };
      await doc.send(new PutCommand({ TableName: table, Item: item }));
      await claim(doc, table, pk, 'resend', T0);
      await deferClaimed(doc, table, pk, 'resend', { notBefore: T0 });
      await recordProviderEvent(doc, table, pk, event, `m-${event}`);
      await claim(doc, table, pk, 'again', T0);
    }
    // A stale claim with no record past the record's lag: taken over (on no record) and resent; the resend refused for now.
    // Its send counted by its own sender (an acknowledgement lost), or not (a sender that died).
    for (const [pk, counted] of [['email#stale-counted', { ambiguousClaim: 'dead', ambiguousSends: 1 }], ['email#stale', {}]] as const) {
      const stale = { pk, kind: 'email', jobId: 'j', generation: 1, unit: 2, updatedAt: T0 - 3_600_000, status: 'SENDING', claimToken: 'dead', claimedAt: T0 - 3_600_000, attempts: 1, unsent: unsentKeyOf(pk), to: 'c@customers.example', subject: 's', body: 'b', ...counted };
      await doc.send(new PutCommand({ TableName: table, Item: stale }));
    }
    const never: EmailProvider = { name: 'never asked', send: async () => ({ kind: 'rejected', permanent: false, reason: 'not to be sent' }) };
    await reconcile({ doc, table, clock: new ManualClock({ wall: T0 }), telemetry: silentTelemetry, email: never, from: 'billing@fenced-workflow.example', pendingAfterMs: 1_000, claimTimeoutMs: 300_000, recordLagMs: 600_000 });
    const pk = 'payment#refused-rounds';
    const item = { pk, kind: 'http', jobId: 'j', generation: 1, unit: 1, updatedAt: T0 - 3_600_000, status: 'PENDING', attempts: 0, unsent: unsentKeyOf(pk), target: 'pay', request: { amountCents: 1 } };
    await doc.send(new PutCommand({ TableName: table, Item: item }));
    const answers: SendResult[] = [{ kind: 'held', reason: 'account inactive' }, { kind: 'rejected', permanent: false, reason: 'refused for now' }, { kind: 'accepted', providerMessageId: 'ch_1' }];
    const pay: HttpProvider = { name: 'forgets keys after a minute', keyRetentionMs: 60_000, post: async () => answers.shift()! };
    const bounced = { pk: 'email#bounced', kind: 'email', jobId: 'j', generation: 1, unit: 3, updatedAt: T0, status: 'SENT', attempts: 1, to: 'c@customers.example', subject: 's', body: 'b' };
    await doc.send(new PutCommand({ TableName: table, Item: bounced }));
    const notice = { items: [{ pk: 'email#bounced>notice', kind: 'email', jobId: 'j', unit: 3, status: 'PENDING', attempts: 0, unsent: unsentKeyOf('email#bounced>notice'), to: 'm@merchants.example', subject: 'bounced', body: 'b', parent: 'email#bounced', step: 'notice', updatedAt: T0 }] };
    for (let i = 0; i < 2; i++) await recordBounce(doc, table, bounced.pk, 'BOUNCE', 'm-bounced', notice);
    for (const at of [T0, T0 + 120_000, T0 + 240_000]) await deliver({ doc, table, clock: new ManualClock({ wall: at }), telemetry: silentTelemetry, http: { pay }, keyRetentionMarginMs: 10_000 }, item as unknown as OutboxItem);
  } finally {
    client.destroy();
  }
}
