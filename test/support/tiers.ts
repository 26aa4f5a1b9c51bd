/**
 * Which tier a test file belongs to, read from the file's own first line, where a reader sees it:
 *
 *   // tier: quick             in `npm run test:quick` (and `npm test`)
 *   // tier: full              in `npm test` only: bundles, synths, real processes, the model, long runs
 *   // tier: full, isolated    as full, in a module registry of its own (a file that vi.mock()s a module)
 *
 * The quick tier needs Java (DynamoDB Local) and nothing else from outside npm. A file with no
 * such line still runs in `npm test` (as full), and test/tiers.test.ts fails naming it.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

export type Tier = 'quick' | 'full';

export interface Declared {
  tier: Tier;
  /** The file needs a module registry of its own (vitest's isolation). */
  isolated: boolean;
}

const LINE = /^\/\/ tier: (quick|full)(, isolated)?\s*$/;

/** The tier a file's text declares on its first line, or undefined when it declares none or a malformed one. */
export function declaredTier(text: string): Declared | undefined {
  const m = LINE.exec(text.split('\n', 1)[0] ?? '');
  if (m === null) return undefined;
  const tier = m[1] as Tier;
  const isolated = m[2] !== undefined;
  // Only the full tier has an isolated project: the quick tier shares one registry to start fast.
  if (isolated && tier === 'quick') return undefined;
  return { tier, isolated };
}

/** Every test file under `<root>/test`, as a path relative to root with forward slashes. */
export function testFiles(root: string): string[] {
  return readdirSync(join(root, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => relative(root, join(root, 'test', f)).split(sep).join('/'))
    .sort();
}

export interface Tiers {
  quick: string[];
  full: string[];
  isolated: string[];
  /** Files with no tier line (or a malformed one): run as full, and named by test/tiers.test.ts. */
  undeclared: string[];
}

export function tiersOf(root: string): Tiers {
  const out: Tiers = { quick: [], full: [], isolated: [], undeclared: [] };
  for (const file of testFiles(root)) {
    const d = declaredTier(readFileSync(join(root, file), 'utf8'));
    if (d === undefined) out.undeclared.push(file);
    else if (d.isolated) out.isolated.push(file);
    else out[d.tier].push(file);
  }
  return out;
}
