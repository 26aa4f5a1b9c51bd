/**
 * decide <outboxId>: a person's decision on an UNKNOWN outbox item (lib/workflow/effects/decisions.ts),
 * after reading the provider's own record: `--accepted --provider-id ID` (it took the effect: the
 * item is SENT, and the steps that follow an acceptance, a receipt, are created with it) or
 * `--declined` (it declined: FAILED as a refusal of the effect, and the steps of a decline follow).
 * `--note` says what the provider showed; it stays on the item with the decision.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { InvalidInputError, systemClock } from '../../lib/protocol/index.js';
import { decideUnknown, silentTelemetry, type Decision, type TableNames, type Workload } from '../../lib/workflow/index.js';

export const DECIDE_USAGE = `decide <outboxId>: settle an UNKNOWN outbox item as a person decided it, after reading the
provider's own record (its dashboard, its API). The steps that follow that outcome (a receipt, a
"payment failed" email) are created by the same write, once; an item that is not UNKNOWN is refused.
  --accepted --provider-id ID --note TEXT    the provider took it (ID: its id there, e.g. the charge)
  --declined --note TEXT                     the provider declined it (a business outcome, not our request)
  npm run cli -- decide 'payment#2026-11#cust-0000042' --accepted --provider-id ch_3Pq --note "charged, per the dashboard" --outputs cdk-outputs.json`;

export interface DecideFlags {
  accepted?: boolean;
  declined?: boolean;
  'provider-id'?: string;
  note?: string;
  json: boolean;
}

/** The decision the flags say: exactly one outcome, a note, and the provider's id for an acceptance. */
export function decisionOf(v: DecideFlags): Decision {
  if (v.accepted === v.declined) throw new InvalidInputError('--accepted/--declined', 'give exactly one: what the provider did with it');
  if (v.note === undefined) throw new InvalidInputError('--note', 'say what the provider showed (kept on the item with the decision)');
  if (v.declined) {
    if (v['provider-id'] !== undefined) throw new InvalidInputError('--provider-id', 'is for --accepted: a declined effect has nothing taken to name');
    return { outcome: 'declined', note: v.note };
  }
  if (v['provider-id'] === undefined) throw new InvalidInputError('--provider-id', "--accepted needs the provider's id of what it took (the charge, the message)");
  return { outcome: 'accepted', providerMessageId: v['provider-id'], note: v.note };
}

export async function decide(t: { doc: DynamoDBDocumentClient; tables: TableNames; workload: Workload<any> }, id: string | undefined, v: DecideFlags): Promise<number> {
  if (id === undefined || id === '') throw new InvalidInputError('outboxId', 'decide takes exactly one outbox item id');
  const d = decisionOf(v);
  const r = await decideUnknown({ doc: t.doc, table: t.tables.outbox, clock: systemClock, telemetry: silentTelemetry, steps: t.workload.steps }, id, d);
  const follow = r.followUps.length === 0 ? 'no follow-ups' : `follow-ups created: ${r.followUps.join(', ')}`;
  process.stdout.write(v.json ? `${JSON.stringify(r)}\n` : `${r.id}: ${r.status} (${d.outcome}, an operator's decision); ${follow}${r.followUpError === undefined ? '' : `; a step failed: ${r.followUpError}`}\n`);
  return 0;
}
