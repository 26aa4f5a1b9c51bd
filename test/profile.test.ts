/**
 * The planner's shares are measured, not kept by hand: the committed load profile
 * (lib/workloads/invoice-profile.ts) is what two quiet local runs of the real handlers measure
 * now (cli/profile.ts), line by line, and the rules that bill each transaction's index writes say
 * what the engine itself reports on every single-item write.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { measureProfile } from '../cli/profile.js';
import { INVOICE_PROFILE } from '../lib/workloads/invoice-profile.js';
import type { LoadProfile } from '../lib/workflow/index.js';

const place = (x: { role: string; index?: string }) => `${x.role}${x.index === undefined ? '' : `/${x.index}`}`;
/** The work's writes (the planner projects these): per customer and per unit; `refused`: the conditions races refuse (their count follows the timing). */
const work = (p: LoadProfile, refused = false) =>
  new Map(p.writes.filter((w) => w.basis !== 'shard' && w.purpose.endsWith('(refused)') === refused).map((w) => [`${place(w)} ${w.basis} ${w.purpose}`, w.units]));

describe('the load profile', () => {
  it('the committed profile is what the runs measure now: every write of the work, its key scopes, the index rules', { timeout: 300_000 }, async () => {
    const fresh = await measureProfile(inject('dynamoEndpoint'), `t-profile-${randomBytes(4).toString('hex')}-`);
    const [now, stored] = [work(fresh), work(INVOICE_PROFILE)];
    expect([...now.keys()].sort(), 'the writes of the work (npm run -s cli -- profile --write to measure again)').toEqual([...stored.keys()].sort());
    // Counts follow the work, except where two calls in flight complete in either order (a
    // recorder's event before or after the SENT that takes the item out of the index).
    for (const [k, v] of stored) expect(now.get(k)!, k).toBeCloseTo(v, 0);
    // A sender and the reconciler racing for an item the stream was late with: a few in a hundred.
    for (const [k, v] of work(fresh, true)) expect(v, k).toBeLessThan(0.5);
    const scopes = (p: LoadProfile) => p.keys.map((k) => `${place(k)} ${k.pattern} ${k.scope}`).sort();
    expect(scopes(fresh)).toEqual(scopes(INVOICE_PROFILE));
    expect(fresh.indexRules.agreed / fresh.indexRules.checked).toBeGreaterThan(0.98);
  });
});
