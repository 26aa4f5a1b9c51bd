/**
 * The local ops loop a newcomer follows from the README: `npm run dynamodb` keeps a DynamoDB
 * Local; `npm start -- --endpoint` prints the table prefix and the status command for it;
 * `status` shows those tables; `requeue` of an unfinished job runs it locally (no queue
 * outlives npm start); Ctrl-C stops DynamoDB Local and Java with it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDynamo, systemClock } from '../lib/protocol/index.js';
import { createJob, readJob, tableNames } from '../lib/workflow/index.js';
import { invoiceJobId, invoiceProcessor } from '../lib/workloads/invoices.js';
import { freePort, portIsFree } from '../cli/dynamodb-local.js';
import { expectOneLineError, startTsx, tsx, type Running } from './support/spawn.js';

const dir = mkdtempSync(join(tmpdir(), 'ops-loop-'));
let served: Running | undefined;
afterAll(async () => {
  await served?.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('the local ops loop', () => {
  it('npm run dynamodb, npm start -- --endpoint, status, requeue, Ctrl-C', async () => {
    const port = await freePort();
    served = startTsx('cli/main.ts', ['dynamodb', '--port', String(port)]);
    const [, endpoint] = await served.waitFor(/is running at (http:\/\/127\.0\.0\.1:\d+) until Ctrl-C/);
    expect(endpoint).toBe(`http://127.0.0.1:${port}`);

    // A second one on the same port is refused in one line.
    expectOneLineError(await tsx('cli/main.ts', ['dynamodb', '--port', String(port)]), `port ${port} is in use`, `--endpoint http://127.0.0.1:${port}`);

    // The demo, human output: it names its tables and the command to look at them.
    const demo = await tsx('cli/main.ts', ['demo', '--endpoint', endpoint!, '--customers', '3', '--workers', '2', '--out', join(dir, 't.svg')]);
    expect(demo.code, demo.stdout + demo.stderr).toBe(0);
    const prefix = demo.stdout.match(/^Tables: prefix (fw-\d{14}-) at http:\/\/127\.0\.0\.1:\d+$/m)?.[1];
    expect(prefix, demo.stdout).toBeDefined();
    const statusLine = demo.stdout.match(/^ {2}npm run cli -- (status .*)$/m)?.[1];
    expect(statusLine).toBe(`status --endpoint ${endpoint} --table-prefix ${prefix}`);

    const status = await tsx('cli/main.ts', statusLine!.split(' '));
    expect(status.code, status.stderr).toBe(0);
    const lines = status.stdout.split('\n').filter((l) => l.trim().startsWith('invoice-run#'));
    // The Jobs section, then the Runs section (a run record per period, its one shard the job).
    const jobs = lines.filter((l) => / units /.test(l));
    expect(jobs).toHaveLength(3);
    for (const j of jobs) expect(j).toMatch(/\sDONE\s/);
    const runs = lines.filter((l) => / shards DONE/.test(l));
    expect(runs).toHaveLength(3);
    for (const r of runs) expect(r).toMatch(/\sDONE\s+1\/1 shards DONE, recorded$/);

    // An unfinished job (as a run interrupted before it started would leave): requeue runs it here.
    const { doc, client } = createDynamo({ endpoint: endpoint! });
    const tables = tableNames(prefix!);
    const input = { period: '2027-01', customers: 25, seed: 3, unitSize: 10, currency: 'EUR' };
    const id = invoiceJobId(input.period);
    await createJob(doc, tables.jobs, { id, totalUnits: invoiceProcessor.totalUnits(input), input }, systemClock);
    const requeued = await tsx('cli/main.ts', ['requeue', id, '--endpoint', endpoint!, '--table-prefix', prefix!]);
    expect(requeued.code, requeued.stdout + requeued.stderr).toBe(0);
    expect(requeued.stdout).toContain(`${id}: ran here: DONE 3/3 units`);
    expect(await readJob(doc, tables.jobs, id)).toMatchObject({ status: 'DONE', cursor: 3, requeues: 1 });
    client.destroy();

    const stopped = await served.stop('SIGINT');
    served = undefined;
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stdout).toContain('stopped');
    expect(await portIsFree(port)).toBe(true); // Java is gone with it
  }, 120_000);
});
