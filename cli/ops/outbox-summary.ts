/**
 * `status --outbox`: what the outbox came to, per target (`email`, or an http target's name):
 * how many items are in each state, the declines among the FAILED (a refusal of the effect: a
 * business outcome), and the trouble the providers reported after accepting (a hard bounce, a
 * complaint). Read from the Outbox table with a Scan: for a run's worth of items, not a table of
 * millions (the dashboard's metrics are for those).
 */
import { PROVIDER_EVENT } from '../../lib/workflow/index.js';

export interface TargetSummary {
  readonly target: string;
  readonly items: number;
  readonly byStatus: Readonly<Record<string, number>>;
  /** FAILED as a refusal of the effect (a declined card): counted, not alarmed. */
  readonly declined: number;
  readonly bounced: number;
  readonly complaints: number;
}

export function outboxSummary(items: readonly Record<string, unknown>[]): TargetSummary[] {
  const by = new Map<string, { items: number; byStatus: Record<string, number>; declined: number; bounced: number; complaints: number }>();
  for (const i of items) {
    if (typeof i.kind !== 'string') continue;
    const target = i.kind === 'email' ? 'email' : String(i.target ?? i.kind);
    const s = by.get(target) ?? { items: 0, byStatus: {}, declined: 0, bounced: 0, complaints: 0 };
    s.items++;
    const status = String(i.status ?? 'PENDING');
    s.byStatus[status] = (s.byStatus[status] ?? 0) + 1;
    if (status === 'FAILED' && i.refusal === 'effect') s.declined++;
    const events = Array.isArray(i.providerEvents) ? i.providerEvents.map(String) : i.providerEvents instanceof Set ? [...i.providerEvents].map(String) : [];
    if (events.some((e) => e.startsWith(`${PROVIDER_EVENT.Bounce}:`) || e.startsWith(`${PROVIDER_EVENT.Suppressed}:`))) s.bounced++;
    if (events.some((e) => e.startsWith(`${PROVIDER_EVENT.Complaint}:`))) s.complaints++;
    by.set(target, s);
  }
  return [...by.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([target, s]) => ({ target, ...s }));
}

export function renderOutboxSummary(rows: readonly TargetSummary[]): string[] {
  const total = rows.reduce((n, r) => n + r.items, 0);
  const out = [`Outbox (${total} items):`];
  for (const r of rows) {
    const states = Object.entries(r.byStatus).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k} ${v}`).join(', ');
    const trouble = [r.declined > 0 ? `${r.declined} declined` : '', r.bounced > 0 ? `${r.bounced} bounced` : '', r.complaints > 0 ? `${r.complaints} complaint(s)` : ''].filter((x) => x !== '').join(', ');
    out.push(`  ${r.target.padEnd(12)} ${states}${trouble === '' ? '' : `  (${trouble})`}`);
  }
  return out;
}
