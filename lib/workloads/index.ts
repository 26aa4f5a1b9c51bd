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
import { renewals } from './renewals/index.js';

export const WORKLOADS: readonly Workload<any>[] = [invoices, reports, renewals];

/** The workload of a stack or a run that names none. */
export const DEFAULT_WORKLOAD = invoices.name;

for (const w of WORKLOADS) assertWorkload(w);
if (new Set(WORKLOADS.map((w) => w.name)).size !== WORKLOADS.length) throw new ConfigError('workloads', 'two registered workloads share a name');

/** The one lookup: the workload of that name, or the error `refuse` makes of a line naming the registered ones. */
function lookup(name: string, refuse: (line: string) => Error): Workload<any> {
  const w = WORKLOADS.find((x) => x.name === name);
  if (w === undefined) throw refuse(`no workload "${name.slice(0, 100)}" is registered (lib/workloads/index.ts: ${WORKLOADS.map((x) => x.name).join(', ')})`);
  return w;
}

/** The workload of that name (a flag's); InvalidInputError naming the registered ones otherwise. */
export const workloadNamed = (name: string, field = 'workload'): Workload<any> => lookup(name, (line) => new InvalidInputError(field, line));

/** A setting's workload (the stack's `-c workload`, the functions' WORKLOAD); ConfigError naming the setting otherwise. */
export const configuredWorkload = (setting: string, name: string | undefined): Workload<any> => lookup(name ?? DEFAULT_WORKLOAD, (line) => new ConfigError(setting, line));

/** The functions' workload (WORKLOAD, set by the stack from the same registry). */
export const workloadFromEnv = (env: Readonly<Record<string, string | undefined>>): Workload<any> => configuredWorkload('WORKLOAD', env.WORKLOAD);
