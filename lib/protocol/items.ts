/**
 * The items the protocol itself reads and writes, by attribute name. These names are a
 * contract (DESIGN.md, "Tables"): tools outside this code read these items. Which tables hold
 * them, and what else a workflow stores beside them, is the workflow's business
 * (lib/workflow/schema.ts), not the protocol's.
 */

/** A lease item (one per lease key), in the Leases table. */
export const LEASE_ATTR = {
  key: 'pk',
  owner: 'owner',
  generation: 'generation',
  expiresAt: 'expiresAt',
  version: 'version',
  durationMs: 'durationMs',
  /** Written by acquire: the owner this grant replaced without a release ('-' if none): a takeover. */
  takenFrom: 'takenFrom',
} as const;

/** A fence item (one per protected resource), in the Fences table. */
export const FENCE_ATTR = { key: 'pk', generation: 'generation', updatedAt: 'updatedAt' } as const;

/**
 * The checkpoint a fenced unit advances (a job item, in a workflow): `cursor` is the next unit,
 * `generation` the last generation that committed one. The fenced unit manages both.
 */
export const CHECKPOINT_ATTR = { key: 'pk', cursor: 'cursor', generation: 'generation' } as const;

/**
 * The tie between a fence and its effects: a fenced unit writes the fence with `generation = :g`
 * and `updatedAt = :now`, and stamps every effect item of the unit with the same two values, so a
 * checker can prove from the streams alone that each effect was written in a transaction that
 * also passed the fence (DESIGN.md, "The tie between a fence and its effects").
 */
export const TIE_ATTR = { generation: 'generation', updatedAt: 'updatedAt' } as const;
