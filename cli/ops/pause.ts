/**
 * `pause` / `resume`: disable and enable the worker's SQS event source mapping, and wait until
 * Lambda reports the new state. A disabled mapping receives nothing: messages wait in the work
 * queue, and no receive counts toward its maxReceiveCount. (Reserved concurrency 0 would not do
 * that: the SQS poller keeps receiving for a throttled function, and each receive counts, so good
 * messages would reach the dead-letter queue within about an hour.)
 *
 * Loaded only by these two commands: the Lambda client is not needed by any other.
 */
import { GetEventSourceMappingCommand, LambdaClient, ResourceNotFoundException, UpdateEventSourceMappingCommand } from '@aws-sdk/client-lambda';
import { ConfigError, InvalidInputError } from '../../lib/protocol/index.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface MappingTarget {
  /** `--mapping-id`, or the outputs file's WorkerEventSourceMappingId. */
  mappingId: string | undefined;
  region?: string;
}

/** Waits this long for Lambda to finish Disabling/Enabling (it takes seconds; a minute is a problem). */
const SETTLE_MS = 120_000;
const POLL_MS = 1_000;

export async function setWorkerReceiving(enabled: boolean, target: MappingTarget, json: boolean): Promise<number> {
  const { mappingId } = target;
  if (mappingId === undefined) {
    throw new ConfigError(
      '--mapping-id',
      `${enabled ? 'resume' : 'pause'} needs the worker's event source mapping: --outputs FILE (a stack output WorkerEventSourceMappingId) or --mapping-id UUID`,
    );
  }
  if (!UUID.test(mappingId)) throw new InvalidInputError('--mapping-id', `must be an event source mapping UUID, got ${JSON.stringify(mappingId.slice(0, 64))}`);
  const lambda = new LambdaClient(target.region ? { region: target.region } : {});
  const wanted = enabled ? 'Enabled' : 'Disabled';
  let state: string | undefined;
  try {
    await lambda.send(new UpdateEventSourceMappingCommand({ UUID: mappingId, Enabled: enabled }));
    const until = Date.now() + SETTLE_MS;
    for (;;) {
      state = (await lambda.send(new GetEventSourceMappingCommand({ UUID: mappingId }))).State;
      if (state === wanted || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  } catch (e) {
    if (e instanceof ResourceNotFoundException) throw new ConfigError('--mapping-id', `no event source mapping ${mappingId} in this account and region (check --region and the outputs file)`);
    throw e;
  } finally {
    lambda.destroy();
  }
  const settled = state === wanted;
  if (json) process.stdout.write(JSON.stringify({ mapping: mappingId, enabled, state }) + '\n');
  else if (!settled) process.stdout.write(`the worker's event source mapping ${mappingId} is still ${state} after ${SETTLE_MS / 1000} s: check it with aws lambda get-event-source-mapping --uuid ${mappingId}\n`);
  else if (enabled) process.stdout.write(`resumed: the worker's event source mapping ${mappingId} is Enabled; the worker receives from the work queue again.\n`);
  else {
    process.stdout.write(
      `paused: the worker's event source mapping ${mappingId} is Disabled. New messages wait in the work queue (4 days' retention) ` +
        'and no receive counts toward its dead-letter limit. Invocations already running finish (at most the worker timeout, ' +
        '2 min by default) and their leases expire after that; the sweeper and the starter still run (docs/runbook-dr.md, 1. Pause).\n',
    );
  }
  return settled ? 0 : 1;
}
