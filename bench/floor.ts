/**
 * DynamoDB Local's own floor, without the SDK: pre-serialized request bodies POSTed over a
 * kept-alive node:http connection, timed from write to response. Three bodies, same 25 items:
 *   b25  BatchWriteItem of the 25 effects (the unsafe side),
 *   t25  TransactWriteItems of the same 25 Puts and NOTHING else (no fence, no checkpoint, no
 *        condition, no token): what the transaction engine alone costs,
 *   t27  the fenced unit exactly as the library sends it (prepareFencedUnit: fence + checkpoint
 *        + 25 effects, 12 once-only conditions, ClientRequestToken).
 * b25/t27 is the best fenced/unsafe ratio any client could reach on this DynamoDB Local;
 * b25/t25 shows how much of the gap is the engine's, before any protection is added.
 * Interleaved with them, l27: the same fenced unit committed by the library (commitFencedUnit: the
 * SDK's serialisation, signing, the exchange and the parsing and decoding of the response) on the
 * library's own client, the unit prepared beforehand (prepareFencedUnit) as the worker drafts it
 * while the previous unit is in flight; t27/l27 is what the library adds to the identical request
 * (libraryVsRaw).
 * Sequential (one request at a time) and parallel (several connections at once).
 */
import { Agent, request } from 'node:http';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { asGeneration, commitFencedUnit, prepareFencedUnit, type Dynamo, type PreparedUnit } from '../lib/protocol/index.js';
import type { TableNames } from '../lib/workflow/index.js';
import type { BenchEnv } from './env.js';
import { median } from './stats.js';
import { fencedBenchUnit } from './workload.js';
import { BenchError } from './errors.js';

export type FloorKind = 'b25' | 't25' | 't27';
export const FLOOR_KINDS: readonly FloorKind[] = ['b25', 't25', 't27'];

export interface FloorResult {
  /** Median ms per request, one at a time. */
  sequentialMs: Record<FloorKind, number>;
  /** Effects/s with `parallel` connections each sending its own stream of requests. */
  parallelEffectsPerSec: Record<FloorKind, number>;
  parallel: number;
  /** b25 time / t27 time: the fenced/unsafe ratio of a client that costs nothing. */
  ceilingSequential: number;
  ceilingParallel: number;
  /** b25 / t25: the transaction engine's own factor on the same 25 puts. */
  engineSequential: number;
  /** Transactions DynamoDB Local refused after waiting too long for its table locks (retried). */
  lockTimeouts: number;
  /** Median BatchWriteItem ms in each sequential round: how much DynamoDB Local slowed down during the run. */
  b25ByRound: number[];
  /** Median ms per fenced unit committed by the library (commitFencedUnit), interleaved with the raw t27. */
  libraryMs: number;
  /** t27 ÷ library: the identical request pre-serialised over plain HTTP vs through the library (1 = the library adds nothing). */
  libraryVsRaw: number;
}

