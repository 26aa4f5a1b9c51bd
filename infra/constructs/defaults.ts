/**
 * Secure defaults, written once (after aws-solutions-constructs `core/lib/*-defaults.ts`).
 * Every table, queue and function of the workflow is built from these; docs/deploy.md lists
 * them under "Default settings".
 *
 * Tables: on-demand, encrypted with the AWS managed key, point-in-time recovery, deletion
 *   protection, RETAIN. No TTL anywhere: Leases and Fences keep their counters forever, and a
 *   TTL on Jobs would drop a claim the sweeper must still see.
 * Queues: SSE-SQS, TLS-only (aws:SecureTransport), 14-day retention on dead-letter queues.
 * Functions: see function.ts.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { AttributeType, ProjectionType, StreamViewType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Queue, QueueEncryption, type QueueProps } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { KeyAttribute, TableSchema } from '../../lib/workflow/index.js';

const attributeType = (a: KeyAttribute) => ({ name: a.name, type: a.type === 'S' ? AttributeType.STRING : AttributeType.NUMBER });

/**
 * A table exactly as lib/workflow/schema.ts describes it (keys, GSIs, stream), with the durable defaults.
 * No `tableName`: CloudFormation names it, so two stacks (two forks) coexist in one account.
 */
/** A table's warm throughput (what it can serve at once), in read and write units per second: what the capacity plan recommends (docs/scale.md). */
export interface WarmUnits {
  readonly read?: number;
  readonly write?: number;
  /** Per global secondary index, by name: each index has a warm throughput of its own. */
  readonly indexes?: Readonly<Record<string, { readonly read?: number; readonly write?: number }>>;
}

const warmOf = (w: { read?: number; write?: number } | undefined) =>
  w?.read !== undefined || w?.write !== undefined ? { warmThroughput: { ...(w.read !== undefined ? { readUnitsPerSecond: w.read } : {}), ...(w.write !== undefined ? { writeUnitsPerSecond: w.write } : {}) } } : {};

export function durableTable(scope: Construct, id: string, schema: TableSchema, replicationRegions?: string[], warm?: WarmUnits, keepRetiredIndexes = false): Table {
  const table = new Table(scope, id, {
    partitionKey: attributeType(schema.partitionKey),
    // On demand, as lib/workflow/tables.ts creates them locally (left unset, the Table would be provisioned at 5 units).
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    encryption: TableEncryption.AWS_MANAGED,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    deletionProtection: true,
    // State outlives the stack: a deleted Leases or Fences table lets a counter restart below a
    // value a resource has already accepted (DESIGN.md, TOKENS). `cdk destroy` leaves it.
    removalPolicy: RemovalPolicy.RETAIN,
    ...(schema.stream === 'NEW_AND_OLD_IMAGES' ? { stream: StreamViewType.NEW_AND_OLD_IMAGES } : {}),
    ...(replicationRegions && replicationRegions.length > 0 ? { replicationRegions } : {}),
    ...warmOf(warm),
  });
  for (const gsi of [...schema.globalSecondaryIndexes, ...(keepRetiredIndexes ? (schema.retiredIndexes ?? []) : [])]) {
    table.addGlobalSecondaryIndex({
      indexName: gsi.indexName,
      partitionKey: attributeType(gsi.partitionKey),
      ...(gsi.sortKey ? { sortKey: attributeType(gsi.sortKey) } : {}),
      projectionType: gsi.projection === 'ALL' ? ProjectionType.ALL : ProjectionType.KEYS_ONLY,
      ...warmOf(warm?.indexes?.[gsi.indexName]),
    });
  }
  return table;
}

/** Work queues and dead-letter queues: encrypted at rest (SSE-SQS, no key policy to get wrong) and TLS-only. */
export function secureQueue(scope: Construct, id: string, props: QueueProps = {}): Queue {
  return new Queue(scope, id, {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    ...props,
  });
}

/** A dead-letter queue keeps what failed for the longest SQS allows, so an on-call engineer has time to look. */
export function deadLetterQueue(scope: Construct, id: string): Queue {
  return secureQueue(scope, id, { retentionPeriod: Duration.days(14) });
}
