/**
 * A bundled function run the way Lambda runs it: a fresh Node process imports `index.mjs` from a
 * directory holding nothing else (no node_modules to fall back on) and calls `handler` once per
 * event, in order, in that one process (a warm container), with a Lambda context; and the
 * environment the stack gives the function, each resource reference replaced by its local
 * counterpart.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { IConstruct } from 'constructs';
import { localRegion, localSigningKeys } from '../../lib/protocol/index.js';
import { logicalId, tempDir } from './support.js';
import type { WireRequest } from './wire-calls.js';

const run = promisify(execFile);

export interface BundleRun {
  /** What `handler` returned, per event. */
  results: unknown[];
  stdout: string;
  /** The JSON log lines (Powertools Logger), without the metric lines. */
  logs: Record<string, unknown>[];
  /** The CloudWatch EMF lines (Powertools Metrics). */
  emf: Record<string, unknown>[];
  /** Every HTTP request the process sent (wire-preload.mjs), for the IAM evaluation of its calls. */
  wire: WireRequest[];
}

export interface BundleOptions {
  /** The function's name in its context and its AWS_LAMBDA_FUNCTION_NAME. */
  functionName: string;
  events: readonly unknown[];
  /** The function's environment (lambdaEnvironment) and anything the Lambda service would add. */
  env: Readonly<Record<string, string>>;
}

const jsonLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

export async function runBundle(assetDir: string, opts: BundleOptions): Promise<BundleRun> {
  const taskRoot = tempDir('fenced-task-');
  cpSync(assetDir, taskRoot, { recursive: true });
  const resultFile = join(taskRoot, 'results.json');
  const wireFile = join(taskRoot, 'wire.jsonl');
  const name = opts.functionName;
  const bootstrap = [
    `const { handler } = await import(${JSON.stringify(pathToFileURL(join(taskRoot, 'index.mjs')).href)});`,
    'const results = [];',
    'for (const [i, event] of JSON.parse(process.env.TEST_EVENTS).entries()) {',
    `  const context = { awsRequestId: 'req-' + (i + 1), functionName: '${name}', functionVersion: '$LATEST', memoryLimitInMB: '512', invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:${name}', getRemainingTimeInMillis: () => 60_000 };`,
    '  results.push(await handler(event, context));',
    '}',
    `(await import('node:fs')).writeFileSync(process.env.TEST_RESULT, JSON.stringify(results));`,
  ].join('\n');
  const preload = pathToFileURL(join(import.meta.dirname, 'wire-preload.mjs')).href;
  const { stdout } = await run(process.execPath, ['--import', preload, '--input-type=module', '-e', bootstrap], {
    cwd: taskRoot,
    timeout: 30_000,
    env: {
      PATH: process.env.PATH ?? '',
      LAMBDA_TASK_ROOT: taskRoot,
      _HANDLER: 'index.handler',
      AWS_REGION: localRegion(),
      // Lambda gives every function its role's session credentials; local servers accept any.
      // This test file's key: DynamoDB Local keeps a database per key (test/support/own-database.ts).
      AWS_ACCESS_KEY_ID: localSigningKeys().accessKeyId,
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_SESSION_TOKEN: 'local',
      AWS_LAMBDA_FUNCTION_NAME: name,
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      ...opts.env,
      TEST_EVENTS: JSON.stringify(opts.events),
      TEST_RESULT: resultFile,
      TEST_WIRE: wireFile,
    },
  });
  const lines = jsonLines(stdout);
  const wire = existsSync(wireFile) ? readFileSync(wireFile, 'utf8').trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as WireRequest) : [];
  return { results: JSON.parse(readFileSync(resultFile, 'utf8')) as unknown[], stdout, logs: lines.filter((l) => !('_aws' in l)), emf: lines.filter((l) => '_aws' in l), wire };
}

/** The sum of a metric over EMF lines (a value or a list of values per line). */
export function metricSum(emf: readonly Record<string, unknown>[], name: string): number {
  return emf.reduce((s, m) => s + (typeof m[name] === 'number' ? (m[name] as number) : Array.isArray(m[name]) ? (m[name] as number[]).reduce((a, b) => a + b, 0) : 0), 0);
}

/**
 * The environment the template gives `fn`, with every value that is a reference (a table name,
 * the bucket, the queue URL, the configuration set) replaced by `local[name]`, plus `extra` (what
 * only the local run needs: endpoints, which may stand in for a reference too). A reference with
 * no local value is an error: the bundle
 * would run with a variable the stack sets missing.
 */
export function lambdaEnvironment(template: { Resources: Record<string, { Properties?: { Environment?: { Variables?: Record<string, unknown> } } }> }, fn: IConstruct, local: Readonly<Record<string, string>>, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const vars = template.Resources[logicalId(fn)]?.Properties?.Environment?.Variables ?? {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(vars)) {
    if (typeof v === 'string') out[k] = v;
    else if (local[k] !== undefined) out[k] = local[k]!;
    // An endpoint the local run gives itself (the sandbox provider's function URL, a local provider).
    else if (extra[k] !== undefined) continue;
    else throw new TypeError(`${k} is ${JSON.stringify(v)} in the template and has no local value`);
  }
  return { ...out, ...extra };
}
