// tier: full
/**
 * Every command the README and docs/ show in a shell block, as a reader would copy it, so a
 * copied command cannot fail on a typo: `npm run synth`, `deploy` and `destroy` synthesize the app
 * with the context they pass (cdk runs the app for each of them); the offline CLI commands (plan,
 * cost) run; the ones that need a deployed stack are checked against the CLI's own commands and
 * flags; every npm script named is package.json's; every `jq` lookup in cdk-outputs.json runs
 * against an outputs file of a stack whose name has a hyphen (FencedWorkflow-reports), as a
 * fork's or a second workload's has; and what is left is marked: a call that needs AWS (`aws`,
 * `cdk bootstrap`), or the shell plumbing around the others.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { OPS_COMMANDS, OPS_OPTIONS, opsCommand } from '../cli/ops/ops.js';
import { OUTPUTS } from '../infra/outputs.js';
import { PROJECT_ROOT, tempDir, templateOf } from './infra/support.js';

interface DocCommand {
  readonly file: string;
  readonly line: string;
}

/** The shell blocks' commands: continuation lines joined, prompts and comments dropped, `$CTX` expanded from the block's own assignment. */
function docCommands(): DocCommand[] {
  const files = ['README.md', ...readdirSync(join(PROJECT_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const out: DocCommand[] = [];
  for (const file of files) {
    const text = readFileSync(join(PROJECT_ROOT, file), 'utf8');
    for (const m of text.matchAll(/```(?:sh|bash)\n([\s\S]*?)```/g)) {
      const block = m[1]!.replace(/\\\n\s*/g, ' ');
      const ctx = /^CTX="([^"]*)"/m.exec(block)?.[1] ?? '';
      for (const raw of block.split('\n')) {
        const line = raw.replace(/^\$ /, '').replace(/\s+#.*$/, '').replace(/\$CTX\b/g, ctx).trim();
        if (line !== '' && !line.startsWith('#')) out.push({ file, line });
      }
    }
  }
  return out;
}

/** `-c key=value` pairs of a command line (a value quoted with ' kept whole). */
function contextOf(line: string): Record<string, string> {
  const ctx: Record<string, string> = {};
  for (const m of line.matchAll(/-c ([A-Za-z]+)=('([^']*)'|(\S+))/g)) ctx[m[1]!] = m[3] ?? m[4]!;
  return ctx;
}

const commands = docCommands();
const cdk = commands.filter((c) => /^npm run (synth|deploy|destroy)\b/.test(c.line));
const cli = commands.filter((c) => /^npm run (-s )?cli -- /.test(c.line));
const jq = commands.flatMap((c) => [...c.line.matchAll(/jq -r (--arg s "\$STACK" (?:--arg k "\$(?:key|1)" )?'[^']*'|\.FencedWorkflow\.\w+) cdk-outputs\.json/g)].map((m) => ({ file: c.file, filter: m[1]! })));

describe('the docs\' commands', () => {
  it('are found: synth, deploy and destroy lines, CLI commands and jq lookups', () => {
    expect(cdk.length).toBeGreaterThanOrEqual(5);
    expect(cli.length).toBeGreaterThanOrEqual(20);
    expect(jq.length).toBeGreaterThanOrEqual(10);
  });

  it.each(cdk.map((c) => [c.file, c.line] as const))('%s: `%s` synthesizes with its context', (_file, line) => {
    const context = contextOf(line);
    const workload = context.workload;
    expect(() => templateOf({ context, ...(workload === undefined ? {} : { workload }) })).not.toThrow();
  });

  it.each(cli.map((c) => [c.file, c.line] as const))('%s: `%s` names a command and flags the CLI has', (_file, line) => {
    const words = line.replace(/^npm run (-s )?cli -- /, '').split(/\s+/);
    const command = words[0]!;
    const known = [...OPS_COMMANDS, 'demo', 'dynamodb', 'profile', 's3-endpoint', 'smtp-sink', 'workloads'];
    expect(known).toContain(command);
    if (!(OPS_COMMANDS as readonly string[]).includes(command) || command === 'plan' || command === 'cost') return;
    for (const flag of words.filter((w) => w.startsWith('--')).map((w) => w.slice(2).split('=')[0]!)) expect(Object.keys(OPS_OPTIONS), `${command} --${flag}`).toContain(flag);
  });

  it('the offline ones run as written: plan, and cost on the template npm run synth writes', async () => {
    const dir = tempDir('fenced-docs-');
    writeFileSync(join(dir, 'FencedWorkflow.template.json'), JSON.stringify(templateOf().template.toJSON()));
    writeFileSync(join(dir, 'FencedWorkflow-reports.template.json'), JSON.stringify(templateOf({ workload: 'reports' }).template.toJSON()));
    const offline = cli.filter((c) => /cli -- (plan|cost) /.test(c.line));
    expect(offline.length).toBeGreaterThanOrEqual(2);
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      for (const c of offline) {
        const args = c.line.replace(/^npm run (-s )?cli -- /, '').replace(/cdk\.out\//g, `${dir}/`).split(/\s+/);
        expect(await opsCommand(args[0] as 'plan' | 'cost', args.slice(1)), c.line).toBe(0);
      }
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('every npm script a line runs is one package.json has', () => {
    const scripts = Object.keys((JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);
    for (const c of commands) for (const m of c.line.matchAll(/npm run (?:-s )?([\w:-]+)/g)) expect(scripts, `${c.file}: ${c.line}`).toContain(m[1]);
  });

  it('every other line is either a call that needs AWS (aws, cdk bootstrap: run on a real account, not here) or shell plumbing around the checked ones', () => {
    const checked = (l: string) => /^(\/usr\/bin\/time -v )?npm (run|start|test|ci)\b|^npm ci && npm start$|^jq /.test(l);
    const needsAws = (l: string) => /(^|\$\(|\| )aws |npx cdk bootstrap|^AWS_REGION=\S+ npm run deploy/.test(l);
    const plumbing = (l: string) => /^(export |for |while |do\b|done\b|if |fi\b|cp |out\(\)|out \w+|[A-Za-z_]+=|[{}"\])]|EOF$)/.test(l);
    // A test file run on its own: the file is there.
    const testFile = (l: string) => /^npx vitest run (\S+)$/.exec(l)?.[1];
    for (const c of commands) if (testFile(c.line) !== undefined) expect(existsSync(join(PROJECT_ROOT, testFile(c.line)!)), c.line).toBe(true);
    // fork.md's walk-through names the workload its reader creates (audits): those lines run in the fork.
    const inTheFork = (c: DocCommand) => c.file === 'docs/fork.md' && /\baudits\b/.test(c.line);
    const unclassified = commands.filter((c) => !checked(c.line) && !needsAws(c.line) && !plumbing(c.line) && testFile(c.line) === undefined && !inTheFork(c));
    expect(unclassified.map((c) => `${c.file}: ${c.line}`)).toEqual([]);
    // The ones that need AWS, counted: the five-minute walk and the runbooks are mostly these.
    expect(commands.filter((c) => needsAws(c.line)).length).toBeGreaterThan(20);
  });

  it("every jq lookup in cdk-outputs.json finds its output when the stack's name has a hyphen (FencedWorkflow-reports), or names the default stack", () => {
    const dir = tempDir('fenced-docs-');
    const outputs = Object.fromEntries(Object.values(OUTPUTS).map((k) => [k, `value-of-${k}`]));
    const file = join(dir, 'cdk-outputs.json');
    writeFileSync(file, JSON.stringify({ 'FencedWorkflow-reports': { ...outputs, SenderDkimRecords: 'a CNAME b' }, FencedWorkflow: outputs }));
    for (const { filter } of jq) {
      const args = filter.startsWith('.') ? [filter] : [...filter.replace(/'([^']*)'$/, '').trim().split(/\s+/), /'([^']*)'$/.exec(filter)![1]!];
      const withValues = args.map((a) => a.replace('"$STACK"', 'FencedWorkflow-reports').replace(/"\$(key|1)"/, OUTPUTS.leases));
      const value = execFileSync('jq', ['-r', ...withValues, file], { encoding: 'utf8' }).trim();
      expect(value, filter).not.toBe('null');
      expect(value, filter).not.toBe('');
    }
  });
});
