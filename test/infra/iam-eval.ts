/**
 * The synthesized template as IAM sees it, for @cloud-copilot/iam-simulate: each function's role
 * and identity policies, the documents bucket's policy and the Leases/Fences resource policies,
 * with every intrinsic (Ref, Fn::GetAtt, Fn::Join, the pseudo parameters) resolved against one
 * fixed environment (TEST_ENV) and physical names derived from the logical ids. The recorder of a
 * local run (cli/local/aws-calls.ts) is given the same names, so a recorded call and a granted resource
 * are the same string exactly when the code and the stack agree.
 */
import { runSimulation } from '@cloud-copilot/iam-simulate';
// The recorder's stream label: the recorded stream ARN and the granted one are the same string.
import { STREAM_LABEL, TEST_ENV, roleOfTable, type ArnNames, type Authorization } from '../../cli/local/aws-authorizations.js';
import type { AwsCall } from '../../cli/local/aws-calls.js';
import { ENV, TABLE_ROLES, type TableRole } from '../../lib/workflow/index.js';

type Json = any;
interface Resource {
  Type: string;
  Properties?: Json;
}
export type TemplateJson = { Resources: Record<string, Resource> };

/** A template this evaluator cannot read as IAM would (an intrinsic it does not resolve, a role it cannot find). */
export class TemplateReadError extends Error {
  override name = 'TemplateReadError';
}

const { partition, region, account } = TEST_ENV;
const PSEUDO: Readonly<Record<string, string>> = { 'AWS::Partition': partition, 'AWS::Region': region, 'AWS::AccountId': account, 'AWS::URLSuffix': 'amazonaws.com', 'AWS::StackName': 'FencedWorkflow' };
const TABLE_VARIABLES: Readonly<Record<TableRole, string>> = { leases: ENV.leasesTable, fences: ENV.fencesTable, jobs: ENV.jobsTable, records: ENV.recordsTable, outbox: ENV.outboxTable };
const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

export interface FunctionRole {
  fn: string;
  roleId: string;
  roleArn: string;
  identityPolicies: { name: string; policy: Json }[];
}

export interface Decision {
  fn: string;
  auth: Authorization;
  result: string;
}

export class StackIam {
  readonly functions = new Map<string, FunctionRole>();
  /** Each function's logical id, by its service name. */
  private readonly functionIds = new Map<string, string>();
  /** Every role of the stack (the scheduler's too), by logical id. */
  readonly roles = new Map<string, FunctionRole>();
  private readonly bucketPolicies = new Map<string, Json>();
  private readonly tablePolicies = new Map<string, Json>();
  readonly tables: Record<TableRole, string>;
  /** The stack's documents bucket; a workload without documents has none (then a call to any bucket names none of the stack's, and is denied). */
  readonly documentsBucket: string | undefined;

  constructor(private readonly template: TemplateJson) {
    const R = template.Resources;
    for (const [id, r] of Object.entries(R)) {
      if (r.Type === 'AWS::IAM::Role') this.roles.set(id, { fn: id, roleId: id, roleArn: this.resolve({ 'Fn::GetAtt': [id, 'Arn'] }), identityPolicies: this.policiesOf(id) });
      if (r.Type === 'AWS::S3::BucketPolicy') this.bucketPolicies.set(this.resolve({ 'Fn::GetAtt': [r.Properties.Bucket.Ref, 'Arn'] }), this.resolve(r.Properties.PolicyDocument));
      if (r.Type === 'AWS::DynamoDB::Table' && r.Properties?.ResourcePolicy) this.tablePolicies.set(this.resolve({ 'Fn::GetAtt': [id, 'Arn'] }), this.resolve(r.Properties.ResourcePolicy.PolicyDocument));
    }
    for (const [id, r] of Object.entries(R).filter(([, x]) => x.Type === 'AWS::Lambda::Function')) {
      const fn = r.Properties.Environment?.Variables?.POWERTOOLS_SERVICE_NAME as string | undefined;
      const roleId = r.Properties.Role?.['Fn::GetAtt']?.[0] as string | undefined;
      const role = roleId === undefined ? undefined : this.roles.get(roleId);
      if (fn === undefined || role === undefined) throw new TemplateReadError(`a function without POWERTOOLS_SERVICE_NAME or role: ${JSON.stringify(r.Properties.Role)}`);
      this.functions.set(fn, { ...role, fn });
      this.functionIds.set(fn, id);
    }
    this.tables = Object.fromEntries(TABLE_ROLES.map((role) => [role, this.tableOf(role)])) as Record<TableRole, string>;
    const docs = Object.keys(R).find((id) => R[id]!.Type === 'AWS::S3::Bucket' && id.includes('Documents'));
    this.documentsBucket = docs === undefined ? undefined : this.physicalName(docs);
  }

