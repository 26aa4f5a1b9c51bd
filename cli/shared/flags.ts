/** Command-line flag parsing shared by the CLIs (npm start, chaos, bench, fuzz), and their one-line errors. */
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { isHttpUrl } from '../../lib/workflow/index.js';
import { ConfigError, FencedError, InvalidInputError } from '../../lib/protocol/index.js';

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

/**
 * Node's parseArgs (strict unless told otherwise) with its errors (unknown option, missing value)
 * turned into InvalidInputError. A value flag followed by a negative number (`--customers -5`)
 * takes it as its value, as `--customers=-5` does, so the flag's own check names what is wrong
 * with it; an unknown flag close to a known one is answered with "did you mean".
 */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs({ ...config, args: joinNegativeValues(config) } as T);
  } catch (e) {
    if (isParseArgsError(e)) throw new InvalidInputError('flags', unknownFlagHint(e, Object.keys(config.options ?? {})) ?? e.message);
    throw e;
  }
}

/** `--name -5` as `--name=-5` for every string flag: parseArgs would take "-5" for a flag of its own. */
function joinNegativeValues(config: ParseArgsConfig): string[] {
  const args = config.args ?? process.argv.slice(2);
  const options = config.options ?? {};
  const takesValue = (a: string): boolean => {
    const long = a.startsWith('--') ? a.slice(2) : undefined;
    if (long !== undefined) return options[long]?.type === 'string';
    return /^-[^-]$/.test(a) && Object.values(options).some((o) => o.short === a.slice(1) && o.type === 'string');
  };
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') return [...out, ...args.slice(i)];
    const next = args[i + 1];
    if (next !== undefined && /^-\d/.test(next) && takesValue(a)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/** "Unknown option '--custmers'; did you mean --customers?" when a known flag is that close, else undefined. */
function unknownFlagHint(e: TypeError, known: readonly string[]): string | undefined {
  if ((e as { code?: unknown }).code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return undefined;
  const flag = /Unknown option '(--?[^']+)'/.exec(e.message)?.[1];
  if (flag === undefined || !flag.startsWith('--')) return undefined;
  const near = nearestName(flag.slice(2).split('=')[0]!, known);
  return near === undefined ? undefined : `Unknown option '${flag}'; did you mean --${near}?`;
}

/** Levenshtein distance: insertions, deletions and substitutions, one each. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * The known name nearest to `name` when it is close enough to be a typo of it (at most a third
 * of its letters off, at least one allowed), else undefined. Ties go to the first known.
 */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  let best: { k: string; d: number } | undefined;
  for (const k of known) {
    const d = editDistance(name.toLowerCase(), k.toLowerCase());
    if (best === undefined || d < best.d) best = { k, d };
  }
  const allowed = Math.max(1, Math.floor(Math.max(name.length, 3) / 3));
  return best !== undefined && best.d > 0 && best.d <= allowed ? best.k : undefined;
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
