/**
 * The worker as Lambda gets it: functions/worker.ts bundled by esbuild with the options the CDK
 * NodejsFunction uses in infra/constructs/function.ts (read from that file, so the figure
 * follows the stack: format, target, minify, keepNames, mainFields, banner, externals and
 * whether the AWS SDK is bundled). Also the same bundle with `@aws-sdk/*` external, the
 * NodejsFunction default for Node >= 18 runtimes, for comparison, and the largest contributors.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';

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

async function bundleSize(opts: BundleOptions, externals: string[]): Promise<{ bytes: number; metafile: Metafile }> {
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
    write: false,
    metafile: true,
    outfile: 'index.mjs',
    logLevel: 'silent',
  });
  return { bytes: out.outputFiles.reduce((n, f) => n + f.contents.byteLength, 0), metafile: out.metafile };
}

export async function measureBundle(): Promise<BundleResult> {
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
  return { options, kb: deployed.bytes / 1024, sdkExternalKb: sdkExternal.bytes / 1024, top };
}
