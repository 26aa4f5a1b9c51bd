/**
 * `npm run cli -- workloads`: the registered workloads (lib/workloads/index.ts), each as the
 * generic parts read it: its unit-size cap, its effects, its schedule, and how to run, check and
 * deploy it. `--json` for tools.
 */
import { httpTargetEnv, unitSizeCap, type Workload } from '../../lib/workflow/index.js';
import { DEFAULT_WORKLOAD, WORKLOADS } from '../../lib/workloads/index.js';
import { parseFlags } from '../shared/flags.js';

export const WORKLOADS_HELP = `Usage: npm run cli -- workloads [--json]

The workloads this repository registers (lib/workloads/index.ts), what each writes, and the
commands that run, check and deploy it.
`;

/** What `workloads` says of one workload: everything read from its descriptor. */
export function describeWorkload(w: Workload<any>) {
  const flag = w.name === DEFAULT_WORKLOAD ? '' : ` -- --workload ${w.name}`;
  return {
    name: w.name,
    default: w.name === DEFAULT_WORKLOAD,
    description: w.description,
    effectsPerItem: w.effectsPerItem,
    unitSize: { default: w.defaultUnitSize, max: unitSizeCap(w) },
    documents: w.processor.documents?.prefix ?? null,
    email: w.outbox.email,
    http: w.outbox.http.map((t) => ({ target: t.target, destination: t.destination ?? 'fixed', endpointEnv: httpTargetEnv(t.target).url })),
    schedule: w.start.schedule.description,
    startPayload: w.start.payloadFields,
    run: `npm start${flag}`,
    synth: `npx cdk synth -c workload=${w.name}${w.outbox.email ? ' -c senderAddress=you@your-domain' : ''}`,
  };
}

export function workloadsCommand(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s)): number {
  const { values } = parseFlags({ args: argv, options: { json: { type: 'boolean', default: false }, help: { type: 'boolean', default: false } }, allowPositionals: false });
  if (values.help) return out(WORKLOADS_HELP), 0;
  const all = WORKLOADS.map(describeWorkload);
  if (values.json) return out(`${JSON.stringify(all, null, 1)}\n`), 0;
  for (const w of all) {
    out(`${w.name}${w.default ? ' (default)' : ''}: ${w.description}\n`);
    const http = w.http.map((h) => `${h.target} (${h.destination}, ${h.endpointEnv})`).join(', ') || 'none';
    out(`  effects per item ${w.effectsPerItem}, unit size ${w.unitSize.default} (at most ${w.unitSize.max}); documents ${w.documents ?? 'none'}; email ${w.email ? 'yes (SES)' : 'no'}; http ${http}\n`);
    out(`  schedule: ${w.schedule}; start payload: ${w.startPayload.join(', ')}\n`);
    out(`  run: ${w.run}    synth: ${w.synth}\n`);
  }
  return 0;
}
