// tier: quick
/**
 * Every outbox write accounted for, from the engine's own bill (ReturnConsumedCapacity INDEXES on
 * a test-only middleware, support/consumed-capacity.ts): an email item and an http item, end to
 * end on DynamoDB Local, the SMTP sink and the local payment provider: created in the unit's
 * fenced transaction, sent by the sender, the provider's record kept by the recorder (the events
 * SES publishes for a delivered email). docs/external-effects.md, "Every write accounted for".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPaymentsProvider, type PaymentsProvider } from '../cli/local/payments-provider.js';
import { startSmtpSink, type SmtpSink } from '../cli/local/smtp-sink.js';
import { commitFencedUnit, createDynamo, makeGeneration, systemClock, type Dynamo, type Effect } from '../lib/protocol/index.js';
import { deliver, messageIdentity, outboxEmail, outboxHttp, readOutboxItem, recordSesEvent, silentTelemetry, type OutboxItem, type SenderDeps } from '../lib/workflow/index.js';
import { FetchHttpProvider, SmtpEmailProvider } from '../lib/workflow/adapters/index.js';
import { logCapacity, type CapacityLog } from './support/consumed-capacity.js';
import { putJob } from './support/fixtures.js';
import { makeTables, type TestTables } from './support/tables.js';

let t: TestTables;
let sink: SmtpSink;
let payments: PaymentsProvider;
let measured: Dynamo;
let bill: CapacityLog;
const g = makeGeneration(0, 3);
const job = 'invoice-run#2026-07';

beforeAll(async () => {
  [t, sink, payments] = await Promise.all([makeTables(import.meta.filename), startSmtpSink(), startPaymentsProvider()]);
  // A client of its own, so only the measured requests are billed.
  measured = createDynamo({ endpoint: t.endpoint });
  bill = logCapacity(measured.doc);
  await putJob(t, job);
});
afterAll(async () => {
  await Promise.all([sink.close(), payments.close()]);
  measured.client.destroy();
  t.dynamo.client.destroy();
});

const deps = (): SenderDeps => ({
  doc: measured.doc,
  table: t.names.outbox,
  clock: systemClock,
  telemetry: silentTelemetry,
  email: new SmtpEmailProvider({ host: sink.host, port: sink.port }),
  http: { payments: new FetchHttpProvider(`${payments.url}/charges`, 3_000) },
  from: 'billing@fenced-workflow.example',
});

let cursor = 0;
/** The unit's transaction (fence, checkpoint, the outbox item): the Outbox table's share of its bill. */
async function commitUnit(effect: Effect): Promise<OutboxItem> {
  const unit = cursor++;
  await commitFencedUnit({ doc: measured.doc }, { fence: { table: t.names.fences, resource: `invoices#${job}` }, generation: g, checkpoint: { table: t.names.jobs, key: job, expected: unit, next: unit + 1 }, effects: [effect], token: { job, unit } });
  return (await readOutboxItem(t.dynamo.doc, t.names.outbox, effect.item.pk))!;
}

/** The events SES event publishing sends for a delivered email (Send, then Delivery), through the recorder. */
async function sesRecords(pk: string, messageId: string): Promise<void> {
  const tags = { outboxId: [messageIdentity.tag(pk)], outboxTable: [messageIdentity.tag(t.names.outbox)] };
  for (const eventType of ['Send', 'Delivery']) await recordSesEvent({ doc: measured.doc, table: t.names.outbox }, { eventType, mail: { messageId, tags } });
}

