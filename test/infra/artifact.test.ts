/**
 * The deployable artifact: synthesize WITH bundling (esbuild, no Docker), take the bundled
 * functions out of the cloud assembly, and run them the way Lambda does (lambda-run.ts): the
 * worker with a real SQS event against DynamoDB Local and the local S3 endpoint; the sender with
 * the Outbox stream's own records; the recorder, the reconciler and the collector with their
 * events; the providers real local servers (SES through the local SES v2 endpoint to the SMTP
 * sink, the payment provider).
 */
import { createSocket } from 'node:dgram';
import { builtinModules } from 'node:module';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { startS3Endpoint, type S3Endpoint } from '../../cli/local/s3-endpoint.js';
import { s3Client } from '../../lib/workflow/adapters/index.js';
import { join } from 'node:path';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { buildSync } from 'esbuild';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FencedWorkflow } from '../../infra/constructs/fenced-workflow.js';
import { systemClock } from '../../lib/protocol/index.js';
import { createJob, ENV, fenceKeyOf, leaseKeyOf } from '../../lib/workflow/index.js';
import { expectedTotals, invoiceJobId, invoiceProcessor, type InvoiceRunInput } from '../../lib/workloads/invoices/invoices.js';
import { getItem, scanAll } from '../support/fixtures.js';
import { makeTables, type TestTables } from '../support/tables.js';
import { describeEffectBundles, type Bundles } from './artifact-effects.js';
import { metricSum, runBundle } from './lambda-run.js';
import type { AwsCall } from '../../cli/local/aws-calls.js';
import { StackIam, type TemplateJson } from './iam-eval.js';
import { callsFromWire, type WireRequest } from './wire-calls.js';
import { buildApp, logicalId, withoutCfnValidation } from './support.js';

const FUNCTIONS = ['worker', 'sweeper', 'starter', 'sender', 'reconciler', 'recorder', 'collector'] as const;

type FunctionName = (typeof FUNCTIONS)[number];
let workflow: FencedWorkflow;
let bundles: Bundles<FunctionName>;

beforeAll(() => {
  const { app, stack, outdir } = buildApp({ bundle: true });
  const assembly = withoutCfnValidation(() => app.synth());
  const template = assembly.getStackByName(stack.stackName).template as Bundles['template'];
  workflow = stack.workflow;
  const fnOf = (f: FunctionName) => (f === 'worker' || f === 'sweeper' || f === 'starter' ? workflow[f] : workflow.effects[f]).fn;
  const fns = Object.fromEntries(FUNCTIONS.map((f) => [f, fnOf(f) as IConstruct])) as Bundles<FunctionName>['fns'];
  const assetDirs = Object.fromEntries(
    FUNCTIONS.map((f) => {
      const key = template.Resources[logicalId(fns[f])]!.Properties!.Code!.S3Key!; // <hash>.zip
      return [f, join(outdir, `asset.${key.replace(/\.zip$/, '')}`)];
    }),
  ) as Bundles<FunctionName>['assetDirs'];
  bundles = { template, fns, assetDirs };
  stackIam = new StackIam(template as unknown as TemplateJson);
}, 120_000);

/** Every AWS call the bundles made in this file's runs, for the evaluation at the end. */
const bundledCalls: AwsCall[] = [];
let stackIam: StackIam;
const keepCalls = (fn: string, wire: readonly WireRequest[], s3Url: string) => bundledCalls.push(...callsFromWire(fn, wire, stackIam.arnNames(), new URL(s3Url).host));

/** Every module a bundle still imports or requires at run time, as esbuild's parser sees them (not a text search). */
function runtimeImports(file: string): string[] {
  const { metafile } = buildSync({ entryPoints: [file], bundle: true, platform: 'node', format: 'esm', write: false, metafile: true, logLevel: 'silent' });
  return [...new Set(Object.values(metafile.inputs).flatMap((i) => i.imports.filter((x) => x.external).map((x) => x.path)))];
}

