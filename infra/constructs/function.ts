/**
 * One function factory with the defaults every handler gets (after the Powertools example app's
 * function construct): the newest Node.js runtime in aws-cdk-lib, arm64, X-Ray active tracing,
 * JSON logs into an explicit log group with retention (not the deprecated `logRetention`, which
 * deploys an extra Lambda), and its own role that can write to that log group and nothing else
 * until the caller grants the exact data-plane actions.
 *
 * Bundled locally with esbuild (no Docker). The AWS SDK is bundled, not taken from the runtime:
 * the artifact runs the SDK version the tests ran, and the deployable-artifact test proves it
 * needs nothing outside its own directory.
 */
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Policy, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { ApplicationLogLevel, Architecture, CfnFunction, LoggingFormat, RecursiveLoop, Runtime, SystemLogLevel, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: entries, package-lock.json and tsconfig.json are resolved from it. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The newest Node.js runtime aws-cdk-lib knows (cdk-nag AwsSolutions-L1 / Serverless-LambdaLatestVersion check this). */
export const RUNTIME = Runtime.NODEJS_24_X;
export const ARCHITECTURE = Architecture.ARM_64;

export interface FencedFunctionProps {
  /** Handler module, absolute or relative to the project root; it exports `handler`. */
  readonly entry: string;
  readonly description: string;
  readonly timeout: Duration;
  readonly memorySize: number;
  readonly environment: Readonly<Record<string, string>>;
  /** @default one month */
  readonly logRetention?: RetentionDays;
  /** For asynchronously invoked functions: where an event goes after Lambda's retries fail. */
  readonly deadLetterQueue?: IQueue;
  /** @default RecursiveLoop.TERMINATE (Lambda stops a function -> queue -> same function chain after 16 hops) */
  readonly recursiveLoop?: RecursiveLoop;
}

export interface FencedFunction {
  readonly fn: NodejsFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;
}

/**
 * Creates `<id>` (the function), `<id>Role` and `<id>Logs` in `scope`. The function's construct
 * id is the bare name (`Worker`), so tools find it by that name in the template.
 */
export function fencedFunction(scope: Construct, id: string, props: FencedFunctionProps): FencedFunction {
  const logGroup = new LogGroup(scope, `${id}Logs`, {
    retention: props.logRetention ?? RetentionDays.ONE_MONTH,
    // Kept on `cdk destroy`: an incident with an external effect is investigated from these logs
    // (which run sent what to whom, which holder was refused), and the retention above still ages them out. Not kept when
    // the deploy that created them rolls back: there is nothing in them yet.
    removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
  });
  // An explicit role instead of AWSLambdaBasicExecutionRole: that managed policy allows writing to
  // every log group in the account; this one allows the function's own log group only.
  const role = new Role(scope, `${id}Role`, {
    assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
    description: `${props.description} (execution role)`,
  });
  logGroup.grantWrite(role);

  const fn = new NodejsFunction(scope, id, {
    entry: isAbsolute(props.entry) ? props.entry : join(PROJECT_ROOT, props.entry),
    handler: 'handler',
    projectRoot: PROJECT_ROOT,
    depsLockFilePath: join(PROJECT_ROOT, 'package-lock.json'),
    description: props.description,
    runtime: RUNTIME,
    architecture: ARCHITECTURE,
    memorySize: props.memorySize,
    timeout: props.timeout,
    role,
    logGroup,
    loggingFormat: LoggingFormat.JSON,
    applicationLogLevelV2: ApplicationLogLevel.INFO,
    systemLogLevelV2: SystemLogLevel.WARN,
    // Active tracing is set on the L1 below: Tracing.ACTIVE would put its "*" statement in the
    // role's default policy, where a "*" a fork adds later would hide behind the same acknowledgement.
    environment: { ...props.environment },
    ...(props.deadLetterQueue ? { deadLetterQueue: props.deadLetterQueue } : {}),
    recursiveLoop: props.recursiveLoop ?? RecursiveLoop.TERMINATE,
    bundling: {
      format: OutputFormat.ESM,
      target: 'node24',
      mainFields: ['module', 'main'],
      minify: true,
      // Error classes set `name = new.target.name` and callers match on it: keep names through minification.
      keepNames: true,
      sourceMap: false,
      // Bundle everything, the AWS SDK included (see the header).
      externalModules: [],
      bundleAwsSDK: true,
      // CommonJS dependencies inside an ESM bundle still call require() (e.g. Powertools Tracer).
      banner: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
      tsconfig: join(PROJECT_ROOT, 'tsconfig.json'),
      forceDockerBundling: false,
    },
  });

  (fn.node.defaultChild as CfnFunction).tracingConfig = { mode: Tracing.ACTIVE };
  const tracing = new Policy(scope, `${id}Tracing`, {
    roles: [role],
    statements: [new PolicyStatement({ actions: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], resources: ['*'] })],
  });
  // Lambda checks at create time that an actively traced function's role may write to X-Ray.
  fn.node.addDependency(tracing);
  // AwsSolutions-IAM5 on this policy alone: it holds the X-Ray statement and nothing else, so a
  // "*" resource added anywhere else in the role is still reported.
  Validations.of(tracing).acknowledge({
    id: 'AwsSolutions::AwsSolutions-IAM5[Resource::*]',
    reason:
      'This policy holds only the X-Ray statement active tracing needs: xray:PutTraceSegments and xray:PutTelemetryRecords ' +
      'support no resource-level permissions (Service Authorization Reference, AWS X-Ray), so Resource is "*". Every ' +
      "data-plane statement is in the role's default policy, names its table, index or queue ARN, and is not acknowledged.",
  });
  return { fn, role, logGroup };
}
