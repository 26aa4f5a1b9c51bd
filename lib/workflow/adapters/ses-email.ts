/**
 * EmailProvider on SES v2 (@aws-sdk/client-sesv2). SendEmail has no idempotency key, so the
 * client makes ONE attempt (an SDK retry after a lost answer or a 5xx would be a second email
 * nobody counted); the adapter itself retries only a throttled answer, which SES refused before
 * taking anything, twice with a jittered backoff, and then the sender defers the item. The
 * configuration set publishes SEND and DELIVERY events with the message tags
 * `outboxId` and `outboxTable`, which the recorder stores on the item (recorder.ts) for the
 * reconciler. The identity headers travel in the message; SES sets its own Message-ID.
 *
 * One send, its throttled retries included, ends within `timeoutMs` (the claim arithmetic's
 * `sendTimeoutMs`: a claim is sent under only while it outlives one more send): an attempt still
 * unanswered then is aborted, and an answer that never came is maybe taken.
 */
import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import type { EmailProvider, OutboundEmail, SendResult } from '../effects/providers.js';
import { classifySes } from './provider-behaviour.js';

/** The answer's verdict: the providers' behaviour model (provider-behaviour.ts, SES_MODEL). */
export const classifySesError = classifySes;

/** Throttled attempts retried here, at once, before the sender defers the item: a 429 took nothing, so a retry cannot duplicate. */
const THROTTLE_RETRIES = 2;

export class SesEmailProvider implements EmailProvider {
  readonly name = 'ses';
  constructor(
    private readonly ses: SESv2Client,
    private readonly configurationSet: string,
    /** The wait between throttled attempts (tests pass one of their own). */
    private readonly pause: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
    /** The longest one send may take, retries included: the sender's `sendTimeoutMs`. */
    private readonly timeoutMs = 10_000,
  ) {}

  static client(): SESv2Client {
    return new SESv2Client({ maxAttempts: 1 });
  }

  async send(mail: OutboundEmail): Promise<SendResult> {
    const deadline = Date.now() + this.timeoutMs;
    let result = await this.once(mail, deadline);
    for (let i = 0; i < THROTTLE_RETRIES && result.kind === 'throttled'; i++) {
      const wait = Math.round((50 << i) * (1 + Math.random()));
      // No retry that could not end by the deadline: the throttle (nothing taken) stands.
      if (Date.now() + wait >= deadline) break;
      await this.pause(wait);
      result = await this.once(mail, deadline);
    }
    return result;
  }

  private async once(mail: OutboundEmail, deadline: number): Promise<SendResult> {
    try {
      const out = await this.ses.send(
        new SendEmailCommand({
          FromEmailAddress: mail.from,
          Destination: { ToAddresses: [mail.to] },
          ConfigurationSetName: this.configurationSet,
          EmailTags: Object.entries(mail.tags).map(([Name, Value]) => ({ Name, Value })),
          Content: {
            Simple: {
              Subject: { Data: mail.subject, Charset: 'UTF-8' },
              Body: { Text: { Data: mail.text, Charset: 'UTF-8' } },
              Headers: Object.entries(mail.headers).map(([Name, Value]) => ({ Name, Value })),
            },
          },
        }),
        { abortSignal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) },
      );
      return { kind: 'accepted', providerMessageId: out.MessageId ?? '' };
    } catch (e) {
      return classifySes(e);
    }
  }
}
