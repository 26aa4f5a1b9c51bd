// tier: quick
/**
 * The simulator's clocks run on events, not polls: the outbox stream is read when the model tells
 * of an append (within one of Lambda's polling intervals, as its event source mapping finds
 * records), not four times a second while nothing happens; and the reconciler passes at the
 * deployed cadence scaled to the run's lease (every minute for a 30 s lease), not every lease.
 */
import { CreateTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../lib/protocol/index.js';
import { DEPLOYED_DEFAULTS } from '../lib/workflow/index.js';
import { OutboxStream } from '../cli/local/outbox-stream.js';
import { DynamoModel } from './sim/dynamodb/model.js';
import { simChaosEnv, STREAM_POLL_MS, streamActivity } from './sim/env.js';
import { simulateOne } from './sim/run.js';
import { inWorld } from './sim/world.js';

/** A table with a stream, a stream stand-in over it delivering to a sender that notes when, and the GetRecords the stand-in made. */
async function streamScene(events: boolean, main: (put: (id: string) => Promise<void>, deliveries: { at: number; ids: string[] }[], reads: () => number) => Promise<void>) {
  await inWorld(3, async (world) => {
    let reads = 0;
    const model = new DynamoModel({ now: () => world.wallNow, onRequest: (_s, op) => void (op === 'GetRecords' && reads++) });
    const env = simChaosEnv(world, model);
    await env.direct.client.send(new CreateTableCommand({ TableName: 'sim-outbox', BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }], StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' } }));
    const deliveries: { at: number; ids: string[] }[] = [];
    const stream = new OutboxStream({
      client: env.direct.client,
      streams: env.streams,
      table: 'sim-outbox',
      clock: systemClock,
      pollMs: STREAM_POLL_MS,
      sender: async (event) => (deliveries.push({ at: performance.now(), ids: event.Records.map((r) => r.dynamodb?.Keys?.pk?.S ?? '') }), { batchItemFailures: [] }),
      ...(events ? { activity: streamActivity(world, model) } : {}),
    });
    stream.start();
    await main((id) => env.direct.client.send(new PutItemCommand({ TableName: 'sim-outbox', Item: { pk: { S: id } } })).then(() => undefined), deliveries, () => reads);
    await stream.stop();
  });
}

describe('events, not polls', () => {
  it('reads the stream when a record is appended, within one polling interval, and not while nothing is', async () => {
    await streamScene(true, async (put, deliveries, reads) => {
      await systemClock.sleep(60_000);
      // A minute with nothing appended: the one read of the start, none since (polling would have read 240 times).
      expect(reads()).toBe(1);
      const at = performance.now();
      await put('a');
      await systemClock.sleep(STREAM_POLL_MS + 50);
      expect(deliveries.map((d) => d.ids)).toEqual([['a']]);
      expect(deliveries[0]!.at - at).toBeLessThan(STREAM_POLL_MS + 50);
      await put('b');
      await put('c');
      await systemClock.sleep(STREAM_POLL_MS + 50);
      expect(deliveries.flatMap((d) => d.ids)).toEqual(['a', 'b', 'c']);
    });
  });

  it('polls four times a second without the engine\'s events (the stand-in on DynamoDB Local)', async () => {
    await streamScene(false, async (put, deliveries, reads) => {
      await systemClock.sleep(60_000);
      expect(reads()).toBeGreaterThan(200);
      await put('a');
      await systemClock.sleep(STREAM_POLL_MS + 50);
      expect(deliveries.map((d) => d.ids)).toEqual([['a']]);
    });
  });

  it('passes the reconciler at the deployed cadence, two leases apart (every minute, a 30 s lease), not every lease', async () => {
    const run = await simulateOne(5, 'fenced', { shape: 'tiny', keepRecord: true });
    expect(run.ok).toBe(true);
    const starts = run.record!.history.filter((l) => l.includes('"message":"reconcile-done"')).map((l) => Number(l.split(' ')[0]));
    expect(starts.length).toBeGreaterThan(2);
    const every = (run.schedule.leaseMs * DEPLOYED_DEFAULTS.reconcilerIntervalMs) / DEPLOYED_DEFAULTS.leaseDurationMs;
    // Each pass ends at least one interval after the one before it ended (the schedule waits its interval after each pass).
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!, `pass ${i}`).toBeGreaterThanOrEqual(every - 1);
  });
});
