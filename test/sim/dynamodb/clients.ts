/** SDK clients whose requests the model answers: the project's real code runs on them unchanged. */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Dynamo } from '../../../lib/protocol/index.js';
import { simRequestHandler, type SimTransport } from './handler.js';
import type { DynamoModel } from './model.js';
import type { ShortCutOptions } from '../short-cut.js';
import { installDynamoShortCut } from './short-cut.js';

export interface SimClientOptions {
  /**
   * The SDK's attempts (default 1: retries are the code's own, or the scheduler's duplicates).
   * A simulated run gives the handlers' clients what they have in AWS (createDynamo's 3): the
   * SDK's retry delays are then the world's timers.
   */
  maxAttempts?: number;
  /**
   * How a command reaches the request handler: through the command-level short-cut (default),
   * the short-cut checked against the SDK's path on every request (`{ compare }`), or the SDK's
   * full middleware stack (`'sdk'`).
   */
  shortCut?: 'sdk' | ShortCutOptions;
}

const common = (model: DynamoModel, transport?: SimTransport, opts: SimClientOptions = {}) => ({
  region: 'us-east-1',
  endpoint: 'http://dynamodb.sim',
  credentials: { accessKeyId: 'sim', secretAccessKey: 'sim' },
  maxAttempts: opts.maxAttempts ?? 1,
  requestHandler: simRequestHandler(model, transport),
});

/** Both clients, as createDynamo builds them (removeUndefinedValues), over the model. */
export function simDynamo(model: DynamoModel, transport?: SimTransport, opts: SimClientOptions = {}): Dynamo {
  const client = new DynamoDBClient(common(model, transport, opts));
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  if (opts.shortCut !== 'sdk') installDynamoShortCut(client as never, doc as never, opts.shortCut);
  return { client, doc };
}

export function simStreams(model: DynamoModel, transport?: SimTransport, opts: Pick<SimClientOptions, 'shortCut'> = {}): DynamoDBStreamsClient {
  const client = new DynamoDBStreamsClient(common(model, transport));
  if (opts.shortCut !== 'sdk') installDynamoShortCut(client as never, undefined, opts.shortCut);
  return client;
}
