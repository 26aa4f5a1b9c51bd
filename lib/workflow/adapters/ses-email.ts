/**
 * EmailProvider on SES v2 (@aws-sdk/client-sesv2). SendEmail has no idempotency key, so the
 * client makes ONE attempt (an SDK retry after a lost answer would be a second email nobody
 * counted); the configuration set publishes SEND and DELIVERY events with the message tags
 * `outboxId` and `outboxTable`, which the recorder stores on the item (recorder.ts) for the
 * reconciler. The identity headers travel in the message; SES sets its own Message-ID.
 */
import { SESv2Client, SendEmailCommand, SESv2ServiceException } from '@aws-sdk/client-sesv2';
import type { EmailProvider, OutboundEmail, SendResult } from '../effects/providers.js';

/** Refusals SES makes before accepting anything that no resend fixes. */
const PERMANENT = new Set(['MessageRejected', 'MailFromDomainNotVerifiedException', 'BadRequestException', 'AccountSuspendedException', 'SendingPausedException', 'NotFoundException']);

export function classifySesError(e: unknown): SendResult {
  const reason = e instanceof Error ? `${e.name}: ${e.message}`.slice(0, 300) : String(e);
  if (e instanceof SESv2ServiceException) {
    // An answer from SES: it decided, and a 4xx/5xx it answered means it did not take the message.
    return { kind: 'rejected', permanent: PERMANENT.has(e.name), reason };
  }
  // No answer (timeout, reset): the request may have been taken.
  return { kind: 'ambiguous', reason };
}

export class SesEmailProvider implements EmailProvider {
  readonly name = 'ses';
  constructor(
    private readonly ses: SESv2Client,
    private readonly configurationSet: string,
  ) {}

  static client(): SESv2Client {
    return new SESv2Client({ maxAttempts: 1 });
  }

  async send(mail: OutboundEmail): Promise<SendResult> {
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
      );
      return { kind: 'accepted', providerMessageId: out.MessageId ?? '' };
    } catch (e) {
      return classifySesError(e);
    }
  }
}
