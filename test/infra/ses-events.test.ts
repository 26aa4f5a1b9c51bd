// tier: full
/**
 * What SES tells the stack and how fast the stack may ask it: the configuration set's event
 * destination and the recorder's EventBridge rule (the same five SES events, no DELIVERY), and
 * `sendRatePerSecond`, passed to the sender and the reconciler and checked at synth with the
 * bounds the functions read it with.
 */
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FencedWorkflow } from '../../infra/constructs/fenced-workflow.js';
import { ENV } from '../../lib/workflow/index.js';
import { ConfigError } from '../../lib/protocol/index.js';
import { logicalId, NO_BUNDLING, refusal, synthAsCdk, templateOf } from './support.js';

type Props = Record<string, unknown>;
let template: Template;
let w: FencedWorkflow;
beforeAll(() => {
  const built = templateOf();
  template = built.template;
  w = built.stack.workflow;
});

const propsOf = (t: Template, type: string) => Object.values(t.findResources(type)).map((r) => r.Properties as Props);
const envOf = (t: Template, id: string) => ((t.toJSON().Resources[id].Properties as Props).Environment as { Variables: Record<string, unknown> }).Variables;

describe('SES event publishing, to the recorder', () => {
  it('the configuration set publishes SEND, BOUNCE, COMPLAINT, REJECT and DELIVERY_DELAY to the default bus, and not DELIVERY (a write per email no decision reads)', () => {
    const destinations = propsOf(template, 'AWS::SES::ConfigurationSetEventDestination');
    expect(destinations).toHaveLength(1);
    const d = destinations[0]!.EventDestination as { Enabled?: boolean; MatchingEventTypes: string[]; EventBridgeDestination: { EventBusArn: unknown } };
    expect([...d.MatchingEventTypes].sort()).toEqual(['bounce', 'complaint', 'deliveryDelay', 'reject', 'send']);
    expect(JSON.stringify(d.EventBridgeDestination.EventBusArn)).toContain('event-bus/default');
    expect(destinations[0]!.ConfigurationSetName).toEqual({ Ref: logicalId(w.effects.configurationSet!) });
  });

  it("the recorder's rule matches exactly those events' detail types, of this configuration set only, and targets the recorder with retries and the schedule DLQ", () => {
    const rules = propsOf(template, 'AWS::Events::Rule').filter((r) => JSON.stringify(r.EventPattern ?? {}).includes('aws.ses'));
    expect(rules).toHaveLength(1);
    const rule = rules[0]!;
    expect(rule.EventPattern).toEqual({
      source: ['aws.ses'],
      'detail-type': ['Email Sent', 'Email Bounced', 'Email Complaint Received', 'Email Rejected', 'Email Delivery Delayed'],
      detail: { mail: { tags: { 'ses:configuration-set': [{ Ref: logicalId(w.effects.configurationSet!) }] } } },
    });
    expect(rule.Targets).toEqual([
      expect.objectContaining({
        Arn: { 'Fn::GetAtt': [logicalId(w.effects.recorder!.fn), 'Arn'] },
        RetryPolicy: { MaximumRetryAttempts: 8 },
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [logicalId(w.scheduleDeadLetterQueue), 'Arn'] } },
      }),
    ]);
  });

  it("the recorder's description names the events it stores", () => {
    const description = (template.toJSON().Resources[logicalId(w.effects.recorder!.fn)].Properties as Props).Description as string;
    expect(description).toMatch(/send, bounce, complaint, reject and delivery-delay events/);
  });
});

