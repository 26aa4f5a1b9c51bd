// tier: full, isolated
/**
 * IAM, proven from the calls (#23): npm start's faulted invoice run, in the simulator's virtual
 * time (test/sim/demo-run.ts: the same handlers, runtime, faults and clients as on DynamoDB Local,
 * every wait virtual), records every AWS call each function makes (cli/local/aws-calls.ts), and
 * each distinct one is evaluated with
 * @cloud-copilot/iam-simulate against the synthesized stack: that function's role's identity
 * policies plus the resource policies (the documents bucket's, the Leases/Fences guard). Every
 * call the code makes must be allowed; every call the design forbids must be denied for every
 * role. Sufficiency, where cdk-nag and iam.test.ts check least privilege. The documents' prefix
 * is the workload's: a stack and a run with another one stay green, and a stack synthesized for
 * one prefix refuses a run with another, naming the call. The other prefix is a fork's: the
 * invoice workload registered once more, as `invoices-x` with documents under docs-x/ (the
 * stack only builds a registered workload, the one its functions load by name), by a mock of
 * the registry that adds the one line a fork adds. The same mock registers a throwaway workload
 * of a shape neither sample has (test/support/workloads/notices.ts: email only, no documents), and
 * the registry-wide checks run on it: against its own processor, its stack, and its simulated run's
 * calls and invariants.
 */
import { invoices } from '../../lib/workloads/invoices/index.js';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { Authorization } from '../../cli/local/aws-authorizations.js';
import { recordAwsCalls, type AwsCall } from '../../cli/local/aws-calls.js';
import { InvalidInputError } from '../../lib/protocol/index.js';
import { tableNames } from '../../lib/workflow/index.js';
import { INVOICE_DOCUMENTS_PREFIX, invoiceWorkload } from '../../lib/workloads/invoices/invoices.js';
import { simDemoRun } from '../sim/demo-run.js';
import { simulateOne } from '../sim/run.js';
import { StackIam, type FunctionRole, type TemplateJson } from './iam-eval.js';
import { buildApp, nagViolations, PROJECT_ROOT, templateOf, withoutCfnValidation } from './support.js';
import { WORKLOADS } from '../../lib/workloads/index.js';
import { describeAgainstProcessor } from '../support/workload-checks.js';
import { notices } from '../support/workloads/notices.js';

vi.mock('../../lib/workloads/index.js', async (importOriginal) => {
  const registry = await importOriginal<typeof import('../../lib/workloads/index.js')>();
  const { invoices } = await import('../../lib/workloads/invoices/index.js');
  const { invoiceWorkload: withPrefix } = await import('../../lib/workloads/invoices/invoices.js');
  const { notices } = await import('../support/workloads/notices.js');
  const fork = { ...invoices, name: 'invoices-x', processor: withPrefix('docs-x/') };
  const WORKLOADS = [...registry.WORKLOADS, fork, notices];
  const workloadNamed = (name: string) => WORKLOADS.find((w) => w.name === name) ?? registry.workloadNamed(name);
  const configuredWorkload = (setting: string, name: string | undefined) => WORKLOADS.find((w) => w.name === (name ?? registry.DEFAULT_WORKLOAD)) ?? registry.configuredWorkload(setting, name);
  return { ...registry, WORKLOADS, workloadNamed, configuredWorkload };
});

const OTHER_PREFIX = 'docs-x/';
/** The registered workload whose documents go under each prefix (the fork above for OTHER_PREFIX). */
const WORKLOAD_OF: Readonly<Record<string, string>> = { [INVOICE_DOCUMENTS_PREFIX]: 'invoices', [OTHER_PREFIX]: 'invoices-x' };

// One stack name for both: the IAM evaluation resolves AWS::StackName as FencedWorkflow.
const templateFor = (prefix: string): TemplateJson => templateOf({ workload: WORKLOAD_OF[prefix]!, stackName: 'FencedWorkflow' }).template.toJSON() as TemplateJson;

/** npm start's invoice run (faults, documents, outbox sends, reconciler, collector, recorder, sweeper), recorded with `stack`'s names, in virtual time. */
async function recordedRun(stack: StackIam, prefix: string, set: string): Promise<AwsCall[]> {
  const calls = recordAwsCalls(stack.arnNames());
  const { run, unsupported } = await simDemoRun(3, { tables: tableNames(`${set}-`), items: 20, workers: 2, seed: 3, set, calls, workload: { ...invoices, processor: invoiceWorkload(prefix) } });
  expect(unsupported).toEqual([]);
  expect(run.gaveUp).toBeUndefined();
  expect(run.effects.collected).toBeGreaterThan(0);
  return calls.records;
}

