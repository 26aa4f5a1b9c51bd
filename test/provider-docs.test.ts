// tier: quick
/**
 * docs/external-effects.md's classification tables are the providers' behaviour model's
 * (lib/workflow/adapters/provider-behaviour.ts), rendered: the page cannot say one thing while
 * the sender does another. `PRINT_PROVIDER_TABLES=1` prints the rendering to paste.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROVIDER_MODELS, VERDICT_ACTIONS, type ProviderModel } from '../lib/workflow/adapters/index.js';

const cell = (s: string) => s.replace(/\|/g, '\\|');

export function renderModel(m: ProviderModel): string {
  return [
    `**${m.name}.** Keys: ${m.keyRetention}. Rate: ${m.rateLimit}.`,
    '',
    '| answer | verdict | source |',
    '| --- | --- | --- |',
    ...m.rows.map((r) => `| ${cell(r.answer)} | ${r.verdict} | ${cell(r.source)} |`),
  ].join('\n');
}

export function renderActions(): string {
  return ['| verdict | what the sender and the reconciler do |', '| --- | --- |', ...Object.entries(VERDICT_ACTIONS).map(([v, a]) => `| ${v} | ${cell(a)} |`)].join('\n');
}

describe('docs/external-effects.md renders the providers\' behaviour model', () => {
  const page = readFileSync(new URL('../docs/external-effects.md', import.meta.url), 'utf8');
  if (process.env.PRINT_PROVIDER_TABLES === '1') console.log([renderActions(), ...PROVIDER_MODELS.map(renderModel)].join('\n\n'));
  it('the verdict → action table', () => expect(page).toContain(renderActions()));
  it.each(PROVIDER_MODELS.map((m) => [m.name, m] as const))('%s: every answer, its verdict and its source', (_, m) => expect(page).toContain(renderModel(m)));
});
