// tier: full
/**
 * The deployable artifact, for EVERY registered workload (lib/workloads/index.ts): synthesize its
 * stack WITH bundling (esbuild, no Docker, one synth per workload), take the bundled functions out
 * of the cloud assembly, and run them the way Lambda does (lambda-run.ts), each with the
 * environment its synthesized template gives it (WORKLOAD, UNIT_SIZE, the tables...), each
 * resource reference replaced by its local counterpart. For each workload: the worker with a real
 * SQS event against DynamoDB Local and the local S3 endpoint, checked against what the workload's
 * own checks say a finished job must have written; then the sender with the Outbox stream's own
 * INSERT records of that job, every item through its provider (SES through the local SES v2
 * endpoint to the SMTP sink; each http target a local stand-in, at the item's own destination);
 * then the collector, for a workload that writes documents, over the job's folder.
 * For the invoice workload, the sender's, recorder's, reconciler's and collector's flows of
 * artifact-effects.ts too. Last, per workload, every AWS call its bundles sent is evaluated
 * against that stack's IAM.
 */
import { createSocket } from 'node:dgram';
import { builtinModules } from 'node:module';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { startS3Endpoint, type S3Endpoint } from '../../cli/local/s3-endpoint.js';
import { startSmtpSink, type SmtpSink } from '../../cli/local/smtp-sink.js';
import { readStreamRecords, streamsClient } from '../../cli/local/streams.js';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { S3ObjectStore, s3Client } from '../../lib/workflow/adapters/index.js';
import { join } from 'node:path';
import type { DynamoDBRecord, DynamoDBStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { buildSync } from 'esbuild';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FencedWorkflow } from '../../infra/constructs/fenced-workflow.js';
import { systemClock, type Generation } from '../../lib/protocol/index.js';
import { createJob, ENV, fenceKeyOf, httpTargetEnv, leaseKeyOf, messageIdentity, readOutboxItem, unitSizeCap, type Workload } from '../../lib/workflow/index.js';
import { WORKLOADS } from '../../lib/workloads/index.js';
import { getItem, scanAll } from '../support/fixtures.js';
import { startSesEndpoint, type SesEndpoint } from '../support/ses-endpoint.js';
import { makeTables, type TestTables } from '../support/tables.js';
import { describeEffectBundles, type Bundles } from './artifact-effects.js';
import { startHttpStandIn, type HttpStandIn } from './http-stand-in.js';
import { lambdaEnvironment, metricSum, runBundle, type BundleRun } from './lambda-run.js';
import type { AwsCall } from '../../cli/local/aws-calls.js';
import { StackIam, type TemplateJson } from './iam-eval.js';
import { callsFromWire, type WireRequest } from './wire-calls.js';
import { buildApp, logicalId, withoutCfnValidation } from './support.js';

/** `it` when the case applies to the workload under test; otherwise the case is not registered at all. */
const onlyIf = (applies: boolean): typeof it => (applies ? it : ((() => undefined) as unknown as typeof it));

const FUNCTIONS = ['worker', 'sweeper', 'starter', 'sender', 'reconciler', 'recorder', 'collector'] as const;
type FunctionName = (typeof FUNCTIONS)[number];

/** The functions a workload's stack has: the recorder only for email, the collector only for documents. */
const functionsOf = (w: Workload<any>): FunctionName[] =>
  FUNCTIONS.filter((f) => (f === 'recorder' ? w.outbox.email : f === 'collector' ? w.processor.documents !== undefined : true));

/** The flows of the invoice workload's effect functions beyond worker and sender (artifact-effects.ts). */
const EFFECT_FLOWS: Readonly<Record<string, typeof describeEffectBundles>> = { invoices: describeEffectBundles };

interface Synthesized {
  workflow: FencedWorkflow;
  bundles: Bundles<FunctionName>;
  stackIam: StackIam;
}

