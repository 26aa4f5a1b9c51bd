/**
 * vsPowertoolsIdempotency: the same once-only effects (charges) written two ways, what a Lambda
 * user would reach for to avoid repeating a charge, and ours:
 *   - Powertools for AWS Lambda (TypeScript) idempotency, its DynamoDB persistence layer: the
 *     charge function wrapped by `makeIdempotent`, one call per charge. Per charge the layer puts
 *     an INPROGRESS record (conditional PutItem), the function puts the charge, the layer saves
 *     the result (UpdateItem): three standard writes.
 *   - Ours: the real worker (runJob) committing fenced units of 25 once-only charges each: one
 *     TransactWriteItems per 25 charges, with the fence and the checkpoint, plus the per-job steps.
 * Sequential (one charge, or one unit, at a time), alternating rounds, the same DynamoDB Local,
 * every request counted by SDK middleware and billed by AWS's rules (bench/wcu.ts).
 */
import { readFileSync } from 'node:fs';
import { GetItemCommand, PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { onceOnly, systemClock, type Effect } from '../lib/protocol/index.js';
import { createJob, runJob, silentTelemetry, type Processor, type TableNames, type UnitContext } from '../lib/workflow/index.js';
import type { BenchEnv } from './env.js';
import { recordRequests, type LoggedRequest } from './requests.js';
import { median } from './stats.js';
import { bill, itemSize } from './wcu.js';
import { BenchError } from './errors.js';
import { MAX_UNCERTAIN_RETRIES } from './throughput.js';

const PER_UNIT = 25;

interface OnceInput {
  tag: string;
  units: number;
}

const charge = (tag: string, i: number, jobId: string, generation: number, now: number) => ({
  pk: `charge#${tag}#cust-${String(i).padStart(7, '0')}`,
  jobId,
  customerId: `cust-${String(i).padStart(7, '0')}`,
  amountCents: 500 + ((i * 104729) % 50_000),
  currency: 'EUR',
  generation,
  updatedAt: now,
});

/** Ours: 25 once-only charges per unit. */
const onceProcessor: Processor<OnceInput> = {
  name: 'bench-once',
  parseInput: (raw) => raw as OnceInput,
  totalUnits: (input) => input.units,
  unitEffects: (input: OnceInput, ctx: UnitContext): Effect[] =>
    Array.from({ length: PER_UNIT }, (_, k) => onceOnly(ctx.tables.records, charge(input.tag, ctx.unit * PER_UNIT + k, ctx.jobId, ctx.generation, ctx.now))),
};

export interface IdempotencySide {
  effectsPerSec: number;
  requestsPerEffect: number;
  wcuPerEffect: number;
}

export interface IdempotencyComparison {
  effectsPerRound: number;
  rounds: number;
  powertoolsVersion: string;
  ours: IdempotencySide;
  powertools: IdempotencySide;
  /** Ours ÷ Powertools effects/s, median of the rounds' ratios. */
  ratio: number;
  roundRatios: number[];
  /** Our jobs run again because one ended uncertain, warm-up included. */
  uncertainRetries: number;
}

/** Sizes of the items the logged updates touched, read back once (updates bill by the stored item). */
async function storedSizes(env: BenchEnv, log: readonly LoggedRequest[]) {
  const d = env.dynamo();
  const sizes = new Map<string, number>();
  const key = (t: string, k: Record<string, AttributeValue>) => `${t}\u0000${JSON.stringify(k)}`;
  for (const r of log) {
    const input = r.input as { TableName?: string; Key?: Record<string, AttributeValue>; TransactItems?: { Update?: { TableName: string; Key: Record<string, AttributeValue> } }[] };
    const keyed = r.operation === 'TransactWriteItems' ? (input.TransactItems ?? []).flatMap((i) => (i.Update ? [i.Update] : [])) : input.Key ? [{ TableName: input.TableName!, Key: input.Key }] : [];
    for (const a of keyed) {
      if (sizes.has(key(a.TableName, a.Key))) continue;
      const out = await d.client.send(new GetItemCommand({ TableName: a.TableName, Key: a.Key, ConsistentRead: true }));
      sizes.set(key(a.TableName, a.Key), out.Item ? itemSize(out.Item) : 0);
    }
  }
  return (t: string, k: Record<string, AttributeValue>) => sizes.get(key(t, k)) ?? 0;
}

export async function measureIdempotency(env: BenchEnv, opts: { rounds: number; units: number; onProgress?: (label: string) => void }): Promise<IdempotencyComparison> {
  const tables: TableNames = await env.tables('idem');
  const idemTable = await env.table({ TableName: 'powertools-idempotency', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] });
  const oursDynamo = env.dynamo();
  const ptDynamo = env.dynamo();
  const oursLog = recordRequests(oursDynamo.client);
  const ptLog = recordRequests(ptDynamo.client);
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName: idemTable, awsSdkV3Client: ptDynamo.client });
  const config = new IdempotencyConfig({ eventKeyJmesPath: 'pk' });
  // As inside a Lambda handler: the in-progress record's expiry follows the invocation's remaining time.
  config.registerLambdaContext({ getRemainingTimeInMillis: () => 600_000 } as Parameters<typeof config.registerLambdaContext>[0]);
  // The effect itself: the charge item, written by the wrapped function (Powertools stops the repeat).
  const putCharge = makeIdempotent(
    async (c: ReturnType<typeof charge>) => {
      await ptDynamo.client.send(new PutItemCommand({ TableName: tables.records, Item: marshall(c) }));
      return { charged: c.pk };
    },
    { persistenceStore, config },
  );
  const effects = opts.units * PER_UNIT;
  let uncertainRetries = 0;
  // As bench/throughput.ts's fencedPhase: a job that ends uncertain (a renewal or commit unconfirmed
  // on a loaded machine) is thrown away and a fresh one runs, at most MAX_UNCERTAIN_RETRIES times.
  const oursRun = async (tag: string): Promise<number> => {
    for (let retries = 0; ; retries++) {
      const attemptTag = retries === 0 ? tag : `${tag}-r${retries}`;
      const jobId = `idem-${attemptTag}`;
      await createJob(oursDynamo.doc, tables.jobs, { id: jobId, totalUnits: opts.units, input: { tag: attemptTag, units: opts.units } }, systemClock);
      oursLog.reset();
      const t0 = performance.now();
      const out = await runJob(
        { doc: oursDynamo.doc, tables, clock: systemClock, queue: { send: async () => undefined }, telemetry: silentTelemetry, processor: onceProcessor, lease: { epoch: 0, durationMs: 10_000, mode: { kind: 'wall-clock', maxClockSkewMs: 0 } } },
        { message: { jobId }, remainingTimeMs: () => 3_600_000, safetyMarginMs: 0 },
      );
      if (out.kind === 'done') return effects / ((performance.now() - t0) / 1000);
      if (out.kind !== 'uncertain' || retries >= MAX_UNCERTAIN_RETRIES) throw new BenchError(`idempotency bench: our job ended ${out.kind} (attempt ${retries + 1})`);
      uncertainRetries++;
    }
  };
  const ptRun = async (tag: string): Promise<number> => {
    ptLog.reset();
    const t0 = performance.now();
    for (let i = 0; i < effects; i++) await putCharge(charge(tag, i, `pt-${tag}`, 0, Date.now()));
    return effects / ((performance.now() - t0) / 1000);
  };
  const ours: number[] = [];
  const pt: number[] = [];
  const oursLogs: LoggedRequest[] = [];
  const ptLogs: LoggedRequest[] = [];
  await oursRun('warm-o');
  await ptRun('warm-p');
  for (let r = 0; r < opts.rounds; r++) {
    const sides = [async () => ours.push(await oursRun(`o${r}`)), async () => pt.push(await ptRun(`p${r}`))];
    for (const side of r % 2 === 0 ? sides : [...sides].reverse()) await side();
    oursLogs.push(...oursLog.entries.filter((e) => e.operation !== 'PutItem' || (e.input as { TableName?: string }).TableName !== tables.jobs));
    ptLogs.push(...ptLog.entries);
    opts.onProgress?.(`idempotency round ${r + 1}/${opts.rounds}`);
  }
  const oursBill = bill(oursLogs, await storedSizes(env, oursLogs));
  const ptBill = bill(ptLogs, await storedSizes(env, ptLogs));
  const total = effects * opts.rounds;
  // Its exports map hides package.json from require: read it from the install.
  const version = (JSON.parse(readFileSync(new URL('../node_modules/@aws-lambda-powertools/idempotency/package.json', import.meta.url), 'utf8')) as { version: string }).version;
  const ratios = ours.map((x, i) => x / pt[i]!);
  return {
    effectsPerRound: effects,
    rounds: opts.rounds,
    powertoolsVersion: version,
    ours: { effectsPerSec: median(ours), requestsPerEffect: oursLogs.length / total, wcuPerEffect: oursBill.wcu / total },
    powertools: { effectsPerSec: median(pt), requestsPerEffect: ptLogs.length / total, wcuPerEffect: ptBill.wcu / total },
    ratio: median(ratios),
    roundRatios: ratios,
    uncertainRetries,
  };
}
