/**
 * The stack's output keys: infra/stack.ts creates them, the CLI's ops commands (cli/ops/ops.ts)
 * read a deployed stack's `cdk deploy --outputs-file` by these names. No CDK import here, so the
 * CLI does not load aws-cdk-lib.
 */
export const OUTPUTS = {
  leases: 'LeasesTableName',
  fences: 'FencesTableName',
  jobs: 'JobsTableName',
  records: 'RecordsTableName',
  outbox: 'OutboxTableName',
  documentsBucket: 'DocumentsBucketName',
  recordsStreamArn: 'RecordsStreamArn',
  queueUrl: 'WorkQueueUrl',
  /** The work queue's dead-letter queue, as an ARN (what start-message-move-task takes). */
  deadLetterQueueArn: 'DeadLetterQueueArn',
  dashboardUrl: 'DashboardUrl',
  /** The SNS topic every alarm notifies: the stack's own, or the one given as alarmTopicArn. */
  alarmTopicArn: 'AlarmTopicArn',
  fenceEpoch: 'FenceEpoch',
  workerFunction: 'WorkerFunctionName',
  /** The worker's SQS event source mapping (its UUID): what `pause` / `resume` disable and enable. */
  workerEventSourceMapping: 'WorkerEventSourceMappingId',
  sweeperFunction: 'SweeperFunctionName',
  starterFunction: 'StarterFunctionName',
  /** The stack's workload (lib/workloads/index.ts): the ops CLI's seal raises that workload's fences. */
  workload: 'WorkloadName',
} as const;
