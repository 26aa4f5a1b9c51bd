/**
 * `start`: start a run now, as the schedule would: invoke the stack's starter with a payload
 * (`--items N`, the run's size in any workload; `--payload JSON`, the workload's own fields), and
 * print the run it created or found. The starter is idempotent (one run per schedule slot), so a
 * second start of the same slot finds the run and starts nothing new.
 *
 * Loaded only by this command: the Lambda client is not needed by any other but pause and resume.
 */
import { InvokeCommand, LambdaClient, ResourceNotFoundException } from '@aws-sdk/client-lambda';
import { ConfigError, InvalidInputError } from '../../lib/protocol/index.js';

export interface StarterTarget {
  /** `--function-name`, or the outputs file's StarterFunctionName. */
  functionName: string | undefined;
  region?: string;
}

export async function startRunNow(target: StarterTarget, payload: Record<string, unknown>, json: boolean): Promise<number> {
  if (target.functionName === undefined) throw new ConfigError('--function-name', "start needs the stack's starter: --outputs FILE (a stack output StarterFunctionName) or --function-name NAME");
  const lambda = new LambdaClient(target.region ? { region: target.region } : {});
  let out;
  try {
    out = await lambda.send(new InvokeCommand({ FunctionName: target.functionName, InvocationType: 'RequestResponse', Payload: Buffer.from(JSON.stringify(payload)) }));
  } catch (e) {
    if (e instanceof ResourceNotFoundException) throw new ConfigError('--function-name', `no function ${target.functionName} in this account and region (check --region and the outputs file)`);
    throw e;
  } finally {
    lambda.destroy();
  }
  const text = out.Payload === undefined ? '' : Buffer.from(out.Payload).toString('utf8');
  if (out.FunctionError !== undefined) {
    // The starter refused the payload (a bad field): its message, one line, as a usage error.
    const message = (() => {
      try {
        return String((JSON.parse(text) as { errorMessage?: unknown }).errorMessage ?? text);
      } catch {
        return text;
      }
    })();
    throw new InvalidInputError('payload', `the starter refused it: ${message.split('\n')[0]!.slice(0, 300)}`);
  }
  const r = JSON.parse(text) as { runId: string; created: boolean; jobs: { jobId: string; created: boolean; enqueued: boolean; status: string }[] };
  if (json) process.stdout.write(`${text}\n`);
  else {
    const what = r.created ? 'started' : 'found (already started; nothing new)';
    process.stdout.write(`${what} run ${r.runId}: ${r.jobs.length} shard job(s), ${r.jobs.filter((j) => j.enqueued).length} enqueued (${[...new Set(r.jobs.map((j) => j.status))].join(', ')}).\n`);
  }
  return 0;
}
