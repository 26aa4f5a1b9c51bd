/** Command-line flag parsing shared by the CLIs (npm start, chaos, bench, fuzz), and their one-line errors. */
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { isHttpUrl } from '../lib/workflow/index.js';
import { ConfigError, FencedError, InvalidInputError } from '../lib/protocol/index.js';

/** An integer flag in [min, max], or the fallback when absent; anything else is an InvalidInputError naming the flag. */
export function intFlag(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isSafeInteger(v) || v < min || v > max) {
    throw new InvalidInputError(`--${name}`, `must be an integer in [${min}, ${max}], got "${raw}"`);
  }
  return v;
}

/** An http(s) URL flag (an endpoint, a queue URL: lib/workflow/config.ts isHttpUrl), or undefined when absent. */
export function urlFlag(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (!isHttpUrl(raw)) throw new InvalidInputError(`--${name}`, `must be an http(s) URL, got "${raw}"`);
  return raw;
}

/** Node's parseArgs (strict unless told otherwise) with its errors (unknown option, missing value) turned into InvalidInputError. */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (e) {
    if (isParseArgsError(e)) throw new InvalidInputError('flags', e.message);
    throw e;
  }
}

const isParseArgsError = (e: unknown): e is TypeError =>
  e instanceof TypeError && 'code' in e && String((e as { code: unknown }).code).startsWith('ERR_PARSE_ARGS');

/**
 * A file the command will write at the end (--out): checked before the run, so a bad path is
 * refused at once instead of after minutes of work. Nothing is created here.
 */
export function outFileFlag(name: string, raw: string): string {
  const path = resolve(raw);
  const refuse = (why: string) => new InvalidInputError(`--${name}`, `cannot write "${raw}": ${why}`);
  const existing = statOrUndefined(path);
  if (existing?.isDirectory()) throw refuse('it is a directory; name a file, e.g. out/timeline.svg');
  if (existing !== undefined) {
    if (!writable(path)) throw refuse('the file is not writable');
    return path;
  }
  // The nearest folder that exists must be a writable folder (the rest is created at the end).
  let dir = dirname(path);
  for (;;) {
    const s = statOrUndefined(dir);
    if (s !== undefined) {
      if (!s.isDirectory()) throw refuse(`${dir} is a file, not a folder`);
      if (!writable(dir)) throw refuse(`the folder ${dir} is not writable`);
      return path;
    }
    const up = dirname(dir);
    if (up === dir) throw refuse('no folder of it exists');
    dir = up;
  }
}

function statOrUndefined(path: string) {
  try {
    return statSync(path);
  } catch (e) {
    // ENOTDIR: a file stands where a folder of the path should; the walk up finds it.
    if (['ENOENT', 'ENOTDIR'].includes((e as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw e;
  }
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The one line a CLI prints for an error a person can act on (bad input, a missing tool, an
 * endpoint that does not answer), or undefined for anything else (a bug: the caller shows it whole).
 */
export function userErrorLine(e: unknown): string | undefined {
  // Node's own messages can run over several lines ("argument is ambiguous. Did you forget ..."): one line here.
  const flat = (m: string) => m.replace(/\s*\n\s*/g, ' ');
  if (isParseArgsError(e)) return `error: ${flat(e.message)} (--help for usage)`;
  if (!(e instanceof FencedError)) return undefined;
  const usage = e instanceof InvalidInputError || (e instanceof ConfigError && !['prerequisites', 'java'].includes(e.variable));
  return `error: ${flat(e.message)}${usage ? ' (--help for usage)' : ''}`;
}
