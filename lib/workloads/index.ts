/**
 * The registry: every workload this repository builds, deploys and checks. A fork adds its
 * folder and ONE line here (docs/fork.md); the stack (`-c workload=NAME`), the Lambda entries
 * (WORKLOAD), `npm start -- --workload NAME`, the chaos harness, the checker and the artifact
 * tests all find it by name.
 */
import { ConfigError, InvalidInputError } from '../protocol/index.js';
import { assertWorkload, type Workload } from '../workflow/index.js';
import { invoices } from './invoices/index.js';
import { reports } from './reports/index.js';

export const WORKLOADS: readonly Workload<any>[] = [invoices, reports];

/** The workload of a stack or a run that names none. */
export const DEFAULT_WORKLOAD = invoices.name;

for (const w of WORKLOADS) assertWorkload(w);
if (new Set(WORKLOADS.map((w) => w.name)).size !== WORKLOADS.length) throw new ConfigError('workloads', 'two registered workloads share a name');

const names = (): string => WORKLOADS.map((w) => w.name).join(', ');

/** The workload of that name; InvalidInputError naming the registered ones otherwise. */
export function workloadNamed(name: string, field = 'workload'): Workload<any> {
  const w = WORKLOADS.find((x) => x.name === name);
  if (w === undefined) throw new InvalidInputError(field, `no workload "${name}" is registered (lib/workloads/index.ts: ${names()})`);
  return w;
}

/** The functions' workload (WORKLOAD, set by the stack from the same registry); ConfigError when unknown. */
export function workloadFromEnv(env: Readonly<Record<string, string | undefined>>): Workload<any> {
  const name = env.WORKLOAD ?? DEFAULT_WORKLOAD;
  const w = WORKLOADS.find((x) => x.name === name);
  if (w === undefined) throw new ConfigError('WORKLOAD', `WORKLOAD "${name}" is not a registered workload (${names()})`);
  return w;
}
