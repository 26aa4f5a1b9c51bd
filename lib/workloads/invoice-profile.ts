/**
 * The invoice run's measured load profile (generated: npm run -s cli -- profile --write (one period of 160 customers in 2 shards, then 320 customers in 6 shards; 10 per unit)).
 * Do not edit: measure again. test/profile.test.ts checks it against a fresh measurement.
 */
import type { LoadProfile } from '../workflow/index.js';

export const INVOICE_PROFILE: LoadProfile = {
  "measuredWith": "npm run -s cli -- profile --write (one period of 160 customers in 2 shards, then 320 customers in 6 shards; 10 per unit)",
  "runs": [
    {
      "customers": 160,
      "shards": 2,
      "units": 16
    },
    {
      "customers": 320,
      "shards": 6,
      "units": 36
    }
  ],
  "writes": [
    {
      "role": "fences",
      "purpose": "UpdateItem SET generation,updatedAt",
      "basis": "shard",
      "units": 6
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
      "units": 13
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
      "units": 1
    },
    {
      "role": "jobs",
      "purpose": "UpdateItem SET doneAt (refused)",
      "basis": "shard",
      "units": 1
    },
    {
      "role": "jobs",
      "index": "unfinished-by-heartbeat",
      "purpose": "PutItem",
      "basis": "shard",
      "units": 6
    },
    {
      "role": "jobs",
      "index": "unfinished-by-heartbeat",
      "purpose": "transaction Update",
      "basis": "unit",
      "units": 1.417
    },
    {
      "role": "leases",
      "purpose": "UpdateItem SET durationMs,expiresAt,generation,owner,takenFrom,version",
      "basis": "shard",
      "units": 6
    },
    {
      "role": "leases",
      "purpose": "UpdateItem SET durationMs,expiresAt,version",
      "basis": "shard",
      "units": 10
    },
    {
      "role": "leases",
      "purpose": "UpdateItem SET version REMOVE expiresAt,owner",
      "basis": "shard",
      "units": 6
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
      "units": 1
    },
    {
      "role": "outbox",
      "purpose": "UpdateItem SET providerMessageId,sentAt,status REMOVE claimToken,unsent",
      "basis": "customer",
      "units": 1
    },
    {
      "role": "outbox",
      "purpose": "UpdateItem ADD providerEvents",
      "basis": "customer",
      "units": 0.003125
    },
    {
      "role": "outbox",
      "purpose": "UpdateItem SET providerMessageId,sentAt,status REMOVE unsent ADD attempts",
      "basis": "customer",
      "units": 1
    },
    {
      "role": "outbox",
      "purpose": "UpdateItem SET claimToken,claimedAt,status ADD attempts (refused)",
      "basis": "customer",
      "units": 0.275
    },
    {
      "role": "outbox",
      "purpose": "UpdateItem SET providerMessageId,sentAt,status REMOVE unsent ADD attempts (refused)",
      "basis": "customer",
      "units": 0.01875
    },
    {
      "role": "outbox",
      "purpose": "UpdateItem SET failureReason,status REMOVE unsent ADD attempts (refused)",
      "basis": "customer",
      "units": 0.2875
    },
    {
      "role": "outbox",
      "index": "unsent-by-shard",
      "purpose": "transaction Put",
      "basis": "customer",
      "units": 2
    },
    {
      "role": "outbox",
      "index": "unsent-by-shard",
      "purpose": "UpdateItem SET providerMessageId,sentAt,status REMOVE claimToken,unsent",
      "basis": "customer",
      "units": 1
    },
    {
      "role": "outbox",
      "index": "unsent-by-shard",
      "purpose": "UpdateItem SET providerMessageId,sentAt,status REMOVE unsent ADD attempts",
      "basis": "customer",
      "units": 1
    }
  ],
  "keys": [
    {
      "role": "fences",
      "pattern": "invoices#invoice-run#N-N#shard-N-of-N",
      "scope": "shard",
      "values": 6,
      "hottest": {
        "key": "invoices#invoice-run#2026-09#shard-0-of-6",
        "customer": 0,
        "unit": 12,
        "shard": 1,
        "read": 0
      },
      "total": {
        "customer": 0,
        "unit": 72,
        "shard": 6,
        "read": 0
      },
      "readsGrow": "item"
    },
    {
      "role": "invoices",
      "pattern": "invoice#N-N#cust-N",
      "scope": "item",
      "values": 320,
      "hottest": {
        "key": "invoice#2026-09#cust-0000000",
        "customer": 2,
        "unit": 0,
        "shard": 0,
        "read": 6
      },
      "total": {
        "customer": 640,
        "unit": 0,
        "shard": 0,
        "read": 1920
      },
      "readsGrow": "shard"
    },
    {
      "role": "invoices",
      "pattern": "charge#N-N#cust-N",
      "scope": "item",
      "values": 320,
      "hottest": {
        "key": "charge#2026-09#cust-0000000",
        "customer": 2,
        "unit": 0,
        "shard": 0,
        "read": 0
      },
      "total": {
        "customer": 640,
        "unit": 0,
        "shard": 0,
        "read": 0
      },
      "readsGrow": "item"
    },
    {
      "role": "jobs",
      "pattern": "invoice-run#N-N",
      "scope": "fixed",
      "values": 1,
      "hottest": {
        "key": "invoice-run#2026-09",
        "customer": 0,
        "unit": 0,
        "shard": 0,
        "read": 1
      },
      "total": {
        "customer": 0,
        "unit": 0,
        "shard": 0,
        "read": 1
      },
      "readsGrow": "fixed"
    },
    {
      "role": "jobs",
      "pattern": "run#invoice-run#N-N",
      "scope": "fixed",
      "values": 1,
      "hottest": {
        "key": "run#invoice-run#2026-09",
        "customer": 0,
        "unit": 0,
        "shard": 3,
        "read": 12
      },
      "total": {
        "customer": 0,
        "unit": 0,
        "shard": 3,
        "read": 12
      },
      "readsGrow": "shard"
    },
    {
      "role": "jobs",
      "pattern": "invoice-run#N-N#shard-N-of-N",
      "scope": "shard",
      "values": 6,
      "hottest": {
        "key": "invoice-run#2026-09#shard-0-of-6",
        "customer": 0,
        "unit": 12,
        "shard": 1,
        "read": 8
      },
      "total": {
        "customer": 0,
        "unit": 72,
        "shard": 6,
        "read": 48
      },
      "readsGrow": "shard"
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
        "shard": 6,
        "read": 6
      },
      "total": {
        "customer": 0,
        "unit": 0,
        "shard": 6,
        "read": 6
      },
      "readsGrow": "item"
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
        "unit": 51,
        "shard": 6,
        "read": 1.5
      },
      "total": {
        "customer": 0,
        "unit": 51,
        "shard": 6,
        "read": 1.5
      },
      "readsGrow": "fixed"
    },
    {
      "role": "leases",
      "pattern": "job#invoice-run#N-N#shard-N-of-N",
      "scope": "shard",
      "values": 6,
      "hottest": {
        "key": "job#invoice-run#2026-09#shard-1-of-6",
        "customer": 0,
        "unit": 0,
        "shard": 4,
        "read": 2
      },
      "total": {
        "customer": 0,
        "unit": 0,
        "shard": 22,
        "read": 13
      },
      "readsGrow": "shard"
    },
    {
      "role": "outbox",
      "pattern": "email#N-N#cust-N",
      "scope": "item",
      "values": 320,
      "hottest": {
        "key": "email#2026-09#cust-0000043",
        "customer": 6,
        "unit": 0,
        "shard": 0,
        "read": 4.5
      },
      "total": {
        "customer": 1369,
        "unit": 0,
        "shard": 0,
        "read": 989
      },
      "readsGrow": "shard"
    },
    {
      "role": "outbox",
      "pattern": "payment#N-N#cust-N",
      "scope": "item",
      "values": 320,
      "hottest": {
        "key": "payment#2026-09#cust-0000040",
        "customer": 5,
        "unit": 0,
        "shard": 0,
        "read": 4
      },
      "total": {
        "customer": 1058,
        "unit": 0,
        "shard": 0,
        "read": 833
      },
      "readsGrow": "shard"
    },
    {
      "role": "outbox",
      "index": "unsent-by-shard",
      "pattern": "open#N",
      "scope": "fixed",
      "values": 32,
      "hottest": {
        "key": "open#16",
        "customer": 52,
        "unit": 0,
        "shard": 0,
        "read": 6.5
      },
      "total": {
        "customer": 1280,
        "unit": 0,
        "shard": 0,
        "read": 197.5
      },
      "readsGrow": "fixed"
    },
    {
      "role": "outbox",
      "index": "unsent-by-shard",
      "pattern": "open",
      "scope": "fixed",
      "values": 1,
      "hottest": {
        "key": "open",
        "customer": 0,
        "unit": 0,
        "shard": 0,
        "read": 0
      },
      "total": {
        "customer": 0,
        "unit": 0,
        "shard": 0,
        "read": 0
      },
      "readsGrow": "item"
    }
  ],
  "indexRules": {
    "checked": 1463,
    "agreed": 1463
  }
};
