/**
 * The worker as Lambda gets it: functions/worker.ts bundled by esbuild with the options the CDK
 * NodejsFunction uses in infra/constructs/function.ts (read from that file, so the figure
 * follows the stack: format, target, minify, keepNames, mainFields, banner, externals and
 * whether the AWS SDK is bundled). Also the same bundle with `@aws-sdk/*` external, the
 * NodejsFunction default for Node >= 18 runtimes, for comparison, and the largest contributors.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { ENV } from '../lib/workflow/index.js';
import { median } from './stats.js';

const run = promisify(execFile);

const ROOT = fileURLToPath(new URL('../', import.meta.url));

export interface BundleOptions {
  format: 'esm' | 'cjs';
  target: string;
  minify: boolean;
  keepNames: boolean;
  mainFields: string[];
  banner?: string;
  externals: string[];
  bundleAwsSdk: boolean;
}

export interface BundleResult {
  options: BundleOptions;
  /** As deployed (the stack's options), KB = 1024 bytes. */
  kb: number;
  /** With @aws-sdk/* left to the Lambda runtime. */
  sdkExternalKb: number;
  /** Largest packages in the deployed bundle, KB. */
  top: { name: string; kb: number }[];
  /**
   * Module load + init of the worker in a fresh Node process (what Lambda reports as part of
   * Init Duration), median over alternating rounds, ms: the bundle as deployed vs the bundle
   * importing `@aws-sdk/*` from a node_modules folder beside it, as from the runtime's copy.
   */
  init: { rounds: number; bundledMs: number; runtimeSdkMs: number };
}

/** The bundling options of infra/constructs/function.ts, read from its source. */
export function stackBundlingOptions(source = readFileSync(`${ROOT}infra/constructs/function.ts`, 'utf8')): BundleOptions {
  const bundling = source.slice(source.indexOf('bundling:'));
  const pick = (re: RegExp): string | undefined => re.exec(bundling)?.[1];
  const list = (re: RegExp): string[] =>
    (pick(re) ?? '')
      .split(',')
      .map((x) => x.trim().replace(/^['"`]|['"`]$/g, ''))
      .filter((x) => x !== '');
  const format = pick(/format:\s*OutputFormat\.(\w+)/) === 'CJS' ? 'cjs' : 'esm';
  const banner = pick(/banner:\s*"([^"]*)"/);
  return {
    format,
    target: pick(/target:\s*'([^']+)'/) ?? 'node20',
    minify: pick(/minify:\s*(true|false)/) === 'true',
    keepNames: pick(/keepNames:\s*(true|false)/) === 'true',
    mainFields: list(/mainFields:\s*\[([^\]]*)\]/),
    ...(banner !== undefined ? { banner } : {}),
    externals: list(/externalModules:\s*\[([^\]]*)\]/),
    // NodejsFunction bundles the SDK only when asked (bundleAwsSDK); otherwise @aws-sdk/* is external.
    bundleAwsSdk: pick(/bundleAwsSDK:\s*(true|false)/) === 'true',
  };
}

/** Bundles the worker to `outfile` with the stack's options; its size in bytes and esbuild's metafile. */
async function bundleTo(outfile: string, opts: BundleOptions, externals: string[]): Promise<{ bytes: number; metafile: Metafile }> {
  const out = await build({
    entryPoints: [`${ROOT}functions/worker.ts`],
    bundle: true,
    platform: 'node',
    format: opts.format,
    target: opts.target,
    minify: opts.minify,
    keepNames: opts.keepNames,
    ...(opts.mainFields.length > 0 ? { mainFields: opts.mainFields } : {}),
    ...(opts.banner ? { banner: { js: opts.banner } } : {}),
    external: externals,
    tsconfig: `${ROOT}tsconfig.json`,
    metafile: true,
    outfile,
    logLevel: 'silent',
  });
  return { bytes: readFileSync(outfile).byteLength, metafile: out.metafile };
}

/** The configuration the worker reads at init (nothing is sent: init builds clients, it does not call them). */
const INIT_ENV = {
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  AWS_LAMBDA_FUNCTION_NAME: 'Worker',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  [ENV.leasesTable]: 'Leases',
  [ENV.fencesTable]: 'Fences',
  [ENV.jobsTable]: 'Jobs',
  [ENV.recordsTable]: 'Invoices',
  [ENV.outboxTable]: 'Outbox',
  [ENV.documentsBucket]: 'documents',
  [ENV.queueUrl]: 'http://127.0.0.1:9/000000000000/unused',
  [ENV.epoch]: '0',
  POWERTOOLS_SERVICE_NAME: 'worker',
  POWERTOOLS_METRICS_NAMESPACE: 'FencedWorkflow',
};

/** One fresh Node process: ms from before `import()` of the handler module to after its init. */
async function initMs(file: string, env: Record<string, string>): Promise<number> {
  const script = `const t0 = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); process.stdout.write(String(performance.now() - t0));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 });
  return Number(stdout);
}

/**
 * Times the init of both bundles in alternating fresh processes. The runtime-SDK variant finds
 * `@aws-sdk/*` through a node_modules link beside its task directory (Lambda's Node.js runtimes
 * resolve ES module imports through NODE_PATH, /var/runtime/node_modules; a link is the same
 * lookup without Lambda's loader).
 */
async function measureInit(bundled: string, external: string, rounds: number): Promise<BundleResult['init']> {
  const a: number[] = [];
  const b: number[] = [];
  // One discarded pair warms the page cache for both; then the order alternates.
  for (let r = -1; r < rounds; r++) {
    const bundledFirst = r % 2 === 0;
    const first = await initMs(bundledFirst ? bundled : external, INIT_ENV);
    const second = await initMs(bundledFirst ? external : bundled, INIT_ENV);
    if (r < 0) continue;
    a.push(bundledFirst ? first : second);
    b.push(bundledFirst ? second : first);
  }
  return { rounds, bundledMs: median(a), runtimeSdkMs: median(b) };
}

/** Largest packages in a bundle, by bytes in the output. */
function largestPackages(metafile: Metafile, n: number): BundleResult['top'] {
  const byPackage = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [file, input] of Object.entries(output.inputs)) {
      const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
      const name = m ? m[1]! : file.split('/')[0]!;
      byPackage.set(name, (byPackage.get(name) ?? 0) + input.bytesInOutput);
    }
  }
  return [...byPackage]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, bytes]) => ({ name, kb: bytes / 1024 }));
}

/** Both bundles are built once, into a temporary task root, and measured for size and init there. */
export async function measureBundle(opts: { initRounds: number }): Promise<BundleResult> {
  const options = stackBundlingOptions();
  const sdkExternals = [...options.externals, '@aws-sdk/*'];
  const dir = mkdtempSync(join(tmpdir(), 'bench-bundle-'));
  try {
    const bundledFile = join(dir, 'deployed', 'index.mjs');
    const externalFile = join(dir, 'runtime', 'task', 'index.mjs');
    const deployed = await bundleTo(bundledFile, options, options.bundleAwsSdk ? options.externals : sdkExternals);
    const sdkExternal = await bundleTo(externalFile, options, sdkExternals);
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'runtime', 'node_modules'), 'dir');
    const init = await measureInit(bundledFile, externalFile, opts.initRounds);
    return { options, kb: deployed.bytes / 1024, sdkExternalKb: sdkExternal.bytes / 1024, top: largestPackages(deployed.metafile, 8), init };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
