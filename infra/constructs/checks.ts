/**
 * Compliance checks run at every synth: cdk-nag (v3, CDK's Validations API) with the AWS
 * Solutions and Serverless packs. A finding fails synth unless it is acknowledged on the one
 * resource it concerns, with a reason (see the constructs that create those resources).
 */
import { Validations, type App, type Stage } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';

export function addComplianceChecks(app: App | Stage): void {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
}

/** The line `npm run synth` ends with when the checks found nothing (a finding fails synth with cdk-nag's report instead). */
export const NO_FINDINGS_LINE = 'compliance checks (cdk-nag AwsSolutions and Serverless packs): no findings (the acknowledged ones excepted, each on its resource with a reason)';

/** Synthesizes the app; when it passes the checks, says so in one line (on stderr: cdk synth keeps stdout for the template). */
export function synthChecked(app: App, say: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): void {
  app.synth();
  say(NO_FINDINGS_LINE);
}