describe('the bundles', () => {
  it.each(FUNCTIONS)('%s: one minified ESM file that imports nothing but Node built-ins (the AWS SDK is inside)', (f) => {
    expect(readdirSync(bundles.assetDirs[f])).toEqual(['index.mjs']);
    const code = readFileSync(join(bundles.assetDirs[f], 'index.mjs'), 'utf8');
    expect(code.startsWith("import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);")).toBe(true);
    const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
    expect(runtimeImports(join(bundles.assetDirs[f], 'index.mjs')).filter((s) => !builtins.has(s))).toEqual([]);
    // Minified: a handful of very long lines, not one line per statement.
    expect(code.split('\n').length).toBeLessThan(200);
    // keepNames: error classes keep the names callers match on.
    expect(code).toContain('"ConditionalCheckFailedException"');
    const kb = statSync(join(bundles.assetDirs[f], 'index.mjs')).size / 1024;
    expect(kb).toBeLessThan(2048);
    console.info(`bundle ${f}: ${kb.toFixed(0)} KB`);
  });
});

describe('the bundled worker runs like Lambda runs it', () => {
  let t: TestTables;
  let s3: S3Endpoint;
  beforeAll(async () => {
    t = await makeTables(import.meta.filename);
    s3 = await startS3Endpoint();
    const client = s3Client({ endpoint: s3.url });
    await client.send(new CreateBucketCommand({ Bucket: 'documents' }));
    client.destroy();
  });
  afterAll(async () => s3.close());

  const record = (messageId: string, body: string): SQSRecord => ({
    messageId,
    receiptHandle: `rh-${messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: '0',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:FencedWorkflow-WorkQueue',
    awsRegion: 'us-east-1',
  });

  it('commits every unit of a job under one fenced generation and reports only the malformed record as a batch item failure', async () => {
    const input: InvoiceRunInput = { period: '2026-01', customers: 25, seed: 42, unitSize: 10, currency: 'EUR' };
    const jobId = `${invoiceJobId(input.period)}-${t.prefix}`.replace(/[^A-Za-z0-9#:._-]/g, '');
    const { job } = await createJob(t.dynamo.doc, t.names.jobs, { id: jobId, totalUnits: invoiceProcessor.totalUnits(input), input: { ...input } }, systemClock);
    expect(job.totalUnits).toBe(3);

    const event: SQSEvent = { Records: [record('m-1', JSON.stringify({ jobId })), record('m-2', '{"jobId": "not a job id"}')] };
    // The X-Ray daemon's side of Lambda: the SDK sends each finished (sub)segment as a UDP datagram.
    const daemon = createSocket('udp4');
    const datagrams: string[] = [];
    daemon.on('message', (m) => datagrams.push(m.toString('utf8')));
    await new Promise<void>((r) => daemon.bind(0, '127.0.0.1', () => r()));
    const daemonPort = (daemon.address() as { port: number }).port;
    const { results, logs, emf, wire } = await runBundle(bundles.assetDirs.worker, {
      functionName: 'Worker',
      events: [event],
      env: {
        _X_AMZN_TRACE_ID: 'Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1',
        AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemonPort}`,
        AWS_XRAY_CONTEXT_MISSING: 'LOG_ERROR',
        [ENV.dynamoEndpoint]: t.endpoint,
        [ENV.leasesTable]: t.names.leases,
        [ENV.fencesTable]: t.names.fences,
        [ENV.jobsTable]: t.names.jobs,
        [ENV.recordsTable]: t.names.records,
        [ENV.outboxTable]: t.names.outbox,
        [ENV.documentsBucket]: 'documents',
        [ENV.s3Endpoint]: s3.url,
        // Nothing listens here: a small job needs no continuation, so the worker never sends.
        [ENV.queueUrl]: 'http://127.0.0.1:9/000000000000/unused',
        [ENV.epoch]: '0',
        [ENV.leaseDurationMs]: '30000',
        [ENV.unitSize]: '10',
        POWERTOOLS_SERVICE_NAME: 'worker',
        POWERTOOLS_METRICS_NAMESPACE: 'FencedWorkflow',
      },
    });
    keepCalls('worker', wire, s3.url);

    expect(results).toEqual([{ batchItemFailures: [{ itemIdentifier: 'm-2' }] }]);

    const lease = await getItem(t, t.names.leases, leaseKeyOf(jobId));
    const generation = lease?.generation as number;
    expect(generation).toBe(1); // epoch 0, first token
    expect(lease?.owner).toBeUndefined(); // released
    expect((await getItem(t, t.names.fences, fenceKeyOf(jobId)))?.generation).toBe(generation);
    expect(await getItem(t, t.names.jobs, jobId)).toEqual(expect.objectContaining({ status: 'DONE', cursor: 3, generation }));

    const items = (await scanAll(t, t.names.records)).filter((i) => i.jobId === jobId);
    const invoices = items.filter((i) => String(i.pk).startsWith(`invoice#${input.period}#`));
    const charges = items.filter((i) => String(i.pk).startsWith(`charge#${input.period}#`));
    const totals = expectedTotals(input);
    expect(invoices.length).toBe(totals.invoices);
    expect(charges.length).toBe(totals.charges);
    expect(charges.reduce((s, i) => s + Number(i.amountCents), 0)).toBe(totals.totalCents);
    for (const i of items) expect(i.generation).toBe(generation);

    // Powertools wrote CloudWatch EMF to stdout: three committed units, one lease acquired.
    expect(metricSum(emf, 'UnitsCommitted')).toBe(3);
    expect(metricSum(emf, 'LeaseAcquired')).toBe(1);
    expect(emf.every((m) => m.service === 'worker')).toBe(true);
    // The cold-start metric, once (Powertools logMetrics).
    expect(metricSum(emf, 'ColdStart')).toBe(1);

    // Log lines carry the invocation's context (Powertools injectLambdaContext).
    const done = logs.filter((l) => l.message === 'record-done');
    expect(done).toEqual([expect.objectContaining({ function_request_id: 'req-1', cold_start: true, function_name: 'Worker', jobId })]);

    // X-Ray sees the DynamoDB calls (Powertools Tracer captures the SDK clients), not only the Lambda segment.
    await new Promise((r) => setTimeout(r, 200));
    daemon.close();
    const segments = datagrams.map((d) => JSON.parse(d.slice(d.indexOf('\n') + 1)) as { name: string; aws?: { operation?: string }; trace_id: string });
    expect(new Set(segments.map((x) => x.trace_id))).toEqual(new Set(['1-67891233-abcdef012345678912345678']));
    const operations = new Set(segments.filter((x) => x.name === 'DynamoDB').map((x) => x.aws?.operation));
    expect(operations).toEqual(new Set(['UpdateItem', 'GetItem', 'TransactWriteItems']));
    expect(segments.some((x) => x.name === '## index.handler')).toBe(true);
  });
});

