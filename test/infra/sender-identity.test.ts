// tier: full
/**
 * The SES identity the emails are sent as (docs/deploy.md, Sender identity): an email-address
 * identity created by default, a domain identity with Easy DKIM (`senderDomain`), or an existing
 * identity imported by name or ARN (`senderIdentity`), for which the stack creates nothing (a
 * second AWS::SES::EmailIdentity of one name fails with AlreadyExists). Names nobody can verify,
 * and identities that do not cover the sender address, stop `cdk synth` with one line.
 */
import { readdirSync } from 'node:fs';
import type { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import type { FencedWorkflowStack } from '../../infra/stack.js';
import { SENDER_DKIM_OUTPUT } from '../../infra/stack.js';
import { ConfigError } from '../../lib/protocol/index.js';
import { logicalId, NO_BUNDLING, permissionsOf, synthAsCdk, templateOf, TEST_SENDER } from './support.js';

const DOMAIN = TEST_SENDER.slice(TEST_SENDER.indexOf('@') + 1);
const IDENTITY_ARN = `arn:aws:ses:eu-west-1:111122223333:identity/${DOMAIN}`;

/** The identity ARN CloudFormation resolves in the stack's own partition, region and account. */
const inStack = (name: string | object) => ({
  'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':ses:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ...(typeof name === 'string' ? [`:identity/${name}`] : [':identity/', name])]],
});

/** The resources each sending role may ses:SendEmail on (besides the configuration set). */
function sendEmailOn(template: Template, stack: FencedWorkflowStack): Record<'sender' | 'reconciler', unknown[]> {
  const e = stack.workflow.effects;
  const configSet = logicalId(e.configurationSet!);
  const of = (fn: 'sender' | 'reconciler') =>
    permissionsOf(template, logicalId(e[fn].role))
      .filter((p) => p.effect === 'Allow' && p.action === 'ses:SendEmail' && !p.resource.includes(configSet))
      .map((p) => JSON.parse(p.resource) as unknown);
  return { sender: of('sender'), reconciler: of('reconciler') };
}

const identities = (template: Template) => Object.values(template.findResources('AWS::SES::EmailIdentity')).map((r) => r.Properties as Record<string, unknown>);

/** What `templateOf` threw: one line, typed. */
function refusal(context: Record<string, unknown>): ConfigError {
  try {
    templateOf({ context });
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new TypeError(`synth accepted ${JSON.stringify(context)}`);
}

describe('refused at synth, with one line naming the setting', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['the placeholder cdk.json used to hold', { senderAddress: 'invoices@example.com' }, 'senderAddress: "invoices@example.com" is in example.com, reserved by RFC 2606'],
    ['a subdomain of example.org', { senderAddress: 'billing@mail.example.org' }, 'senderAddress: "billing@mail.example.org" is in example.org, reserved by RFC 2606'],
    ['example.net, any case', { senderAddress: 'Billing@EXAMPLE.NET' }, 'senderAddress: "Billing@EXAMPLE.NET" is in example.net'],
    ['a reserved top-level domain', { senderAddress: 'billing@shop.test' }, 'senderAddress: "billing@shop.test" is in test, reserved by RFC 2606'],
    ['no sender address (cdk.json holds none)', { senderAddress: '' }, 'senderAddress: is required'],
    ['a reserved sender domain', { senderDomain: 'example.net' }, 'senderDomain: "example.net" is in example.net, reserved by RFC 2606'],
    ['an address outside the sender domain', { senderDomain: 'other.dev' }, `senderDomain: "other.dev" does not cover senderAddress "${TEST_SENDER}"`],
    ['a malformed sender domain', { senderDomain: 'not a domain' }, 'senderDomain: must be a domain name, got "not a domain"'],
    ['both an identity to import and a domain to create', { senderIdentity: DOMAIN, senderDomain: DOMAIN }, 'senderIdentity: and senderDomain are exclusive'],
    ['an identity ARN of another service', { senderIdentity: `arn:aws:sns:eu-west-1:111122223333:identity/${DOMAIN}` }, 'senderIdentity: must be an SES identity ARN'],
    ['an identity ARN without a 12-digit account', { senderIdentity: `arn:aws:ses:eu-west-1:1111:identity/${DOMAIN}` }, 'senderIdentity: must be an SES identity ARN'],
    ['an identity ARN naming neither an address nor a domain', { senderIdentity: 'arn:aws:ses:eu-west-1:111122223333:identity/not a name' }, 'senderIdentity: must name an email address or a domain'],
    ['an imported address that is not the sender', { senderIdentity: `other@${DOMAIN}` }, `senderIdentity: "other@${DOMAIN}" does not cover senderAddress "${TEST_SENDER}"`],
    ['an imported identity at example.com', { senderIdentity: 'example.com' }, 'senderIdentity: "example.com" is in example.com'],
  ])('%s', (_, context, start) => {
    const e = refusal(context);
    expect(e.message.startsWith(start), e.message).toBe(true);
    expect(e.message).not.toContain('\n');
  });

  it('`cdk synth` with the placeholder exits 1 with that line alone, and writes no template', () => {
    const r = synthAsCdk({ fenceEpoch: 0, senderAddress: 'invoices@example.com', ...NO_BUNDLING });
    expect(r.status).toBe(1);
    expect(r.lines).toEqual([
      'senderAddress: "invoices@example.com" is in example.com, reserved by RFC 2606: SES can never verify it; give an address or domain you own',
    ]);
    expect(readdirSync(r.outdir).filter((f) => f.endsWith('.template.json'))).toEqual([]);
  });
});

