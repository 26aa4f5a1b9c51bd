/**
 * Each test file signs its requests with an access key of its own, and DynamoDB Local (started
 * without -sharedDb by global-setup.ts) keeps a database per key and region: a file sees only its
 * own tables and streams. Set in the environment, so the processes a file spawns (the CLIs, the
 * Lambda bundles) use the same database; every client of a local endpoint signs with
 * localSigningKeys() and localRegion() (lib/protocol/dynamo.ts).
 */
import { randomBytes } from 'node:crypto';

// Letters and digits only: DynamoDB Local refuses other access keys.
process.env.AWS_ACCESS_KEY_ID = `test${randomBytes(6).toString('hex')}`;
process.env.AWS_SECRET_ACCESS_KEY = 'local';
