/**
 * The deployable artifact: synthesize WITH bundling (esbuild, no Docker), take the bundled
 * functions out of the cloud assembly, and run the worker the way Lambda does: a fresh Node
 * process imports `index.mjs` from a directory with nothing else in it and calls `handler`
 * with a real SQS event, against DynamoDB Local.
 */
import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { builtinModules } from 'node:module';
import { cpSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { startS3Endpoint, type S3Endpoint } from '../../cli/s3-endpoint.js';
import { s3Client } from '../../lib/workflow/adapters/index.js';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { buildSync } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FencedWorkflow } from '../../infra/constructs/fenced-workflow.js';
import { systemClock } from '../../lib/protocol/index.js';
import { createJob, ENV, fenceKeyOf, leaseKeyOf } from '../../lib/workflow/index.js';
import { expectedTotals, invoiceJobId, invoiceProcessor, type InvoiceRunInput } from '../../lib/workloads/invoices.js';
import { getItem, scanAll } from '../support/fixtures.js';
import { makeTables, type TestTables } from '../support/tables.js';
import { buildApp, logicalId, tempDir, withoutCfnValidation } from './support.js';

const run = promisify(execFile);
const FUNCTIONS = ['worker', 'sweeper', 'starter'] as const;

let workflow: FencedWorkflow;
let assetDirs: Record<(typeof FUNCTIONS)[number], string>;

beforeAll(() => {
  const { app, stack, outdir } = buildApp({ bundle: true });
  const assembly = withoutCfnValidation(() => app.synth());
  const template = assembly.getStackByName(stack.stackName).template as { Resources: Record<string, { Properties: { Code: { S3Key: string } } }> };
  workflow = stack.workflow;
  assetDirs = Object.fromEntries(
    FUNCTIONS.map((f) => {
      const key = template.Resources[logicalId(workflow[f].fn)]!.Properties.Code.S3Key; // <hash>.zip
      return [f, join(outdir, `asset.${key.replace(/\.zip$/, '')}`)];
    }),
  ) as typeof assetDirs;
}, 120_000);

/** Every module a bundle still imports or requires at run time, as esbuild's parser sees them (not a text search). */
function runtimeImports(file: string): string[] {
  const { metafile } = buildSync({ entryPoints: [file], bundle: true, platform: 'node', format: 'esm', write: false, metafile: true, logLevel: 'silent' });
  return [...new Set(Object.values(metafile.inputs).flatMap((i) => i.imports.filter((x) => x.external).map((x) => x.path)))];
}