describe('sendRatePerSecond', () => {
  const sending = ['sender', 'reconciler'] as const;

  it('unset: the sender and the reconciler are unpaced (no SEND_RATE_PER_SECOND)', () => {
    for (const fn of sending) expect(envOf(template, logicalId(w.effects[fn].fn))[ENV.sendRatePerSecond], fn).toBeUndefined();
  });

  it.each([14, '14', '0.5', 1])('%j: the sender and the reconciler get it, no other function does', (sendRatePerSecond) => {
    const { template: t, stack } = templateOf({ context: { sendRatePerSecond } });
    const e = stack.workflow.effects;
    for (const fn of sending) expect(envOf(t, logicalId(e[fn].fn))[ENV.sendRatePerSecond], fn).toBe(String(Number(sendRatePerSecond)));
    for (const f of [e.recorder!, e.collector!, stack.workflow.worker, stack.workflow.sweeper, stack.workflow.starter]) expect(envOf(t, logicalId(f.fn))[ENV.sendRatePerSecond]).toBeUndefined();
  });

  it.each(['0', '-1', 'fast', '1e3', '0x10', '10001', '0.0001', 'Infinity'])('%j is refused at synth with one line naming sendRatePerSecond', (sendRatePerSecond) => {
    let error: unknown;
    try {
      templateOf({ context: { sendRatePerSecond } });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe('sendRatePerSecond');
    expect((error as Error).message).toMatch(/^sendRatePerSecond: must be a positive number in \[0\.001, 10000\]/);
    expect((error as Error).message).not.toContain('\n');
  });

  it("a rate too slow for the sender's stream batch to fit in its timeout is refused at synth, naming the least that fits", () => {
    // A batch of 10 spaced at 0.1/s takes 90 s; the sender has 60 s, 48 s of it after one send (10 s) and its settle (2 s).
    const e = refusal(() => templateOf({ context: { sendRatePerSecond: '0.1' } }));
    expect(e.message).toBe("sendRatePerSecond: 0.1/s spaces the sender's stream batch of 10 over 90 s, more than its 60 s timeout leaves (48 s after one send and its settle): give at least 0.19");
    expect(() => templateOf({ context: { sendRatePerSecond: '0.19' } })).not.toThrow();
  });

  it('synth accepts a rate the batch fits in exactly when the sender accepts it at start-up (the same bounds)', async () => {
    const { senderFromEnv } = await import('../../functions/effects-commons.js');
    const { invoices } = await import('../../lib/workloads/invoices/index.js');
    const commons = { doc: {}, tables: { outbox: 'Outbox' }, clock: {}, workload: invoices } as unknown as Parameters<typeof senderFromEnv>[1];
    const base = { [ENV.sesConfigurationSet]: 'set', [ENV.senderAddress]: 'invoices@fenced-workflow.dev' };
    const senderStarts = (rate: string) => {
      try {
        senderFromEnv({ ...base, [ENV.sendRatePerSecond]: rate }, commons, {} as Parameters<typeof senderFromEnv>[2]);
        return true;
      } catch (e) {
        if (e instanceof ConfigError) return false;
        throw e;
      }
    };
    const synthAccepts = (rate: string) => {
      try {
        templateOf({ context: { sendRatePerSecond: rate } });
        return true;
      } catch (e) {
        if (e instanceof ConfigError) return false;
        throw e;
      }
    };
    for (const rate of ['1', '14', '10000', '10000.5', '0.19']) expect(synthAccepts(rate), rate).toBe(senderStarts(rate));
    // Below the batch's floor the sender still starts (it cuts a batch short when its time runs out); synth refuses it.
    for (const rate of ['0.0009', '0.001', '0.18']) expect([rate, synthAccepts(rate)]).toEqual([rate, false]);
  });

  it('`cdk synth` with a bad rate exits 1 with that line alone', () => {
    const r = synthAsCdk({ fenceEpoch: 0, senderAddress: 'invoices@fenced-workflow.dev', sendRatePerSecond: 'fast', ...NO_BUNDLING });
    expect(r.status).toBe(1);
    expect(r.lines).toEqual([
      'sendRatePerSecond: must be a positive number in [0.001, 10000] (sends per second per sender or reconciler invocation; SES allows 14/s by default, 1/s in the sandbox), got "fast"',
    ]);
  });
});
