// tier: full
/**
 * A live http target names its credential: a Secrets Manager secret the stack creates (with a
 * generated placeholder, never a value in the template) or imports by its complete ARN. The
 * sender and the reconciler are told its ARN, and only they may read it; a sandboxed target has
 * none. The grant is proven from the call the code makes: SecretsManagerCredential's
 * GetSecretValue, read off the wire of a local Secrets Manager and evaluated against the stack's
 * policies, allowed for the sender and denied for the worker.
 */
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '../../lib/workflow/index.js';
import { SecretsManagerCredential } from '../../lib/workflow/adapters/index.js';
import { startSecretsEndpoint, type SecretsEndpoint } from '../support/secrets-endpoint.js';
import { StackIam, type TemplateJson } from './iam-eval.js';
import { callsFromWire } from './wire-calls.js';
import { buildApp, logicalId, nagViolations, permissionsOf, refusal, templateOf, withoutCfnValidation } from './support.js';

const PAYMENTS = 'https://api.payments.fenced-workflow.dev/v1/charges';
const LIVE = { live: 'true', paymentsUrl: PAYMENTS };
const IMPORTED = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:payments-api-key-Xy12Ab';

const envOf = (built: ReturnType<typeof templateOf>, f: { fn: Parameters<typeof logicalId>[0] }) =>
  (built.template.toJSON().Resources[logicalId(f.fn)].Properties.Environment as { Variables: Record<string, unknown> }).Variables;

describe("a live http target's credential", () => {
  it('created by the stack: a secret with a generated placeholder (no value in the template), its ARN given to the sender and the reconciler, readable by them alone', () => {
    const built = templateOf({ context: LIVE });
    const { template, stack } = built;
    const e = stack.workflow.effects;
    const secrets = template.findResources('AWS::SecretsManager::Secret');
    expect(Object.keys(secrets)).toEqual([logicalId(e.credentials.payments!)]);
    const props = Object.values(secrets)[0]!.Properties as Record<string, unknown>;
    expect(props.SecretString).toBeUndefined();
    expect(props.GenerateSecretString).toBeDefined();
    const ref = { Ref: logicalId(e.credentials.payments!) };
    for (const f of [e.sender, e.reconciler]) expect(envOf(built, f)[ENV.paymentsSecretArn]).toEqual(ref);
    for (const f of [stack.workflow.worker, stack.workflow.sweeper, stack.workflow.starter, e.recorder!, e.collector!]) expect(envOf(built, f)[ENV.paymentsSecretArn]).toBeUndefined();
    const readers = Object.keys(template.findResources('AWS::IAM::Role')).filter((r) => permissionsOf(template, r).some((p) => p.action === 'secretsmanager:GetSecretValue'));
    expect(readers.sort()).toEqual([logicalId(e.sender.role), logicalId(e.reconciler.role)].sort());
    for (const r of readers) expect(permissionsOf(template, r).filter((p) => p.action === 'secretsmanager:GetSecretValue').map((p) => p.resource)).toEqual([JSON.stringify(ref)]);
  });

  it('imported by its complete ARN (-c paymentsSecretArn): no secret created, that ARN given and granted', () => {
    const built = templateOf({ context: { ...LIVE, paymentsSecretArn: IMPORTED } });
    expect(Object.keys(built.template.findResources('AWS::SecretsManager::Secret'))).toEqual([]);
    expect(envOf(built, built.stack.workflow.effects.sender)[ENV.paymentsSecretArn]).toBe(IMPORTED);
    expect(permissionsOf(built.template, logicalId(built.stack.workflow.effects.sender.role))).toEqual(expect.arrayContaining([{ effect: 'Allow', action: 'secretsmanager:GetSecretValue', resource: JSON.stringify(IMPORTED) }]));
  });

  it('a target in the sandbox has none: its calls are signed for the sandbox provider', () => {
    const built = templateOf();
    expect(Object.keys(built.template.findResources('AWS::SecretsManager::Secret'))).toEqual([]);
    expect(envOf(built, built.stack.workflow.effects.sender)[ENV.paymentsSecretArn]).toBeUndefined();
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['a secret for a target in the sandbox', { paymentsSecretArn: IMPORTED }, /^paymentsSecretArn: is set, but target payments is in the sandbox/],
    ['a partial ARN (no 6-character suffix)', { ...LIVE, paymentsSecretArn: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:payments' }, /^paymentsSecretArn: must be a Secrets Manager secret's complete ARN/],
  ])('refused at synth in one line: %s', (_what, context, message) => {
    expect(refusal(() => templateOf({ context })).message).toMatch(message);
  });

  it('a live stack has zero unacknowledged cdk-nag findings (the rotation finding acknowledged on the secret: the provider rotates its keys)', () => {
    const { app, outdir } = buildApp({ nag: true, context: LIVE });
    expect(withoutCfnValidation(() => nagViolations(app, outdir))).toEqual([]);
  });
});

describe('the grant, proven from the call the code makes', () => {
  let secrets: SecretsEndpoint;
  beforeAll(async () => {
    secrets = await startSecretsEndpoint();
  });
  afterAll(() => secrets.close());

  it("SecretsManagerCredential's GetSecretValue on the ARN the stack gives is allowed for the sender and the reconciler, denied for the worker", async () => {
    const built = templateOf({ context: LIVE });
    const iam = new StackIam(built.template.toJSON() as TemplateJson);
    const arn = iam.resolve({ Ref: logicalId(built.stack.workflow.effects.credentials.payments!) }) as string;
    secrets.put(arn, 'sk_test_key');
    const client = new SecretsManagerClient({ endpoint: secrets.url, region: 'eu-west-1', credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local' } });
    expect(await new SecretsManagerCredential(client, arn).value()).toBe('sk_test_key');
    client.destroy();
    const wire = secrets.requests;
    expect(wire).toHaveLength(1);
    const as = (fn: string) => callsFromWire(fn, wire, iam.arnNames(), 'no-s3');
    expect((await iam.evaluate([...as('sender'), ...as('reconciler')])).denied).toEqual([]);
    expect((await iam.evaluate(as('worker'))).denied).toEqual([expect.stringContaining('worker: secretsmanager:GetSecretValue on arn:aws:secretsmanager:')]);
  });
});