  /**
   * The logical id of the table the functions use for `role`: the one their environment names
   * (`RECORDS_TABLE: {Ref: ...}`), whatever its construct id (the invoice stack's Records table
   * keeps the id `Invoices`); an adopted table's name as given.
   */
  private tableOf(role: TableRole): string {
    const variable = TABLE_VARIABLES[role];
    for (const r of Object.values(this.template.Resources)) {
      if (r.Type !== 'AWS::Lambda::Function') continue;
      const v = r.Properties?.Environment?.Variables?.[variable] as string | { Ref?: string } | undefined;
      if (typeof v === 'string') return v;
      if (v?.Ref !== undefined) return v.Ref;
    }
    throw new TemplateReadError(`no function names its ${role} table (${variable})`);
  }

  /** The names a local run's recorder builds ARNs with: each local table by its role, the bucket by the stack's. */
  arnNames(): ArnNames {
    // A workload that sends no email has no identity or configuration set: a SendEmail would name none of the stack's, and be denied.
    const ses = (type: string) => (Object.values(this.template.Resources).some((r) => r.Type === type) ? this.physicalName(this.only(type, '')) : `no-${type.split('::')[2]!.toLowerCase()}-in-stack`);
    return {
      ...TEST_ENV,
      table: (local) => {
        const role = roleOfTable(local);
        return role === undefined ? local : this.physicalName(this.tables[role]);
      },
      bucket: () => this.documentsBucket ?? 'no-documents-bucket-in-stack',
      queue: this.physicalName(this.only('AWS::SQS::Queue', 'WorkQueue')),
      // The sender sends as the stack's identity (its SENDER_ADDRESS is the identity's address).
      emailIdentity: () => ses('AWS::SES::EmailIdentity'),
      configurationSet: ses('AWS::SES::ConfigurationSet'),
      ...(this.functionIds.has('sandbox-provider') ? { sandboxProvider: this.physicalName(this.functionIds.get('sandbox-provider')!) } : {}),
    };
  }

  /** The one resource of `type` whose logical id contains `part`. */
  private only(type: string, part: string): string {
    const ids = Object.keys(this.template.Resources).filter((id) => this.template.Resources[id]!.Type === type && id.includes(part));
    if (ids.length !== 1) throw new TemplateReadError(`expected one ${type} named like "${part}", found ${ids.length}`);
    return ids[0]!;
  }

  /** Logical id → the physical name this evaluation gives it (buckets are lower case, as S3 requires). */
  physicalName(id: string): string {
    const r = this.template.Resources[id];
    if (r?.Type === 'AWS::S3::Bucket') return id.toLowerCase();
    if (r?.Type === 'AWS::SES::EmailIdentity') return String(r.Properties.EmailIdentity);
    return id;
  }

  /** What `Ref` returns: a secret's ARN (Secrets Manager appends 6 characters to its name), every other resource's physical name. */
  private refOf(id: string): string {
    if (this.template.Resources[id]?.Type === 'AWS::SecretsManager::Secret') return `arn:${partition}:secretsmanager:${region}:${account}:secret:${id}-AbCdEf`;
    return this.physicalName(id);
  }

  private arnOf(id: string, attr: string): string {
    const r = this.template.Resources[id];
    const name = this.physicalName(id);
    const at = (service: string, rest: string) => `arn:${partition}:${service}:${region}:${account}:${rest}`;
    switch (`${r?.Type}.${attr}`) {
      case 'AWS::DynamoDB::Table.Arn':
        return at('dynamodb', `table/${name}`);
      case 'AWS::DynamoDB::Table.StreamArn':
        return at('dynamodb', `table/${name}/stream/${STREAM_LABEL}`);
      case 'AWS::S3::Bucket.Arn':
        return `arn:${partition}:s3:::${name}`;
      case 'AWS::IAM::Role.Arn':
        return `arn:${partition}:iam::${account}:role/${name}`;
      case 'AWS::SQS::Queue.Arn':
        return at('sqs', name);
      case 'AWS::Logs::LogGroup.Arn':
        return at('logs', `log-group:${name}:*`);
      case 'AWS::Lambda::Function.Arn':
        return at('lambda', `function:${name}`);
      default:
        throw new TemplateReadError(`Fn::GetAtt ${id}.${attr} (${r?.Type}) is not resolved by this evaluator`);
    }
  }

