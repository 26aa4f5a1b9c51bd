/**
 * The layering rules of DESIGN.md ("Layers"), checked from the source text: every import of
 * every file, as TypeScript's preprocessor lists them (static, dynamic and type-only imports).
 *
 *   lib/protocol/  imports nothing above it, and no CDK
 *   lib/workflow/  imports lib/protocol/ only through its index, never lib/workloads/
 *   lib/           imports neither functions/, infra/, cli/ nor aws-cdk-lib / constructs
 *   elsewhere      lib/protocol/ and lib/workflow/ only through their index modules
 * and the rooms of cli/, arrows one way (cli/main.ts, the dispatcher, may import them all):
 *   cli/shared/    imports no room of cli/ (flags, the timeline picture, text widths)
 *   cli/local/     the local stand-ins and runtime: imports neither cli/demo/, cli/check/ nor cli/ops/
 *   cli/check/     the independent checker: imports neither cli/demo/, cli/ops/ nor functions/
 *   cli/ops/       the ops commands: imports nothing of cli/demo/
 *   cli/<room>/    nothing imports cli/main.ts; no file sits in cli/ outside a room but main.ts
 * and, for a reader: no import circle inside lib/, no file in lib/ over MAX_FILE_LINES, no
 * function over MAX_FUNCTION_LINES.
 */
import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';

export const MAX_FILE_LINES = 350;
export const MAX_FUNCTION_LINES = 80;

export interface Violation {
  file: string;
  rule: string;
  detail: string;
}

const CDK = /^(aws-cdk-lib|constructs|cdk-nag)(\/|$)/;
const layerOf = (path: string): string | undefined => /^lib\/(protocol|workflow|workloads)\//.exec(path)?.[1] ?? (path.startsWith('lib/') ? 'lib' : undefined);
const topOf = (path: string): string => path.split('/')[0] ?? path;
export const CLI_ROOMS = ['shared', 'local', 'check', 'demo', 'ops'] as const;
type CliRoom = (typeof CLI_ROOMS)[number];
const roomOf = (path: string): CliRoom | undefined => {
  const room = /^cli\/([^/]+)\//.exec(path)?.[1];
  return (CLI_ROOMS as readonly string[]).includes(room ?? '') ? (room as CliRoom) : undefined;
};
/** What each room of cli/ must not import: other rooms, or top-level folders. */
const CLI_FORBIDDEN: Record<CliRoom, { rooms: readonly CliRoom[]; tops: readonly string[]; rule: string }> = {
  shared: { rooms: ['local', 'check', 'demo', 'ops'], tops: [], rule: 'cli/shared/ imports no room of cli/' },
  local: { rooms: ['demo', 'check', 'ops'], tops: [], rule: 'cli/local/ imports neither cli/demo/, cli/check/ nor cli/ops/' },
  check: { rooms: ['demo', 'ops'], tops: ['functions'], rule: 'cli/check/ imports neither cli/demo/, cli/ops/ nor functions/' },
  demo: { rooms: [], tops: [], rule: '' },
  ops: { rooms: ['demo'], tops: [], rule: 'cli/ops/ imports nothing of cli/demo/' },
};

/** The project-relative path an import names (`.js` → `.ts`), or the bare package name. */
function resolveImport(from: string, spec: string): string {
  if (!spec.startsWith('.')) return spec;
  return normalize(join(dirname(from), spec)).replace(/\.js$/, '.ts');
}

export function importsOf(path: string, text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => resolveImport(path, f.fileName));
}

/** The layering rules, over a set of files (path relative to the project root → source text). */
export function layerViolations(files: ReadonlyMap<string, string>): Violation[] {
  const out: Violation[] = [];
  for (const [file, text] of files) {
    const layer = layerOf(file);
    for (const target of importsOf(file, text)) {
      const add = (rule: string) => out.push({ file, rule, detail: target });
      const targetLayer = layerOf(target);
      if (layer !== undefined && CDK.test(target)) add('lib/ imports no CDK');
      if (layer !== undefined && ['functions', 'infra', 'cli'].includes(topOf(target))) add('lib/ imports neither functions/, infra/ nor cli/');
      if (layer === 'protocol' && targetLayer !== undefined && targetLayer !== 'protocol') add('lib/protocol/ imports nothing above it');
      if (layer === 'workflow' && targetLayer === 'workloads') add('lib/workflow/ does not import a workload');
      const viaIndex = targetLayer === 'protocol' || targetLayer === 'workflow' ? target.endsWith('/index.ts') : true;
      if (targetLayer !== undefined && targetLayer !== layer && !viaIndex) add(`lib/${targetLayer}/ is imported through its index module`);
      const room = roomOf(file);
      if (room !== undefined) {
        const forbidden = CLI_FORBIDDEN[room];
        const targetRoom = roomOf(target);
        if ((targetRoom !== undefined && forbidden.rooms.includes(targetRoom)) || forbidden.tops.includes(topOf(target))) add(forbidden.rule);
      }
      if (target === 'cli/main.ts' && file.startsWith('cli/')) add('nothing in cli/ imports cli/main.ts');
    }
    if (file.startsWith('cli/') && file !== 'cli/main.ts' && roomOf(file) === undefined) out.push({ file, rule: 'every file of cli/ but main.ts is in a room', detail: file });
  }
  return out;
}

/** Import circles among the files of lib/ (each reported once, as the path that closes it). */
export function importCycles(files: ReadonlyMap<string, string>): string[][] {
  const graph = new Map<string, string[]>();
  for (const [file, text] of files) if (file.startsWith('lib/')) graph.set(file, importsOf(file, text).filter((t) => files.has(t)));
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (node: string, path: string[]) => {
    state.set(node, 'open');
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...path.slice(path.indexOf(next)), node, next]);
      else if (!state.has(next)) visit(next, [...path, node]);
    }
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node, []);
  return cycles;
}

/** Files and functions (declarations, methods, arrows, classes) longer than the limits. */
export function sizeViolations(files: ReadonlyMap<string, string>): Violation[] {
  const out: Violation[] = [];
  for (const [file, text] of files) {
    if (!file.startsWith('lib/')) continue;
    const lines = text.split('\n').length;
    if (lines > MAX_FILE_LINES) out.push({ file, rule: `files of at most ${MAX_FILE_LINES} lines`, detail: `${lines} lines` });
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const visit = (n: ts.Node) => {
      if (ts.isFunctionLike(n) && 'body' in n && n.body !== undefined) {
        const span = sf.getLineAndCharacterOfPosition(n.getEnd()).line - sf.getLineAndCharacterOfPosition(n.getStart()).line + 1;
        const name = n.name?.getText(sf) ?? (ts.isVariableDeclaration(n.parent) ? n.parent.name.getText(sf) : '<anonymous>');
        if (span > MAX_FUNCTION_LINES) out.push({ file, rule: `functions of at most ${MAX_FUNCTION_LINES} lines`, detail: `${name}: ${span} lines` });
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return out;
}
