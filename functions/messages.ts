/**
 * The work queue's message body, validated at the edge (valibot: small, tree-shakes to a few KB
 * in the Lambda bundle). A body that fails validation fails alone and reaches the DLQ after the
 * queue's retries, with nothing written.
 */
import * as v from 'valibot';
import { InvalidInputError } from '../lib/protocol/index.js';
import type { WorkMessage } from '../lib/workflow/index.js';

/**
 * The first validation issue as an InvalidInputError naming the field. A key the schema does not
 * know is reported on the object itself, quoted: a raw key (say `:` or `.`) must not be able to
 * make the field name ambiguous.
 */
function issueError(root: string, issue: v.BaseIssue<unknown>, known: readonly string[]): InvalidInputError {
  const keys = (issue.path ?? []).map((p) => String(p.key));
  const unknown = keys.find((k) => !known.includes(k));
  if (unknown !== undefined) return unexpectedField(root, unknown);
  return new InvalidInputError(keys.length === 0 ? root : `${root}.${keys.join('.')}`, issue.message);
}

function unexpectedField(root: string, key: string): InvalidInputError {
  const plain = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(key);
  return new InvalidInputError(plain ? `${root}.${key}` : root, `unexpected field ${JSON.stringify(key.slice(0, 64))}`);
}

export const WorkMessageSchema = v.strictObject({
  jobId: v.pipe(v.string(), v.regex(/^[A-Za-z0-9#:._-]{1,200}$/, 'jobId must be 1-200 chars of [A-Za-z0-9#:._-]')),
  // Sent by sweepers before the claimant watched the lease itself: still accepted, never used
  // (a sweeper's observation must not stand in for the claimant's own wait).
  observedVersion: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(64))),
  reason: v.optional(v.picklist(['start', 'continuation', 'requeue'])),
});

export function parseWorkMessage(body: string): WorkMessage {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new InvalidInputError('body', 'is not valid JSON');
  }
  const r = v.safeParse(WorkMessageSchema, json);
  if (!r.success) throw issueError('body', r.issues[0], Object.keys(WorkMessageSchema.entries));
  const m: WorkMessage = { jobId: r.output.jobId };
  if (r.output.reason !== undefined) m.reason = r.output.reason;
  return m;
}

/**
 * The starter's optional payload (EventBridge Scheduler input, a manual or backfill run): an
 * object of the workload's own fields (Workload.start.payloadFields), which its `runOf` checks one
 * by one; any other field is refused by name here.
 */
export function parseStartPayload(raw: unknown, fields: readonly string[]): Record<string, unknown> {
  const r = v.safeParse(v.record(v.string(), v.unknown()), raw ?? {});
  if (!r.success) throw new InvalidInputError('payload', 'must be an object');
  const unknown = Object.keys(r.output).find((k) => !fields.includes(k));
  if (unknown !== undefined) throw unexpectedField('payload', unknown);
  return r.output;
}