describe('the identity the stack sends as', () => {
  it('by default, an email-address identity for senderAddress (no DKIM records to output), granted to the sender and the reconciler', () => {
    const { template, stack } = templateOf();
    expect(identities(template)).toEqual([expect.objectContaining({ EmailIdentity: TEST_SENDER })]);
    expect(Object.keys(template.toJSON().Outputs)).not.toContain(SENDER_DKIM_OUTPUT);
    const arn = inStack({ Ref: logicalId(stack.workflow.effects.identity as never) });
    expect(sendEmailOn(template, stack)).toEqual({ sender: [arn], reconciler: [arn] });
  });

  it('senderDomain: a domain identity with Easy DKIM signing on, and its three CNAME records as an output', () => {
    const { template, stack } = templateOf({ context: { senderDomain: DOMAIN.toUpperCase() } });
    const [identity, ...more] = identities(template);
    expect(more).toEqual([]);
    expect(identity).toMatchObject({ EmailIdentity: DOMAIN, DkimAttributes: { SigningEnabled: true } });
    // Easy DKIM: SES makes the keys; a selector and private key here would be Bring Your Own DKIM.
    expect(identity!.DkimSigningAttributes).toBeUndefined();
    const id = logicalId(stack.workflow.effects.identity as never);
    const records = [1, 2, 3].map((n) => ({ 'Fn::Join': [' ', [{ 'Fn::GetAtt': [id, `DkimDNSTokenName${n}`] }, 'CNAME', { 'Fn::GetAtt': [id, `DkimDNSTokenValue${n}`] }]] }));
    expect(template.toJSON().Outputs[SENDER_DKIM_OUTPUT].Value).toEqual({ 'Fn::Join': [' ; ', records] });
    expect(sendEmailOn(template, stack)).toEqual({ sender: [inStack({ Ref: id })], reconciler: [inStack({ Ref: id })] });
  });

  it.each([
    ['a domain', DOMAIN],
    ['the sender address itself', TEST_SENDER],
    ['a parent domain of the sender address', 'workflow.dev'],
  ])('senderIdentity by name (%s): no identity created; SendEmail on that name in the stack\'s partition, region and account', (_, name) => {
    const context = name === 'workflow.dev' ? { senderIdentity: name, senderAddress: 'billing@mail.workflow.dev' } : { senderIdentity: name };
    const { template, stack } = templateOf({ context });
    expect(identities(template)).toEqual([]);
    expect(sendEmailOn(template, stack)).toEqual({ sender: [inStack(name)], reconciler: [inStack(name)] });
    expect(template.toJSON().Rules ?? {}).not.toHaveProperty('SenderIdentityInStackAccountAndRegion');
  });

  it('senderIdentity by ARN: no identity created; SendEmail on that ARN; deploy asserts it is in the stack\'s account and region', () => {
    const { template, stack } = templateOf({ context: { senderIdentity: IDENTITY_ARN } });
    expect(identities(template)).toEqual([]);
    expect(sendEmailOn(template, stack)).toEqual({ sender: [IDENTITY_ARN], reconciler: [IDENTITY_ARN] });
    const rule = template.toJSON().Rules.SenderIdentityInStackAccountAndRegion;
    expect(rule.Assertions[0].Assert).toEqual({
      'Fn::And': [{ 'Fn::Equals': ['eu-west-1', { Ref: 'AWS::Region' }] }, { 'Fn::Equals': ['111122223333', { Ref: 'AWS::AccountId' }] }],
    });
  });
});
