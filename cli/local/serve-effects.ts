/**
 * `npm run cli -- s3-endpoint [--port N]` and `npm run cli -- smtp-sink [--port N]`: the local
 * S3-compatible endpoint and the SMTP sink `npm start` embeds, each on its own until Ctrl-C, for
 * `npm start -- --s3-endpoint URL --bucket NAME` and `--smtp HOST:PORT` (and to look at what a run
 * put and sent). Loopback only: neither checks credentials. In memory: what they hold goes with them.
 */
import { headerOf, startSmtpSink } from './smtp-sink.js';
import { startS3Endpoint } from './s3-endpoint.js';
import { DEFAULT_BUCKET } from './effects-env.js';
import { parseFlags } from '../shared/flags.js';
import { portFlag, untilStopped } from './serve.js';

export const S3_DEFAULT_PORT = 9000;
export const SMTP_DEFAULT_PORT = 2525;

export const S3_HELP = `npm run cli -- s3-endpoint [--port N]: the local S3-compatible endpoint (path-style, conditional
writes as S3 does them, versioned buckets, no authentication, in memory) on http://127.0.0.1:N
(default ${S3_DEFAULT_PORT}) until Ctrl-C. Then, in another terminal:
  npm start -- --s3-endpoint http://127.0.0.1:${S3_DEFAULT_PORT} --bucket ${DEFAULT_BUCKET}
`;

export const SMTP_HELP = `npm run cli -- smtp-sink [--port N]: an SMTP server on 127.0.0.1:N (default ${SMTP_DEFAULT_PORT}) that accepts
every message and prints one line per message, until Ctrl-C. Then, in another terminal:
  npm start -- --smtp 127.0.0.1:${SMTP_DEFAULT_PORT}
(npm start cannot read this sink's record: its checker says the deliveries were not counted.)
`;

function serveFlags(argv: string[]): { port: string | undefined; help: boolean } {
  const { values } = parseFlags({ args: argv, options: { port: { type: 'string' }, help: { type: 'boolean', default: false } }, allowPositionals: false });
  return { port: values.port, help: values.help };
}

const say = (lines: string[]): void => void process.stdout.write(lines.map((l) => `${l}\n`).join(''));

export async function serveS3Endpoint(argv: string[]): Promise<number> {
  const flags = serveFlags(argv);
  if (flags.help) {
    process.stdout.write(S3_HELP);
    return 0;
  }
  const port = await portFlag(flags.port, S3_DEFAULT_PORT, (p) => `port ${p} is in use on 127.0.0.1 (an S3 endpoint already running there? then use it: --s3-endpoint http://127.0.0.1:${p}); or pick another port with --port N`);
  const s3 = await startS3Endpoint({ port });
  say([`S3-compatible endpoint (in memory, no authentication) is running at ${s3.url} until Ctrl-C.`, 'In another terminal:', `  npm start -- --s3-endpoint ${s3.url} --bucket ${DEFAULT_BUCKET}`]);
  await untilStopped();
  await s3.close();
  say([`S3 endpoint at ${s3.url} stopped.`]);
  return 0;
}

export async function serveSmtpSink(argv: string[]): Promise<number> {
  const flags = serveFlags(argv);
  if (flags.help) {
    process.stdout.write(SMTP_HELP);
    return 0;
  }
  const port = await portFlag(flags.port, SMTP_DEFAULT_PORT, (p) => `port ${p} is in use on 127.0.0.1 (an SMTP server already running there? then use it: --smtp 127.0.0.1:${p}); or pick another port with --port N`);
  const sink = await startSmtpSink({
    port,
    onReceived: (m) => say([`received ${m.queueId}: To ${headerOf(m.raw, 'To') ?? '?'}, X-Outbox-Id ${headerOf(m.raw, 'X-Outbox-Id') ?? '-'}`]),
  });
  say([`SMTP sink is running at ${sink.host}:${sink.port} until Ctrl-C; one line per message received.`, 'In another terminal:', `  npm start -- --smtp ${sink.host}:${sink.port}`]);
  await untilStopped();
  await sink.close();
  say([`SMTP sink at ${sink.host}:${sink.port} stopped (${sink.received.length} messages received).`]);
  return 0;
}
