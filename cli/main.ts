/**
 * The project's CLI: `npm start` (the demo, cli/demo/demo.ts), `npm run dynamodb` (a DynamoDB Local
 * that stays), the local S3 endpoint and SMTP sink on their own (cli/local/serve-effects.ts), and the
 * ops commands (cli/ops/ops.ts).
 *
 *   npm start                               incident replay (with and without the fence),
 *                                           a faulted invoice run, the invariant report, a timeline SVG
 *   npm start -- --workload reports         the same run of another registered workload (npm run cli -- workloads)
 *   npm start -- --customers 1000 --workers 6 --seed 3 --json
 *   npm run dynamodb                        DynamoDB Local on http://127.0.0.1:8000 until Ctrl-C
 *   npm run cli -- s3-endpoint / smtp-sink  the local S3 endpoint (:9000) / an SMTP sink (:2525) until Ctrl-C
 *   npm run cli -- status --endpoint http://127.0.0.1:8000 --table-prefix fw-...-
 *   npm run cli -- status --outputs cdk-outputs.json      (a deployed stack, standard credentials)
 *   npm run cli -- requeue 'invoice-run#2026-11' --outputs cdk-outputs.json
 *   npm run cli -- decide 'charge#2026-11#sub-0000007' --accepted --provider-id ch_3Pq --note "..." --outputs cdk-outputs.json
 *   npm run cli -- retry 'charge#2026-11#sub-0000007' --note "card updated" --outputs cdk-outputs.json
 *   npm run cli -- start --items 50 --outputs cdk-outputs.json            (a run now, through the stack's starter)
 *   npm run cli -- redrive --outputs cdk-outputs.json --wait              (the work DLQ back to the work queue)
 *   npm run cli -- cost --template cdk.out/FencedWorkflow.template.json   (a synthesized stack's idle cost)
 *   npm run cli -- raise-epoch --epoch 1 --outputs cdk-outputs.json
 *   npm run cli -- seal --epoch 1 --outputs cdk-outputs.json
 *
 * A person's mistake (a bad flag, a missing tool, an endpoint that does not answer) is one line
 * on stderr and exit 2; only a bug prints a stack trace.
 */
import { InvalidInputError } from '../lib/protocol/index.js';
import { DEMO_HELP, demo, parseDemoFlags } from './demo/demo.js';
import { connectionProblem } from './local/endpoint.js';
import { runScript } from './shared/entry.js';
import { nearestName, userErrorLine } from './shared/flags.js';
import { opsCommand, OPS_COMMANDS } from './ops/ops.js';
import { profileCommand } from './demo/profile.js';
import { serveDynamoLocal } from './local/serve-dynamodb.js';
import { serveS3Endpoint, serveSmtpSink } from './local/serve-effects.js';
import { workloadsCommand } from './ops/workloads.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const COMMANDS = ['demo', 'dynamodb', ...OPS_COMMANDS, 'profile', 's3-endpoint', 'smtp-sink', 'workloads'] as const;

const HELP = `Fenced workflows on DynamoDB — the main job and the ops CLI.

Usage:
  npm start [-- options]                 the demo on an embedded DynamoDB Local (npm start -- --help)
  npm run dynamodb [-- --port N]         a DynamoDB Local that stays until Ctrl-C, for --endpoint
  npm run cli -- s3-endpoint [--port N]  the local S3 endpoint until Ctrl-C, for --s3-endpoint
  npm run cli -- smtp-sink [--port N]    an SMTP sink until Ctrl-C, for --smtp
  npm run cli -- profile [--write]       where the run's writes land, measured (the planner's shares)
  npm run cli -- workloads [--json]      the registered workloads: what each writes, how to run and deploy it
  npm run cli -- <command> [options]     <command> --help for its options

Commands: ${COMMANDS.join(', ')}
`;

export async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  try {
    if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
      process.stdout.write(HELP);
      return 0;
    }
    if (first === 'demo') {
      const flags = parseDemoFlags(rest);
      if (flags === 'help') {
        // The demo's own flags only: every command's help is `npm run cli -- --help`, then `<command> --help`.
        process.stdout.write(`${DEMO_HELP}\nThe other commands (npm run dynamodb, the ops CLI, the local S3 and SMTP servers): npm run cli -- --help\n`);
        return 0;
      }
      return await demo(flags);
    }
    if (first === 'dynamodb') return await serveDynamoLocal(rest);
    if (first === 's3-endpoint') return await serveS3Endpoint(rest);
    if (first === 'smtp-sink') return await serveSmtpSink(rest);
    if (first === 'profile') return await profileCommand(rest);
    if (first === 'workloads') return workloadsCommand(rest);
    if (first.startsWith('-')) {
      throw new InvalidInputError('command', `"${first}" is not a command; \`npm start -- ${first}\` passes flags to the demo, \`npm run cli -- <command> ...\` runs one of ${COMMANDS.join(', ')}`);
    }
    if (!OPS_COMMANDS.includes(first as (typeof OPS_COMMANDS)[number])) {
      const near = nearestName(first, COMMANDS);
      const expected = near === undefined ? `expected one of ${COMMANDS.join(', ')}` : `did you mean "${near}"? (commands: ${COMMANDS.join(', ')})`;
      throw new InvalidInputError('command', `unknown command "${first}"; ${expected}`);
    }
    return await opsCommand(first as (typeof OPS_COMMANDS)[number], rest);
  } catch (e) {
    const line = userErrorLine(e) ?? connectionLine(e, argv);
    if (line === undefined) throw e;
    process.stderr.write(`${line}\n`);
    return 2;
  }
}

/** A request that could not reach DynamoDB at all (the endpoint went away, or never was one). */
function connectionLine(e: unknown, argv: string[]): string | undefined {
  const i = argv.indexOf('--endpoint');
  const problem = connectionProblem(e, i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : 'the endpoint');
  return problem === undefined ? undefined : `error: ${problem}`;
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('cli/main.ts')) runScript(main);