/** Distinct (action, resource, context) per function. */
const distinctPerFunction = (calls: readonly AwsCall[]): Record<string, number> => {
  const out: Record<string, Set<string>> = {};
  for (const c of calls) for (const a of c.authorizations) (out[c.fn] ??= new Set()).add(JSON.stringify(a));
  return Object.fromEntries(Object.entries(out).map(([fn, s]) => [fn, s.size]).sort());
};

/** The template with `action` removed from every statement of `fn`'s role (a grant someone dropped). */
function withoutGrant(template: TemplateJson, stack: StackIam, fn: string, action: string): TemplateJson {
  const copy = structuredClone(template);
  const roleId = stack.functions.get(fn)!.roleId;
  for (const r of Object.values(copy.Resources)) {
    if (r.Type !== 'AWS::IAM::Policy' || !JSON.stringify(r.Properties.Roles).includes(`"${roleId}"`)) continue;
    for (const s of r.Properties.PolicyDocument.Statement) s.Action = [s.Action].flat().filter((a: string) => a !== action);
    r.Properties.PolicyDocument.Statement = r.Properties.PolicyDocument.Statement.filter((s: { Action: string[] }) => s.Action.length > 0);
  }
  return copy;
}

let template: TemplateJson;
let stack: StackIam;
let calls: AwsCall[];
let otherTemplate: TemplateJson;
let otherStack: StackIam;
let otherCalls: AwsCall[];
let runMs: number;
beforeAll(async () => {
  template = templateFor(INVOICE_DOCUMENTS_PREFIX);
  stack = new StackIam(template);
  otherTemplate = templateFor(OTHER_PREFIX);
  otherStack = new StackIam(otherTemplate);
  const started = Date.now();
  // One after the other: the simulator runs one world per process.
  calls = await recordedRun(stack, INVOICE_DOCUMENTS_PREFIX, 'iam');
  otherCalls = await recordedRun(otherStack, OTHER_PREFIX, 'iam-other');
  runMs = Date.now() - started;
}, 120_000);

