/**
 * The sandbox: where a stack's effects go until the operator says a target is live (DESIGN.md,
 * External effects; docs/deploy.md, Sandbox and live). Nothing reaches a real person or provider
 * on a first deploy: every email goes to SES's mailbox simulator, which answers as real mailboxes
 * do (a delivery, a hard bounce, a complaint, each published as an event the recorder stores and
 * the alarms count) without touching the account's reputation, in SES's own sandbox too.
 *
 * The simulator address keeps who the email was for in its label (`success+<recipient>@...`:
 * SES's labels), so an operator reading the SES events sees whose email each was. The outcome is
 * the outbox id's (the same on every resend): about one in twenty bounces and one in fifty draws a
 * complaint, so a run of a few dozen items shows the bounce path end to end.
 */
import { createHash } from 'node:crypto';
import { ConfigError } from '../../protocol/index.js';
import type { EmailProvider, OutboundEmail, SendResult } from './providers.js';

/** SES's mailbox simulator (Amazon SES Developer Guide, Using the mailbox simulator). */
export const MAILBOX_SIMULATOR = 'simulator.amazonses.com';

export type SandboxOutcome = 'success' | 'bounce' | 'complaint';

/** The live-target name of a workload's email (its http targets are named by the workload). */
export const EMAIL_TARGET = 'email';

/** An email local part is at most 64 characters (RFC 5321): the longest outcome is `complaint+`. */
const LABEL_MAX = 64 - 'complaint+'.length;

/** The simulator outcome of an outbox email, from its message id (derived from the outbox table and id). */
export function sandboxOutcome(messageId: string): SandboxOutcome {
  const n = createHash('sha256').update(messageId).digest().readUInt32BE(0) % 100;
  return n < 5 ? 'bounce' : n < 7 ? 'complaint' : 'success';
}

/** `<outcome>+<recipient as a label>@simulator.amazonses.com`: the address an email goes to in the sandbox. */
export function sandboxRecipient(messageId: string, to: string): string {
  const label = to.replace(/@/g, '.').replace(/[^A-Za-z0-9._-]/g, '-').slice(0, LABEL_MAX).replace(/^[.-]+|[.-]+$/g, '');
  return `${sandboxOutcome(messageId)}${label === '' ? '' : `+${label}`}@${MAILBOX_SIMULATOR}`;
}

/** An email provider whose every email goes to the mailbox simulator instead of its recipient. */
export class SandboxEmail implements EmailProvider {
  readonly name: string;
  constructor(private readonly inner: EmailProvider) {
    this.name = `${inner.name} (sandbox: ${MAILBOX_SIMULATOR})`;
  }

  send(mail: OutboundEmail): Promise<SendResult> {
    return this.inner.send({ ...mail, to: sandboxRecipient(mail.messageId, mail.to) });
  }
}

/** A workload's targets, as `live` names them: `email` when it sends email, and its http targets' names. */
export const targetsOf = (w: { readonly outbox: { readonly email?: boolean | undefined; readonly http: readonly { readonly target: string }[] } }): string[] => [
  ...(w.outbox.email ? [EMAIL_TARGET] : []),
  ...w.outbox.http.map((t) => t.target),
];

/**
 * The targets the environment says are live (`LIVE_TARGETS`: a comma-separated list of `email`
 * and http target names, or `none`). Unset means none: a function deployed without the setting
 * sends nothing to a real person or provider. A name the workload does not have is refused.
 */
export function liveTargetsOf(raw: string | undefined, variable: string, known: readonly string[]): ReadonlySet<string> {
  if (raw === undefined || raw === '' || raw === 'none') return new Set();
  const names = raw.split(',').map((s) => s.trim());
  for (const n of names) if (!known.includes(n)) throw new ConfigError(variable, `names "${n.slice(0, 100)}", not a target of this workload (${known.join(', ') || 'none'})`);
  return new Set(names);
}
