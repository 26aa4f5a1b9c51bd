/** Lambda entry: the sandbox provider behind its function URL (AWS_IAM: only signed calls reach it). */
import { createDynamo } from '../lib/protocol/index.js';
import { SANDBOX_ENV, sandboxBehaviourFromEnv } from '../lib/workflow/adapters/index.js';
import { ENV, httpUrl, required } from '../lib/workflow/index.js';
import { sandboxHandler } from './sandbox-provider-handler.js';

const endpoint = httpUrl(process.env, ENV.dynamoEndpoint, { optional: true });
export const handler = sandboxHandler({
  doc: createDynamo(endpoint ? { endpoint } : {}).doc,
  table: required(process.env, SANDBOX_ENV.keysTable),
  behaviour: sandboxBehaviourFromEnv(process.env),
});
