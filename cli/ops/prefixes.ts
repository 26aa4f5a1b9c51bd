/**
 * `npm run cli -- status --endpoint URL --prefixes`: the table prefixes present at an endpoint
 * (each `npm start` makes its own, fw-<timestamp>-), so that `status --table-prefix P` can be
 * given one without remembering what a run printed. A prefix is what precedes a table role's
 * name (lib/workflow/schema.ts tableNames); one whose set is incomplete says how many it has.
 */
import { ListTablesCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { TABLE_ROLES } from '../../lib/workflow/index.js';

export interface PrefixFound {
  prefix: string;
  /** Table roles present under it, of TABLE_ROLES.length. */
  tables: number;
}

/** The prefixes of these table names, sorted, with how many of a set's tables each has. */
export function prefixesOf(names: readonly string[]): PrefixFound[] {
  const count = new Map<string, number>();
  for (const name of names) {
    const role = TABLE_ROLES.find((r) => name.endsWith(r) && name.length > r.length);
    if (role !== undefined) count.set(name.slice(0, -role.length), (count.get(name.slice(0, -role.length)) ?? 0) + 1);
  }
  return [...count.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([prefix, tables]) => ({ prefix, tables }));
}

async function allTableNames(client: DynamoDBClient): Promise<string[]> {
  const names: string[] = [];
  let start: string | undefined;
  do {
    const out = await client.send(new ListTablesCommand(start === undefined ? {} : { ExclusiveStartTableName: start }));
    names.push(...(out.TableNames ?? []));
    start = out.LastEvaluatedTableName;
  } while (start !== undefined);
  return names;
}

/** Prints the prefixes at the client's endpoint (one a line, or --json); exit status 0. */
export async function listPrefixes(client: DynamoDBClient, where: string, json: boolean): Promise<number> {
  const found = prefixesOf(await allTableNames(client));
  if (json) {
    process.stdout.write(`${JSON.stringify({ prefixes: found })}\n`);
    return 0;
  }
  const w = (s: string) => process.stdout.write(`${s}\n`);
  w(`Table prefixes at ${where} (${found.length}):`);
  for (const p of found) w(`  ${p.prefix}${p.tables === TABLE_ROLES.length ? '' : `  (${p.tables} of its ${TABLE_ROLES.length} tables)`}`);
  if (found.length > 0) w(`Then: npm run cli -- status --endpoint ${where} --table-prefix ${found[found.length - 1]!.prefix}`);
  return 0;
}