function poster(endpoint: string, sockets: number) {
  const url = new URL(endpoint);
  const agent = new Agent({ keepAlive: true, maxSockets: sockets });
  let lockTimeouts = 0;
  // DynamoDB Local gives up on a transaction that waited too long for its table locks (HTTP 500,
  // "...waiting for a lock. This request will succeed in actual DynamoDB API"); the SDK retries
  // those, and so does this: the time of the failed attempt stays in the measurement.
  const post = async (target: string, body: string): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await once(target, body);
      } catch (e) {
        if (!(e instanceof LockTimeout) || attempt >= 5) throw e;
        lockTimeouts++;
      }
    }
  };
  const once = (target: string, body: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          method: 'POST',
          path: '/',
          agent,
          headers: {
            'content-type': 'application/x-amz-json-1.0',
            'x-amz-target': `DynamoDB_20120810.${target}`,
            // DynamoDB Local checks the shape of the signature, not its value.
            authorization: 'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
            'x-amz-date': '20260101T000000Z',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            if (res.statusCode === 200) resolve();
            else if (res.statusCode === 500 && text.includes('waiting for a lock')) reject(new LockTimeout());
            else reject(new BenchError(`${target}: ${res.statusCode} ${text.slice(0, 300)}`));
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return { post, close: () => agent.destroy(), lockTimeouts: () => lockTimeouts };
}

class LockTimeout extends Error {}

/** `count` bodies of one kind for one stream (its own job and keys), in commit order. */
async function bodies(admin: Dynamo, tables: TableNames, kind: FloorKind, stream: string, count: number): Promise<{ target: string; body: string }[]> {
  const g = asGeneration(1);
  const jobId = `floor-${stream}`;
  if (kind === 't27') {
    await admin.client.send(new PutItemCommand({ TableName: tables.jobs, Item: marshall({ pk: jobId, status: 'RUNNING', cursor: 0, totalUnits: count, heartbeatAt: 0, requeues: 0 }) }));
  }
  const out: { target: string; body: string }[] = [];
  for (let u = 0; u < count; u++) {
    const now = Date.now();
    const unit = fencedBenchUnit(tables, { tag: stream, units: count }, jobId, g, u, now);
    if (kind === 'b25') {
      out.push({ target: 'BatchWriteItem', body: JSON.stringify({ RequestItems: { [tables.records]: unit.effects.map((e) => ({ PutRequest: { Item: marshall(e.item) } })) } }) });
    } else if (kind === 't25') {
      out.push({ target: 'TransactWriteItems', body: JSON.stringify({ TransactItems: unit.effects.map((e) => ({ Put: { TableName: e.table, Item: marshall(e.item) } })) }) });
    } else {
      const p = prepareFencedUnit(unit, now, { removeUndefinedValues: true });
      out.push({ target: 'TransactWriteItems', body: JSON.stringify({ TransactItems: p.items, ClientRequestToken: p.token }) });
    }
  }
  return out;
}

/** `count` fenced units of one job for the library side, in commit order (its job item written first, as for t27). */
async function libraryUnits(admin: Dynamo, tables: TableNames, stream: string, count: number): Promise<PreparedUnit[]> {
  const jobId = `floor-${stream}`;
  await admin.client.send(new PutItemCommand({ TableName: tables.jobs, Item: marshall({ pk: jobId, status: 'RUNNING', cursor: 0, totalUnits: count, heartbeatAt: 0, requeues: 0 }) }));
  return Array.from({ length: count }, (_, u) => {
    const now = Date.now();
    return prepareFencedUnit(fencedBenchUnit(tables, { tag: stream, units: count }, jobId, asGeneration(1), u, now), now, { removeUndefinedValues: true });
  });
}

export interface Floor {
  /** One sequential round: the three kinds interleaved request by request, `requests` of each. `record: false`: warm-up. */
  sequentialRound(record?: boolean): Promise<void>;
  /** One parallel round: each kind on its own, `parallel` streams of `requests / 2` at once. */
  parallelRound(record?: boolean): Promise<void>;
  result(): FloorResult;
  close(): void;
}

/**
 * The floor is measured in rounds that the throughput measurement interleaves with its own
 * (bench/throughput.ts `between`): DynamoDB Local slows down as stream records pile up
 * (bench/env.ts), so the ceiling and the ratio it explains must be measured on the same server.
 */
export async function openFloor(env: BenchEnv, opts: { requests: number; parallel: number }): Promise<Floor> {
  const tables = await env.tables('floor');
  const admin = env.dynamo();
  const lib = env.dynamo();
  const { post, close, lockTimeouts } = poster(env.endpoint, opts.parallel);
  const libMs: number[] = [];
  const seq: Record<FloorKind, number[]> = { b25: [], t25: [], t27: [] };
  const par: Record<FloorKind, number[]> = { b25: [], t25: [], t27: [] };
  let round = 0;
  const b25ByRound: number[] = [];
  return {
    async sequentialRound(record = true) {
      const r = round++;
      const before = seq.b25.length;
      const streams = Object.fromEntries(
        await Promise.all(FLOOR_KINDS.map(async (k) => [k, await bodies(admin, tables, k, `s${r}${k}`, opts.requests + 2)] as const)),
      ) as Record<FloorKind, { target: string; body: string }[]>;
      const units = await libraryUnits(admin, tables, `s${r}l27`, opts.requests + 2);
      for (let i = 0; i < opts.requests + 2; i++) {
        for (const k of FLOOR_KINDS) {
          const { target, body } = streams[k][i]!;
          const t0 = performance.now();
          await post(target, body);
          if (i >= 2 && record) seq[k].push(performance.now() - t0); // the first two warm the connection
        }
        const t0 = performance.now();
        const p = units[i]!;
        await commitFencedUnit({ doc: lib.doc }, p.unit, { prepared: p });
        if (i >= 2 && record) libMs.push(performance.now() - t0);
      }
      if (record) b25ByRound.push(median(seq.b25.slice(before)));
    },
    async parallelRound(record = true) {
      const r = round++;
      // The order rotates each round (as in bench/leases.ts): DynamoDB Local slows down with every
      // stream record, so a fixed order would always hand the slowest turn to the same kind.
      for (const k of FLOOR_KINDS.map((_, i) => FLOOR_KINDS[(i + r) % FLOOR_KINDS.length]!)) {
        const perStream = Math.max(2, Math.ceil(opts.requests / 2));
        const all = await Promise.all(Array.from({ length: opts.parallel }, (_, j) => bodies(admin, tables, k, `p${r}${k}${j}`, perStream)));
        const t0 = performance.now();
        await Promise.all(
          all.map(async (list) => {
            for (const { target, body } of list) await post(target, body);
          }),
        );
        if (record) par[k].push((opts.parallel * perStream * 25) / ((performance.now() - t0) / 1000));
      }
    },
    result() {
      const sequentialMs = { b25: median(seq.b25), t25: median(seq.t25), t27: median(seq.t27) };
      const parallelEffectsPerSec = { b25: median(par.b25), t25: median(par.t25), t27: median(par.t27) };
      return {
        sequentialMs,
        parallelEffectsPerSec,
        parallel: opts.parallel,
        ceilingSequential: sequentialMs.b25 / sequentialMs.t27,
        ceilingParallel: parallelEffectsPerSec.t27 / parallelEffectsPerSec.b25,
        engineSequential: sequentialMs.b25 / sequentialMs.t25,
        lockTimeouts: lockTimeouts(),
        b25ByRound,
        libraryMs: median(libMs),
        libraryVsRaw: sequentialMs.t27 / median(libMs),
      };
    },
    close,
  };
}
