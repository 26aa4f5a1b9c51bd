/**
 * Which exports of a module have no doc comment: every name an index module exports is followed
 * (through `export { x } from` re-exports) to its declaration, and the declaration must carry a
 * `/** ... *\/` comment. Source text only (TypeScript's parser, no type checking).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';

type Files = (path: string) => string;

const resolve = (from: string, spec: string) => normalize(join(dirname(from), spec)).replace(/\.js$/, '.ts');

/** The names a file exports by `export { a, type B, c as d } from './x.js'`, with where each comes from. */
function reexports(sf: ts.SourceFile, path: string): Map<string, { from: string; name: string }> {
  const out = new Map<string, { from: string; name: string }>();
  for (const s of sf.statements) {
    if (!ts.isExportDeclaration(s) || s.moduleSpecifier === undefined || s.exportClause === undefined || !ts.isNamedExports(s.exportClause)) continue;
    const from = resolve(path, (s.moduleSpecifier as ts.StringLiteral).text);
    for (const e of s.exportClause.elements) out.set(e.name.text, { from, name: (e.propertyName ?? e.name).text });
  }
  return out;
}

function declarationOf(sf: ts.SourceFile, name: string): ts.Node | undefined {
  for (const s of sf.statements) {
    if ((ts.isFunctionDeclaration(s) || ts.isClassDeclaration(s) || ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s) || ts.isEnumDeclaration(s)) && s.name?.text === name) return s;
    if (ts.isVariableStatement(s) && s.declarationList.declarations.some((d) => ts.isIdentifier(d.name) && d.name.text === name)) return s;
  }
  return undefined;
}

const documented = (node: ts.Node): boolean => ts.getJSDocCommentsAndTags(node).some((d) => ts.isJSDoc(d) && (d.comment !== undefined || (d.tags?.length ?? 0) > 0));

/** `name (file)` for every export of `index` whose declaration has no doc comment. */
export function undocumentedExports(index: string, read: Files = (p) => readFileSync(p, 'utf8')): string[] {
  const parsed = new Map<string, ts.SourceFile>();
  const source = (path: string) => {
    let sf = parsed.get(path);
    if (sf === undefined) parsed.set(path, (sf = ts.createSourceFile(path, read(path), ts.ScriptTarget.ES2022, true)));
    return sf;
  };
  const find = (path: string, name: string, depth = 0): { path: string; node: ts.Node | undefined } => {
    const sf = source(path);
    const own = declarationOf(sf, name);
    if (own !== undefined || depth > 8) return { path, node: own };
    const via = reexports(sf, path).get(name);
    return via === undefined ? { path, node: undefined } : find(via.from, via.name, depth + 1);
  };
  const missing: string[] = [];
  for (const [exported, { from, name }] of reexports(source(index), index)) {
    const { path, node } = find(from, name);
    if (node === undefined || !documented(node)) missing.push(`${exported} (${path}${node === undefined ? ', declaration not found' : ''})`);
  }
  return missing.sort();
}