describeEffectBundles(() => bundles, keepCalls);

// Last in the file: the runs above are done (vitest runs a file's tests in order).
describe('IAM from the bundled calls', () => {
  it("every AWS call the bundled functions sent is allowed by the stack's roles and resource policies (the same evaluation as test/infra/iam-calls.test.ts, the calls read off the wire)", async () => {
    const { decisions, denied } = await stackIam.evaluate(bundledCalls);
    process.stdout.write(`IAM from the bundled calls: ${bundledCalls.length} calls, ${decisions.length} distinct, ${decisions.length - denied.length} allowed\n`);
    expect(denied).toEqual([]);
    expect([...new Set(bundledCalls.map((c) => c.fn))].sort()).toEqual(['collector', 'reconciler', 'recorder', 'sender', 'worker']);
    const actions = [...new Set(bundledCalls.flatMap((c) => c.authorizations.map((x) => `${c.fn} ${x.action}`)))].sort();
    process.stdout.write(`${actions.join(', ')}\n`);
    // The SDK paths only the bundles take: SES v2 through its client, the S3 conditional put and delete.
    expect(actions).toEqual(expect.arrayContaining(['sender ses:SendEmail', 'worker s3:PutObject', 'worker dynamodb:PutItem', 'collector s3:DeleteObject', 'recorder dynamodb:UpdateItem']));
  });
});
