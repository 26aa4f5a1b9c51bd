/**
 * Temporary folders for a test file, removed after the file (test/support/temp-dirs-cleanup.ts,
 * a setup file, registers the removal for every file: in a module registry shared by several
 * files, as in `isolate: false`, a hook registered when this module is first imported would run
 * for the first file only).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

/** A temporary directory removed when the test file that made it ends. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes every folder tempDir made so far. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
