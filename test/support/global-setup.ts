/**
 * One DynamoDB Local for the whole test run; each test file makes its own tables under its
 * own prefix (test/support/tables.ts), so files run in parallel against one Java process.
 */
import type { TestProject } from 'vitest/node';
import { startDynamoLocal } from '../../cli/dynamodb-local.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}

export default async function setup(project: TestProject) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const local = await startDynamoLocal();
  project.provide('dynamoEndpoint', local.endpoint);
  return async () => {
    await local.stop();
  };
}
