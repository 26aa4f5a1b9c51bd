/** A setup file (vitest.config.ts): runs before every test file, so each file's temp folders go when it ends. */
import { afterAll } from 'vitest';
import { removeTempDirs } from './temp-dir.js';

afterAll(removeTempDirs);
