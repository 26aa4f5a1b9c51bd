/**
 * The client's own cost per unit, with the network and DynamoDB taken out: the real
 * commitFencedUnit (and the unsafe BatchWriteItem) against an HTTP handler that answers at once.
 * Process CPU per call, median of several rounds: the part of a unit's time that the library
 * controls, measured without the noise of a shared machine's DynamoDB Local.
 */
import { Readable } from 'node:stream';
import { BatchWriteItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { asGeneration, buildFencedUnit, commitFencedUnit, type FencedUnit } from '../lib/protocol/index.js';
import { tableNames } from '../lib/workflow/index.js';
import { median } from './stats.js';
import { fencedBenchUnit, unsafeBatch } from './workload.js';

const stubHandler = {
  handle: async () => ({
    response: { statusCode: 200, headers: { 'content-type': 'application/x-amz-json-1.0' }, body: Readable.from([Buffer.from('{}')]) },
  }),
  updateHttpClientConfig: () => undefined,
  httpHandlerConfigs: () => ({}),
};

export interface ClientCost {
  /** CPU microseconds per fenced unit commit (build + marshal + SDK), no network. */
  fencedUs: number;
  /**
   * The same unit sent the way commitFencedUnit sent it before this benchmark's optimizations:
   * the document client's TransactWriteCommand (its marshalling middleware on every call).
   */
  documentClientUs: number;
  /** CPU microseconds per unsafe BatchWriteItem of the same 25 effects. */
  unsafeUs: number;
}

export async function measureClientCost(opts: { rounds: number; calls: number }): Promise<ClientCost> {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    requestHandler: stubHandler as never,
  });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  const tables = tableNames('bench-client-');
  const g = asGeneration(2 ** 32 + 7);
  const input = { tag: 'client', units: Number.MAX_SAFE_INTEGER };
  const unit = (u: number): FencedUnit => fencedBenchUnit(tables, input, 'bench', g, u, Date.now());
  const fenced = (u: number) => commitFencedUnit({ doc }, unit(u));
  const viaDocument = (u: number) => {
    const { items, token } = buildFencedUnit(unit(u), Date.now());
    return doc.send(new TransactWriteCommand({ TransactItems: items, ClientRequestToken: token }));
  };
  const unsafe = (u: number) => client.send(new BatchWriteItemCommand({ RequestItems: unsafeBatch(tables, input, 'bench', u, Date.now()) }));
  const cpuPerCall = async (fn: (u: number) => Promise<unknown>): Promise<number> => {
    const c0 = process.cpuUsage();
    for (let u = 0; u < opts.calls; u++) await fn(u);
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / opts.calls;
  };
  const variants = { fenced, viaDocument, unsafe };
  type Name = keyof typeof variants;
  const names = Object.keys(variants) as Name[];
  const samples: Record<Name, number[]> = { fenced: [], viaDocument: [], unsafe: [] };
  for (const fn of Object.values(variants)) await cpuPerCall(fn); // warm-up
  // Short interleaved slices: a burst of load on the machine hits every variant alike; the order
  // rotates each round, so no variant always runs first (or last).
  for (let r = 0; r < opts.rounds; r++) {
    for (const name of names.map((_, i) => names[(i + r) % names.length]!)) samples[name].push(await cpuPerCall(variants[name]));
  }
  client.destroy();
  return { fencedUs: median(samples.fenced), documentClientUs: median(samples.viaDocument), unsafeUs: median(samples.unsafe) };
}
