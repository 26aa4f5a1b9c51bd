/**
 * The invoice run's measured load profile (generated: npm run -s cli -- profile --write (60 customers x 3 periods, 2 shards; then 120 customers x 3 periods, 6 shards; 10 per unit)).
 * Do not edit: measure again. test/profile.test.ts checks it against a fresh measurement.
 */
import type { LoadProfile } from '../workflow/index.js';

export const INVOICE_PROFILE: LoadProfile = {
  "measuredWith": "npm run -s cli -- profile --write (60 customers x 3 periods, 2 shards; then 120 customers x 3 periods, 6 shards; 10 per unit)",
  "runs": [
    {
      "customers": 180,
      "shards": 6,
      "units": 18
    },
    {
      "customers": 360,
      "shards": 18,
      "units": 36
    }
  ],
  "writes": [
    {
      "role": "fences",
      "purpose": "UpdateItem SET generation,updatedAt",
      "basis": "shard",
      "units": 18
    },
    {
      "role": "fences",
      "purpose": "transaction Update",
      "basis": "unit",
      "units": 2
    },
    {
      "role": "invoices",
      "purpose": "transaction Put",
      "basis": "customer",
      "units": 4
    },
    {
      "role": "jobs",
      "purpose": "PutItem",
      "basis": "shard",
      "units": 30
    },
    {
      "role": "jobs",
      "purpose": "transaction Update",
      "basis": "unit",
      "units": 2
    },
    {
      "role": "jobs",
      "purpose": "UpdateItem SET doneAt",
      "basis": "shard",
      "units": 3
    },
    {
      "role": "jobs",
      "purpose": "UpdateItem SET heartbeatAt,requeues,sweepUnchanged REMOVE sweepObservation",
      "basis": "shard",
      "units": 5
    },
    {
      "role": "jobs",
      "index": "unfinished-by-heartbeat",
      "purpose": "PutItem",
      "basis": "shard",
      "units": 18
    },
    {
      "role": "jobs",
      "index": "unfinished-by-heartbeat",
      "purpose": "transaction Update",
      "basis": "unit",
      "units": 1.5
    },
    {
      "role": "jobs",
      "index": "unfinished-by-heartbeat",
      "purpose": "UpdateItem SET heartbeatAt,requeues,sweepUnchanged REMOVE sweepObservation",
      "basis": "shard",
      "units": 10
    },
    {
      "role": "leases",
      "purpose": "UpdateItem SET durationMs,expiresAt,generation,owner,takenFrom,version",
      "basis": "shard",
      "units": 18
    },
    {
      "role": "leases",
      "purpose": "UpdateItem SET durationMs,expiresAt,version",
      "basis": "shard",
      "units": 5
    },
    {
      "role": "leases",
      "purpose": "UpdateItem SET version REMOVE expiresAt,owner",
      "basis": "shard",
      "units": 18
    },
    {
      "role": "outbox",
      "purpose": "transaction Put",
      "basis": "customer",
      "units": 4
    },
    {
      "role": "outbox",
      "purpose": "UpdateItem SET claimToken,claimedAt,status ADD attempts",
      "basis": "customer",
      "units": 2
    },
    {
      "role": "outbox",
      "purpose": "UpdateItem ADD providerEvents",
      "basis": "customer",
      "units": 1
    },
    {
      "role": "outbox",
      "purpose": "UpdateItem SET providerMessageId,sentAt,status REMOVE claimToken,unsent",
      "basis": "customer",
      "units": 2
    },
    {
      "role": "outbox",
      "index": "unsent-by-age",
      "purpose": "transaction Put",
      "basis": "customer",
      "units": 2
    },
    {
      "role": "outbox",
      "index": "unsent-by-age",
      "purpose": "UpdateItem SET claimToken,claimedAt,status ADD attempts",
      "basis": "customer",
      "units": 2
    },
    {
      "role": "outbox",
      "index": "unsent-by-age",
      "purpose": "UpdateItem ADD providerEvents",
      "basis": "customer",
      "units": 0.9056
    },
    {
      "role": "outbox",
      "index": "unsent-by-age",
      "purpose": "UpdateItem SET providerMessageId,sentAt,status REMOVE claimToken,unsent",
      "basis": "customer",
      "units": 2
    }
  ],
  "keys": [
    {
      "role": "fences",
      "pattern": "invoices#invoice-run#N-N#shard-N-of-N",
      "scope": "shard",
      "values": 18,
      "hottest": {
        "key": "invoices#invoice-run#2026-09#shard-0-of-6",
        "customer": 0,
        "unit": 4,
        "shard": 1,
        "read": 0
      }
    },
    {
      "role": "invoices",
      "pattern": "invoice#N-N#cust-N",
      "scope": "item",
      "values": 360,
      "hottest": {
        "key": "invoice#2026-09#cust-0000000",
        "customer": 2,
        "unit": 0,
        "shard": 0,
        "read": 9
      }
    },
    {
      "role": "invoices",
      "pattern": "charge#N-N#cust-N",
      "scope": "item",
      "values": 360,
      "hottest": {
        "key": "charge#2026-09#cust-0000000",
        "customer": 2,
        "unit": 0,
        "shard": 0,
        "read": 0
      }
    },
    {
      "role": "jobs",
      "pattern": "invoice-run#N-N",
      "scope": "fixed",
      "values": 3,
      "hottest": {
        "key": "invoice-run#2026-09",
        "customer": 0,
        "unit": 0,
        "shard": 0,
        "read": 1
      }
    },
    {
      "role": "jobs",
      "pattern": "run#invoice-run#N-N",
      "scope": "fixed",
      "values": 3,
      "hottest": {
        "key": "run#invoice-run#2026-11",
        "customer": 0,
        "unit": 0,
        "shard": 2,
        "read": 20
      }
    },
    {
      "role": "jobs",
      "pattern": "invoice-run#N-N#shard-N-of-N",
      "scope": "shard",
      "values": 18,
      "hottest": {
        "key": "invoice-run#2026-11#shard-0-of-6",
        "customer": 0,
        "unit": 4,
        "shard": 2,
        "read": 13
      }
    },
    {
      "role": "jobs",
      "pattern": "collector#profile-N/invoices/",
      "scope": "fixed",
      "values": 1,
      "hottest": {
        "key": "collector#profile-1/invoices/",
        "customer": 0,
        "unit": 0,
        "shard": 9,
        "read": 9
      }
    },
    {
      "role": "jobs",
      "index": "unfinished-by-heartbeat",
      "pattern": "open",
      "scope": "fixed",
      "values": 1,
      "hottest": {
        "key": "open",
        "customer": 0,
        "unit": 54,
        "shard": 28,
        "read": 1.5
      }
    },
    {
      "role": "leases",
      "pattern": "job#invoice-run#N-N#shard-N-of-N",
      "scope": "shard",
      "values": 18,
      "hottest": {
        "key": "job#invoice-run#2026-10#shard-5-of-6",
        "customer": 0,
        "unit": 0,
        "shard": 3,
        "read": 2
      }
    },
    {
      "role": "outbox",
      "pattern": "email#N-N#cust-N",
      "scope": "item",
      "values": 360,
      "hottest": {
        "key": "email#2026-09#cust-0000000",
        "customer": 5,
        "unit": 0,
        "shard": 0,
        "read": 0
      }
    },
    {
      "role": "outbox",
      "pattern": "payment#N-N#cust-N",
      "scope": "item",
      "values": 360,
      "hottest": {
        "key": "payment#2026-09#cust-0000000",
        "customer": 4,
        "unit": 0,
        "shard": 0,
        "read": 0
      }
    },
    {
      "role": "outbox",
      "pattern": "(scan)",
      "scope": "fixed",
      "values": 1,
      "hottest": {
        "key": "(scan)",
        "customer": 0,
        "unit": 0,
        "shard": 0,
        "read": 25.5
      }
    },
    {
      "role": "outbox",
      "index": "unsent-by-age",
      "pattern": "open",
      "scope": "fixed",
      "values": 1,
      "hottest": {
        "key": "open",
        "customer": 2486,
        "unit": 0,
        "shard": 0,
        "read": 953
      }
    }
  ],
  "indexRules": {
    "checked": 2764,
    "agreed": 2754
  }
};
