/**
 * What every handler shares, built once per Lambda container at module scope: configuration
 * from the environment (a missing variable is named in the error), the DynamoDB and SQS
 * clients, and telemetry (Powertools logger, metrics and tracer: JSON logs and CloudWatch EMF
 * metrics, which also work locally, they print to stdout; X-Ray subsegments for every SDK call).
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import middy, { type MiddyfiedHandler } from '@middy/core';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { Context } from 'aws-lambda';
import { createDynamo, systemClock, type Clock } from '../lib/protocol/index.js';
import {
  ENV,
  httpUrl,
  integer,
  leaseSettingsFromEnv,
  tablesFromEnv,
  type LeaseSettings,
  type MetricName,
  type TableNames,
  type Telemetry,
  type WorkMessage,
  type WorkQueue,
} from '../lib/workflow/index.js';
import { unitSizeCap, type Workload } from '../lib/workflow/index.js';
import { workloadFromEnv } from '../lib/workloads/index.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export type Env = Readonly<Record<string, string | undefined>>;

export interface Commons {
  doc: DynamoDBDocumentClient;
  tables: TableNames;
  lease: LeaseSettings;
  queue: WorkQueue;
  clock: Clock;
  unitSize: number;
  /** The stack's workload (WORKLOAD): its processor, its unit-size cap, its fence key prefix. */
  workload: Workload<any>;
}

export class SqsWorkQueue implements WorkQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly url: string,
  ) {}
  async send(message: WorkMessage): Promise<void> {
    await this.sqs.send(new SendMessageCommand({ QueueUrl: this.url, MessageBody: JSON.stringify(message) }));
  }
}

/**
 * The workload is WORKLOAD's, from the registry the stack set it from: the unit size is capped
 * by its own effects per item (unitSizeCap), the one number the stack's synth check also reads.
 * `tracer`: every SDK call of the clients becomes an X-Ray subsegment (a no-op outside Lambda).
 */
export function commonsFromEnv(env: Env, opts: { tracer?: Tracer } = {}): Commons {
  const workload = workloadFromEnv(env);
  const tables = tablesFromEnv(env);
  const lease = leaseSettingsFromEnv(env);
  const queueUrl = httpUrl(env, ENV.queueUrl);
  // Checked here: the SDK takes any string and fails only at the first request, with a bare TypeError.
  const endpoint = httpUrl(env, ENV.dynamoEndpoint, { optional: true });
  // The document client shares its base client's middleware stack: capturing the base client traces both.
  const { client, doc } = createDynamo(endpoint ? { endpoint } : {});
  opts.tracer?.captureAWSv3Client(client);
  const sqs = new SQSClient({});
  opts.tracer?.captureAWSv3Client(sqs);
  return {
    doc,
    tables,
    lease,
    queue: new SqsWorkQueue(sqs, queueUrl),
    clock: systemClock,
    unitSize: integer(env, ENV.unitSize, workload.defaultUnitSize, 1, unitSizeCap(workload)),
    workload,
  };
}

export interface PowertoolsTelemetry extends Telemetry {
  logger: Logger;
  metrics: Metrics;
  tracer: Tracer;
}

/** `fallback` names the service when POWERTOOLS_SERVICE_NAME (set by the stack) is absent. */
export function powertoolsTelemetry(fallback: string): PowertoolsTelemetry {
  const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? fallback;
  const logger = new Logger({ serviceName });
  const metrics = new Metrics({ serviceName, namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'FencedWorkflow' });
  const tracer = new Tracer({ serviceName });
  return {
    logger,
    metrics,
    tracer,
    count: (metric: MetricName, n = 1) => metrics.addMetric(metric, MetricUnit.Count, n),
    gauge: (metric: MetricName, value: number) => metrics.addMetric(metric, MetricUnit.Milliseconds, value),
    event: (name: string, fields: Record<string, unknown>) => logger.info(name, fields),
  };
}

/**
 * A handler as Lambda runs it, with Powertools' Middy middleware: the invocation as an X-Ray
 * subsegment (cold start and service annotated), the Lambda context on every log line (request
 * id, cold start, function name and version), and the metrics flushed after every invocation,
 * failed ones too, with the ColdStart metric on the first.
 */
export function lambdaHandler<E, R>(handler: (event: E, context: Context) => Promise<R>, telemetry: PowertoolsTelemetry): MiddyfiedHandler<E, R> {
  return middy(handler)
    .use(captureLambdaHandler(telemetry.tracer))
    .use(injectLambdaContext(telemetry.logger, { resetKeys: true }))
    .use(logMetrics(telemetry.metrics, { captureColdStartMetric: true }));
}
