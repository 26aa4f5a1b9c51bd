/**
 * The tools outside npm that the project runs: Java 17 for DynamoDB Local, spin and gcc for the
 * model check, jq for the docs' commands (test/docs-commands.test.ts runs their lookups). Looked up on PATH (and `java -version` asked, ~40 ms) before anything is
 * launched, so a missing one is named at once, with the one apt line that installs it, instead
 * of after a launch times out or minutes of other tests.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { ConfigError } from '../../lib/protocol/index.js';

export type Tool = 'java' | 'spin' | 'gcc' | 'jq';

/** DynamoDB Local 2.6 and later (the bundled jar is 3.3.0) needs Java 17. */
export const MIN_JAVA = 17;

/** Debian/Ubuntu package of each tool. */
const APT_PACKAGE: Record<Tool, string> = { java: 'openjdk-17-jre-headless', spin: 'spin', gcc: 'gcc', jq: 'jq' };

export interface MissingTool {
  tool: Tool;
  /** e.g. "not found on PATH", "version 11 (17 or later needed)" */
  problem: string;
}

/** The executable `name` on this PATH, or undefined. */
export function which(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The major version `java -version` reports ("1.8.0_292" is 8, "17.0.15" is 17), or undefined. */
export function javaMajor(versionOutput: string): number | undefined {
  const m = /version "(\d+)(?:\.(\d+))?[^"]*"/.exec(versionOutput);
  if (m === null) return undefined;
  const first = Number(m[1]);
  return first === 1 && m[2] !== undefined ? Number(m[2]) : first;
}

function javaProblem(java: string, env: NodeJS.ProcessEnv): string | undefined {
  const r = spawnSync(java, ['-version'], { env, encoding: 'utf8', timeout: 10_000 });
  const major = javaMajor(`${r.stderr ?? ''}${r.stdout ?? ''}`);
  if (major === undefined) return `${java} -version printed no version${r.error ? ` (${r.error.message})` : ''}`;
  if (major < MIN_JAVA) return `version ${major} at ${java} (${MIN_JAVA} or later needed)`;
  return undefined;
}

/** Which of `tools` are missing (or, for java, too old) on `env.PATH`. */
export function missingTools(tools: readonly Tool[], env: NodeJS.ProcessEnv = process.env): MissingTool[] {
  const missing: MissingTool[] = [];
  for (const tool of tools) {
    const found = which(tool, env.PATH);
    if (found === undefined) {
      missing.push({ tool, problem: 'not found on PATH' });
      continue;
    }
    const problem = tool === 'java' ? javaProblem(found, env) : undefined;
    if (problem !== undefined) missing.push({ tool, problem });
  }
  return missing;
}

/** The one apt line that installs these tools. */
export function installLine(tools: readonly Tool[]): string {
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  return `${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends ${tools.map((t) => APT_PACKAGE[t]).join(' ')}`;
}

const label = (m: MissingTool) => `${m.tool === 'java' ? `Java ${MIN_JAVA}` : m.tool} (${m.problem})`;

/**
 * Throws a ConfigError that names every missing tool and the install line, e.g.
 * "npm test needs spin (not found on PATH) and gcc (not found on PATH). Install: apt-get ...".
 */
export function requireTools(tools: readonly Tool[], purpose: string, env: NodeJS.ProcessEnv = process.env): void {
  const missing = missingTools(tools, env);
  if (missing.length === 0) return;
  const names = missing.map(label);
  const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
  throw new ConfigError('prerequisites', `${purpose} needs ${list}. Install: ${installLine(missing.map((m) => m.tool))}`);
}
