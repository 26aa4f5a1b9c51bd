/**
 * `npm run dynamodb [-- --port N]`: the project's DynamoDB Local (the same jar and launcher as
 * `npm start` and the tests), kept running until Ctrl-C, so that `npm start -- --endpoint`, the
 * ops CLI, chaos and bench can share one and its tables outlive each run. In memory: its tables
 * go when it stops.
 */
import { startDynamoLocal } from './dynamodb-local.js';
import { parseFlags } from '../shared/flags.js';
import { portFlag, untilStopped } from './serve.js';

export const DEFAULT_PORT = 8000;

export const SERVE_HELP = `npm run dynamodb [-- --port N]: DynamoDB Local (in memory) on http://127.0.0.1:N (default ${DEFAULT_PORT}),
kept until Ctrl-C; its tables go with it. Then, in another terminal:
  npm start -- --endpoint http://127.0.0.1:${DEFAULT_PORT}          prints the table prefix it used
  npm run cli -- status --endpoint http://127.0.0.1:${DEFAULT_PORT} --table-prefix <that prefix>
`;

export async function serveDynamoLocal(argv: string[]): Promise<number> {
  const { values } = parseFlags({
    args: argv,
    options: { port: { type: 'string' }, help: { type: 'boolean', default: false } },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(SERVE_HELP);
    return 0;
  }
  const port = await portFlag(
    values.port,
    DEFAULT_PORT,
    (p) => `port ${p} is in use on 127.0.0.1 (a DynamoDB Local already running there? then use it: --endpoint http://127.0.0.1:${p}); or pick another port with --port N`,
  );
  const local = await startDynamoLocal({ port });
  const endpoint = local.endpoint;
  process.stdout.write(
    [
      `DynamoDB Local (in memory) is running at ${endpoint} until Ctrl-C; its tables go with it.`,
      'In another terminal:',
      `  npm start -- --endpoint ${endpoint}`,
      `  npm run cli -- status --endpoint ${endpoint} --table-prefix <the prefix npm start printed>`,
      '',
    ].join('\n'),
  );
  // The launcher's child and pipes do not hold the event loop (a demo must be able to exit): untilStopped does.
  const why = await untilStopped(local.exited);
  await local.stop();
  if (why === 'died') {
    process.stderr.write(`error: DynamoDB Local at ${endpoint} exited by itself\n`);
    return 1;
  }
  process.stdout.write(`DynamoDB Local at ${endpoint} stopped.\n`);
  return 0;
}