describe('write units per outbox item, from the engine', () => {
  it('an email item: created in the unit (table 2, index 2), claimed (table 1, no index write: keys only), SENT (table 1, index 1: its entry leaves), the SES events of a SENT item not written (a half-unit read): 4 table + 3 index write units', async () => {
    bill.take(t.names.outbox);
    const pk = 'email#2026-07#cust-0000001';
    const item = await commitUnit(outboxEmail(t.names.outbox, pk, { jobId: job, unit: cursor }, { to: 'c1@customers.example', subject: 'Your invoice', body: 'Amount due: 12.34 EUR' }));
    const created = bill.take(t.names.outbox);
    expect(await deliver(deps(), item)).toBe('sent');
    const sent = bill.take(t.names.outbox);
    await sesRecords(pk, (await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))!.providerMessageId!);
    const recorded = bill.take(t.names.outbox);
    const total = { units: created.units + sent.units + recorded.units, index: created.index + sent.index + recorded.index };
    console.log(`email item: created ${JSON.stringify(created.charges)}; sent ${JSON.stringify(sent.charges)}; recorded ${JSON.stringify(recorded.charges)}; total table ${total.units}, index ${total.index}, reads ${recorded.reads}`);
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'SENT' });
    expect({ created: [created.units, created.index], sent: [sent.units, sent.index], recorded: [recorded.units, recorded.index, recorded.reads] }).toEqual({ created: [2, 2], sent: [2, 1], recorded: [0, 0, 0.5] });
  });

  it('the recorder writes where the record can still settle the item: a sender that died after the send leaves it SENDING, and the SES Send event is written (table 1, no index write)', async () => {
    const pk = 'email#2026-07#cust-0000002';
    const item = await commitUnit(outboxEmail(t.names.outbox, pk, { jobId: job, unit: cursor }, { to: 'c2@customers.example', subject: 'Your invoice', body: 'Amount due: 1.00 EUR' }));
    void deliver({ ...deps(), hooks: { at: async (p) => (p === 'after-send' ? new Promise<void>(() => undefined) : undefined) } }, item);
    for (let i = 0; i < 100 && (await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))?.status !== 'SENDING'; i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300));
    bill.take(t.names.outbox);
    await sesRecords(pk, 'ses-message-2');
    const recorded = bill.take(t.names.outbox);
    expect((await readOutboxItem(t.dynamo.doc, t.names.outbox, pk))!.providerEvents).toEqual(new Set(['SEND:ses-message-2']));
    // One status read, one write for Send; the Delivery event costs nothing: Send alone is the proof the reconciler needs.
    expect([recorded.units, recorded.index, recorded.reads]).toEqual([1, 0, 0.5]);
  });

  it('an http item: created in the unit (table 2, index 2), sent with its Idempotency-Key and SENT (table 1, index 1), no claim: 3 table + 3 index units', async () => {
    bill.take(t.names.outbox);
    const pk = 'payment#2026-07#cust-0000001';
    const item = await commitUnit(outboxHttp(t.names.outbox, pk, { jobId: job, unit: cursor }, { target: 'payments', request: { customerId: 'cust-0000001', amountCents: 1234, currency: 'EUR' } }));
    const created = bill.take(t.names.outbox);
    expect(await deliver(deps(), item)).toBe('sent');
    const sent = bill.take(t.names.outbox);
    console.log(`http item: created ${JSON.stringify(created.charges)}; sent ${JSON.stringify(sent.charges)}; total table ${created.units + sent.units}, index ${created.index + sent.index}`);
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'SENT' });
    expect(payments.records.get(messageIdentity.idempotencyKey(t.names.outbox, pk))).toMatchObject({ requests: 1 });
    expect({ created: [created.units, created.index], sent: [sent.units, sent.index] }).toEqual({ created: [2, 2], sent: [1, 1] });
  });

  it("an http item to a provider that forgets keys: its first send time stamped before the POST (table 1, index 0: unsent is not rewritten), then SENT (1 + 1)", async () => {
    bill.take(t.names.outbox);
    const pk = 'payment#2026-07#cust-0000002';
    const item = await commitUnit(outboxHttp(t.names.outbox, pk, { jobId: job, unit: cursor }, { target: 'payments', request: { customerId: 'cust-0000002', amountCents: 1234, currency: 'EUR' } }));
    bill.take(t.names.outbox);
    const forgetful = { payments: new FetchHttpProvider(`${payments.url}/charges`, 3_000, { keyRetentionMs: 86_400_000 }) };
    expect(await deliver({ ...deps(), http: forgetful }, item)).toBe('sent');
    const sent = bill.take(t.names.outbox);
    expect(await readOutboxItem(t.dynamo.doc, t.names.outbox, pk)).toMatchObject({ status: 'SENT', firstSentAt: expect.any(Number) });
    expect([sent.units, sent.index]).toEqual([2, 1]);
  });
});
