/**
 * How every command-line script ends. Its entry takes the arguments and returns an exit status;
 * what it throws is mapped here, one way for all of them: a person's mistake (userErrorLine) is one
 * line on stderr and exit 2, anything else is a bug and shows its stack. The scripts' own
 * wrappers and the tests that check the refusals in-process go through the same function.
 */
import { userErrorLine } from './flags.js';

export type Entry = (argv: string[]) => Promise<number>;

export interface EndOptions {
  /** The line for an error that is not a person's mistake. @default its stack */
  bugLine?: (e: unknown) => string;
  /** The exit status of such an error. @default 1 */
  bugStatus?: number;
}

export const stackOf = (e: unknown): string => (e instanceof Error ? (e.stack ?? e.message) : String(e));

/** Runs `entry` and returns the exit status the script ends with, having written the error's line. */
export async function exitStatusOf(entry: Entry, argv: string[], opts: EndOptions = {}): Promise<number> {
  try {
    return await entry(argv);
  } catch (e) {
    const line = userErrorLine(e);
    process.stderr.write(`${line ?? (opts.bugLine ?? stackOf)(e)}\n`);
    return line === undefined ? (opts.bugStatus ?? 1) : 2;
  }
}

/**
 * The script's last line: run `entry` on the process's arguments and exit with its status (at once:
 * the SDK's kept-alive sockets and the local servers' timers would keep the process alive).
 */
export function runScript(entry: Entry, opts: EndOptions = {}): void {
  void exitStatusOf(entry, process.argv.slice(2), opts).then((status) => process.exit(status));
}
