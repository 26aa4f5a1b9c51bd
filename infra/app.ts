import { App } from 'aws-cdk-lib';
import { ConfigError } from '../lib/protocol/index.js';
import { addComplianceChecks, synthChecked } from './constructs/checks.js';
import { stackNameFrom } from './context.js';
import { FencedWorkflowStack } from './stack.js';

const app = new App();
try {
  // Environment-agnostic; rename with `-c stackName=...` so two forks deploy into one account.
  new FencedWorkflowStack(app, stackNameFrom(app.node.tryGetContext('stackName')));
} catch (e) {
  // A bad setting is the operator's to fix: say which and why, in one line, without a stack trace.
  if (!(e instanceof ConfigError)) throw e;
  process.stderr.write(`${e.message}\n`);
  process.exit(1);
}
addComplianceChecks(app);
synthChecked(app);
