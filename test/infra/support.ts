/**
 * Shared by the infra tests: the app as `cdk synth` builds it (cdk.json context, the same nag
 * packs), with bundling skipped unless a test asks for it, and readers for IAM and acknowledgements.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, CfnElement, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { inject } from 'vitest';
import { tempDir } from '../support/temp-dir.js';
import { synthesizeApp } from '../../infra/app.js';
import { addComplianceChecks } from '../../infra/constructs/checks.js';
import { stackNameFrom } from '../../infra/context.js';
import { FencedWorkflowStack } from '../../infra/stack.js';
import { ConfigError } from '../../lib/protocol/index.js';
import { DEFAULT_WORKLOAD, workloadNamed } from '../../lib/workloads/index.js';

export const PROJECT_ROOT = join(import.meta.dirname, '..', '..');
/**
 * The From address the tests synthesize with. cdk.json holds none (an operator sets their own,
 * and synth refuses RFC 2606's example domains), so the tests give one: never deployed, never mailed.
 */
export const TEST_SENDER = 'invoices@fenced-workflow.dev';
/** cdk.json's context plus the test sender: what `cdk synth -c senderAddress=...` runs with. */
export const CDK_JSON_CONTEXT: Record<string, unknown> = {
  ...((JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context?: Record<string, unknown> }).context ?? {}),
  senderAddress: TEST_SENDER,
};

export { tempDir };

/**
 * The cloud-assembly folder of every synth with bundling in this worker process, inside the run's
 * scratch folder (global-setup.ts removes it). CDK's asset cache and its staging key on the
 * output folder, so in one shared folder the production construct's own bundling builds each
 * function once per process, as one `cdk synth` does, however many stacks use it.
 */
