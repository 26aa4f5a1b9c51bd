// tier: quick
/**
 * The protocol's public surface is documented: every name lib/protocol/index.ts exports leads
 * (through its re-exports) to a declaration with a doc comment. Shown to fire, too.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { undocumentedExports } from './support/api-docs.js';

const root = new URL('..', import.meta.url).pathname;
const index = `${root}lib/protocol/index.ts`;

describe('the public surface of lib/protocol', () => {
  it('every export of lib/protocol/index.ts has a doc comment where it is declared', () => {
    expect(undocumentedExports(index)).toEqual([]);
  });

  it('an export without one is found, and so is one re-exported from a module that does not declare it', () => {
    const read = (path: string) => {
      const text = readFileSync(path, 'utf8');
      if (path.endsWith('/result.ts')) return text.replace('/** Wraps a value as Ok. */\n', '');
      if (path.endsWith('/index.ts')) return `${text}\nexport { nowhere } from './scan.js';\n`;
      return text;
    };
    expect(undocumentedExports(index, read)).toEqual([expect.stringMatching(/^nowhere \(.*scan\.ts, declaration not found\)$/), expect.stringMatching(/^ok \(.*result\.ts\)$/)]);
  });
});
