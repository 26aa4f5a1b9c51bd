// tier: full
/**
 * `npm start -- --s3-endpoint URL --bucket B --smtp HOST:PORT` against servers the run did not
 * start: an SMTP server of this test's own (smtp-server, none of the project's sink code), the
 * project's S3 endpoint as its own process (`npm run cli -- s3-endpoint`), the test run's DynamoDB
 * Local. What the external servers received is read from them, not from the run's report; and
 * the report must say what its checker could not read (the SMTP server's record) instead of
 * passing it over (the human report prints the same on the DELIVERY line: "PASS (partly
 * unchecked)  DELIVERY: ..."). Then the standalone commands and the refusals of bad flags and dead servers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../cli/local/dynamodb-local.js';
import { documentSet } from '../cli/demo/demo.js';
import { headerOf } from '../cli/local/smtp-sink.js';
import { createDynamo, scanAll } from '../lib/protocol/index.js';
import { messageIdentity, tableNames } from '../lib/workflow/index.js';
import { s3Client, SmtpEmailProvider } from '../lib/workflow/adapters/index.js';
import { customerId } from '../lib/workloads/invoices/invoices.js';
import { PERIODS } from '../cli/demo/run.js';
import { runCli } from './support/cli.js';
import { expectOneLineError, startTsx, tsx, type Running } from './support/spawn.js';

const endpoint = inject('dynamoEndpoint');
const CUSTOMERS = 4;
const BUCKET = 'external-documents';
const dir = mkdtempSync(join(tmpdir(), 'fenced-external-'));
const received: string[] = [];
let smtp: SMTPServer;
let smtpPort: number;
let s3: Running;
let s3Url: string;

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push(Buffer.concat(chunks).toString('utf8'));
        callback();
      });
    },
  });
  smtpPort = await freePort();
  await new Promise<void>((resolve) => smtp.listen(smtpPort, '127.0.0.1', resolve));
  s3 = startTsx('cli/main.ts', ['s3-endpoint', '--port', String(await freePort())]);
  s3Url = (await s3.waitFor(/is running at (http:\/\/127\.0\.0\.1:\d+) until Ctrl-C/))[1]!;
});

afterAll(async () => {
  await s3?.stop('SIGINT');
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('npm start against an external SMTP server and S3 endpoint', () => {
  it('every email reaches the SMTP server once and every document the bucket; the invariants pass, and DELIVERY says the SMTP server was not counted', async () => {
    const prefix = `t-external-${randomBytes(4).toString('hex')}-`;
    const args = ['demo', '--json', '--endpoint', endpoint, '--table-prefix', prefix, '--customers', String(CUSTOMERS), '--workers', '2'];
    const r = await tsx('cli/main.ts', [...args, '--s3-endpoint', s3Url, '--bucket', BUCKET, '--smtp', `127.0.0.1:${smtpPort}`, '--out', join(dir, 't.svg')], { killAfterMs: 90_000 });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.ok).toBe(true);
    for (const [name, inv] of Object.entries(report.invariants as Record<string, { ok: boolean; unchecked?: string[] }>)) {
      expect(inv.ok, name).toBe(true);
      if (name !== 'DELIVERY') expect(inv.unchecked, name).toBeUndefined();
    }
    expect(report.invariants.DELIVERY.unchecked).toEqual([expect.stringContaining(`SMTP 127.0.0.1:${smtpPort} keeps no record this run can read`)]);
    // An invoice email per customer, and its payment's follow-up (a receipt, or a declined card's email).
    expect(report.stats.effects.emails).toMatchObject({ items: CUSTOMERS * PERIODS.length + report.stats.effects.chains.followUps, recordChecked: false });
    expect(report.run.effects.notInjected).toEqual([expect.stringContaining('a lost S3 put answer'), expect.stringContaining('a lost SMTP acknowledgement')]);

    // The SMTP server's own record: one message per outbox id of the run, each with its identity.
    const outbox = tableNames(prefix).outbox;
    const ids = received.filter((m) => headerOf(m, 'X-Outbox-Table') === outbox).map((m) => headerOf(m, 'X-Outbox-Id'));
    const { doc, client } = createDynamo({ endpoint });
    const items = await scanAll(doc, outbox);
    // The invoice emails, and the payments' follow-up emails (a receipt, or the declined card's email).
    const followUps = items.filter((i) => i.kind === 'email' && i.parent !== undefined).map((i) => String(i.pk));
    expect(followUps).toHaveLength(CUSTOMERS * PERIODS.length);
    const expected = [...PERIODS.flatMap((p) => Array.from({ length: CUSTOMERS }, (_, i) => `email#${p}#${customerId(i)}`)), ...followUps];
    expect([...ids].sort()).toEqual([...expected].sort());
    for (const m of received.filter((x) => headerOf(x, 'X-Outbox-Table') === outbox)) expect(headerOf(m, 'Message-ID')).toBe(messageIdentity.messageId(outbox, headerOf(m, 'X-Outbox-Id')!));
    // The sender killed after the server accepted: no record to ask, so UNKNOWN, and not sent again.
    const unknown = items.filter((i) => i.status === 'UNKNOWN');
    expect(unknown.map((i) => i.failureReason)).toEqual(['the email provider keeps no record this reconciler can ask']);
    expect(items.filter((i) => i.kind === 'email' && i.status !== 'SENT' && i.status !== 'UNKNOWN')).toEqual([]);

    // The bucket's own answer: every invoice's document is there, with the ETag its pointer holds.
    const invoices = (await scanAll(doc, tableNames(prefix).records)).filter((i) => String(i.pk).startsWith('invoice#'));
    expect(invoices).toHaveLength(CUSTOMERS * PERIODS.length);
    const store = s3Client({ endpoint: s3Url });
    for (const i of invoices) {
      expect(String(i.documentKey).startsWith(`${documentSet(prefix)}/invoices/`)).toBe(true);
      await expect(store.send(new HeadObjectCommand({ Bucket: BUCKET, Key: String(i.documentKey), IfMatch: String(i.documentEtag) }))).resolves.toMatchObject({ $metadata: { httpStatusCode: 200 } });
    }
    store.destroy();
    client.destroy();
  }, 90_000);
});

describe('the standalone servers and the refusals', () => {
  it('npm run cli -- smtp-sink prints a line per message and stops on Ctrl-C', async () => {
    const port = await freePort();
    const sink = startTsx('cli/main.ts', ['smtp-sink', '--port', String(port)]);
    await sink.waitFor(new RegExp(`SMTP sink is running at 127\\.0\\.0\\.1:${port} until Ctrl-C`));
    const headers = messageIdentity.headers('some-outbox', 'email#2026-01#cust-0000001');
    const sent = await new SmtpEmailProvider({ host: '127.0.0.1', port }).send({ from: 'a@example.com', to: 'b@example.com', subject: 's', text: 't', messageId: '<m@x>', headers, tags: {} });
    expect(sent.kind).toBe('accepted');
    await sink.waitFor(/received \w+: To b@example\.com, X-Outbox-Id email#2026-01#cust-0000001/);
    const stopped = await sink.stop('SIGINT');
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toContain('stopped (1 messages received)');
  });

  it('bad flags, a taken port and servers that do not answer are one line and exit 2, before any table exists', async () => {
    const prefix = `t-external-${randomBytes(4).toString('hex')}-`;
    const where = ['--endpoint', endpoint, '--table-prefix', prefix, '--out', join(dir, 'x.svg')];
    const s3Port = Number(new URL(s3Url).port);
    const cases: [string[], ...string[]][] = [
      [['s3-endpoint', '--port', 'x'], '--port: must be an integer'],
      [['smtp-sink', '--port', '70000'], '--port: must be an integer'],
      [['s3-endpoint', '--port', String(s3Port)], `port ${s3Port} is in use`, `--s3-endpoint http://127.0.0.1:${s3Port}`],
      [['smtp-sink', '--port', String(smtpPort)], `port ${smtpPort} is in use`, `--smtp 127.0.0.1:${smtpPort}`],
      [['demo', ...where, '--smtp', 'nohost'], '--smtp: must be HOST:PORT'],
      [['demo', ...where, '--bucket', BUCKET], '--bucket: names a bucket of --s3-endpoint URL'],
      [['demo', ...where, '--s3-endpoint', s3Url, '--bucket', 'Bad_Bucket'], '--bucket: must be an S3 bucket name'],
      [['demo', ...where, '--smtp', `127.0.0.1:${await freePort()}`], 'did not greet as an SMTP server', 'smtp-sink'],
      [['demo', ...where, '--s3-endpoint', `http://127.0.0.1:${await freePort()}`], 'did not answer HeadBucket', 's3-endpoint'],
    ];
    // In process (main() returns the exit code): test/cli-errors.test.ts runs cli/main.ts's refusal as a real process.
    for (const [args, ...mentions] of cases) expectOneLineError({ ...(await runCli(args)), ms: 0 }, ...mentions);
    const { client } = createDynamo({ endpoint });
    for (const set of [prefix, `${prefix}incident-`, `${prefix}incident-unsafe-`]) {
      for (const TableName of Object.values(tableNames(set))) await expect(client.send(new DescribeTableCommand({ TableName }))).rejects.toMatchObject({ name: 'ResourceNotFoundException' });
    }
    client.destroy();
  }, 30_000);
});