/** The workload's stack, synthesized with bundling: each function's construct and its bundle's directory. */
function synthesize(w: Workload<any>): Synthesized {
  const { app, stack, outdir } = buildApp({ bundle: true, workload: w.name });
  const assembly = withoutCfnValidation(() => app.synth());
  const template = assembly.getStackByName(stack.stackName).template as Bundles['template'];
  const workflow = stack.workflow;
  const fnOf = (f: FunctionName): IConstruct => {
    const fn = f === 'worker' || f === 'sweeper' || f === 'starter' ? workflow[f] : workflow.effects[f];
    if (fn === undefined) throw new TypeError(`the ${w.name} stack has no ${f}`);
    return fn.fn;
  };
  const names = functionsOf(w);
  const fns = Object.fromEntries(names.map((f) => [f, fnOf(f)])) as Bundles<FunctionName>['fns'];
  const assetDirs = Object.fromEntries(
    names.map((f) => {
      const key = template.Resources[logicalId(fns[f])]!.Properties!.Code!.S3Key!; // <hash>.zip
      return [f, join(outdir, `asset.${key.replace(/\.zip$/, '')}`)];
    }),
  ) as Bundles<FunctionName>['assetDirs'];
  return { workflow, bundles: { template, fns, assetDirs }, stackIam: new StackIam(template as unknown as TemplateJson) };
}

/** Every module a bundle still imports or requires at run time, as esbuild's parser sees them (not a text search). */
function runtimeImports(file: string): string[] {
  const { metafile } = buildSync({ entryPoints: [file], bundle: true, platform: 'node', format: 'esm', write: false, metafile: true, logLevel: 'silent' });
  return [...new Set(Object.values(metafile.inputs).flatMap((i) => i.imports.filter((x) => x.external).map((x) => x.path)))];
}

