/**
 * A run's measured load profile (cli/demo/call-profile.ts measures it from the calls of two local
 * runs; `npm run -s cli -- profile --write` stores it beside its workload) and its projection to
 * a plan's size: the write units per item, by table, index and purpose, and the heat of the
 * hottest partition-key value of every table and index. Pure data and arithmetic.
 *
 * What a write is counted against (its basis):
 * - `item`: the work of one item of the workload (its records, the outbox's deliveries of them);
 * - `unit`: one fenced unit's transaction on its shard's items (the fence, the checkpoint);
 * - `shard`: a shard's own writes outside its units (creation, acquire and release per
 *   invocation, lease renewals, heartbeat stamps, completion): their number follows the run's
 *   shape and the clock, not the work, and the local run's lease is short, so they are listed
 *   but not projected: the planner counts them from its own assumptions.
 * A key value's scope says how its load grows: `item` (one per item's record: bounded by what
 * one item takes), `shard` (one per shard: a shard's share), `fixed` (a set that does not grow
 * with the run: its share of the whole).
 */
import type { TableRole } from './schema.js';

export type Basis = 'item' | 'unit' | 'shard';
export type KeyScope = 'item' | 'shard' | 'fixed';

export interface ProfileRun {
  readonly items: number;
  readonly shards: number;
  readonly units: number;
}

export interface ProfileWrite {
  readonly role: TableRole;
  readonly index?: string;
  readonly purpose: string;
  readonly basis: Basis;
  /** Write units per item (basis item), per unit (basis unit), or in the larger run (basis shard). */
  readonly units: number;
}

/** The hottest key value of one key pattern of a table or index, in the larger run. */
export interface ProfileKey {
  readonly role: TableRole;
  readonly index?: string;
  /** The key values with their digits as `N` (`open#N`, `report#N-N-N#tenant-N`). */
  readonly pattern: string;
  readonly scope: KeyScope;
  /** Distinct values of the pattern in the larger run. */
  readonly values: number;
  /** The hottest value's write units by basis, and its read units (absolute, in the larger run). */
  readonly hottest: { readonly key: string } & KeyUnits;
  /** All values' together. */
  readonly total: KeyUnits;
  /** How the pattern's reads grew from the smaller run to the larger: with the items, the shards, or not. */
  readonly readsGrow: KeyScope;
}

export interface KeyUnits {
  readonly item: number;
  readonly unit: number;
  readonly shard: number;
  readonly read: number;
}

export interface LoadProfile {
  readonly measuredWith: string;
  /** The two runs the scopes were told apart by; the shares are the larger's. */
  readonly runs: readonly [ProfileRun, ProfileRun];
  readonly writes: readonly ProfileWrite[];
  readonly keys: readonly ProfileKey[];
  /** Single-item writes whose index writes the engine reported, and how many the rules predicted alike. */
  readonly indexRules: { readonly checked: number; readonly agreed: number };
}

/** What a plan runs at: its size and the wall time its work is spread over. */
export interface PlanRates {
  readonly items: number;
  readonly units: number;
  readonly shards: number;
  readonly seconds: number;
}

/** Write units of the work (basis item and unit) at a plan's size, by table. */
export function projectedWrites(p: LoadProfile, items: number, units: number): Map<TableRole, number> {
  const out = new Map<TableRole, number>();
  for (const w of p.writes) {
    if (w.basis === 'shard') continue;
    out.set(w.role, (out.get(w.role) ?? 0) + w.units * (w.basis === 'item' ? items : units));
  }
  return out;
}

/** The hottest value's rate of one key pattern, write and read units per second, at the plan's rates. */
export function projectedKeyRate(p: LoadProfile, k: ProfileKey, r: PlanRates): { write: number; read: number } {
  const big = p.runs[1];
  if (k.scope === 'item') return { write: k.hottest.item + k.hottest.unit, read: k.hottest.read }; // one item's whole life in one second: an upper bound
  // A fixed set of several values is spread by a hash (the unsent index's open#n): a small run's
  // hottest value is mostly sampling noise, so the set's mean, raised by three standard
  // deviations of a uniform spread at the plan's size, is its hottest value there.
  const spread = k.scope === 'fixed' && k.values > 1;
  const h = spread ? scaled(k.total, 1 / k.values) : k.hottest;
  // A fixed value keeps its share of the whole; a shard's value its shard's share (1 of `shards`).
  const share = k.scope === 'fixed' ? 1 : big.shards / r.shards;
  const perSecond = (x: number, per: number, total: number) => ((x / per) * total * share) / r.seconds;
  // Reads of a shard's key come with its units (the screen and checkpoint reads of each
  // invocation: the local run's short invocations read more often, so this overstates them).
  // A fixed key read once per shard (a run record, read by each shard's completion check): all the plan's shards read it.
  const read =
    k.scope === 'shard' ? perSecond(h.read, big.units, r.units) : k.readsGrow === 'shard' ? ((h.read / big.shards) * r.shards) / r.seconds : perSecond(h.read, big.items, r.items);
  const write = perSecond(h.item, big.items, r.items) + perSecond(h.unit, big.units, r.units);
  const noise = spread ? 1 + 3 / Math.sqrt(Math.max(1, write * r.seconds)) : 1;
  return { write: write * noise, read: read * noise };
}

const scaled = (u: KeyUnits, f: number): KeyUnits => ({ item: u.item * f, unit: u.unit * f, shard: u.shard * f, read: u.read * f });
