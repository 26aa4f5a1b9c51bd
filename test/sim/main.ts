/**
 * `npm run simulate -- --schedules N --seed S [--shape mix|tiny|small|sharded|chaos|protocol] [--json]
 *   [--control-schedules M] [--controls A,B | --no-controls] [--parallel P]`
 * `npm run simulate -- --replay FILE`
 *
 * N seeded schedules of the real protocol, and M of each negative control, run in the
 * deterministic simulator (test/sim/world.ts): the real handlers and runtime over the in-memory
 * DynamoDB, streams and providers, the chaos harness's faults, the independent checker. A run
 * that fails (a control that is not caught) is shrunk and saved under .sim/ with its replay command.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { InvalidInputError } from '../../lib/protocol/index.js';
import { DEFAULT_WORKLOAD, workloadNamed } from '../../lib/workloads/index.js';
import { runScript } from '../../cli/shared/entry.js';
import { intFlag as int, parseFlags } from '../../cli/shared/flags.js';
import { controlCannotShow, CONTROLS, type Variant } from '../chaos/controls.js';
import { compareLocal } from './compare-local.js';
import { runPool } from './pool.js';
import { shapeNamed, SHAPES, type Shape } from './shapes.js';
import { summarize, summaryLines, type SimSummary } from './summary.js';
import type { SimTask } from './task.js';
import { workloadOfShape } from './run.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const HELP =
  'npm run simulate -- --schedules N --seed S [--shape mix|tiny|small|sharded|chaos|protocol] [--json] [--control-schedules M] [--controls A,B] [--no-controls] [--parallel P] [--workload NAME] [--compare-local K]\n' +
  '  N schedules of the real protocol (seeds S..S+N-1) and M of each negative control (default M = clamp(N/10, 10, 1000)),\n' +
  '  in the deterministic simulator; failing runs are shrunk and saved under .sim/ with their replay command\n' +
  '  --compare-local K: the first K of those schedules again on DynamoDB Local, one at a time (the same-run baseline)\n' +
  'npm run simulate -- --replay FILE      replay a saved run (its shrunk schedule) exactly\n';

/** `mix`: most seeds small, every fifth sharded, every tenth the chaos schedule as drawn. */
export const shapeOfSeed = (seed: number, shape: Shape | 'mix'): Shape => (shape !== 'mix' ? shape : seed % 10 === 9 ? 'chaos' : seed % 5 === 4 ? 'sharded' : 'small');

export interface SimPlan {
  tasks: SimTask[];
  parallel: number;
  json: boolean;
  seed: number;
  schedules: number;
  controlSchedules: number;
  shape: Shape | 'mix';
  /** The workload simulated (its registered name). */
  workload: string;
  /** How many of the protocol's schedules to carry out on DynamoDB Local too (the same-run baseline). */
  compareLocal: number;
  /** The controls not run, each with why its mistake cannot show in the workload. */
  skippedControls?: { control: string; why: string }[];
}

