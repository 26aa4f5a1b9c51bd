/**
 * `redrive`: move the work queue's dead-letter messages back to the work queue, once the cause is
 * fixed (docs/deploy.md, Dead-letter queues). SQS does the move (StartMessageMoveTask: the source
 * queue is the one whose redrive policy names this DLQ), at its own pace; `--wait` follows it
 * until it ends (ListMessageMoveTasks). A job is fenced and idempotent: a redriven message whose
 * job is done does nothing.
 *
 * Loaded only by this command: the SQS calls are its own.
 */
import { ListMessageMoveTasksCommand, ResourceNotFoundException, SQSClient, StartMessageMoveTaskCommand } from '@aws-sdk/client-sqs';
import { ConfigError, InvalidInputError } from '../../lib/protocol/index.js';

const QUEUE_ARN = /^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}$/;
const POLL_MS = 2_000;
const WAIT_MS = 600_000;

export async function redriveDeadLetters(dlqArn: string | undefined, opts: { region?: string; wait: boolean; json: boolean; pollMs?: number }): Promise<number> {
  if (dlqArn === undefined) throw new ConfigError('--dlq-arn', 'redrive needs the work queue\'s dead-letter queue: --outputs FILE (a stack output DeadLetterQueueArn) or --dlq-arn ARN');
  if (!QUEUE_ARN.test(dlqArn)) throw new InvalidInputError('--dlq-arn', `must be an SQS queue ARN, got ${JSON.stringify(dlqArn.slice(0, 200))}`);
  const sqs = new SQSClient(opts.region ? { region: opts.region } : {});
  try {
    let handle: string | undefined;
    try {
      handle = (await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: dlqArn }))).TaskHandle;
    } catch (e) {
      if (e instanceof ResourceNotFoundException) throw new ConfigError('--dlq-arn', `no queue ${dlqArn} in this account and region (check --region and the outputs file)`);
      throw e;
    }
    let task = { status: 'RUNNING', moved: 0, toMove: undefined as number | undefined, failure: undefined as string | undefined };
    const until = Date.now() + WAIT_MS;
    while (opts.wait && task.status === 'RUNNING' && Date.now() < until) {
      await new Promise((r) => setTimeout(r, opts.pollMs ?? POLL_MS));
      const r = (await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn, MaxResults: 1 }))).Results?.[0];
      task = { status: r?.Status ?? 'UNKNOWN', moved: r?.ApproximateNumberOfMessagesMoved ?? 0, toMove: r?.ApproximateNumberOfMessagesToMove, failure: r?.FailureReason };
    }
    if (opts.json) process.stdout.write(`${JSON.stringify({ dlq: dlqArn, taskHandle: handle, ...(opts.wait ? task : {}) })}\n`);
    else if (!opts.wait) process.stdout.write(`moving the dead-letter messages of ${dlqArn} back to the work queue (task ${handle}); follow it: npm run cli -- redrive ... --wait, or aws sqs list-message-move-tasks --source-arn ${dlqArn}\n`);
    else process.stdout.write(`move ${task.status}: ${task.moved}${task.toMove === undefined ? '' : ` of ${task.toMove}`} message(s) back on the work queue${task.failure ? `; ${task.failure}` : ''}\n`);
    return !opts.wait || task.status === 'COMPLETED' ? 0 : 1;
  } finally {
    sqs.destroy();
  }
}