function bundledOutdir(): string {
  const dir = join(inject('scratchDir'), `bundled-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export interface TestApp {
  app: App;
  stack: FencedWorkflowStack;
  outdir: string;
}

export interface BuildOptions {
  context?: Record<string, unknown>;
  bundle?: boolean;
  nag?: boolean;
  /** @default the name infra/app.ts gives the workload's stack (stackNameFrom) */
  stackName?: string;
  /** A registered workload's name, as `-c workload=NAME` gives it. @default the registry's default */
  workload?: string;
}

/**
 * cdk.json's context as the operator of `workload` has it: the test sender only for a workload
 * that sends email (synth refuses an email setting for one that sends none).
 */
export function contextFor(workload: string): Record<string, unknown> {
  const { senderAddress, ...rest } = CDK_JSON_CONTEXT;
  return { ...rest, ...(workloadNamed(workload).outbox.email ? { senderAddress } : {}), workload };
}

/**
 * The context that skips esbuild for every stack (~50 ms instead of ~1-2 CPU-s per function): for
 * a synth that does not test the bundle, including a construct built only to see it refused.
 */
export const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] } as const;

/** An app of its own (a temp output folder) that skips bundling, for a construct test or a fork's own stack code. */
export function appWithoutBundling(context: Record<string, unknown> = {}): App {
  return new App({ outdir: tempDir('fenced-cdk-'), context: { ...context, ...NO_BUNDLING } });
}

/** The app as infra/app.ts builds it. `bundle: false` (default) skips esbuild (NO_BUNDLING). */
export function buildApp(opts: BuildOptions = {}): TestApp {
  const outdir = opts.bundle ? bundledOutdir() : tempDir('fenced-cdk-');
  const workload = opts.workload ?? DEFAULT_WORKLOAD;
  const app = new App({
    outdir,
    context: {
      ...contextFor(workload),
      ...(opts.bundle ? {} : NO_BUNDLING),
      ...opts.context,
    },
  });
  const stack = new FencedWorkflowStack(app, opts.stackName ?? stackNameFrom(undefined, workload));
  if (opts.nag ?? false) addComplianceChecks(app);
  return { app, stack, outdir };
}

/**
 * Runs `synth` without CDK's built-in CloudFormation schema validation (a WebAssembly engine,
 * 2-5 s per synth on these machines). synth-line.test.ts synthesizes once with it, as `cdk synth` does.
 */
export function withoutCfnValidation<T>(f: () => T): T {
  const saved = process.env.CDK_VALIDATION;
  process.env.CDK_VALIDATION = 'false';
  try {
    return f();
  } finally {
    if (saved === undefined) delete process.env.CDK_VALIDATION;
    else process.env.CDK_VALIDATION = saved;
  }
}

/**
 * `cdk synth -c ...` in this process: infra/app.ts's entry with `context` as the only context
 * (as CDK_CONTEXT_JSON gives it), an output folder of its own and no CloudFormation validation.
 * Its exit status, the lines it wrote and the folder. test/infra/synth-line.test.ts runs the app
 * as cdk does, its own process, to prove the wiring.
 */
export function synthAsCdk(context: Record<string, unknown>): { status: number; lines: string[]; outdir: string } {
  const outdir = tempDir('fenced-cdk-');
  const lines: string[] = [];
  const status = withoutCfnValidation(() => synthesizeApp(new App({ outdir, context }), (line) => lines.push(line)));
  return { status, lines, outdir };
}

/** The stack's template, for property assertions. */
export function templateOf(opts: BuildOptions = {}): { template: Template; stack: FencedWorkflowStack } {
  const { stack } = buildApp(opts);
  return { template: withoutCfnValidation(() => Template.fromStack(stack)), stack };
}

export const logicalId = (c: IConstruct): string => {
  const el = c instanceof CfnElement ? c : (c.node.defaultChild as CfnElement);
  return Stack.of(el).getLogicalId(el);
};

export const arnOf = (c: IConstruct) => ({ 'Fn::GetAtt': [logicalId(c), 'Arn'] });

type Json = unknown;
export interface Permission {
  effect: string;
  action: string;
  /** JSON of the resource (a string ARN or an intrinsic). */
  resource: string;
}

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * Every (effect, action, resource) a role's identity policies grant, whatever way CDK merged
 * the statements (the `minimizePolicies` feature flag changes the grouping, not the grants).
 */
export function permissionsOf(template: Template, roleLogicalId: string): Permission[] {
  const out: Permission[] = [];
  const statements: Record<string, Json>[] = [];
  for (const policy of Object.values(template.findResources('AWS::IAM::Policy'))) {
    const props = policy.Properties as { Roles?: Json[]; PolicyDocument: { Statement: Record<string, Json>[] } };
    if (list(props.Roles).some((r) => JSON.stringify(r) === JSON.stringify({ Ref: roleLogicalId }))) statements.push(...props.PolicyDocument.Statement);
  }
  const role = template.toJSON().Resources[roleLogicalId] as { Properties: { Policies?: { PolicyDocument: { Statement: Record<string, Json>[] } }[] } };
  for (const p of role.Properties.Policies ?? []) statements.push(...p.PolicyDocument.Statement);
  for (const s of statements) {
    for (const action of list(s.Action as string | string[])) {
      for (const resource of list(s.Resource as Json)) out.push({ effect: String(s.Effect), action, resource: JSON.stringify(resource) });
    }
  }
  return out;
}

/** Every Allow statement of every identity policy in the template, flattened. */
export function allAllowed(template: Template): Permission[] {
  const roles = Object.keys(template.findResources('AWS::IAM::Role'));
  return roles.flatMap((r) => permissionsOf(template, r)).filter((p) => p.effect === 'Allow');
}

export interface Acknowledgement {
  path: string;
  id: string;
  reason: string;
}

/** The acknowledgements recorded with Validations.of(...).acknowledge(), where they were made. */
export function acknowledgementsOf(root: IConstruct): Acknowledgement[] {
  const out: Acknowledgement[] = [];
  for (const c of root.node.findAll()) {
    for (const m of c.node.metadata) {
      if (m.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(m.data as Record<string, string>)) out.push({ path: c.node.path, id, reason });
    }
  }
  return out;
}

export interface Violation {
  plugin: string;
  rule: string;
  paths: string[];
}

/** Synthesizes with the nag packs; returns the violations of the validation report (empty when synth passes). */
export function nagViolations(app: App, outdir: string): Violation[] {
  try {
    app.synth();
    return [];
  } catch (e) {
    let report: { pluginReports?: { pluginName: string; violations: { ruleName: string; violatingConstructs: { constructPath: string }[] }[] }[] };
    try {
      report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8'));
    } catch {
      throw e;
    }
    return (report.pluginReports ?? []).flatMap((p) =>
      p.violations.map((v) => ({ plugin: p.pluginName, rule: v.ruleName, paths: v.violatingConstructs.map((c) => c.constructPath) })),
    );
  }
}

/**
 * The logical ids (and resource type) CloudFormation knows the deployed tables by. NEVER edit
 * these to make a test pass. A construct id rename, moving the tables under another construct, or
 * Table -> TableV2 gives a table a new identity: CloudFormation creates a new, empty one and, as
 * the old one is retained, leaves it behind unused. For Leases and Fences that restarts every
 * counter at 0 and makes every token ever issued valid again. To restructure the code, keep the
 * id with `(table.node.defaultChild as CfnTable).overrideLogicalId('<id below>')`.
 */
export const PINNED_TABLES = {
  leases: 'WorkflowLeasesA5312C66',
  fences: 'WorkflowFences7C5A223B',
  jobs: 'WorkflowJobs7CE3A8EC',
  // The invoice workload keeps its table's construct id (stackIds.records: 'Invoices'), so the id it was deployed with.
  records: 'WorkflowInvoices78B9EFE3',
  outbox: 'WorkflowOutboxD218FE8C',
} as const;
const PINNED_TYPE = 'AWS::DynamoDB::Table';

/** Why `template` would replace a deployed table, one line per table (empty when none would be replaced). */
export function tableIdDrift(template: { Resources?: Record<string, { Type: string }> }): string[] {
  const resources = template.Resources ?? {};
  const out: string[] = [];
  for (const [role, id] of Object.entries(PINNED_TABLES)) {
    const table = role[0]!.toUpperCase() + role.slice(1);
    const consequence =
      `CloudFormation would create a new, empty ${table} table and leave the deployed one behind (Retain)` +
      (role === 'leases' || role === 'fences' ? ', every counter back at 0 and every token ever issued valid again' : ', the functions writing to the empty one') +
      `. Keep the id with overrideLogicalId('${id}') (see PINNED_TABLES in test/infra/support.ts).`;
    const found = resources[id];
    if (found === undefined) out.push(`${role}: ${id} (${PINNED_TYPE}) is gone from the template: ${consequence}`);
    else if (found.Type !== PINNED_TYPE) out.push(`${role}: ${id} is now ${found.Type}, not ${PINNED_TYPE}: a type change is a replace. ${consequence}`);
  }
  return out;
}

/** The ConfigError `build` throws: a test of a refusal fails when it is accepted or fails otherwise. */
export function refusal(build: () => unknown): ConfigError {
  try {
    build();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new TypeError('accepted');
}
