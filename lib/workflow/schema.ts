/**
 * The tables, as pure data: the single source of truth for the CDK stack (infra/) and the
 * local runtime and tests (lib/workflow/tables.ts). No SDK and no CDK import here.
 *
 * Attribute names are a contract: tools outside this code read these tables (DESIGN.md).
 */
import { CHECKPOINT_ATTR, InvalidInputError } from '../protocol/index.js';

export type TableRole = 'leases' | 'fences' | 'jobs' | 'records' | 'outbox';
export type KeyType = 'S' | 'N';

export interface KeyAttribute {
  readonly name: string;
  readonly type: KeyType;
}

export interface IndexSchema {
  readonly indexName: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  /** Sparse: only items carrying the partition key attribute are in the index. */
  readonly projection: 'ALL' | 'KEYS_ONLY';
}

export interface TableSchema {
  readonly role: TableRole;
  readonly partitionKey: KeyAttribute;
  readonly globalSecondaryIndexes: readonly IndexSchema[];
  readonly stream?: 'NEW_AND_OLD_IMAGES';
  /**
   * Leases and fences hold the issued and accepted generations: deleting one lets a counter
   * restart below a value a resource has seen. The stack denies delete on these.
   */
  readonly permanent: boolean;
  /**
   * Indexes an earlier version had, kept only while a deployed stack moves off them: DynamoDB
   * creates or deletes one GSI per table update, so replacing one takes two deploys (the stack's
   * `keepRetiredIndexes` context: docs/deploy.md, Upgrading). Never created locally.
   */
  readonly retiredIndexes?: readonly IndexSchema[];
}

export const JOB_ATTR = {
  ...CHECKPOINT_ATTR,
  status: 'status',
  totalUnits: 'totalUnits',
  heartbeatAt: 'heartbeatAt',
  requeues: 'requeues',
  input: 'input',
  createdAt: 'createdAt',
  failureReason: 'failureReason',
  /** Consecutive failed attempts at `failedUnit` with an error no retry can fix (ValidationException...). */
  failures: 'failures',
  failedUnit: 'failedUnit',
  /** Present only while the job is unfinished: the partition key of the sparse sweeper index. */
  unfinished: 'unfinished',
  /** The sweeper's stored observations for version-watch mode (no clock comparison). */
  sweepObservation: 'sweepObservation',
  sweepUnchanged: 'sweepUnchanged',
} as const;

/**
 * A record (an effect item in the Records table) as every workload writes it: the unit that wrote
 * it (`jobId`, the tie `generation`/`updatedAt`, `unit`) and, for a record that publishes a
 * document, the document's key and ETag. A workload's own fields sit beside these (its descriptor).
 */
export const RECORD_ATTR = {
  key: 'pk',
  jobId: 'jobId',
  generation: 'generation',
  unit: 'unit',
  updatedAt: 'updatedAt',
  /** The record's document (S3): the whole object key, and the ETag the reader asks for. */
  documentKey: 'documentKey',
  documentEtag: 'documentEtag',
} as const;

/**
 * An outbox item (DESIGN.md, Outbox): created once in the fenced unit (`kind`, `jobId` and the tie
 * `generation`/`updatedAt` say which unit), then only its delivery attributes change.
 */
