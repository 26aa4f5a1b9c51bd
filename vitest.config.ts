import { defineConfig } from 'vitest/config';
import FileOrder from './test/support/sequencer.js';
import { tiersOf } from './test/support/tiers.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

// Each file declares its tier on its first line (test/support/tiers.ts); `npm run test:quick` is
// `vitest run --project quick`, `npm test` runs every project.
const tiers = tiersOf(import.meta.dirname);

/** What every project's files share (the root's globalSetup is not here: it runs once, for all). */
const shared = {
  setupFiles: ['test/support/own-database.ts', 'test/support/temp-dirs-cleanup.ts'],
  testTimeout: 30_000,
  hookTimeout: 60_000,
  env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
};

export default defineConfig({
  test: {
    // One DynamoDB Local for the whole run: vitest runs the root's globalSetup once, and every
    // project inherits what it provides (the endpoint).
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Two files at a time on 2 cores (vitest's default there is one): most files wait on DynamoDB
    // Local, the local servers or their own timers. (Before each file had its own database, the
    // shared one slowed down as the run went on and two at a time starved the longest files.)
    maxWorkers: 2,
    sequence: { sequencer: FileOrder },
    // One module registry per worker for the quick and full tiers (isolate: false): a file's
    // imports are loaded once, not once per file (summed import time 21 s; 51 s with a registry
    // per file).
    // Each file still gets its own database and temp folders: the setup files run before every
    // file. A file that vi.mock()s a module needs a registry of its own: `// tier: full, isolated`.
    projects: [
      { test: { ...shared, name: 'quick', include: tiers.quick, isolate: false } },
      { test: { ...shared, name: 'full', include: [...tiers.full, ...tiers.undeclared], isolate: false } },
      { test: { ...shared, name: 'isolated', include: tiers.isolated } },
    ],
  },
});