const sqsRecord = (messageId: string, body: string): SQSRecord => ({
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

/** The X-Ray daemon's side of Lambda: the SDK sends each finished (sub)segment as a UDP datagram. */
async function xrayDaemon(): Promise<{ port: number; segments: () => Promise<{ name: string; aws?: { operation?: string }; trace_id: string }[]> }> {
  const daemon = createSocket('udp4');
  const datagrams: string[] = [];
  daemon.on('message', (m) => datagrams.push(m.toString('utf8')));
  await new Promise<void>((r) => daemon.bind(0, '127.0.0.1', () => r()));
  return {
    port: (daemon.address() as { port: number }).port,
    segments: async () => {
      await new Promise((r) => setTimeout(r, 200));
      daemon.close();
      return datagrams.map((d) => JSON.parse(d.slice(d.indexOf('\n') + 1)) as { name: string; aws?: { operation?: string }; trace_id: string });
    },
  };
}

const BUCKET = 'documents';
const CONFIGURATION_SET = 'fenced-workflow-local';
/** A small run: three units of a few items, inside every workload's unit-size cap. */
const ITEMS = 12;

/** The stream records as Lambda's event source mapping hands them to the sender (its ARN on each, creation time in seconds). */
function streamEvent(raw: readonly { streamArn: string; record: { dynamodb?: { ApproximateCreationDateTime?: unknown } } }[]): DynamoDBStreamEvent {
  const seconds = (d: unknown) => (d instanceof Date ? Math.floor(d.getTime() / 1000) : d);
  const Records = raw.map(({ streamArn, record }) => ({ ...record, eventSourceARN: streamArn, dynamodb: { ...record.dynamodb, ApproximateCreationDateTime: seconds(record.dynamodb?.ApproximateCreationDateTime) } }));
  return { Records: Records as unknown as DynamoDBRecord[] };
}
const UNIT_SIZE = 5;

describe.each(WORKLOADS.map((w) => [w.name, w] as const))('workload %s: the bundled artifact', (name, workload) => {
  let s: Synthesized;
  /** Every AWS call this workload's bundles made in this file's runs, for the evaluation at the end. */
  const bundledCalls: AwsCall[] = [];
  const keepCalls = (fn: string, wire: readonly WireRequest[], s3Url: string) => bundledCalls.push(...callsFromWire(fn, wire, s.stackIam.arnNames(), new URL(s3Url).host));

  beforeAll(() => {
    s = synthesize(workload);
  }, 180_000);

  describe('the bundles', () => {
    it.each(functionsOf(workload))('%s: one minified ESM file that imports nothing but Node built-ins (the AWS SDK is inside)', (f) => {
      const dir = s.bundles.assetDirs[f];
      expect(readdirSync(dir)).toEqual(['index.mjs']);
      const code = readFileSync(join(dir, 'index.mjs'), 'utf8');
      expect(code.startsWith("import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);")).toBe(true);
      const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
      expect(runtimeImports(join(dir, 'index.mjs')).filter((x) => !builtins.has(x))).toEqual([]);
      // Minified: a handful of very long lines, not one line per statement.
      expect(code.split('\n').length).toBeLessThan(200);
      // keepNames: error classes keep the names callers match on.
      expect(code).toContain('"ConditionalCheckFailedException"');
      const kb = statSync(join(dir, 'index.mjs')).size / 1024;
      expect(kb).toBeLessThan(2048);
      console.info(`bundle ${name} ${f}: ${kb.toFixed(0)} KB`);
    });

    it(`has exactly the functions the workload's effects need: ${functionsOf(workload).join(', ')}`, () => {
      const present = (['recorder', 'collector'] as const).filter((f) => s.workflow.effects[f] !== undefined);
      expect(present).toEqual(functionsOf(workload).filter((f) => f === 'recorder' || f === 'collector'));
    });
  });

  describe('the bundled worker, then the bundled sender, run like Lambda runs them, with the environment the template gives them', () => {
    let t: TestTables;
    let s3: S3Endpoint;
    let http: HttpStandIn;
    let sink: SmtpSink | undefined;
    let ses: SesEndpoint | undefined;
    let streams: DynamoDBStreamsClient;
    let jobId: string;
    let input: Record<string, unknown>;
    beforeAll(async () => {
      [t, s3, http] = await Promise.all([makeTables(import.meta.filename), startS3Endpoint(), startHttpStandIn()]);
      if (workload.outbox.email) {
        sink = await startSmtpSink();
        ses = await startSesEndpoint(sink);
      }
      streams = streamsClient(t.endpoint);
      const client = s3Client({ endpoint: s3.url });
      await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
      client.destroy();
    });
    afterAll(async () => {
      streams.destroy();
      await Promise.all([s3.close(), http.close(), sink?.close(), ses?.close()]);
    });

    /** Each http target's endpoint: its own folder on the stand-in, so a request's path shows which target and which destination. */
    const endpointOf = (target: string) => `${http.url}/${target}`;
    /** The template's environment of `f`, every resource it names replaced by the local one, plus the local endpoints. */
    const invoke = async (f: FunctionName, functionName: string, events: readonly unknown[], extra: Record<string, string> = {}): Promise<BundleRun> => {
      const n = t.names;
      const local = { [ENV.leasesTable]: n.leases, [ENV.fencesTable]: n.fences, [ENV.jobsTable]: n.jobs, [ENV.recordsTable]: n.records, [ENV.outboxTable]: n.outbox, [ENV.documentsBucket]: BUCKET, [ENV.sesConfigurationSet]: CONFIGURATION_SET, [ENV.queueUrl]: 'http://127.0.0.1:9/000000000000/unused' };
      const endpoints = {
        [ENV.dynamoEndpoint]: t.endpoint,
        [ENV.s3Endpoint]: s3.url,
        ...Object.fromEntries(workload.outbox.http.map((h) => [httpTargetEnv(h.target).url, endpointOf(h.target)])),
        ...(ses === undefined ? {} : { AWS_ENDPOINT_URL_SESV2: ses.url }),
        ...extra,
      };
      const env = lambdaEnvironment(s.bundles.template, s.bundles.fns[f], local, endpoints);
      const run = await runBundle(s.bundles.assetDirs[f], { functionName, events, env });
      keepCalls(f, run.wire, s3.url);
      return run;
    };

    it(`the template gives every function WORKLOAD=${name}, and the worker a unit size within the workload's cap (${unitSizeCap(workload)})`, () => {
      for (const f of functionsOf(workload)) {
        const vars = s.bundles.template.Resources[logicalId(s.bundles.fns[f])]!.Properties!.Environment!.Variables!;
        expect(vars.WORKLOAD, f).toBe(name);
        expect(Number(vars[ENV.unitSize]), f).toBeLessThanOrEqual(unitSizeCap(workload));
      }
    });

    it("the worker commits every unit of a job under one fenced generation, writes what the workload's checks expect, and reports only the malformed record as a batch item failure", async () => {
      const start = workload.start.runOf({ payload: {}, time: new Date('2026-10-02T03:00:00Z'), items: ITEMS, unitSize: UNIT_SIZE });
      input = start.input as Record<string, unknown>;
      // The run's own id: a document's name leads back to it (the collector's refOf), and these tables are this block's alone.
      jobId = start.runId;
      const totalUnits = workload.processor.totalUnits(start.input);
      const { job } = await createJob(t.dynamo.doc, t.names.jobs, { id: jobId, totalUnits, input: { ...input } }, systemClock);
      expect(job.totalUnits).toBe(3);

      const event: SQSEvent = { Records: [sqsRecord('m-1', JSON.stringify({ jobId })), sqsRecord('m-2', '{"jobId": "not a job id"}')] };
      const daemon = await xrayDaemon();
      const { results, logs, emf } = await invoke('worker', 'Worker', [event], {
        _X_AMZN_TRACE_ID: 'Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1',
        AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.port}`,
        AWS_XRAY_CONTEXT_MISSING: 'LOG_ERROR',
      });
      expect(results).toEqual([{ batchItemFailures: [{ itemIdentifier: 'm-2' }] }]);

      const lease = await getItem(t, t.names.leases, leaseKeyOf(jobId));
      const generation = lease?.generation as number;
      expect(generation).toBe(1); // epoch 0, first token
      expect(lease?.owner).toBeUndefined(); // released
      // The fence under the workload's own key prefix: the bundle found its workload by WORKLOAD.
      expect((await getItem(t, t.names.fences, fenceKeyOf(jobId, workload.fenceKeyPrefix)))?.generation).toBe(generation);
      expect(await getItem(t, t.names.jobs, jobId)).toEqual(expect.objectContaining({ status: 'DONE', cursor: 3, generation }));

      // What the workload's checks say a DONE job wrote, recomputed from its input alone.
      const records = new Map((await scanAll(t, t.names.records)).filter((i) => i.jobId === jobId).map((i) => [String(i.pk), i]));
      const expected = [...workload.checks.records(start.input)];
      expect(expected.length).toBeGreaterThan(0);
      expect([...records.keys()].sort()).toEqual(expected.map((r) => r.pk).sort());
      for (const r of expected) {
        expect(records.get(r.pk), r.pk).toMatchObject({ ...r.fields, generation });
        // A record that points to a document: the document is there, in the bucket, under the workload's folder.
        if (workload.checks.documents?.pointsTo(r.pk)) {
          const key = String(records.get(r.pk)!.documentKey);
          expect(key.startsWith(workload.processor.documents!.prefix), key).toBe(true);
          expect(s3.buckets.get(BUCKET)?.get(key), key).toBeDefined();
        }
      }
      const outbox = new Set((await scanAll(t, t.names.outbox)).map((i) => String(i.pk)));
      for (const { id, after } of workload.checks.outbox(start.input)) if (after === undefined) expect(outbox.has(id), id).toBe(true);

      // Powertools wrote CloudWatch EMF to stdout: three committed units, one lease acquired, the cold start once.
      expect(metricSum(emf, 'UnitsCommitted')).toBe(3);
      expect(metricSum(emf, 'LeaseAcquired')).toBe(1);
      expect(metricSum(emf, 'ColdStart')).toBe(1);
      expect(emf.every((m) => m.service === 'worker')).toBe(true);
      // Log lines carry the invocation's context (Powertools injectLambdaContext).
      expect(logs.filter((l) => l.message === 'record-done')).toEqual([expect.objectContaining({ function_request_id: 'req-1', cold_start: true, function_name: 'Worker', jobId })]);

      // X-Ray sees the DynamoDB calls (Powertools Tracer captures the SDK clients), not only the Lambda segment.
      const segments = await daemon.segments();
      expect(new Set(segments.map((x) => x.trace_id))).toEqual(new Set(['1-67891233-abcdef012345678912345678']));
      expect(new Set(segments.filter((x) => x.name === 'DynamoDB').map((x) => x.aws?.operation))).toEqual(new Set(['UpdateItem', 'GetItem', 'TransactWriteItems']));
      expect(segments.some((x) => x.name === '## index.handler')).toBe(true);
    });

    it("the sender takes the job's outbox items from the stream and sends each once through its provider, at its destination (an http item's own path below its target's endpoint), marking it SENT", async () => {
      // The unit's own items (their follow-ups come from the settles below, and are sent by the next stream batch).
      const expected = [...workload.checks.outbox(input as never)].filter((e) => e.after === undefined);
      const ids = expected.map((e) => e.id);
      const raw = (await readStreamRecords(t.dynamo.client, streams, t.names.outbox)).filter((r) => r.record.eventName === 'INSERT' && ids.includes(String(r.record.dynamodb?.Keys?.pk?.S)));
      expect(raw).toHaveLength(ids.length);
      const run = await invoke('sender', 'Sender', [streamEvent(raw)]);
      await ses?.relayed();
      expect(run.results).toEqual([{ batchItemFailures: [] }]);
      expect(metricSum(run.emf, 'OutboxSent')).toBe(ids.length);
      for (const id of ids) {
        const item = (await readOutboxItem(t.dynamo.doc, t.names.outbox, id))!;
        expect(item, id).toMatchObject({ status: 'SENT', attempts: 1 });
        if (item.kind === 'email') {
          expect(ses!.sent.filter((m) => m.tags.outboxId === messageIdentity.tag(id)), id).toHaveLength(1);
          continue;
        }
        const target = workload.outbox.http.find((h) => h.target === item.target)!;
        // The item's destination: its own path for a per-item target, the endpoint itself otherwise.
        expect(target.destination === 'per-item', id).toBe(item.path !== undefined);
        const performed = http.performed.get(messageIdentity.idempotencyKey(t.names.outbox, id));
        expect(performed, id).toMatchObject({ requests: 1, path: `/${target.target}${item.path ?? ''}` });
        expect(item.providerMessageId).toBe(performed!.id);
      }
      // Every POST was one item's, once: nothing sent twice, nothing sent elsewhere.
      expect(http.requests.map((r) => r.outboxId).sort()).toEqual(expected.filter((e) => e.kind === 'http').map((e) => e.id).sort());
    });

    // Registered only for a workload that has what it proves: a case that cannot apply is not a skipped one.
    onlyIf(workload.steps !== undefined)("the settles above created the workload's follow-ups, each a step's for its parent's outcome, and the sender's next stream batch sends each once", async () => {
      // The follow-ups the settles created: whatever their parents' outcomes were, each one the checks demand for that outcome.
      const items = await scanAll(t, t.names.outbox);
      const followUps = items.filter((i) => i.parent !== undefined);
      expect(followUps.length).toBeGreaterThan(0);
      const demanded = new Map([...workload.checks.outbox(input as never)].filter((e) => e.after !== undefined).map((e) => [e.id, e]));
      for (const f of followUps) {
        const parent = items.find((i) => i.pk === f.parent)!;
        const outcome = parent.status === 'SENT' ? 'accepted' : parent.status === 'FAILED' && parent.refusal === 'effect' ? 'refusedForGood' : undefined;
        expect(demanded.get(String(f.pk))?.after?.on, String(f.pk)).toBe(outcome);
      }
      const ids = followUps.map((f) => String(f.pk));
      const raw = (await readStreamRecords(t.dynamo.client, streams, t.names.outbox)).filter((r) => r.record.eventName === 'INSERT' && ids.includes(String(r.record.dynamodb?.Keys?.pk?.S)));
      expect(raw).toHaveLength(ids.length);
      const run = await invoke('sender', 'Sender', [streamEvent(raw)]);
      await ses?.relayed();
      expect(run.results).toEqual([{ batchItemFailures: [] }]);
      for (const id of ids) {
        const item = (await readOutboxItem(t.dynamo.doc, t.names.outbox, id))!;
        expect(item, id).toMatchObject({ status: 'SENT', attempts: 1 });
        if (item.kind === 'email') expect(ses!.sent.filter((m) => m.tags.outboxId === messageIdentity.tag(id)), id).toHaveLength(1);
        else expect(http.performed.get(messageIdentity.idempotencyKey(t.names.outbox, id)), id).toMatchObject({ requests: 1 });
      }
    });

    onlyIf(workload.processor.documents !== undefined)(
      "the collector lists the workload's folder and deletes the documents of a generation the fence made obsolete that no record points to, keeping the published ones",
      async () => {
        // The first unit's documents as a later holder rendered them (generation 2) before the fence moved past it (3): orphans.
        const drafts = workload.processor.unitDocuments!(input as never, { jobId, generation: 2 as Generation, unit: 0, tables: t.names, now: Date.now() });
        const store = new S3ObjectStore(s3Client({ endpoint: s3.url }), BUCKET);
        for (const d of drafts) await store.putNew(d.name, Buffer.from(d.body), d.contentType);
        await t.dynamo.doc.send(new PutCommand({ TableName: t.names.fences, Item: { pk: fenceKeyOf(jobId, workload.fenceKeyPrefix), generation: 3 } }));
        // Written two hours ago: past the collector's age bound as the stack sets it (an hour).
        const objects = s3.buckets.get(BUCKET)!;
        for (const [key, versions] of objects) objects.set(key, versions.map((v) => ({ ...v, lastModified: new Date(Date.now() - 2 * 3_600_000) })));

        const r = await invoke('collector', 'Collector', [{}]);
        expect(r.results).toMatchObject([{ scanned: ITEMS + drafts.length, referenced: ITEMS, kept: 0, deleted: drafts.length, outOfTime: false }]);
        for (const d of drafts) expect(objects.get(d.name)!.map((v) => v.deleteMarker), d.name).toEqual([false, true]);
      },
    );
  });

  EFFECT_FLOWS[name]?.(() => s.bundles as unknown as Bundles, (fn, wire, s3Url) => keepCalls(fn, wire, s3Url), workload);

  // Last in the block: the runs above are done (vitest runs a file's tests in order).
  describe('IAM from the bundled calls', () => {
    it(`every AWS call the bundled ${name} functions sent is allowed by that stack's roles and resource policies (the same evaluation as test/infra/iam-calls.test.ts, the calls read off the wire)`, async () => {
      const { decisions, denied } = await s.stackIam.evaluate(bundledCalls);
      process.stdout.write(`IAM from the bundled calls (${name}): ${bundledCalls.length} calls, ${decisions.length} distinct, ${decisions.length - denied.length} allowed\n`);
      expect(denied).toEqual([]);
      // The worker and the sender ran for every workload, the collector for one with documents; a workload's own flows ran its other effect functions.
      const ran = ['worker', 'sender', ...(workload.processor.documents === undefined ? [] : ['collector'])];
      const expectedFns = EFFECT_FLOWS[name] === undefined ? ran : functionsOf(workload).filter((f) => f !== 'sweeper' && f !== 'starter');
      expect([...new Set(bundledCalls.map((c) => c.fn))].sort()).toEqual([...expectedFns].sort());
      const actions = [...new Set(bundledCalls.flatMap((c) => c.authorizations.map((x) => `${c.fn} ${x.action}`)))].sort();
      process.stdout.write(`${actions.join(', ')}\n`);
      // The SDK paths only the bundles take: the S3 conditional put, the transaction's outbox put, the sender's claim; SES v2 through its client for email.
      // An http target in the sandbox (the template's default): its calls are signed for the sandbox provider's function URL.
      const signed = workload.outbox.http.length === 0 ? [] : ['sender lambda:InvokeFunctionUrl', 'sender lambda:InvokeFunction'];
      const paths = ['worker dynamodb:PutItem', 'sender dynamodb:UpdateItem', ...signed, ...(workload.processor.documents === undefined ? [] : ['worker s3:PutObject']), ...(workload.outbox.email ? ['sender ses:SendEmail'] : [])];
      expect(actions).toEqual(expect.arrayContaining(paths));
      if (!workload.outbox.email) expect(actions.filter((a) => a.includes('ses:'))).toEqual([]);
      if (workload.processor.documents === undefined) expect(actions.filter((a) => a.includes('s3:'))).toEqual([]);
    });
  });
});

