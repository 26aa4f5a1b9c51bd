/**
 * What every handler shares, built once per Lambda container at module scope: configuration
 * from the environment (a missing variable is named in the error), the DynamoDB and SQS
 * clients, and telemetry (Powertools logger + metrics: JSON logs and CloudWatch EMF metrics,
 * which also work locally: they print to stdout).
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
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
import { MAX_UNIT_SIZE } from '../lib/workloads/invoices.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export type Env = Readonly<Record<string, string | undefined>>;

export interface Commons {
  doc: DynamoDBDocumentClient;
  tables: TableNames;
  lease: LeaseSettings;
  queue: WorkQueue;
  clock: Clock;
  unitSize: number;
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
 * `maxUnitSize`: the unit size the entry's processor can take (lib/workflow maxUnitSize of its
 * effects per item); the invoice workload's by default.
 */
export function commonsFromEnv(env: Env, opts: { maxUnitSize?: number } = {}): Commons {
  const tables = tablesFromEnv(env);
  const lease = leaseSettingsFromEnv(env);
  const queueUrl = httpUrl(env, ENV.queueUrl);
  // Checked here: the SDK takes any string and fails only at the first request, with a bare TypeError.
  const endpoint = httpUrl(env, ENV.dynamoEndpoint, { optional: true });
  const { doc } = createDynamo(endpoint ? { endpoint } : {});
  return {
    doc,
    tables,
    lease,
    queue: new SqsWorkQueue(new SQSClient({}), queueUrl),
    clock: systemClock,
    unitSize: integer(env, ENV.unitSize, 25, 1, opts.maxUnitSize ?? MAX_UNIT_SIZE),
  };
}

export interface PowertoolsTelemetry extends Telemetry {
  logger: Logger;
  metrics: Metrics;
}

/** `fallback` names the service when POWERTOOLS_SERVICE_NAME (set by the stack) is absent. */
export function powertoolsTelemetry(fallback: string): PowertoolsTelemetry {
  const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? fallback;
  const logger = new Logger({ serviceName });
  const metrics = new Metrics({ serviceName, namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'FencedWorkflow' });
  return {
    logger,
    metrics,
    count: (metric: MetricName, n = 1) => metrics.addMetric(metric, MetricUnit.Count, n),
    gauge: (metric: MetricName, value: number) => metrics.addMetric(metric, MetricUnit.Milliseconds, value),
    event: (name: string, fields: Record<string, unknown>) => logger.info(name, fields),
  };
}
