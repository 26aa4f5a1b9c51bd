/**
 * The order files start in when vitest has no timings of its own (a clean clone, CI): the files
 * that take longest first, so that the two workers end together. Vitest orders by its cache of
 * each file's last duration; without one it starts the biggest files first, and a short file that
 * runs long (the bounded simulation: 50-80 s) then started in the last minute and ran alone.
 * With a cache, vitest's order stands. The list only orders: a file missing from it still runs.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The suite's files measured at 12 s or more in a full run on 2 cores (vitest's own timings; `model` as on a clean clone, where it compiles its verifiers), longest first. */
const LONGEST = ['chaos', 'profile', 'ops-loop', 'model', 'main-job', 'sim-fidelity', 'simulate', 'chaos-cli', 'external-servers', 'infra/artifact', 'runs', 'property', 'effects-budget', 'prerequisites', 'workflow', 'bench'].map((f) => `/test/${f}.test.ts`);

const rank = (file: TestSpecification) => {
  const i = LONGEST.findIndex((f) => file.moduleId.endsWith(f));
  return i === -1 ? LONGEST.length : i;
};

export default class FileOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const timed = files.every((f) => this.ctx.cache.getFileTestResults(`${f.project.name}:${f.moduleId.slice(this.ctx.config.root.length + 1)}`) !== undefined);
    if (timed) return sorted;
    // Stable: the list's order, the rest as vitest had them.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