describe('every AWS call the functions make locally is allowed by their role and the resource policies', () => {
  it('every distinct (function, action, resource, context) of the run is Allowed', async () => {
    const started = Date.now();
    const { decisions, denied } = await stack.evaluate(calls);
    process.stdout.write(`IAM from the calls: ${calls.length} calls, ${decisions.length} distinct, ${decisions.length - denied.length} allowed (runs ${runMs} ms, evaluation ${Date.now() - started} ms); distinct per function ${JSON.stringify(distinctPerFunction(calls))}\n`);
    expect(denied).toEqual([]);
    // Every call named its resource as the stack does: no "*" fallback, no local document folder in an ARN.
    expect(calls.filter((c) => c.resources.some((r) => r === '*' || r.includes('/iam/')))).toEqual([]);
    // Each of the seven functions made calls: a function missing here would be proven of nothing.
    expect(Object.keys(distinctPerFunction(calls))).toEqual(['collector', 'reconciler', 'recorder', 'sender', 'starter', 'sweeper', 'worker']);
  });

  it('the records carry what the planner reads: ReturnConsumedCapacity INDEXES sent, the ConsumedCapacity kept, the input marshalled', () => {
    const dynamo = calls.filter((c) => c.service === 'dynamodb');
    expect(dynamo.every((c) => c.input.ReturnConsumedCapacity === 'INDEXES')).toBe(true);
    expect(dynamo.filter((c) => c.error === undefined).every((c) => c.consumed !== undefined)).toBe(true);
    // A committed one: a cancelled transaction (a fence refusal) answers an error, without the capacity.
    const transaction = dynamo.find((c) => c.action === 'TransactWriteItems' && c.error === undefined)!;
    expect(Array.isArray(transaction.consumed)).toBe(true);
    expect(JSON.stringify(transaction.input)).toMatch(/"pk":\{"S":/);
  });

  it.each([
    ['collector', 's3:DeleteObject'],
    ['collector', 'dynamodb:BatchGetItem'],
    ['worker', 'dynamodb:PutItem'],
    ['worker', 's3:PutObject'],
    ['sender', 'dynamodb:GetRecords'],
    ['sweeper', 'dynamodb:Query'],
    ['recorder', 'dynamodb:UpdateItem'],
    ['starter', 'sqs:SendMessage'],
    ['sender', 'ses:SendEmail'],
  ])('a grant removed from the stack fails, naming the function, the action and the resource: %s without %s', async (fn, action) => {
    const { denied } = await new StackIam(withoutGrant(template, stack, fn, action)).evaluate(calls);
    const resource = calls.find((c) => c.fn === fn && c.authorizations.some((a) => a.action === action))!.authorizations.find((a) => a.action === action)!.resource;
    expect(denied.length).toBeGreaterThan(0);
    expect(denied.every((d) => d.startsWith(`${fn}: ${action} on `) && d.endsWith(' is ImplicitlyDenied'))).toBe(true);
    expect(denied.some((d) => d.includes(` on ${resource}`))).toBe(true);
  });
});

describe('every call the design forbids is denied for every role, even one granted everything', () => {
  const ALLOW_ALL = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }] };
  const arnOf = (role: 'leases' | 'fences') => `arn:aws:dynamodb:eu-west-1:111122223333:table/${stack.tables[role]}`;
  const object = (prefix: string) => `arn:aws:s3:::${stack.documentsBucket}/${prefix}2026-10/cust-0000001/7.json`;
  /** What the design forbids, and the roles its rule exempts (guards.ts, external-effects.ts). */
  const forbidden = (): { what: string; auth: Authorization; except: string[] }[] => [
    ...['DeleteItem', 'PutItem', 'BatchWriteItem', 'PartiQLDelete', 'PartiQLInsert', 'PartiQLUpdate'].flatMap((a) =>
      (['leases', 'fences'] as const).map((t) => ({ what: `${a} on a ${t} item`, auth: { action: `dynamodb:${a}`, resource: arnOf(t), context: {} }, except: [] })),
    ),
    ...(['leases', 'fences'] as const).map((t) => ({ what: `UpdateItem on a ${t} counter (a reset)`, auth: { action: 'dynamodb:UpdateItem', resource: arnOf(t), context: {} }, except: ['worker'] })),
    { what: 'an overwrite of a document (PutObject without If-None-Match)', auth: { action: 's3:PutObject', resource: object(INVOICE_DOCUMENTS_PREFIX), context: {} }, except: [] },
    ...['s3:DeleteObject', 's3:DeleteObjectVersion'].map((a) => ({ what: `${a} of a document`, auth: { action: a, resource: object(INVOICE_DOCUMENTS_PREFIX), context: { 's3:if-match': '"e"' } }, except: ['collector'] })),
  ];

  it('DeleteItem/PutItem/PartiQL on Leases and Fences, a counter UpdateItem outside the guard\'s writers, an overwrite, a delete but the collector\'s: ExplicitlyDenied for every role', async () => {
    const roles: FunctionRole[] = [...stack.roles.values()].map((r) => ({ ...r, fn: [...stack.functions.values()].find((f) => f.roleId === r.roleId)?.fn ?? r.roleId }));
    // An administrator outside the stack: only the resource policies stand between it and the data.
    roles.push({ fn: 'administrator', roleId: 'Administrator', roleArn: 'arn:aws:iam::111122223333:role/Administrator', identityPolicies: [] });
    const allowed: string[] = [];
    let denied = 0;
    for (const f of forbidden()) {
      for (const role of roles.filter((r) => !f.except.includes(r.fn))) {
        for (const extra of [[], [ALLOW_ALL]]) {
          const result = await stack.decide(role, f.auth, extra);
          if (result === 'Allowed' || (extra.length > 0 && result !== 'ExplicitlyDenied')) allowed.push(`${role.fn}${extra.length ? ' (granted *)' : ''}: ${f.what} is ${result}`);
          else denied++;
        }
      }
    }
    process.stdout.write(`IAM forbidden calls: ${denied} denied of ${denied + allowed.length} (${roles.length} roles, each with its own policies and granted *)\n`);
    expect(allowed).toEqual([]);
  });

  it('a conditional put (If-None-Match) by the worker and a delete by the collector are what the same rules allow', async () => {
    const ctx = { 's3:if-none-match': '*' };
    expect(await stack.decide(stack.functions.get('worker')!, { action: 's3:PutObject', resource: object(INVOICE_DOCUMENTS_PREFIX), context: ctx })).toBe('Allowed');
    expect(await stack.decide(stack.functions.get('collector')!, { action: 's3:DeleteObject', resource: object(INVOICE_DOCUMENTS_PREFIX), context: { 's3:if-match': '"e"' } })).toBe('Allowed');
  });
});

