/**
 * The checks every registered workload must pass against its own processor (test/workloads.test.ts
 * runs them over the registry; test/infra/iam-calls.test.ts over a throwaway workload of another
 * shape registered beside it): a descriptor's numbers and its checks are computed apart from the
 * processor, so a descriptor that disagrees with its processor fails here.
 */
import { expect, it } from 'vitest';
import { InvalidInputError, makeGeneration } from '../../lib/protocol/index.js';
import { followUpsOf, MAX_CHAIN, shardsOfRun, STEP_OUTCOMES, tableNames, unitSizeCap, type ExpectedEffect, type OutboxItem, type Workload } from '../../lib/workflow/index.js';

const tables = tableNames('wl-');
const startOf = (w: Workload<any>, items: number) => w.start.runOf({ payload: w.local.payloads(items, 7)[0]!, time: new Date('2026-10-02T03:00:00Z'), items, unitSize: w.local.unitSize });
const unitOf = (w: Workload<any>, input: unknown, unit: number) => w.processor.unitEffects(input, { jobId: 'j', generation: makeGeneration(0, 1), unit, tables, now: 1 });

/** An outbox item (as written) says what its expectation says: its kind, recipient and text, or its target, destination and request. */
function expectSays(item: Record<string, unknown>, e: ExpectedEffect): void {
  expect(item.kind).toBe(e.kind);
  if (e.kind === 'email') {
    expect(item.to).toBe(e.to);
    for (const said of e.says) expect(`${String(item.subject)}\n${String(item.body)}`).toContain(said);
  } else {
    expect({ target: item.target, path: item.path }).toEqual({ target: e.target, path: e.path });
    expect(item.request).toMatchObject(e.request);
  }
}

/** Inside a describe: `w` against its own processor (its effect count, its checks' records and outbox items, its shards, its start payload). */
export function describeAgainstProcessor(w: Workload<any>): void {
  const { input } = startOf(w, 2 * w.local.unitSize + 3);

  it('writes exactly effectsPerItem effects per item in every unit (the number that caps the unit size everywhere)', () => {
    const units = w.processor.totalUnits(input);
    const { from, to } = w.start.rangeOf(input);
    let effects = 0;
    for (let u = 0; u < units; u++) effects += unitOf(w, input, u).length;
    expect(effects).toBe((to - from) * w.effectsPerItem);
    expect(unitSizeCap(w) * w.effectsPerItem).toBeLessThanOrEqual(98);
  });

  it("its checks' expected records and outbox items are exactly the ones its processor writes, once-only where the processor says so, each saying what its processor's item says", () => {
    const written = Array.from({ length: w.processor.totalUnits(input) }, (_, u) => unitOf(w, input, u)).flat();
    const records = written.filter((e) => e.table === tables.records);
    const expected = [...w.checks.records(input)];
    expect(expected.map((r) => r.pk).sort()).toEqual(records.map((e) => e.item.pk).sort());
    for (const r of expected) {
      const e = records.find((x) => x.item.pk === r.pk)!;
      expect(e.kind === 'once').toBe(r.once);
      expect(w.checks.isOnce(r.pk)).toBe(r.once);
      for (const [f, v] of Object.entries(r.fields)) expect(e.item[f]).toBe(v);
      expect(w.checks.groupOfRecord(r.pk)).toBe(w.checks.groupOfInput(input));
    }
    const outbox = written.filter((e) => e.table === tables.outbox);
    const expectedOutbox = [...w.checks.outbox(input)].filter((e) => e.after === undefined);
    expect(expectedOutbox.map((e) => e.id).sort()).toEqual(outbox.map((e) => e.item.pk).sort());
    // What each item says is what the input says (the descriptor's meaning, and the processor's).
    for (const e of expectedOutbox) {
      expectSays(outbox.find((x) => x.item.pk === e.id)!.item, e);
    }
  });

  it('its shards tile the run and each is the run cut to its range', () => {
    const shards = shardsOfRun(w, 'r', input, 3);
    const ranges = shards.map((s) => w.start.rangeOf(w.processor.parseInput(s.input)));
    expect(ranges[0]!.from).toBe(0);
    expect(ranges.at(-1)!.to).toBe(w.start.itemsOf(input));
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]!.from).toBe(ranges[i - 1]!.to);
    const perShard = shards.map((s) => [...w.checks.records(w.processor.parseInput(s.input))].length).reduce((a, b) => a + b, 0);
    expect(perShard).toBe([...w.checks.records(input)].length);
  });

  it("refuses a start payload field it does not know by name, and a bad value of one it does, before anything is written", () => {
    const field = w.start.payloadFields[0]!;
    expect(() => w.start.runOf({ payload: { [field]: 'not-a-value' }, time: new Date(), items: 1, unitSize: 1 })).toThrow(InvalidInputError);
  });

  it("its steps' follow-ups are the ones its checks expect after each outcome, each saying what its check says (from the unit's own items, settled)", () => {
    const written = Array.from({ length: w.processor.totalUnits(input) }, (_, u) => unitOf(w, input, u)).flat().filter((e) => e.table === tables.outbox);
    const followUps = [...w.checks.outbox(input)].filter((e) => e.after !== undefined);
    const made = new Map<string, Record<string, unknown>>();
    // Each level's follow-ups, settled in turn, are the next level's parents (a step after a step).
    for (let parents: Record<string, unknown>[] = written.map((e) => e.item), depth = 0; parents.length > 0 && depth <= MAX_CHAIN; depth++) {
      const next: Record<string, unknown>[] = [];
      for (const item of parents) {
        const parent = { ...item, status: 'SENT', providerMessageId: 'p-1' } as unknown as OutboxItem;
        for (const on of STEP_OUTCOMES) for (const f of followUpsOf(w.steps, tables.outbox, parent, on, 1).items) made.set(String(f.pk), { ...f, on }), next.push(f);
      }
      parents = next;
    }
    expect(followUps.map((e) => e.id).sort()).toEqual([...made.keys()].sort());
    for (const e of followUps) {
      const f = made.get(e.id)!;
      expect([f.parent, f.step, f.on]).toEqual([e.after!.parent, e.after!.step, e.after!.on]);
      expectSays(f, e);
    }
  });
}
