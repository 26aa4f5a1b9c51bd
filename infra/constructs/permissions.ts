/**
 * Least privilege: each function gets exactly the DynamoDB and SQS actions its code sends, on the
 * exact tables, index and queue (test/infra/iam.test.ts holds the list).
 */
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { UNFINISHED_INDEX, type TableRole } from '../../lib/workflow/index.js';
import type { FencedFunction } from './function.js';

export function grantDataPlane(
  fns: Readonly<Record<'worker' | 'sweeper' | 'starter', FencedFunction>>,
  active: Readonly<Record<TableRole, ITable>>,
  queue: IQueue,
): void {
  const allow = (f: FencedFunction, actions: string[], resources: string[]) =>
    f.role.addToPrincipalPolicy(new PolicyStatement({ actions: actions.map((a) => `dynamodb:${a}`), resources }));
  const arn = (role: TableRole) => active[role].tableArn;
  // SendMessage only (grantSendMessages would add GetQueueAttributes and GetQueueUrl, unused: the URL is configuration).
  const send = (f: FencedFunction) => f.role.addToPrincipalPolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [queue.queueArn] }));
  const unfinishedIndexArn = `${active.jobs.tableArn}/index/${UNFINISHED_INDEX}`;

  // Worker (lib/workflow/run-job.ts and what it calls):
  // - Leases: acquire, renew, release: conditional UpdateItem (lib/protocol/lease.ts), in both lease modes.
  // - Fences: the raise (UpdateItem, lib/protocol/fence.ts raiseFence), the fence item of every unit's
  //   transaction (Update), and markFailed's ConditionCheck (lib/workflow/jobs.ts).
  // - Jobs: the consistent checkpoint read (GetItem, readJob), the checkpoint advance in every
  //   unit's transaction and markFailed's Update (UpdateItem).
  // - Jobs, for runs (lib/workflow/runs.ts): after a job ends DONE, the run record's read (GetItem),
  //   the shards' consistent read (BatchGetItem) and the conditional doneAt mark (UpdateItem).
  // - Records: the effects, upsert and once-only alike, are Puts in the unit's transaction.
  // TransactWriteItems is authorized per item action, so it needs no action of its own; the
  // ReturnValues* options need no GetItem.
  allow(fns.worker, ['UpdateItem'], [arn('leases')]);
  allow(fns.worker, ['UpdateItem', 'ConditionCheckItem'], [arn('fences')]);
  allow(fns.worker, ['GetItem', 'BatchGetItem', 'UpdateItem'], [arn('jobs')]);
  allow(fns.worker, ['PutItem'], [arn('records')]);
  send(fns.worker); // continuations
  // Sweeper (lib/workflow/sweeper.ts): the unfinished-jobs index, the lease liveness check (consistent
  // GetItem), the conditional requeue claim and the version-watch observation (UpdateItem).
  allow(fns.sweeper, ['Query'], [unfinishedIndexArn]);
  allow(fns.sweeper, ['UpdateItem'], [arn('jobs')]);
  allow(fns.sweeper, ['GetItem'], [arn('leases')]);
  send(fns.sweeper);
  // Starter (lib/workflow/runs.ts createRun, lib/workflow/jobs.ts createJob): conditional PutItems of the run
  // record and its shards; an existing one comes back with the condition failure (ReturnValuesOnConditionCheckFailure),
  // not from a read. GetItem: with shards > 1, whether the run already has an unsharded job (lib/workflow/start-run.ts).
  allow(fns.starter, ['PutItem', 'GetItem'], [arn('jobs')]);
  send(fns.starter);
}