describe("the documents' prefix is the workload's: one setting reaches the stack, the handlers and the local run", () => {
  it(`a stack and a run with ${OTHER_PREFIX}: every call allowed, and the template names no other folder`, async () => {
    const { decisions, denied } = await otherStack.evaluate(otherCalls);
    expect(denied).toEqual([]);
    expect(decisions.some((d) => d.auth.action === 's3:PutObject' && d.auth.resource.includes(`/${OTHER_PREFIX}`))).toBe(true);
    expect(JSON.stringify(otherTemplate)).not.toContain(INVOICE_DOCUMENTS_PREFIX);
    expect(JSON.stringify(otherTemplate)).toContain(OTHER_PREFIX);
  });

  it(`a stack synthesized for ${INVOICE_DOCUMENTS_PREFIX} refuses the run with ${OTHER_PREFIX}: the worker's put and the collector's listing, named`, async () => {
    const { denied } = await stack.evaluate(otherCalls);
    const bucket = `arn:aws:s3:::${stack.documentsBucket}`;
    expect(denied).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^worker: s3:PutObject on ${bucket}/${OTHER_PREFIX}2026-\\d\\d/cust-\\d{7}/\\d+\\.json \\{"s3:if-none-match":"\\*"\\} is ImplicitlyDenied$`)),
        `collector: s3:ListBucket on ${bucket} {"s3:prefix":"${OTHER_PREFIX}"} is ImplicitlyDenied`,
      ]),
    );
  });

  it('a prefix that is not one folder ending in "/" is refused where the workload is built (a grant on `docs*` would match `docs-old/`)', () => {
    for (const bad of ['docs', 'a/b/', '/docs/', 'Docs/', '']) expect(() => invoiceWorkload(bad), bad).toThrow(InvalidInputError);
  });

  it('infra/ and functions/ never name the folder: they take it from the workload descriptor', () => {
    const files = (dir: string): string[] => readdirSync(join(PROJECT_ROOT, dir), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => join(dir, f));
    const naming = [...files('infra'), ...files('functions')].filter((f) => readFileSync(join(PROJECT_ROOT, f), 'utf8').includes(INVOICE_DOCUMENTS_PREFIX));
    expect(naming).toEqual([]);
  });
});

describe('a registered workload of a shape neither sample has (email only, no documents): the registry-wide checks', () => {
  describe('against its own processor', () => describeAgainstProcessor(notices));

  it('is registered beside the samples, and its stack synthesizes with only its name: no bucket, no collector, no http target, zero compliance findings', () => {
    expect(WORKLOADS.map((w) => w.name)).toContain(notices.name);
    const { app, stack, outdir } = buildApp({ nag: true, workload: notices.name });
    expect(withoutCfnValidation(() => nagViolations(app, outdir))).toEqual([]);
    expect(stack.workflow.effects.collector).toBeUndefined();
    expect(stack.workflow.effects.recorder).toBeDefined();
    const types = Object.values((templateOf({ workload: notices.name }).template.toJSON() as TemplateJson).Resources).map((r) => r.Type);
    expect(types).not.toContain('AWS::S3::Bucket');
  });

  it("its simulated local run passes every invariant, and every call its functions made is allowed by its own stack's roles", async () => {
    const noticeStack = new StackIam(templateOf({ workload: notices.name, stackName: 'FencedWorkflow' }).template.toJSON() as TemplateJson);
    const recorded = recordAwsCalls(noticeStack.arnNames());
    const { run, unsupported } = await simDemoRun(5, { tables: tableNames('notices-'), items: 20, workers: 2, seed: 5, set: 'notices', calls: recorded, workload: notices });
    expect(unsupported).toEqual([]);
    expect(run.gaveUp).toBeUndefined();
    expect(Object.entries(run.invariants.invariants).filter(([, r]) => !r.ok)).toEqual([]);
    expect(run.invariants.stats.effects.emails.sent).toBeGreaterThan(0);
    const { denied } = await noticeStack.evaluate(recorded.records);
    expect(denied).toEqual([]);
    expect(recorded.records.filter((c) => c.service === 's3')).toEqual([]);
  }, 60_000);
});

describe('a workload whose steps follow a hard bounce: the recorder creates their follow-ups, and its role allows exactly that', () => {
  const bouncing = WORKLOADS.filter((w) => (w.steps ?? []).some((s) => s.on === 'bounced'));
  it.each(bouncing.map((w) => [w.name, w] as const))("%s: a simulated chaos schedule with hard bounces; every call allowed by its own stack, the recorder's put of a follow-up among them, denied without the grant", async (_name, w) => {
    const template = templateOf({ workload: w.name, stackName: 'FencedWorkflow' }).template.toJSON() as TemplateJson;
    const own = new StackIam(template);
    const recorded = recordAwsCalls(own.arnNames());
    const sim = await simulateOne(11, 'fenced', { shape: 'small', workload: w, calls: recorded });
    expect(sim.unsupported).toEqual([]);
    const puts = recorded.records.filter((c) => c.fn === 'recorder' && c.authorizations.some((a) => a.action === 'dynamodb:PutItem'));
    expect(puts.length).toBeGreaterThan(0);
    expect((await own.evaluate(recorded.records)).denied).toEqual([]);
    const { denied } = await new StackIam(withoutGrant(template, own, 'recorder', 'dynamodb:PutItem')).evaluate(recorded.records);
    expect(denied.length).toBeGreaterThan(0);
    expect(denied.every((d) => d.startsWith('recorder: dynamodb:PutItem on '))).toBe(true);
  }, 60_000);
});
