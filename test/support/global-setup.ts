/**
 * One DynamoDB Local for the whole test run; each test file makes its own tables under its
 * own prefix (test/support/tables.ts), so files run in parallel against one Java process.
 *
 * First, in well under a second: the tools the run needs outside npm (Java 17 for DynamoDB
 * Local; spin and gcc for the model check, which the quick tier leaves out). A missing one stops
 * the run here, named with its install line, instead of failing one test after minutes of others.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDynamoLocal } from '../../cli/local/dynamodb-local.js';
import { requireTools, type Tool } from '../../cli/local/prerequisites.js';
import { ConfigError } from '../../lib/protocol/index.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
    /** A folder for the whole run, removed when it ends (a worker process is killed, so its own exit hooks never run). */
    scratchDir: string;
  }
}

/** Only the quick tier is running (`vitest run --project quick`): it has no model check. */
const quickOnly = (project: TestProject) => project.vitest.projects.every((p) => p.name === 'quick');

/** Java for DynamoDB Local always; spin and gcc for the model check and jq for the docs' commands, when the full tier runs. */
const toolsFor = (project: TestProject): Tool[] => (quickOnly(project) ? ['java'] : ['java', 'spin', 'gcc', 'jq']);

export default async function setup(project: TestProject) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  try {
    requireTools(toolsFor(project), quickOnly(project) ? 'npm run test:quick' : 'npm test');
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    // One line and out: nothing has started yet, and a stack trace would bury the install line.
    process.stderr.write(`\n${e.message}\n`);
    process.exit(2);
  }
  // A database per test file (each file signs with a key of its own: own-database.ts): DynamoDB
  // Local slows down every write to a table with a stream as the stream records of ALL its tables
  // pile up (4 to 10 ms a request after 100 tables of 100 items, deleted or not), so a shared
  // database made the last files of a run two to four times slower than alone.
  const local = await startDynamoLocal({ sharedDb: false });
  project.provide('dynamoEndpoint', local.endpoint);
  const scratch = mkdtempSync(join(tmpdir(), 'fenced-test-run-'));
  project.provide('scratchDir', scratch);
  return async () => {
    rmSync(scratch, { recursive: true, force: true });
    await local.stop();
  };
}