describe('the bundles', () => {
  it.each(FUNCTIONS)('%s: one minified ESM file that imports nothing but Node built-ins (the AWS SDK is inside)', (f) => {
    expect(readdirSync(assetDirs[f])).toEqual(['index.mjs']);
    const code = readFileSync(join(assetDirs[f], 'index.mjs'), 'utf8');
    expect(code.startsWith("import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);")).toBe(true);
    const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
    expect(runtimeImports(join(assetDirs[f], 'index.mjs')).filter((s) => !builtins.has(s))).toEqual([]);
    // Minified: a handful of very long lines, not one line per statement.
    expect(code.split('\n').length).toBeLessThan(200);
    // keepNames: error classes keep the names callers match on.
    expect(code).toContain('"ConditionalCheckFailedException"');
    const kb = statSync(join(assetDirs[f], 'index.mjs')).size / 1024;
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

    // Lambda's layout: the function's directory and nothing else (no node_modules to fall back on).
    const taskRoot = tempDir('fenced-task-');
    cpSync(assetDirs.worker, taskRoot, { recursive: true });
    const event: SQSEvent = { Records: [record('m-1', JSON.stringify({ jobId })), record('m-2', '{"jobId": "not a job id"}')] };
    const resultFile = join(taskRoot, 'result.json');
    // The X-Ray daemon's side of Lambda: the SDK sends each finished (sub)segment as a UDP datagram.
    const daemon = createSocket('udp4');
    const datagrams: string[] = [];
    daemon.on('message', (m) => datagrams.push(m.toString('utf8')));
    await new Promise<void>((r) => daemon.bind(0, '127.0.0.1', () => r()));
    const daemonPort = (daemon.address() as { port: number }).port;
    const bootstrap = [
      `const { handler } = await import(${JSON.stringify(pathToFileURL(join(taskRoot, 'index.mjs')).href)});`,
      `const context = { awsRequestId: 'req-1', functionName: 'Worker', functionVersion: '$LATEST', memoryLimitInMB: '512', invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:Worker', getRemainingTimeInMillis: () => 60_000 };`,
      `const result = await handler(JSON.parse(process.env.TEST_EVENT), context);`,
      `(await import('node:fs')).writeFileSync(process.env.TEST_RESULT, JSON.stringify(result));`,
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', bootstrap], {
      cwd: taskRoot,
      timeout: 30_000,
      env: {
        PATH: process.env.PATH ?? '',
        LAMBDA_TASK_ROOT: taskRoot,
        _HANDLER: 'index.handler',
        AWS_REGION: 'us-east-1',
        AWS_LAMBDA_FUNCTION_NAME: 'Worker',
        AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
        AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
        _X_AMZN_TRACE_ID: 'Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1',
        AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemonPort}`,
        AWS_XRAY_CONTEXT_MISSING: 'LOG_ERROR',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        [ENV.dynamoEndpoint]: t.endpoint,
        [ENV.leasesTable]: t.names.leases,
        [ENV.fencesTable]: t.names.fences,
        [ENV.jobsTable]: t.names.jobs,
        [ENV.invoicesTable]: t.names.invoices,
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
        TEST_EVENT: JSON.stringify(event),
        TEST_RESULT: resultFile,
      },
    });

    expect(JSON.parse(readFileSync(resultFile, 'utf8'))).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-2' }] });

    const lease = await getItem(t, t.names.leases, leaseKeyOf(jobId));
    const generation = lease?.generation as number;
    expect(generation).toBe(1); // epoch 0, first token
    expect(lease?.owner).toBeUndefined(); // released
    expect((await getItem(t, t.names.fences, fenceKeyOf(jobId)))?.generation).toBe(generation);
    expect(await getItem(t, t.names.jobs, jobId)).toEqual(expect.objectContaining({ status: 'DONE', cursor: 3, generation }));

    const items = (await scanAll(t, t.names.invoices)).filter((i) => i.jobId === jobId);
    const invoices = items.filter((i) => String(i.pk).startsWith(`invoice#${input.period}#`));
    const charges = items.filter((i) => String(i.pk).startsWith(`charge#${input.period}#`));
    const totals = expectedTotals(input);
    expect(invoices.length).toBe(totals.invoices);
    expect(charges.length).toBe(totals.charges);
    expect(charges.reduce((s, i) => s + Number(i.amountCents), 0)).toBe(totals.totalCents);
    for (const i of items) expect(i.generation).toBe(generation);

    // Powertools wrote CloudWatch EMF to stdout: three committed units, one lease acquired.
    const emf = stdout
      .split('\n')
      .filter((l) => l.startsWith('{') && l.includes('"_aws"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const sum = (name: string) => emf.reduce((s, m) => s + (typeof m[name] === 'number' ? (m[name] as number) : Array.isArray(m[name]) ? (m[name] as number[]).reduce((a, b) => a + b, 0) : 0), 0);
    expect(sum('UnitsCommitted')).toBe(3);
    expect(sum('LeaseAcquired')).toBe(1);
    expect(emf.every((m) => m.service === 'worker')).toBe(true);
    // The cold-start metric, once (Powertools logMetrics).
    expect(sum('ColdStart')).toBe(1);

    // Log lines carry the invocation's context (Powertools injectLambdaContext).
    const logs = stdout
      .split('\n')
      .filter((l) => l.startsWith('{') && !l.includes('"_aws"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
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
