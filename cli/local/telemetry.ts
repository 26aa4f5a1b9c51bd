/**
 * Local telemetry: counts metrics like CloudWatch would and turns the handlers' structured
 * events into timeline entries, with an optional JSON log line per event (what Lambda logs).
 */
import { formatGeneration, type Generation } from '../../lib/protocol/index.js';
import type { MetricName, Telemetry } from '../../lib/workflow/index.js';
import { slotOf } from './runtime.js';
import type { Timeline, TimelineKind } from '../shared/timeline.js';

const KIND: Record<string, TimelineKind> = {
  'lease-acquired': 'acquire',
  'lease-renewed': 'renew',
  'lease-busy': 'busy',
  'fence-raised': 'fence',
  'unit-committed': 'commit',
  'commit-rejected': 'reject',
  'lease-lost': 'lost',
  'lease-uncertain': 'lost',
  'commit-uncertain': 'lost',
  superseded: 'lost',
  'lease-released': 'release',
  'handed-off': 'note',
  'job-requeued': 'requeue',
  'job-done': 'done',
  'job-failed': 'reject',
  'duplicate-suppressed': 'duplicate',
  'documents-published': 'document',
  'outbox-sent': 'email',
  'outbox-ambiguous': 'note',
  'outbox-reconciled': 'note',
  'outbox-resend': 'note',
  'outbox-unknown': 'reject',
  'outbox-failed': 'reject',
  'document-collected': 'collect',
};

/** `w3-17-ab12cd34/0` → `lambda w3`: one lane per concurrency slot. */
export const laneOf = (owner: unknown): string => (typeof owner === 'string' ? `lambda ${slotOf(owner)}` : 'sweeper');

const g = (v: unknown) => (typeof v === 'number' ? formatGeneration(v as Generation) : '?');

function describe(name: string, f: Record<string, unknown>): string {
  switch (name) {
    case 'lease-acquired':
      return `${String(f.jobId)} gen ${g(f.generation)}${f.takeoverFrom ? ' (takeover)' : ''}`;
    case 'fence-raised':
      return `fence ${g(f.generation)}`;
    case 'unit-committed':
      return `unit ${String(f.unit)}`;
    case 'commit-rejected':
      return `stale ${g(f.generation)} rejected (fence ${g(f.fenceAt)})`;
    case 'job-requeued':
      return `requeued ${String(f.jobId)}`;
    case 'job-done':
      return `${String(f.jobId)} DONE`;
    case 'lease-busy':
      return `duplicate: lease busy (${g(f.holderGeneration)})`;
    case 'superseded':
      return `superseded (${String(f.why)})`;
    case 'lease-released':
      return f.released === false ? `release of ${g(f.generation)}: no effect` : `released ${g(f.generation)}`;
    case 'lease-lost':
      return `lease ${g(f.generation)} lost`;
    case 'lease-uncertain':
      return `lease ${g(f.generation)} uncertain: stopped`;
    case 'commit-uncertain':
      return `unit ${String(f.unit)} commit uncertain`;
    case 'handed-off':
      return `out of time at unit ${String(f.cursor)}: handed off`;
    case 'job-failed':
      return `${String(f.jobId)} FAILED: ${String(f.reason)}`;
    case 'duplicate-suppressed':
      return `unit ${String(f.unit)}: duplicates suppressed`;
    case 'documents-published':
      return `unit ${String(f.unit)}: ${String(f.documents)} documents put (gen ${g(f.generation)})`;
    case 'outbox-sent':
      return `sent ${String(f.pk)}`;
    case 'outbox-ambiguous':
      return `${String(f.pk)}: send outcome unseen (ambiguous)`;
    case 'outbox-reconciled':
      return `${String(f.pk)}: SENT from the provider's record`;
    case 'outbox-resend':
      return `${String(f.pk)}: sent again (claim taken over)`;
    case 'outbox-unknown':
      return `${String(f.pk)}: UNKNOWN (${String(f.reason)})`;
    case 'outbox-failed':
      return `${String(f.pk)}: FAILED (${String(f.reason)})`;
    case 'document-collected':
      return `orphan ${String(f.key)} collected`;
    default:
      return name.replace(/-/g, ' ');
  }
}

export class LocalTelemetry implements Telemetry {
  readonly counts = new Map<MetricName, number>();
  constructor(
    private readonly timeline: Timeline | undefined,
    private readonly log?: (line: string) => void,
    private readonly leaseMs?: number,
  ) {}
  count(metric: MetricName, n = 1): void {
    this.counts.set(metric, (this.counts.get(metric) ?? 0) + n);
  }
  /** Gauges (the sweeper's oldest-job age) are not kept: nothing local reads them. */
  gauge(): void {}
  event(name: string, fields: Record<string, unknown>): void {
    this.log?.(JSON.stringify({ level: 'INFO', message: name, ...fields }));
    const kind = KIND[name];
    if (kind === undefined || this.timeline === undefined) return;
    const generation = typeof fields.generation === 'number' ? fields.generation : undefined;
    const lease = kind === 'acquire' || kind === 'renew' ? this.leaseMs : undefined;
    const lane = typeof fields.lane === 'string' ? fields.lane : laneOf(fields.owner);
    this.timeline.add(lane, kind, describe(name, fields), generation, lease);
  }
  get(metric: MetricName): number {
    return this.counts.get(metric) ?? 0;
  }
}
