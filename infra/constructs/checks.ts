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
