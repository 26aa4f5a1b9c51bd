/**
 * NEGATIVE CONTROLS. TEST CODE ONLY: nothing in lib/ may look like this.
 *
 * Two writers the article warns about, written so a test can stop them at the dangerous
 * point (`pause`) and let a successor run in between:
 *
 * - checkThenAct: reads the fence's generation, compares it in application code, then writes
 *   the effect without a condition. The comparison is stale the moment it is made.
 * - fenceThenSeparateWrite: raises the fence in one write (conditional, correct on its own),
 *   then writes the effect in ANOTHER write. Nothing ties the second write to the fence: the
 *   fence could as well live in another database.
 *
 * Tests use them to show the race is real (the overwrite happens) before showing that the
 * fenced unit (lib/protocol/fence.ts: fence check and effect in ONE transaction) closes it.
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { raiseFence, StaleGenerationError, type Effect, type FenceRef, type Generation } from '../../lib/protocol/index.js';

/** Called at the dangerous point; the returned promise decides when the writer resumes. */
export type Pause = (step: string) => Promise<void>;

const noPause: Pause = async () => {};

async function writeUnconditionally(doc: DynamoDBDocumentClient, effects: readonly Effect[]): Promise<void> {
  for (const e of effects) await doc.send(new PutCommand({ TableName: e.table, Item: e.item }));
}

/** UNSAFE: read, compare in code, write without a condition. */
export async function checkThenAct(
  doc: DynamoDBDocumentClient,
  fence: FenceRef,
  generation: Generation,
  effects: readonly Effect[],
  pause: Pause = noPause,
): Promise<void> {
  const read = await doc.send(new GetCommand({ TableName: fence.table, Key: { pk: fence.resource }, ConsistentRead: true }));
  const current = read.Item?.generation;
  if (typeof current === 'number' && current > generation) {
    throw new StaleGenerationError(fence.resource, generation, current as Generation);
  }
  await pause('checked');
  await writeUnconditionally(doc, effects);
}

/** UNSAFE: a correct conditional fence raise, then the effect in a separate, unconditioned write. */
export async function fenceThenSeparateWrite(
  doc: DynamoDBDocumentClient,
  fence: FenceRef,
  generation: Generation,
  effects: readonly Effect[],
  pause: Pause = noPause,
): Promise<void> {
  await raiseFence({ doc }, fence, generation); // correct on its own: lib's conditional raise
  await pause('fenced');
  await writeUnconditionally(doc, effects);
}
