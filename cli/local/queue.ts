/**
 * An in-process queue with the SQS semantics the workflow depends on:
 * at-least-once delivery, a visibility timeout (a received message is hidden, then redelivered
 * unless deleted), a receive count, and a dead-letter queue after `maxReceiveCount` receives.
 *
 * Why not an SQS emulator: the local runtime injects faults (duplicate deliveries, crashed
 * invocations whose messages must come back after the visibility timeout) deterministically and
 * thousands of times per minute in the chaos harness; an in-process queue does that with no
 * extra process and no start-up time. What we rely on of SQS is exactly what this implements.
 */
import { randomUUID } from 'node:crypto';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import type { Clock } from '../../lib/protocol/index.js';
import type { WorkMessage, WorkQueue } from '../../lib/workflow/index.js';

export interface QueuedMessage {
  readonly messageId: string;
  readonly body: string;
  receiveCount: number;
  visibleAt: number;
  receiptHandle?: string;
  readonly sentAt: number;
}

export interface LocalQueueOptions {
  clock: Clock;
  visibilityTimeoutMs: number;
  maxReceiveCount: number;
  name?: string;
}

export class LocalQueue implements WorkQueue {
  private messages: QueuedMessage[] = [];
  readonly deadLetters: QueuedMessage[] = [];
  sent = 0;

  constructor(private readonly opts: LocalQueueOptions) {}

  /** WorkQueue: what the handlers call. */
  async send(message: WorkMessage): Promise<void> {
    this.sendRaw(JSON.stringify(message));
  }

  /** Any body, valid or not: the chaos harness and tests send malformed ones. */
  sendRaw(body: string, delayMs = 0): string {
    const messageId = randomUUID();
    const now = this.opts.clock.monotonicNow();
    this.messages.push({ messageId, body, receiveCount: 0, visibleAt: now + delayMs, sentAt: now });
    this.sent++;
    return messageId;
  }

  /** ReceiveMessage: up to `max` visible messages, hidden for the visibility timeout. */
  receive(max: number): QueuedMessage[] {
    const now = this.opts.clock.monotonicNow();
    const out: QueuedMessage[] = [];
    for (const m of [...this.messages]) {
      if (out.length >= max) break;
      if (m.visibleAt > now) continue;
      if (m.receiveCount >= this.opts.maxReceiveCount) {
        // SQS moves a message to the DLQ when a receive would exceed maxReceiveCount.
        this.messages = this.messages.filter((x) => x !== m);
        this.deadLetters.push(m);
        continue;
      }
      m.receiveCount++;
      m.visibleAt = now + this.opts.visibilityTimeoutMs;
      m.receiptHandle = randomUUID();
      out.push({ ...m });
    }
    return out;
  }

  /** DeleteMessage: only with the current receipt handle (a stale receiver cannot delete). */
  delete(receiptHandle: string): boolean {
    const before = this.messages.length;
    this.messages = this.messages.filter((m) => m.receiptHandle !== receiptHandle);
    return this.messages.length < before;
  }

  /** ChangeMessageVisibility to 0: make a failed message visible again now (Lambda does not; used by tests). */
  release(receiptHandle: string): void {
    const m = this.messages.find((x) => x.receiptHandle === receiptHandle);
    if (m) m.visibleAt = this.opts.clock.monotonicNow();
  }

  get depth(): number {
    return this.messages.length;
  }

  get inFlight(): number {
    const now = this.opts.clock.monotonicNow();
    return this.messages.filter((m) => m.visibleAt > now && m.receiveCount > 0).length;
  }

  /** When the next hidden message becomes visible (for an idle poller). */
  nextVisibleIn(): number | undefined {
    const now = this.opts.clock.monotonicNow();
    const times = this.messages.map((m) => m.visibleAt - now);
    return times.length === 0 ? undefined : Math.max(0, Math.min(...times));
  }
}

/** The event Lambda's SQS event source mapping would deliver for these messages. */
export function sqsEvent(messages: readonly QueuedMessage[], queueArn = 'arn:aws:sqs:local:000000000000:work'): SQSEvent {
  return {
    Records: messages.map(
      (m): SQSRecord => ({
        messageId: m.messageId,
        receiptHandle: m.receiptHandle ?? '',
        body: m.body,
        attributes: {
          ApproximateReceiveCount: String(m.receiveCount),
          SentTimestamp: String(Math.round(m.sentAt)),
          SenderId: 'local',
          ApproximateFirstReceiveTimestamp: String(Math.round(m.sentAt)),
        },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: queueArn,
        awsRegion: 'local',
      }),
    ),
  };
}
