/**
 * The incident's file and email (the article's transfer: "the protected file and the
 * unprotected email"). With the fence, each worker puts its documents as new objects under its
 * generation and its unit's transaction publishes them and creates the outbox items; the sender
 * delivers what committed. Without it (the UNSAFE, hand-written path, its own tables and folder),
 * each worker overwrites the document in place and emails the customer itself.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { Dynamo, Generation } from '../../lib/protocol/index.js';
import { messageIdentity, publishDocuments, silentTelemetry, type PublishedDocument, type TableNames, type Telemetry } from '../../lib/workflow/index.js';
import { customerAddress, invoiceProcessor, type InvoiceRunInput } from '../../lib/workloads/invoices/invoices.js';
import { createSenderHandler } from '../../functions/sender-handler.js';
import type { Effects } from '../local/effects-env.js';
import { headerOf } from '../local/smtp-sink.js';
import { OutboxStream } from '../local/outbox-stream.js';
import { systemClock } from '../../lib/protocol/index.js';

export interface IncidentEffects {
  effects: Effects;
  /** The incident's document folder, named like its tables. */
  set: string;
  dynamo: Dynamo;
  streams: DynamoDBStreamsClient;
}

const ctxOf = (jobId: string, g: Generation, unit: number, tables: TableNames) => ({ jobId, generation: g, unit, tables, now: 0 });

/** Fenced: the unit's documents as new objects under the generation; their pointers for the unit's effects. */
export async function putDocuments(fx: IncidentEffects, input: InvoiceRunInput, jobId: string, g: Generation, unit: number, tables: TableNames): Promise<Map<string, PublishedDocument>> {
  const drafts = invoiceProcessor.unitDocuments!(input, ctxOf(jobId, g, unit, tables));
  return publishDocuments({ store: fx.effects.store, set: fx.set }, drafts);
}

/** The sender, fed by the incident's Outbox stream, until everything committed is delivered. */
export async function deliverCommitted(fx: IncidentEffects, tables: TableNames, telemetry: Telemetry = silentTelemetry): Promise<void> {
  const stream = new OutboxStream({
    client: fx.dynamo.client,
    streams: fx.streams,
    table: tables.outbox,
    clock: systemClock,
    sender: createSenderHandler({ doc: fx.dynamo.doc, table: tables.outbox, clock: systemClock, telemetry, email: fx.effects.email, http: fx.effects.http, from: fx.effects.from }),
  });
  await stream.drain(3);
}

/** UNSAFE, demo only: the document written in place (no generation in the key, no condition, no pointer). */
export async function overwriteDocuments(fx: IncidentEffects, input: InvoiceRunInput, jobId: string, g: Generation, unit: number, tables: TableNames): Promise<string[]> {
  const drafts = invoiceProcessor.unitDocuments!(input, ctxOf(jobId, g, unit, tables));
  const keys: string[] = [];
  for (const d of drafts) {
    const key = `${fx.set}/${d.name.replace(/\/\d+\.json$/, '.json')}`;
    await fx.effects.s3.send(new PutObjectCommand({ Bucket: fx.effects.bucket, Key: key, Body: d.body, ContentType: d.contentType }));
    keys.push(key);
  }
  return keys;
}

/** UNSAFE, demo only: the worker emails the customer itself, no outbox. */
export async function emailDirectly(fx: IncidentEffects, input: InvoiceRunInput, g: Generation, unit: number, tables: TableNames, writer: string): Promise<number> {
  const first = unit * input.unitSize;
  const last = Math.min(input.customers, first + input.unitSize);
  let sent = 0;
  for (let i = first; i < last; i++) {
    const effects = invoiceProcessor.unitEffects(input, { ...ctxOf('', g, unit, tables), now: 0 });
    const mail = effects.find((e) => e.item.pk === `email#${input.period}#cust-${String(i).padStart(7, '0')}`);
    if (mail === undefined) continue;
    const id = mail.item.pk;
    const r = await fx.effects.email.send({
      from: fx.effects.from,
      to: String(mail.item.to),
      subject: `${String(mail.item.subject)} (from ${writer}, generation ${g})`,
      text: String(mail.item.body),
      messageId: messageIdentity.messageId(tables.outbox, id),
      headers: messageIdentity.headers(tables.outbox, id),
      tags: {},
    });
    if (r.kind === 'accepted') sent++;
  }
  return sent;
}

/** The sink's record for one outbox table: messages per customer address (undefined with --smtp: no record). */
export function emailsPerCustomer(fx: IncidentEffects, outboxTable: string): Map<string, number> | undefined {
  if (fx.effects.sink === undefined) return undefined;
  const out = new Map<string, number>();
  for (const m of fx.effects.sink.received) {
    if (headerOf(m.raw, 'X-Outbox-Table') !== outboxTable) continue;
    const to = headerOf(m.raw, 'To') ?? '';
    out.set(to, (out.get(to) ?? 0) + 1);
  }
  return out;
}

export { customerAddress };