export const OUTBOX_ATTR = {
  key: 'pk',
  kind: 'kind',
  jobId: 'jobId',
  generation: 'generation',
  unit: 'unit',
  updatedAt: 'updatedAt',
  status: 'status',
  failureReason: 'failureReason',
  attempts: 'attempts',
  claimToken: 'claimToken',
  claimedAt: 'claimedAt',
  providerMessageId: 'providerMessageId',
  sentAt: 'sentAt',
  /**
   * An http item to a provider that forgets keys (HttpProvider.keyRetentionMs): the sender's wall
   * time, stamped once before the item's first POST; past the retention less a margin it is never sent again.
   */
  firstSentAt: 'firstSentAt',
  /**
   * The same items' rounds of POSTs (a POST and its immediate resends), counted before each, and
   * of those the rounds the provider certainly refused (throttled, held, refused for now: nothing
   * taken, no key stored). Every round refused: the key's window starts again rather than UNKNOWN.
   */
  keyedSends: 'keyedSends',
  keyedRefusals: 'keyedRefusals',
  /**
   * A deferred item (throttled, held by the account's state): no send before this wall time (ms).
   * The sender's claim and the reconciler honour it; `deferrals` counts the backoffs (its exponent),
   * `heldReason` says why an item is held (present only while it is).
   */
  notBefore: 'notBefore',
  deferrals: 'deferrals',
  heldReason: 'heldReason',
  /** The claim token under which the sender counted its own send ambiguous: a takeover of that claim counts it no second time. */
  ambiguousClaim: 'ambiguousClaim',
  /** Sends whose outcome nobody saw (a lost acknowledgement, a sender that died): each may have delivered. */
  ambiguousSends: 'ambiguousSends',
  /** The provider's own record of this item (SEND/DELIVERY events, `<event>:<messageId>`), kept by the recorder. */
  providerEvents: 'providerEvents',
  /**
   * Present while the item is PENDING or SENDING: the partition key of the reconciler's sparse
   * index, `open#<n>` with n = unsentShardOf(pk) (one value per shard, never one shared value).
   */
  unsent: 'unsent',
  // The payload: an email's `to`, `subject`, `body`; an http effect's `target` and `request`.
  to: 'to',
  subject: 'subject',
  body: 'body',
  target: 'target',
  request: 'request',
  /** An http item's per-recipient destination: a path below its target's endpoint. */
  path: 'path',
  /** What the unit put on the item for the steps that follow it (a customer's address on a payment): never sent to the provider. */
  context: 'context',
  /** A FAILED item's refusal: `effect` (the provider declined the effect itself: a card declined, a business outcome, followed up) or `request` (our request or configuration: alarmed). */
  refusal: 'refusal',
  /** A follow-up (effects/follow-ups.ts): the id of the item whose settle created it, and the step that did. */
  parent: 'parent',
  step: 'step',
  /** The follow-ups the item's settle created, by id: written by that same transaction. */
  followUps: 'followUps',
  /** Why the item settled without its follow-ups (a step's next() failed): alarmed, an operator's. */
  followUpError: 'followUpError',
  /** The follow-ups a hard bounce of a SENT email created (its `bounced` steps), listed by the recorder's write that recorded the bounce. */
  bounceFollowUps: 'bounceFollowUps',
  /** An UNKNOWN item a person settled (effects/decisions.ts): who decided (`operator`), and the note they gave, with the time. */
  decidedBy: 'decidedBy',
  decisionNote: 'decisionNote',
  decidedAt: 'decidedAt',
  /**
   * A new attempt of a declined (or untaken UNKNOWN) item, under a new key (effects/attempts.ts):
   * on the attempt, the first attempt's id (`attemptOf`) and its number (`attempt`, 2 on); on the
   * attempt it replaces, `retriedBy` (L of S, its one successor), with the person's note and the time.
   */
  attemptOf: 'attemptOf',
  attempt: 'attempt',
  retriedBy: 'retriedBy',
  retryNote: 'retryNote',
  retriedAt: 'retriedAt',
} as const;

/**
 * The reconciler's index of unsent outbox items. KEYS_ONLY: its entry is written when the item is
 * created and deleted when it is settled, and nothing in between (a claim, a provider event, an
 * ambiguous count) rewrites it; the reconciler reads each candidate from the table. A new name,
 * not the old `unsent-by-age` (projection ALL, one shared key): a GSI's projection cannot change in place.
 */
export const OUTBOX_INDEX = 'unsent-by-shard';

/**
 * The unsent index's write shards. Every outbox item enters and leaves this index (2 index writes),
 * and one partition key value takes at most 1,000 write units/s; at the planner's 10 M items in
 * ~3,132 s (20 M items, 6,400/s) that is 12,800 index writes/s: 32 shards hold each key to ~400/s,
 * 40% of its limit. It may only GROW: an item keeps the key it was written with, and the
 * reconciler reads every value 0..UNSENT_SHARDS-1, so a larger N still reads every old key; a
 * smaller one would strand the items of the shards it dropped (test/outbox-index.test.ts holds the floor).
 */
export const UNSENT_SHARDS = 32;

/** The one value of the sparse index's partition key (the Jobs table's sweeper index; once also the Outbox's). */
export const UNFINISHED = 'open';

