import { App } from 'aws-cdk-lib';
import { addComplianceChecks } from './constructs/checks.js';
import { FencedWorkflowStack } from './stack.js';

const app = new App();
// Environment-agnostic; rename with `-c stackName=...` so two forks deploy into one account.
new FencedWorkflowStack(app, String(app.node.tryGetContext('stackName') ?? 'FencedWorkflow'));
addComplianceChecks(app);
app.synth();
