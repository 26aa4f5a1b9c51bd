import { defineConfig } from 'vitest/config';
import FileOrder from './test/support/sequencer.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export default defineConfig({
  test: {
    // One DynamoDB Local for the whole run: vitest runs the globalSetup once, and every file
    // reads what it provides (the endpoint).
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Two files at a time on 2 cores (vitest's default there is one): most files wait on DynamoDB
    // Local, the local servers or their own timers. (Before each file had its own database, the
    // shared one slowed down as the run went on and two at a time starved the longest files.)
    maxWorkers: 2,
    sequence: { sequencer: FileOrder },
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/support/own-database.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