/**
 * The Outbox's unsent values written before the key was sharded (the shared `open`): never
 * written again, still read by the reconciler so an item created before the change is not stranded.
 */
export const UNSENT_RETIRED_KEYS: readonly string[] = [UNFINISHED];

/** FNV-1a over the key's UTF-8 bytes, then murmur3's finalizer: a pure, portable hash (a planner or outside tool computes the same). */
function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (const b of new TextEncoder().encode(s)) h = Math.imul(h ^ b, 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The shard of an outbox item: a hash of its pk, so the same item always lands on the same key. */
export const unsentShardOf = (pk: string, shards: number = UNSENT_SHARDS): number => hash32(pk) % shards;

/** The unsent index's partition key value of an outbox item. */
export const unsentKeyOf = (pk: string, shards: number = UNSENT_SHARDS): string => `${UNFINISHED}#${unsentShardOf(pk, shards)}`;

/** Every unsent value the reconciler reads: each shard's, and the retired ones. */
export const unsentKeys = (shards: number = UNSENT_SHARDS): string[] => [...Array.from({ length: shards }, (_, n) => `${UNFINISHED}#${n}`), ...UNSENT_RETIRED_KEYS];
export const UNFINISHED_INDEX = 'unfinished-by-heartbeat';

const pk: KeyAttribute = { name: 'pk', type: 'S' };

export const TABLES: Readonly<Record<TableRole, TableSchema>> = {
  // Streams on the two permanent tables are an audit trail of every token issued and accepted:
  // the invariant checker verifies TOKENS and FENCE from them, independently of the worker.
  leases: { role: 'leases', partitionKey: pk, globalSecondaryIndexes: [], stream: 'NEW_AND_OLD_IMAGES', permanent: true },
  fences: { role: 'fences', partitionKey: pk, globalSecondaryIndexes: [], stream: 'NEW_AND_OLD_IMAGES', permanent: true },
  jobs: {
    role: 'jobs',
    partitionKey: pk,
    globalSecondaryIndexes: [
      {
        indexName: UNFINISHED_INDEX,
        partitionKey: { name: JOB_ATTR.unfinished, type: 'S' },
        sortKey: { name: JOB_ATTR.heartbeatAt, type: 'N' },
        projection: 'ALL',
      },
    ],
    permanent: false,
  },
  // The workload's records: what its units write (upserts and once-only effects), fenced.
  records: {
    role: 'records',
    partitionKey: pk,
    globalSecondaryIndexes: [],
    stream: 'NEW_AND_OLD_IMAGES',
    permanent: false,
  },
  // The stream drives the sender (INSERT) and is the checker's audit of every delivery change.
  outbox: {
    role: 'outbox',
    partitionKey: pk,
    globalSecondaryIndexes: [
      {
        indexName: OUTBOX_INDEX,
        partitionKey: { name: OUTBOX_ATTR.unsent, type: 'S' },
        sortKey: { name: OUTBOX_ATTR.updatedAt, type: 'N' },
        projection: 'KEYS_ONLY',
      },
    ],
    // The single-key index every item entered before the key was write-sharded.
    retiredIndexes: [{ indexName: 'unsent-by-age', partitionKey: { name: OUTBOX_ATTR.unsent, type: 'S' }, sortKey: { name: OUTBOX_ATTR.updatedAt, type: 'N' }, projection: 'ALL' }],
    stream: 'NEW_AND_OLD_IMAGES',
    permanent: false,
  },
};

export const TABLE_ROLES = Object.keys(TABLES) as TableRole[];

export type TableNames = Readonly<Record<TableRole, string>>;

/** DynamoDB's table naming rule: 3-255 characters of [a-zA-Z0-9_.-]. */
export const TABLE_NAME = /^[a-zA-Z0-9_.-]{3,255}$/;

/** Physical names for a prefix (stage, test file, run). Every name contains its role. */
export function tableNames(prefix: string): TableNames {
  const names = Object.fromEntries(TABLE_ROLES.map((role) => [role, `${prefix}${role}`])) as Record<TableRole, string>;
  for (const name of Object.values(names)) {
    if (!TABLE_NAME.test(name)) throw new InvalidInputError('tablePrefix', `table name "${name}" must be 3-255 chars of [a-zA-Z0-9_.-]`);
  }
  return names;
}
