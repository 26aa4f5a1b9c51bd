/**
 * The stack's CDK context settings, read and checked at synth (infra/stack.ts lists them). Each
 * check uses the bound the handler that consumes the value enforces at start-up (lib/workflow/
 * config.ts, lib/protocol MAX_EPOCH, the workload's own `start.maxItems`), so a value `cdk synth`
 * accepts is one the deployed functions accept. A bad value is a ConfigError naming the setting.
 */
import { ConfigError, MAX_EPOCH } from '../lib/protocol/index.js';
import { AWS_LIMITS, isHttpUrl, targetsOf, MAX_SHARDS, SWEEP_INTERVAL_MS, TABLE_NAME, TABLE_ROLES, unitSizeCap, type TableRole, type Workload } from '../lib/workflow/index.js';
import { configuredWorkload, DEFAULT_WORKLOAD, WORKLOADS } from '../lib/workloads/index.js';
import type { WarmUnits } from './constructs/defaults.js';
import type { SenderIdentitySetting } from './constructs/external-effects.js';
import { SEND_RATE_PER_SECOND } from './constructs/settings.js';

export interface AdoptedTableSetting {
  readonly tableName: string;
  readonly tableStreamArn?: string;
}

/** CloudFormation's stack-name rule. */
export const STACK_NAME = /^[A-Za-z][A-Za-z0-9-]{0,127}$/;
/** CloudWatch's namespace rule: 1-255 of these characters, and the `AWS/` prefix is AWS's own. */
const NAMESPACE = /^[A-Za-z0-9.\-_/#: ]{1,255}$/;
const TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/;
/** A role ARN pattern with a wildcard anywhere but after a role-name prefix of 3+ characters. */
function broadPattern(arn: string): boolean {
  const name = arn.slice(arn.lastIndexOf('/') + 1);
  const star = name.indexOf('*');
  return arn.slice(0, arn.lastIndexOf('/')).includes('*') || (star >= 0 && star < 3);
}

const ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@\-/*]{1,512}$/;
/** One alarm threshold is at most a year: longer means it would never fire. */
const MAX_ALARM_MINUTES = 525_600;

type Raw = (key: string) => unknown;

/** Reads the settings from `raw` (the stack's tryGetContext). Blank and null mean unset. */
export class ContextSettings {
  constructor(private readonly raw: Raw) {}

  string(key: string): string | undefined {
    const v = this.raw(key);
    return v === undefined || v === null || v === '' ? undefined : String(v);
  }

  integer(key: string, min: number, max: number, why = ''): number | undefined {
    const v = this.string(key);
    if (v === undefined) return undefined;
    // Number('') is 0 and Number('0x10') is 16: accept decimal digits only.
    const n = /^\d+$/.test(v) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new ConfigError(key, `must be an integer in [${min}, ${max}]${why}, got "${v}"`);
    return n;
  }

  fenceEpoch(): number {
    const e = this.integer('fenceEpoch', 0, MAX_EPOCH);
    if (e === undefined) throw new ConfigError('fenceEpoch', 'is required (cdk.json has 0; after a restore raise it, see docs/runbook-dr.md)');
    return e;
  }

  leaseMode(): 'wall-clock' | 'version-watch' | undefined {
    const m = this.string('leaseMode');
    if (m !== undefined && m !== 'wall-clock' && m !== 'version-watch') throw new ConfigError('leaseMode', `must be "wall-clock" or "version-watch", got "${m}"`);
    return m;
  }

  sweepIntervalMinutes(): number | undefined {
    const { min, max } = SWEEP_INTERVAL_MS;
    return this.integer(
      'sweepIntervalMinutes',
      Math.ceil(min / 60_000),
      Math.floor(max / 60_000),
      ' (the sweeper accepts 1 s to 1 day; the schedule rate is whole minutes)',
    );
  }

  /** `-c workload=NAME`: a registered workload (lib/workloads/index.ts); unset, the default one. */
  workload(): Workload<any> {
    return configuredWorkload('workload', this.string('workload'));
  }

  /** Items in a run when the starter's payload names none, within what the workload's runs take. */
  runItems(workload: Pick<Workload, 'start'>): number | undefined {
    // Refused rather than ignored: a deploy that silently dropped it would run the default size.
    if (this.string('invoiceCustomers') !== undefined) throw new ConfigError('invoiceCustomers', 'was renamed runItems (the items of a run, whatever the workload): -c runItems=N');
    return this.integer('runItems', 0, workload.start.maxItems);
  }

  /**
   * Items per fenced unit, within the workload's cap (unitSizeCap: its effects per item, the
   * fence and the checkpoint in one transaction), the cap its functions read at cold start.
   */
  unitSize(workload: Pick<Workload, 'name' | 'effectsPerItem'>): number | undefined {
    return this.integer('unitSize', 1, unitSizeCap(workload), ` (workload ${workload.name}: ${workload.effectsPerItem} effects per item + fence + checkpoint in one transaction)`);
  }

  /**
   * `true`: the starter's schedule starts the workload's runs. Unset or `false`: it is deployed
   * disabled, so a fresh deploy starts nothing until the operator says so (a sample's made-up work
   * never reaches a provider on its own); a run can still be started by hand.
   */
  scheduleRuns(): boolean {
    const v = this.string('scheduleRuns');
    if (v !== undefined && v !== 'true' && v !== 'false') throw new ConfigError('scheduleRuns', `must be true or false, got "${v.slice(0, 100)}"`);
    return v === 'true';
  }

  /** `true` for the first of the two deploys an index replacement takes (docs/deploy.md, Upgrading). */
  keepRetiredIndexes(): boolean {
    const v = this.string('keepRetiredIndexes');
    if (v !== undefined && v !== 'true' && v !== 'false') throw new ConfigError('keepRetiredIndexes', `must be true or false, got "${v}"`);
    return v === 'true';
  }

  /** Shard jobs per run (the capacity plan's recommendation: npm run cli -- plan). */
  shards(): number | undefined {
    return this.integer('shards', 1, MAX_SHARDS);
  }

  /** The account's Lambda concurrent executions (aws lambda get-account-settings): what the worker's concurrency must leave room in. */
  accountConcurrency(): number | undefined {
    return this.integer('accountConcurrency', AWS_LIMITS.newAccountLambdaConcurrency, 10_000_000, " (the account's Lambda concurrent executions: aws lambda get-account-settings --query AccountLimit.ConcurrentExecutions)");
  }

  workerMaxConcurrency(): number | undefined {
    return this.integer('workerMaxConcurrency', AWS_LIMITS.eventSourceMinConcurrency, AWS_LIMITS.eventSourceMaxConcurrency, " (Lambda's SQS event source)");
  }

  /**
   * `{"records": {"write": 40000}, "outbox": {"write": 40000, "indexes": {"unsent-by-shard": {"write": 16000}}}}`:
   * per table role, warm read and write units per second, and per index of it (an object in
   * cdk.json, its JSON with -c).
   */
  warmThroughput(): Partial<Record<TableRole, WarmUnits>> | undefined {
    return parseWarmThroughput(this.raw('warmThroughput'));
  }

  /**
   * Sends per second each sender or reconciler invocation may make: the account's MaxSendRate
   * (SES: 14/s by default in production, 1/s in the sandbox) shared among the invocations that
   * can run at once. Unset: unpaced, a throttled answer alone defers an item.
   */
  sendRatePerSecond(): number | undefined {
    const v = this.string('sendRatePerSecond');
    if (v === undefined) return undefined;
    const { min, max } = SEND_RATE_PER_SECOND;
    // Plain decimals only: Number('') is 0, Number('0x10') 16, Number('1e3') 1000.
    const n = /^\d+(\.\d+)?$/.test(v) ? Number(v) : NaN;
    if (!(n >= min && n <= max)) throw new ConfigError('sendRatePerSecond', `must be a positive number in [${min}, ${max}] (sends per second per sender or reconciler invocation; SES allows 14/s by default, 1/s in the sandbox), got "${v.slice(0, 100)}"`);
    return n;
  }

  unfinishedJobAlarmMinutes(): number | undefined {
    return this.integer('unfinishedJobAlarmMinutes', 1, MAX_ALARM_MINUTES);
  }

  starterSchedule(): string | undefined {
    const s = this.string('starterSchedule');
    if (s === undefined) return undefined;
    const problem = scheduleProblem(s);
    if (problem !== undefined) throw new ConfigError('starterSchedule', `"${s}" is not an EventBridge Scheduler expression: ${problem}`);
    return s;
  }

  arn(key: 'alarmTopicArn' | 'operatorRoleArn'): string | undefined {
    const v = this.string(key);
    if (v === undefined) return undefined;
    const [re, what] = key === 'alarmTopicArn' ? [TOPIC_ARN, 'an SNS topic ARN (arn:<partition>:sns:<region>:<account>:<name>)'] : [ROLE_ARN, 'an IAM role ARN (arn:<partition>:iam::<account>:role/<path/name>)'];
    if (!re.test(v)) throw new ConfigError(key, `must be ${what}, got "${v.slice(0, 200)}"`);
    // The counter guard lets this role update Leases and Fences, and a pattern every role it matches.
    // A suffix wildcard is what SSO permission-set roles need (AWSReservedSSO_<set>_<random>);
    // anything broader (role/*, a wildcard in the path) would open the counters to any role.
    if (key === 'operatorRoleArn' && broadPattern(v)) {
      throw new ConfigError(key, `may end in a wildcard after a role-name prefix (AWSReservedSSO_Oncall_*), not a wildcard that matches any role, got "${v.slice(0, 200)}"`);
    }
    return v;
  }

  metricsNamespace(): string | undefined {
    const v = this.string('metricsNamespace');
    if (v === undefined) return undefined;
    if (!NAMESPACE.test(v) || v.startsWith('AWS/')) {
      throw new ConfigError('metricsNamespace', `must be 1-255 chars of [A-Za-z0-9.-_/#: ] and not start with "AWS/", got ${JSON.stringify(v.slice(0, 100))}`);
    }
    return v;
  }

  /** The From address of every email: required, and never defaulted to a domain of the code's choosing. */
  senderAddress(): string {
    const v = this.string('senderAddress');
    if (v === undefined) throw new ConfigError('senderAddress', 'is required: the From address of the emails, e.g. -c senderAddress=noreply@your-domain (docs/deploy.md, Sender identity)');
    if (!EMAIL.test(v)) throw new ConfigError('senderAddress', `must be an email address, got "${v.slice(0, 200)}"`);
    refuseReserved('senderAddress', v);
    return v;
  }

  /**
   * The SES identity `address` sends as: `senderIdentity` (imported, by name or ARN), or
   * `senderDomain` (a domain identity created, with Easy DKIM), or neither (an email-address
   * identity created for `address`). Either must cover the address, or SES would not sign with it.
   */
  senderIdentity(address: string): SenderIdentitySetting {
    const imported = this.string('senderIdentity');
    const domain = this.string('senderDomain');
    if (imported !== undefined && domain !== undefined) {
      throw new ConfigError('senderIdentity', 'and senderDomain are exclusive: import an existing identity, or let the stack create a domain identity, not both');
    }
    if (imported !== undefined) return importedIdentity(imported, address);
    if (domain === undefined) return { kind: 'address' };
    if (!DOMAIN.test(domain)) throw new ConfigError('senderDomain', `must be a domain name, got "${domain.slice(0, 200)}"`);
    refuseReserved('senderDomain', domain);
    refuseUncovered('senderDomain', domain, address);
    return { kind: 'domain', domain: domain.toLowerCase() };
  }

  /**
   * The email settings of a workload that sends email: the From address (required) and the identity
   * it sends as. None for a workload that sends none: its stack has no SES resources, and any email
   * setting in the context is another stack's (unusedBy lists it).
   */
  email(workload: Pick<Workload, 'name' | 'outbox'>): { senderAddress: string; senderIdentity: SenderIdentitySetting } | undefined {
    if (!workload.outbox.email) return undefined;
    const senderAddress = this.senderAddress();
    return { senderAddress, senderIdentity: this.senderIdentity(senderAddress) };
  }

  /**
   * The settings in the context that `workload` has no use for: an email setting when it sends no
   * email, the endpoint of another registered workload's http target. Not refused: context is
   * shared by the stacks of one cdk.json (or one app), and one workload's senderAddress is no
   * error in the synth of another's that sends no email. The stack says each one is ignored (a
   * synth warning).
   */
  unusedBy(workload: Pick<Workload, 'name' | 'outbox'>): { key: string; why: string }[] {
    const out: { key: string; why: string }[] = [];
    if (!workload.outbox.email) {
      for (const key of EMAIL_KEYS) if (this.string(key) !== undefined) out.push({ key, why: `workload ${workload.name} sends no email (its stack has no SES identity, configuration set or recorder)` });
    }
    const own = workload.outbox.http.map((t) => t.target);
    for (const target of new Set(WORKLOADS.flatMap((w) => w.outbox.http.map((t) => t.target)))) {
      for (const key of [httpTargetContextKey(target), httpTargetContextKey(target, 'SecretArn')]) {
        if (!own.includes(target) && this.string(key) !== undefined) out.push({ key, why: `workload ${workload.name} has no http target ${target} (its targets: ${own.join(', ') || 'none'})` });
      }
    }
    return out;
  }

  /**
   * `-c live=true`: every target of the workload reaches real recipients and providers; a
   * comma-separated list (`live=email`, `live=payments`) only those; unset or `false`: none, the
   * stack deploys in the sandbox (lib/workflow/effects/sandbox.ts). `email` names the workload's
   * email, the other names its http targets; a name it does not have is refused.
   */
  live(workload: Pick<Workload, 'name' | 'outbox'>): string[] {
    const v = this.string('live');
    const targets = targetsOf(workload);
    if (v === undefined || v === 'false') return [];
    if (v === 'true') return targets;
    const names = v.split(',').map((n) => n.trim());
    for (const n of names) {
      if (!targets.includes(n)) throw new ConfigError('live', `must be true, false or a comma-separated list of workload ${workload.name}'s targets (${targets.join(', ') || 'none'}), got "${n.slice(0, 100)}"`);
    }
    return [...new Set(names)];
  }

  /**
   * Each live http target's endpoint, from context `<target>Url` (`payments` → `paymentsUrl`,
   * `webhooks` → `webhooksUrl`): https only, and required: a live target without one would hold
   * every item. A target in the sandbox takes none: a URL
   * given for it is refused, not ignored, since the operator meant it to be called. Another
   * workload's targets are not read (unusedBy).
   */
  httpTargets(workload: Pick<Workload, 'name' | 'outbox'>, live: readonly string[] = []): Record<string, string> {
    const own = workload.outbox.http.map((t) => t.target);
    const out: Record<string, string> = {};
    for (const target of own) {
      const key = httpTargetContextKey(target);
      const v = this.string(key);
      if (!live.includes(target)) {
        if (v !== undefined) throw new ConfigError(key, `is set, but target ${target} is in the sandbox: add -c live=true (or live=${target}) to call ${v.slice(0, 200)}, or unset ${key}`);
        continue;
      }
      if (v === undefined) throw new ConfigError(key, `is required: target ${target} is live (-c live), and its calls need the provider's https endpoint`);
      if (!/^https:\/\//.test(v) || !isHttpUrl(v)) throw new ConfigError(key, `must be an https URL, got "${v.slice(0, 200)}"`);
      out[target] = v;
    }
    return out;
  }

  /**
   * `{"declineShare": 0.05, "throttleShare": 0, "errorShare": 0}` (an object in cdk.json, its JSON
   * with -c): how the sandbox provider misbehaves, each a share in [0, 1]; unset keys keep theirs.
   */
  sandboxProvider(): Partial<Record<(typeof SANDBOX_SHARES)[number], number>> | undefined {
    const value = objectSetting('sandboxProvider', this.raw('sandboxProvider'), '{"declineShare":0.05}', 'an object like {"declineShare":0.05,"throttleShare":0.1,"errorShare":0.05}');
    if (value === undefined) return undefined;
    const out: Partial<Record<(typeof SANDBOX_SHARES)[number], number>> = {};
    for (const [k, v] of Object.entries(value)) {
      if (!(SANDBOX_SHARES as readonly string[]).includes(k)) throw new ConfigError('sandboxProvider', `unknown key "${k.slice(0, 100)}" (${SANDBOX_SHARES.join(', ')})`);
      if (typeof v !== 'number' || !(v >= 0 && v <= 1)) throw new ConfigError(`sandboxProvider.${k}`, `must be a share in [0, 1], got ${JSON.stringify(v)}`);
      out[k as (typeof SANDBOX_SHARES)[number]] = v;
    }
    return out;
  }

  /**
   * Each live http target's credential secret, from context `<target>SecretArn` (`payments` →
   * `paymentsSecretArn`): a secret's complete ARN (with its 6-character suffix). Unset: the stack
   * creates one. Set for a target in the sandbox: refused, as its URL would be.
   */
  httpCredentials(workload: Pick<Workload, 'name' | 'outbox'>, live: readonly string[] = []): Record<string, string> {
    const out: Record<string, string> = {};
    for (const { target } of workload.outbox.http) {
      const key = httpTargetContextKey(target, 'SecretArn');
      const v = this.string(key);
      if (v === undefined) continue;
      if (!live.includes(target)) throw new ConfigError(key, `is set, but target ${target} is in the sandbox (its calls are signed for the sandbox provider): add -c live=true (or live=${target}), or unset ${key}`);
      if (!SECRET_ARN.test(v)) throw new ConfigError(key, `must be a Secrets Manager secret's complete ARN (arn:<partition>:secretsmanager:<region>:<account>:secret:<name>-<6 characters>), got "${v.slice(0, 200)}"`);
      out[target] = v;
    }
    return out;
  }

  adoptTables(): Partial<Record<TableRole, AdoptedTableSetting>> | undefined {
    return parseAdoptTables(this.raw('adoptTables'));
  }
}

/** What the sandbox provider can be told to do, each a share (infra/constructs/sandbox-provider.ts). */
const SANDBOX_SHARES = ['declineShare', 'throttleShare', 'errorShare'] as const;

/** The context key of an http target's endpoint (`payments` → `paymentsUrl`, `tenant-hooks` → `tenantHooksUrl`) or its credential (`paymentsSecretArn`). */
export const httpTargetContextKey = (target: string, what: 'Url' | 'SecretArn' = 'Url'): string => `${target.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())}${what}`;

/** A secret's complete ARN: Secrets Manager appends 6 random characters to the name. */
const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$/;

// ---- The sender's SES identity ------------------------------------------------------------------

/** The settings only an email-sending workload reads. */
const EMAIL_KEYS = ['senderAddress', 'senderIdentity', 'senderDomain'] as const;

const EMAIL = /^[^\s@<>"]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/;
/** A DNS name of 2+ labels (each 1-63 letters, digits, inner hyphens), at most 253 characters. */
const DOMAIN = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const IDENTITY_ARN = /^arn:aws[a-z-]*:ses:[a-z0-9-]+:\d{12}:identity\/(.+)$/;
/**
 * RFC 2606's reserved names: nobody can read mail at them or publish their DNS records, so SES
 * can never verify an identity there and every email would end FAILED. example.com is also the
 * placeholder a copied command carries.
 */
const RESERVED_DOMAINS = ['example.com', 'example.net', 'example.org'];
const RESERVED_TLDS = ['example', 'test', 'invalid', 'localhost'];

const domainOf = (nameOrAddress: string): string => nameOrAddress.slice(nameOrAddress.lastIndexOf('@') + 1).toLowerCase();
/** `domain` is `parent` or one of its subdomains (SES lets a verified domain send from its subdomains). */
const within = (domain: string, parent: string): boolean => domain === parent || domain.endsWith(`.${parent}`);

function refuseReserved(key: string, nameOrAddress: string): void {
  const d = domainOf(nameOrAddress);
  const reserved = RESERVED_DOMAINS.find((r) => within(d, r)) ?? RESERVED_TLDS.find((t) => within(d, t));
  if (reserved !== undefined) throw new ConfigError(key, `"${nameOrAddress.slice(0, 200)}" is in ${reserved}, reserved by RFC 2606: SES can never verify it; give an address or domain you own`);
}

/** An identity covers an address when it is that address, or its domain or a parent of it. */
function refuseUncovered(key: string, identity: string, address: string): void {
  const covered = identity.includes('@') ? identity.toLowerCase() === address.toLowerCase() : within(domainOf(address), identity.toLowerCase());
  if (!covered) throw new ConfigError(key, `"${identity.slice(0, 200)}" does not cover senderAddress "${address}": give the address itself, its domain, or set senderAddress in it`);
}

/** `senderIdentity`: an identity's name (an email address or a domain) or its ARN. */
function importedIdentity(value: string, address: string): SenderIdentitySetting {
  const arn = value.startsWith('arn:') ? value : undefined;
  const name = arn === undefined ? value : IDENTITY_ARN.exec(arn)?.[1];
  if (name === undefined) throw new ConfigError('senderIdentity', `must be an SES identity ARN (arn:<partition>:ses:<region>:<account>:identity/<address or domain>), got "${value.slice(0, 200)}"`);
  if (!EMAIL.test(name) && !DOMAIN.test(name)) throw new ConfigError('senderIdentity', `must name an email address or a domain, got "${name.slice(0, 200)}"`);
  refuseReserved('senderIdentity', name);
  refuseUncovered('senderIdentity', name, address);
  return { kind: 'imported', name, ...(arn !== undefined ? { arn } : {}) };
}

/** The stack name of the default workload's stack: the name every deployed stack of it already has. */
export const DEFAULT_STACK_NAME = 'FencedWorkflow';

/**
 * The stack name infra/app.ts uses: context `stackName`, checked against CloudFormation's rule.
 * Unset: `FencedWorkflow` for the default workload (as deployed), `FencedWorkflow-<workload>`
 * for another, so two workloads' stacks deploy side by side in one account and region.
 */
export function stackNameFrom(raw: unknown, workload: string = DEFAULT_WORKLOAD): string {
  if (raw === undefined || raw === null || raw === '') return workload === DEFAULT_WORKLOAD ? DEFAULT_STACK_NAME : `${DEFAULT_STACK_NAME}-${workload}`;
  const name = String(raw);
  if (!STACK_NAME.test(name)) throw new ConfigError('stackName', `must start with a letter and be 1-128 chars of [A-Za-z0-9-], got ${JSON.stringify(name.slice(0, 140))}`);
  return name;
}

/** A context value that is an object: as written in cdk.json, or its JSON (-c); undefined when unset. */
function objectSetting(key: string, raw: unknown, example: string, shape: string): Record<string, unknown> | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw new ConfigError(key, `must be JSON like ${example}, got ${raw.slice(0, 200)}`);
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ConfigError(key, `must be ${shape}`);
  return value as Record<string, unknown>;
}

/** A context value keyed by table role. */
const objectByRole = (key: string, raw: unknown, example: string) => objectSetting(key, raw, example, 'an object keyed by table role');

/** A role the schema does not have; the old name of the records role says what it became (a cdk.json written before the rename). */
function refuseUnknownRole(key: string, role: string): void {
  if ((TABLE_ROLES as string[]).includes(role)) return;
  const renamed = role === 'invoices' ? ': the invoices role was renamed records' : '';
  throw new ConfigError(key, `unknown table role "${role.slice(0, 100)}" (one of ${TABLE_ROLES.join(', ')})${renamed}`);
}

/** `{"write": 40000, "read": 12000}`: read and write units per second, integers. */
function parseUnits(at: string, v: unknown, more: readonly string[] = []): { read?: number; write?: number } {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ConfigError(at, 'must be an object like {"write": 40000, "read": 12000}');
  const entry: { read?: number; write?: number } = {};
  for (const [kind, units] of Object.entries(v as Record<string, unknown>)) {
    if (more.includes(kind)) continue;
    if (kind !== 'read' && kind !== 'write') throw new ConfigError(at, `unknown key "${kind}" (${['read', 'write', ...more].join(', ')})`);
    if (typeof units !== 'number' || !Number.isSafeInteger(units)) throw new ConfigError(`${at}.${kind}`, `must be an integer, got ${JSON.stringify(units)}`);
    entry[kind] = units;
  }
  return entry;
}

function parseWarmThroughput(raw: unknown): Partial<Record<TableRole, WarmUnits>> | undefined {
  const value = objectByRole('warmThroughput', raw, '{"records":{"write":40000}}');
  if (value === undefined) return undefined;
  const out: Partial<Record<TableRole, WarmUnits>> = {};
  for (const [role, v] of Object.entries(value)) {
    refuseUnknownRole('warmThroughput', role);
    const at = `warmThroughput.${role}`;
    const entry: WarmUnits = parseUnits(at, v, ['indexes']);
    // An index has a warm throughput of its own: warming the table does not warm it.
    const ix = (v as Record<string, unknown>).indexes;
    if (ix !== undefined) {
      if (typeof ix !== 'object' || ix === null || Array.isArray(ix)) throw new ConfigError(`${at}.indexes`, 'must be an object keyed by index name, like {"unsent-by-shard": {"write": 16000}}');
      const indexes: Record<string, { read?: number; write?: number }> = {};
      for (const [name, units] of Object.entries(ix)) indexes[name] = parseUnits(`${at}.indexes.${name}`, units);
      Object.assign(entry, { indexes });
    }
    out[role as TableRole] = entry;
  }
  return out;
}

function parseAdoptTables(raw: unknown): Partial<Record<TableRole, AdoptedTableSetting>> | undefined {
  const value = objectByRole('adoptTables', raw, '{"jobs":{"tableName":"..."}}');
  if (value === undefined) return undefined;
  const out: Partial<Record<TableRole, AdoptedTableSetting>> = {};
  for (const [role, v] of Object.entries(value)) {
    refuseUnknownRole('adoptTables', role);
    const t = (typeof v === 'string' ? { tableName: v } : v) as Partial<AdoptedTableSetting> | null;
    if (t === null || typeof t.tableName !== 'string' || !TABLE_NAME.test(t.tableName)) {
      throw new ConfigError(`adoptTables.${role}.tableName`, 'must be a DynamoDB table name');
    }
    out[role as TableRole] = { tableName: t.tableName, ...(typeof t.tableStreamArn === 'string' ? { tableStreamArn: t.tableStreamArn } : {}) };
  }
  return out;
}

// ---- EventBridge Scheduler expressions -----------------------------------------------------------

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface CronField {
  name: string;
  min: number;
  max: number;
  names?: string[];
  /** Forms only this field has (L, W, #), whole-element. */
  special?: RegExp;
  question?: boolean;
}

const CRON_FIELDS: CronField[] = [
  { name: 'minutes', min: 0, max: 59 },
  { name: 'hours', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31, special: /^(L|LW|L-([1-9]|[12]\d|30)|([1-9]|[12]\d|3[01])W)$/, question: true },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  { name: 'day-of-week', min: 1, max: 7, names: DAYS, special: /^(L|([1-7]|SUN|MON|TUE|WED|THU|FRI|SAT)(L|#[1-5]))$/, question: true },
  { name: 'year', min: 1970, max: 2199 },
];

function cronValue(field: CronField, token: string): boolean {
  const i = field.names?.indexOf(token.toUpperCase()) ?? -1;
  if (i >= 0) return true;
  if (!/^\d{1,4}$/.test(token)) return false;
  const n = Number(token);
  return n >= field.min && n <= field.max;
}

/** One comma-separated element of a cron field: *, a value, a range, either with /step, or a special form. */
function cronElement(field: CronField, element: string): boolean {
  if (field.special?.test(element.toUpperCase())) return true;
  const [base = '', step, ...rest] = element.split('/');
  if (rest.length > 0 || (step !== undefined && !(/^\d{1,4}$/.test(step) && Number(step) > 0))) return false;
  if (base === '*') return true;
  const [from = '', to, ...more] = base.split('-');
  if (more.length > 0) return false;
  return cronValue(field, from) && (to === undefined || cronValue(field, to));
}

function cronProblem(body: string): string | undefined {
  const fields = body.trim().split(/\s+/);
  if (fields.length !== 6) return `cron(minutes hours day-of-month month day-of-week year) takes 6 fields, got ${fields.length}`;
  for (const [i, f] of CRON_FIELDS.entries()) {
    const value = fields[i]!;
    if (value === '?') {
      if (!f.question) return `"?" is allowed only in day-of-month and day-of-week, not in ${f.name}`;
      continue;
    }
    if (!value.split(',').every((e) => cronElement(f, e))) return `${f.name} "${value}" is not valid (${f.min}-${f.max}${f.names ? ` or ${f.names[0]}-${f.names.at(-1)}` : ''}, with , - * /)`;
  }
  if ((fields[2] === '?') === (fields[4] === '?')) return 'exactly one of day-of-month or day-of-week must be "?"';
  return undefined;
}

/** Why `s` is not a schedule expression EventBridge Scheduler accepts, or undefined when it is one. */
export function scheduleProblem(s: string): string | undefined {
  const m = /^(at|rate|cron)\((.*)\)$/.exec(s);
  if (m === null) return 'expected at(yyyy-mm-ddThh:mm:ss), rate(value unit) or cron(minutes hours day-of-month month day-of-week year)';
  const [, kind, body = ''] = m;
  if (kind === 'cron') return cronProblem(body);
  if (kind === 'rate') {
    const r = /^(\d+) (minute|minutes|hour|hours|day|days)$/.exec(body);
    if (r === null || Number(r[1]) < 1) return 'rate(value unit) takes a positive integer and minute(s), hour(s) or day(s)';
    if ((Number(r[1]) === 1) !== !r[2]!.endsWith('s')) return 'rate() takes the singular unit for 1 and the plural otherwise';
    return undefined;
  }
  const t = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/.exec(body);
  if (t === null || Number.isNaN(Date.parse(`${body}Z`))) return 'at() takes yyyy-mm-ddThh:mm:ss';
  return undefined;
}
