import { defineConfig } from 'vitest/config';
import FileOrder from './test/support/sequencer.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

/** A measurement of two quiet runs of the real handlers (the committed load profile). */
const QUIET = ['test/profile.test.ts'];

/** What every project's files share (the root's globalSetup is not here: it runs once, for all). */
const shared = {
  setupFiles: ['test/support/own-database.ts'],
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
    projects: [
      // First and alone: the profile's share of refused claim races (two claimants of one outbox
      // item) is 0.14 an item measured quietly, and passed alone beside two CPU burners, but
      // beside other DynamoDB Local files on a slow machine it reached 0.51-0.58 against its
      // bound of 0.5 (a full run, and CI).
      { test: { ...shared, name: 'quiet', include: QUIET, sequence: { groupOrder: 1 } } },
      { test: { ...shared, name: 'suite', include: ['test/**/*.test.ts'], exclude: QUIET, sequence: { groupOrder: 2 } } },
    ],
  },
});
