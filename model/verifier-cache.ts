/**
 * Compiled verifiers, kept between checks and between runs. `spin -a` and `gcc` are most of a
 * quick model check's CPU (gcc -O2 of the large verifiers alone is about 25 CPU-s of `npm test`),
 * and the `pan` binary they make is a function of the model's text, the defines, the compile
 * flags and the tools' versions: that is the key. A change to any of them compiles anew; an
 * unchanged model reuses its binary. Within a run, checks with the same key share one compile.
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';

export interface VerifierCache {
  /** The folder of kept binaries, one file per key. */
  readonly dir: string;
  /** The tools' version lines (spin and gcc): a new tool compiles anew. */
  readonly tools: string;
}

export interface VerifierInput {
  readonly modelFile: string;
  /** spin's -D arguments. */
  readonly defines: readonly string[];
  /** gcc's flags. */
  readonly compileFlags: readonly string[];
}

/** The key of a verifier: a digest of everything its binary depends on. */
export function verifierKey(cache: VerifierCache, input: VerifierInput): string {
  const h = createHash('sha256');
  for (const part of [cache.tools, readFileSync(input.modelFile, 'utf8'), input.defines.join('\0'), input.compileFlags.join('\0')]) h.update(part).update('\x01');
  return h.digest('hex').slice(0, 32);
}

const inFlight = new Map<string, Promise<string | undefined>>();

/**
 * The path of the verifier for `input`: the kept one, or the one `compile` makes in its work dir
 * (then kept, under a temporary name renamed into place, so a reader never sees half a binary).
 * `compile` resolves undefined when it failed; nothing is kept then.
 */
export async function verifierFor(cache: VerifierCache, input: VerifierInput, compile: () => Promise<string | undefined>): Promise<{ path: string | undefined; cached: boolean }> {
  const kept = join(cache.dir, verifierKey(cache, input));
  if (existsSync(kept)) return { path: kept, cached: true };
  const pending = inFlight.get(kept);
  if (pending !== undefined) return { path: await pending, cached: true };
  const made = (async () => {
    const built = await compile();
    if (built === undefined) return undefined;
    mkdirSync(cache.dir, { recursive: true });
    const tmp = `${kept}.${process.pid}-${randomBytes(4).toString('hex')}`;
    copyFileSync(built, tmp);
    renameSync(tmp, kept);
    return kept;
  })();
  inFlight.set(kept, made);
  try {
    return { path: await made, cached: false };
  } finally {
    inFlight.delete(kept);
  }
}
