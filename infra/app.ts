import { App } from 'aws-cdk-lib';
import { ConfigError } from '../lib/protocol/index.js';
import { addComplianceChecks, synthChecked } from './constructs/checks.js';
import { ContextSettings, stackNameFrom } from './context.js';
import { FencedWorkflowStack } from './stack.js';

const app = new App();
try {
  // `-c workload=NAME` picks the registered workload; the stack is named for it unless the default
  // one (FencedWorkflow, as deployed), so two workloads deploy side by side. Environment-agnostic;
  // rename with `-c stackName=...` so two forks deploy into one account.
  const workload = new ContextSettings((key) => app.node.tryGetContext(key)).workload();
  new FencedWorkflowStack(app, stackNameFrom(app.node.tryGetContext('stackName'), workload.name), { workload });
} catch (e) {
  // A bad setting is the operator's to fix: say which and why, in one line, without a stack trace.
  if (!(e instanceof ConfigError)) throw e;
  process.stderr.write(`${e.message}\n`);
  process.exit(1);
}
addComplianceChecks(app);
synthChecked(app);
