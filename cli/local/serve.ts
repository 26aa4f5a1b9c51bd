/**
 * What the commands that keep a local server running share (`npm run dynamodb`, `npm run cli --
 * s3-endpoint`, `npm run cli -- smtp-sink`): the port flag, refused at once when taken, and the
 * wait until Ctrl-C.
 */
import { InvalidInputError } from '../../lib/protocol/index.js';
import { portIsFree } from './dynamodb-local.js';
import { intFlag } from '../shared/flags.js';

/** `--port N`, checked free on 127.0.0.1 before anything starts; `inUse` says what to do when it is not. */
export async function portFlag(raw: string | undefined, fallback: number, inUse: (port: number) => string): Promise<number> {
  const port = intFlag('port', raw, fallback, 1, 65_535);
  if (!(await portIsFree(port))) throw new InvalidInputError('--port', inUse(port));
  return port;
}

/** Keeps the process up until SIGINT, SIGTERM or SIGHUP, or until `died` resolves; says which came first. */
export async function untilStopped(died?: Promise<unknown>): Promise<'signal' | 'died'> {
  // A server's sockets may not hold the event loop (a demo must be able to exit): this does.
  const keepAlive = setInterval(() => undefined, 60_000);
  const stopped = new Promise<'signal'>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => resolve('signal'));
  });
  try {
    return await Promise.race([stopped, ...(died === undefined ? [] : [died.then(() => 'died' as const)])]);
  } finally {
    clearInterval(keepAlive);
  }
}