  resolve(v: Json): Json {
    if (Array.isArray(v)) return v.map((x) => this.resolve(x));
    if (v === null || typeof v !== 'object') return v;
    if ('Ref' in v) return PSEUDO[v.Ref] ?? this.refOf(v.Ref);
    if ('Fn::GetAtt' in v) return this.arnOf(v['Fn::GetAtt'][0], v['Fn::GetAtt'][1]);
    if ('Fn::Join' in v) return (this.resolve(v['Fn::Join'][1]) as string[]).join(v['Fn::Join'][0]);
    const key = Object.keys(v).find((k) => k.startsWith('Fn::'));
    if (key !== undefined) throw new TemplateReadError(`${key} is not resolved by this evaluator`);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, this.resolve(x)]));
  }

  private policiesOf(roleId: string): { name: string; policy: Json }[] {
    const out: { name: string; policy: Json }[] = [];
    for (const [id, r] of Object.entries(this.template.Resources)) {
      if (r.Type !== 'AWS::IAM::Policy' && r.Type !== 'AWS::IAM::ManagedPolicy') continue;
      if (list(r.Properties.Roles).some((x: Json) => x?.Ref === roleId)) out.push({ name: id, policy: this.resolve(r.Properties.PolicyDocument) });
    }
    const role = this.template.Resources[roleId]!;
    for (const [i, p] of list(role.Properties?.Policies).entries()) out.push({ name: `${roleId}-inline-${i}`, policy: this.resolve((p as Json).PolicyDocument) });
    if (list(role.Properties?.ManagedPolicyArns).length > 0) throw new TemplateReadError(`${roleId} has managed policies this evaluator does not read`);
    return out;
  }

  /** The resource policy AWS evaluates with a request on `resource`: its bucket's or its table's (an index's and a stream's too). */
  resourcePolicyFor(resource: string): Json | undefined {
    const s3 = /^arn:[^:]+:s3:::([^/]+)/.exec(resource);
    if (s3 !== null) return this.bucketPolicies.get(`arn:${partition}:s3:::${s3[1]}`);
    const table = /^(arn:[^:]+:dynamodb:[^:]+:[^:]+:table\/[^/]+)(\/index\/.*)?$/.exec(resource);
    return table === null ? undefined : this.tablePolicies.get(table[1]!);
  }

  /** One request by `role` (the function's, or any role of the stack), as IAM decides it: Allowed, ExplicitlyDenied, ImplicitlyDenied. */
  async decide(role: FunctionRole, auth: Authorization, extraIdentity: Json[] = []): Promise<string> {
    const resourcePolicy = this.resourcePolicyFor(auth.resource);
    const r = await runSimulation(
      {
        request: {
          principal: `arn:${partition}:sts::${account}:assumed-role/${role.roleId}/${role.fn}`,
          action: auth.action,
          resource: { resource: auth.resource, accountId: account },
          // What the request carries, and what AWS adds for a Lambda's role session over TLS.
          contextVariables: { ...auth.context, 'aws:PrincipalArn': role.roleArn, 'aws:PrincipalAccount': account, 'aws:SecureTransport': 'true' },
        },
        identityPolicies: [...role.identityPolicies, ...extraIdentity.map((policy, i) => ({ name: `extra-${i}`, policy }))],
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        ...(resourcePolicy === undefined ? {} : { resourcePolicy }),
      },
      {},
    );
    if (r.resultType === 'error') throw new TemplateReadError(`${role.fn} ${auth.action} ${auth.resource}: ${JSON.stringify(r.errors)}`);
    return r.overallResult;
  }

  /** Every distinct (function, action, resource, context) of the records, decided with that function's role. */
  async evaluate(calls: readonly AwsCall[]): Promise<{ decisions: Decision[]; denied: string[] }> {
    const distinct = new Map<string, { fn: string; auth: Authorization }>();
    for (const c of calls) for (const auth of c.authorizations) distinct.set(JSON.stringify([c.fn, auth.action, auth.resource, auth.context]), { fn: c.fn, auth });
    const decisions: Decision[] = [];
    for (const { fn, auth } of distinct.values()) {
      const role = this.functions.get(fn);
      if (role === undefined) throw new TemplateReadError(`calls of "${fn}", a function the stack does not have`);
      decisions.push({ fn, auth, result: await this.decide(role, auth) });
    }
    const denied = decisions.filter((d) => d.result !== 'Allowed').map(describeDecision);
    return { decisions, denied };
  }
}

export const describeDecision = (d: Decision): string => `${d.fn}: ${d.auth.action} on ${d.auth.resource}${Object.keys(d.auth.context).length ? ` ${JSON.stringify(d.auth.context)}` : ''} is ${d.result}`;
