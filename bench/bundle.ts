/**
 * The worker as Lambda gets it: functions/worker.ts bundled by esbuild with the options the CDK
 * NodejsFunction uses in infra/constructs/function.ts (read from that file, so the figure
 * follows the stack: format, target, minify, keepNames, mainFields, banner, externals and
 * whether the AWS SDK is bundled). Also the same bundle with `@aws-sdk/*` external, the
 * NodejsFunction default for Node >= 18 runtimes, for comparison, and the largest contributors.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { ENV } from '../lib/config.js';
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
  return {
    format,
    target: pick(/target:\s*'([^']+)'/) ?? 'node20',
    minify: pick(/minify:\s*(true|false)/) === 'true',
    keepNames: pick(/keepNames:\s*(true|false)/) === 'true',
    mainFields: list(/mainFields:\s*\[([^\]]*)\]/),
    ...(pick(/banner:\s*"([^"]*)"/) !== undefined ? { banner: pick(/banner:\s*"([^"]*)"/)! } : {}),
    externals: list(/externalModules:\s*\[([^\]]*)\]/),
    // NodejsFunction bundles the SDK only when asked (bundleAwsSDK); otherwise @aws-sdk/* is external.
    bundleAwsSdk: pick(/bundleAwsSDK:\s*(true|false)/) === 'true',
  };
}

async function bundleSize(opts: BundleOptions, externals: string[], outfile?: string): Promise<{ bytes: number; metafile: Metafile }> {
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
    write: outfile !== undefined,
    metafile: true,
    outfile: outfile ?? 'index.mjs',
    logLevel: 'silent',
  });
  const bytes = outfile === undefined ? out.outputFiles!.reduce((n, f) => n + f.contents.byteLength, 0) : readFileSync(outfile).byteLength;
  return { bytes, metafile: out.metafile };
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
  [ENV.invoicesTable]: 'Invoices',
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
 * Writes both bundles to a temporary task root and times their init in alternating fresh
 * processes. The runtime-SDK variant finds `@aws-sdk/*` through a node_modules link beside its
 * task directory (Lambda's Node.js runtimes resolve ES module imports through NODE_PATH,
 * /var/runtime/node_modules; a link is the same lookup without Lambda's loader).
 */
async function measureInit(opts: BundleOptions, rounds: number, configEnv: Record<string, string>): Promise<BundleResult['init']> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-init-'));
  try {
    const bundled = join(dir, 'bundled', 'index.mjs');
    const external = join(dir, 'runtime', 'task', 'index.mjs');
    await bundleSize(opts, opts.bundleAwsSdk ? opts.externals : [...opts.externals, '@aws-sdk/*'], bundled);
    await bundleSize(opts, [...opts.externals, '@aws-sdk/*'], external);
    mkdirSync(join(dir, 'runtime'), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'runtime', 'node_modules'), 'dir');
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    const a: number[] = [];
    const b: number[] = [];
    // One discarded pair warms the page cache for both; then the order alternates.
    for (let r = -1; r < rounds; r++) {
      const bundledFirst = r % 2 === 0;
      const first = await initMs(bundledFirst ? bundled : external, configEnv);
      const second = await initMs(bundledFirst ? external : bundled, configEnv);
      if (r < 0) continue;
      a.push(bundledFirst ? first : second);
      b.push(bundledFirst ? second : first);
    }
    return { rounds, bundledMs: median(a), runtimeSdkMs: median(b) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function measureBundle(opts: { initRounds: number }): Promise<BundleResult> {
  const options = stackBundlingOptions();
  const deployedExternals = options.bundleAwsSdk ? options.externals : [...options.externals, '@aws-sdk/*'];
  const deployed = await bundleSize(options, deployedExternals);
  const sdkExternal = await bundleSize(options, [...options.externals, '@aws-sdk/*']);
  const byPackage = new Map<string, number>();
  for (const output of Object.values(deployed.metafile.outputs)) {
    for (const [file, input] of Object.entries(output.inputs)) {
      const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
      const name = m ? m[1]! : file.split('/')[0]!;
      byPackage.set(name, (byPackage.get(name) ?? 0) + input.bytesInOutput);
    }
  }
  const top = [...byPackage]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([name, bytes]) => ({ name, kb: bytes / 1024 }));
  const init = await measureInit(options, opts.initRounds, INIT_ENV);
  return { options, kb: deployed.bytes / 1024, sdkExternalKb: sdkExternal.bytes / 1024, top, init };
}
