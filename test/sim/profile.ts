/**
 * The load profile measured in the simulator: the same two quiet runs of the real handlers as
 * `npm run -s cli -- profile` (cli/demo/profile.ts), in a world of `seed` on the in-memory
 * DynamoDB. What the profile's timing-dependent shares are (a claim race refused, a recorder's
 * event before the SENT it follows) is then a function of the seed, not of the machine's load.
 */
import type { LoadProfile } from '../../lib/workflow/index.js';
import { measureProfileOn, type ProfileEngine } from '../../cli/demo/profile.js';
import { DynamoModel, type DynamoModelOptions } from './dynamodb/model.js';
import { comparedShapes } from './dynamodb/shape.js';
import { simChaosEnv } from './env.js';
import { inWorld } from './world.js';

export interface SimProfile {
  profile: LoadProfile;
  /** What the model was asked and does not implement: a measurement with any is void. */
  unsupported: string[];
}

export async function simProfile(seed: number, opts: Pick<DynamoModelOptions, 'onRequest'> & { shapes?: 'compared' | 'any' } = {}): Promise<SimProfile> {
  let model: DynamoModel | undefined;
  const profile = await inWorld(seed, async (w) => {
    model = new DynamoModel({ now: () => w.wallNow, indexLag: true, ...(opts.shapes === 'any' ? {} : { shapes: comparedShapes() }), ...(opts.onRequest ? { onRequest: opts.onRequest } : {}) });
    const env = simChaosEnv(w, model);
    const engine: ProfileEngine = {
      async open(i) {
        const effects = await env.effects({ doc: env.direct.doc, bucket: `profile-${i}` });
        return { dynamo: env.direct, streams: env.streams, wire: env.wire, effects, close: () => effects.close() };
      },
    };
    return measureProfileOn(engine, 'profile-');
  });
  return { profile, unsupported: [...new Set<string>(model?.unsupported ?? [])] };
}