export function simPlan(argv: string[]): SimPlan | 'help' {
  const { values } = parseFlags({
    args: argv,
    options: {
      schedules: { type: 'string' },
      seed: { type: 'string' },
      shape: { type: 'string' },
      json: { type: 'boolean' },
      'control-schedules': { type: 'string' },
      controls: { type: 'string' },
      'no-controls': { type: 'boolean' },
      parallel: { type: 'string' },
      replay: { type: 'string' },
      workload: { type: 'string' },
      'compare-local': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  // A fork's workload, by its registered name: its runs under the same schedules (test/chaos/workload-runs.ts).
  const workload = values.workload === undefined ? undefined : workloadNamed(values.workload, '--workload');
  const parallel = int('parallel', values.parallel, availableParallelism(), 1, 64);
  const json = values.json === true;
  if (values.replay !== undefined) return { ...replayPlan(values.replay), parallel: 1, json };
  const schedules = int('schedules', values.schedules, 100, 0, 100_000_000);
  const seed = int('seed', values.seed, 1, 0, 2 ** 31 - 1);
  const shape = values.shape === undefined || values.shape === 'mix' ? 'mix' : shapeNamed(values.shape);
  const named = values['no-controls'] ? [] : values.controls === undefined ? [...CONTROLS] : values.controls.split(',').map(controlNamed);
  // A control whose mistake cannot show in the workload (an email sent from the worker, for a workload without emails) is not run: the summary says which and why.
  // The protocol shape runs its own workload (no outbox, no documents): only the protocol's controls apply to it.
  const judged = (shape === 'mix' ? workload : workloadOfShape(shape, workload)) ?? workloadNamed(DEFAULT_WORKLOAD, '--workload');
  const skippedControls = named.flatMap((c) => { const why = controlCannotShow(c, judged); return why === undefined ? [] : [{ control: c, why }]; });
  const controls = named.filter((c) => !skippedControls.some((s) => s.control === c));
  const controlSchedules = controls.length === 0 ? 0 : int('control-schedules', values['control-schedules'], Math.min(1000, Math.max(10, Math.round(schedules / 10))), 1, 1_000_000);
  const tasks: SimTask[] = [];
  const of = workload === undefined || workload.name === DEFAULT_WORKLOAD ? {} : { workload: workload.name };
  for (let i = 0; i < schedules; i++) tasks.push({ seed: seed + i, variant: 'fenced', shape: shapeOfSeed(seed + i, shape), ...of });
  for (const c of controls) for (let i = 0; i < controlSchedules; i++) tasks.push({ seed: seed + i, variant: c, shape: shapeOfSeed(seed + i, shape), ...of });
  return { tasks, parallel: Math.min(parallel, Math.max(1, tasks.length)), json, seed, schedules, controlSchedules, shape, workload: judged.name, compareLocal: int('compare-local', values['compare-local'], 0, 0, 10_000), skippedControls };
}

function controlNamed(name: string): (typeof CONTROLS)[number] {
  if ((CONTROLS as readonly string[]).includes(name)) return name as (typeof CONTROLS)[number];
  throw new InvalidInputError('--controls', `unknown control "${name}": one of ${CONTROLS.join(', ')}`);
}

function replayPlan(file: string): Omit<SimPlan, 'parallel' | 'json'> {
  let saved: { seed?: unknown; variant?: unknown; shape?: unknown; workload?: unknown; shrunk?: { schedule?: unknown } };
  try {
    saved = JSON.parse(readFileSync(resolve(file), 'utf8')) as typeof saved;
  } catch (e) {
    throw new InvalidInputError('--replay', `cannot read a saved run from ${file}: ${(e as Error).message.split('\n')[0]}`);
  }
  const variant = saved.variant;
  if (typeof saved.seed !== 'number' || (variant !== 'fenced' && !(CONTROLS as readonly unknown[]).includes(variant)) || !(SHAPES as readonly unknown[]).includes(saved.shape) || typeof saved.shrunk?.schedule !== 'object') {
    throw new InvalidInputError('--replay', `${file} is not a run the simulator saved (seed, variant, shape, shrunk.schedule)`);
  }
  const task: SimTask = { seed: saved.seed, variant: variant as Variant, shape: saved.shape as Shape, schedule: saved.shrunk.schedule as SimTask['schedule'] & object, ...(typeof saved.workload === 'string' ? { workload: workloadNamed(saved.workload, '--replay').name } : {}) };
  return { tasks: [task], seed: saved.seed, schedules: 1, controlSchedules: 0, shape: saved.shape as Shape, workload: task.workload ?? DEFAULT_WORKLOAD, compareLocal: 0 };
}

export async function cli(argv: string[]): Promise<number> {
  const plan = simPlan(argv);
  if (plan === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  const log = (s: string) => process.stderr.write(s + '\n');
  const started = performance.now();
  let done = 0;
  let lastLog = started;
  const outcomes = await runPool(plan.tasks, {
    parallel: plan.parallel,
    saveDir: resolve('.sim'),
    onOutcome: (o) => {
      done++;
      if (o.saved) log(`seed ${o.seed} ${o.variant} (${o.shape}): ${o.variant === 'fenced' ? `VIOLATION ${o.failed.join(',')}` : 'NOT CAUGHT'}: ${o.saved.first}\n  shrunk to ${o.saved.faultsAfter} faults (from ${o.saved.faultsBefore}); replay: ${o.saved.replay}`);
      const now = performance.now();
      if (now - lastLog > 10_000) {
        lastLog = now;
        log(`[${done}/${plan.tasks.length}] ${Math.round(done / ((now - started) / 1000))} schedules/s`);
      }
    },
  });
  const wallMs = performance.now() - started;
  // The baseline: the first protocol schedules again, on DynamoDB Local (the invoice sample's harness).
  const baseline = plan.compareLocal > 0 ? await compareLocal(plan.tasks.filter((t) => t.variant === 'fenced' && t.workload === undefined && t.shape !== 'protocol').slice(0, plan.compareLocal), outcomes) : undefined;
  const summary: SimSummary = { ...summarize(plan, outcomes, wallMs), ...(baseline ? { localBaseline: baseline } : {}) };
  if (plan.json) process.stdout.write(JSON.stringify(summary) + '\n');
  else for (const line of summaryLines(summary)) process.stdout.write(line + '\n');
  return summary.ok ? 0 : 1;
}

if (process.argv[1]?.endsWith('test/sim/main.ts')) runScript(cli);
