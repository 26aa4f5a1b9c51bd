import { App } from 'aws-cdk-lib';
import { ConfigError } from '../lib/protocol/index.js';
import { addComplianceChecks, synthChecked } from './constructs/checks.js';
import { ContextSettings, stackNameFrom } from './context.js';
import { FencedWorkflowStack } from './stack.js';

/**
 * What `cdk synth` runs: the stack of the context's workload, the compliance checks, the cloud
 * assembly. Returns the exit status: 1, with one line and no template, for a bad setting.
 */
export function synthesizeApp(app: App, say: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): number {
  try {
    // `-c workload=NAME` picks the registered workload; the stack is named for it unless the default
    // one (FencedWorkflow, as deployed), so two workloads deploy side by side. Environment-agnostic;
    // rename with `-c stackName=...` so two forks deploy into one account.
    const workload = new ContextSettings((key) => app.node.tryGetContext(key)).workload();
    new FencedWorkflowStack(app, stackNameFrom(app.node.tryGetContext('stackName'), workload.name), { workload });
  } catch (e) {
    // A bad setting is the operator's to fix: say which and why, in one line, without a stack trace.
    if (!(e instanceof ConfigError)) throw e;
    say(e.message);
    return 1;
  }
  addComplianceChecks(app);
  synthChecked(app, say);
  return 0;
}

// cdk runs this file (cdk.json: `npx tsx infra/app.ts`), its context and output folder in the environment.
if (process.argv[1]?.endsWith('infra/app.ts')) {
  const status = synthesizeApp(new App());
  if (status !== 0) process.exit(status);
}
