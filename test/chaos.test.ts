/**
 * A small fixed chaos set in CI (the long runs are `npm run chaos`): the real protocol keeps
 * every invariant under its seeded faults, and every negative control is caught by the same
 * independent checker — the evidence that the checker has teeth.
 */
import { inject, describe, expect, it } from 'vitest';
import { createDynamo } from '../lib/protocol/index.js';
import { METRIC } from '../lib/workflow/index.js';
import type { InvariantName } from '../cli/invariants.js';
import { streamsClient } from '../cli/streams.js';
import { CONTROLS } from './chaos/controls.js';
import { chaosRun } from './chaos/harness.js';

const endpoint = inject('dynamoEndpoint');
const env = { endpoint, direct: createDynamo({ endpoint }), streams: streamsClient(endpoint) };

/** The invariant each control must break (docs/verification.md, negative controls). */
const BREAKS: Record<(typeof CONTROLS)[number], InvariantName> = {
  leaseOnly: 'FENCE',
  checkThenAct: 'FENCE',
  separateFenceWrite: 'FENCE',
  counterReset: 'TOKENS',
};

describe('chaos (fixed seeds)', () => {
  it.concurrent.each([101, 102, 103])('seed %i: the real protocol keeps FENCE, ONCE, PROGRESS and TOKENS', async (seed) => {
    const r = await chaosRun(env, seed, 'fenced');
    expect(r.error).toBeUndefined();
    expect(Object.fromEntries(Object.entries(r.report.invariants).map(([k, v]) => [k, v.violations]))).toEqual({ FENCE: [], ONCE: [], PROGRESS: [], TOKENS: [] });
    // The schedule's incident really happened: the paused worker's write met the fence.
    expect(r.faultsFired).toContain('paused between read and write');
    expect(r.metrics[METRIC.staleGenerationRejected] ?? 0).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it.concurrent.each(CONTROLS.map((c) => [c, BREAKS[c]] as const))('negative control %s is caught by the checker (%s)', async (variant, expected) => {
    const r = await chaosRun(env, 101, variant);
    expect(r.report.ok).toBe(false);
    expect(r.report.invariants[expected].ok, JSON.stringify(r.report.invariants)).toBe(false);
  }, 60_000);
});
