/**
 * The invoice run's measured load profile (generated: npm run -s cli -- profile --write (one period of 80 customers in 2 shards, then 160 customers in 6 shards; 10 per unit)).
 * Do not edit: measure again. test/profile.test.ts checks it against a fresh measurement.
 */
import type { LoadProfile } from '../../workflow/index.js';

export const INVOICE_PROFILE: LoadProfile = {
  measuredWith: "npm run -s cli -- profile --write (one period of 80 customers in 2 shards, then 160 customers in 6 shards; 10 per unit)",
  runs: [{"items":80,"shards":2,"units":8},{"items":160,"shards":6,"units":18}],
  writes: [
    {"role":"fences","purpose":"UpdateItem SET generation,updatedAt","basis":"shard","units":6},
    {"role":"fences","purpose":"transaction Update","basis":"unit","units":2},
    {"role":"jobs","purpose":"PutItem","basis":"shard","units":14},
    {"role":"jobs","purpose":"transaction Update","basis":"unit","units":2},
    {"role":"jobs","purpose":"UpdateItem SET doneAt","basis":"shard","units":1},
    {"role":"jobs","index":"unfinished-by-heartbeat","purpose":"PutItem","basis":"shard","units":6},
    {"role":"jobs","index":"unfinished-by-heartbeat","purpose":"transaction Update","basis":"unit","units":1.389},
    {"role":"leases","purpose":"UpdateItem SET durationMs,expiresAt,generation,owner,takenFrom,version","basis":"shard","units":6},
    {"role":"leases","purpose":"UpdateItem SET durationMs,expiresAt,version","basis":"shard","units":5},
    {"role":"leases","purpose":"UpdateItem SET version REMOVE expiresAt,owner","basis":"shard","units":6},
    {"role":"outbox","purpose":"transaction Put","basis":"item","units":6},
    {"role":"outbox","purpose":"UpdateItem SET claimToken,claimedAt,status ADD attempts","basis":"item","units":2},
    {"role":"outbox","purpose":"UpdateItem SET providerMessageId,sentAt,status REMOVE claimToken,heldReason,unsent","basis":"item","units":2},
    {"role":"outbox","purpose":"transaction Update","basis":"item","units":2},
    {"role":"outbox","purpose":"UpdateItem ADD providerEvents","basis":"item","units":0.00625},
    {"role":"outbox","purpose":"UpdateItem SET claimToken,claimedAt,status ADD attempts (refused)","basis":"item","units":0.275},
    {"role":"outbox","purpose":"transaction Update (refused)","basis":"item","units":0.225},
    {"role":"outbox","purpose":"transaction Put (refused)","basis":"item","units":0.225},
    {"role":"outbox","index":"unsent-by-shard","purpose":"transaction Put","basis":"item","units":3},
    {"role":"outbox","index":"unsent-by-shard","purpose":"UpdateItem SET providerMessageId,sentAt,status REMOVE claimToken,heldReason,unsent","basis":"item","units":2},
    {"role":"outbox","index":"unsent-by-shard","purpose":"transaction Update","basis":"item","units":1},
    {"role":"records","purpose":"transaction Put","basis":"item","units":4},
  ],
  keys: [
    {"role":"fences","pattern":"invoices#invoice-run#N-N#shard-N-of-N","scope":"shard","values":6,"hottest":{"key":"invoices#invoice-run#2026-09#shard-1-of-6","item":0,"unit":6,"shard":1,"read":0},"total":{"item":0,"unit":36,"shard":6,"read":0},"readsGrow":"item"},
    {"role":"jobs","pattern":"invoice-run#N-N","scope":"fixed","values":1,"hottest":{"key":"invoice-run#2026-09","item":0,"unit":0,"shard":0,"read":1},"total":{"item":0,"unit":0,"shard":0,"read":1},"readsGrow":"fixed"},
    {"role":"jobs","pattern":"run#invoice-run#N-N","scope":"fixed","values":1,"hottest":{"key":"run#invoice-run#2026-09","item":0,"unit":0,"shard":2,"read":12},"total":{"item":0,"unit":0,"shard":2,"read":12},"readsGrow":"shard"},
    {"role":"jobs","pattern":"invoice-run#N-N#shard-N-of-N","scope":"shard","values":6,"hottest":{"key":"invoice-run#2026-09#shard-0-of-6","item":0,"unit":6,"shard":1,"read":8},"total":{"item":0,"unit":36,"shard":6,"read":48},"readsGrow":"shard"},
    {"role":"jobs","pattern":"collector#/invoices/","scope":"fixed","values":1,"hottest":{"key":"collector#/invoices/","item":0,"unit":0,"shard":7,"read":7},"total":{"item":0,"unit":0,"shard":7,"read":7},"readsGrow":"fixed"},
    {"role":"jobs","index":"unfinished-by-heartbeat","pattern":"open","scope":"fixed","values":1,"hottest":{"key":"open","item":0,"unit":25,"shard":6,"read":1},"total":{"item":0,"unit":25,"shard":6,"read":1},"readsGrow":"fixed"},
    {"role":"leases","pattern":"job#invoice-run#N-N#shard-N-of-N","scope":"shard","values":6,"hottest":{"key":"job#invoice-run#2026-09#shard-4-of-6","item":0,"unit":0,"shard":3,"read":2},"total":{"item":0,"unit":0,"shard":17,"read":8},"readsGrow":"shard"},
    {"role":"outbox","pattern":"email#N-N#cust-N","scope":"item","values":160,"hottest":{"key":"email#2026-09#cust-0000142","item":5,"unit":0,"shard":0,"read":4.5},"total":{"item":664,"unit":0,"shard":0,"read":396},"readsGrow":"shard"},
    {"role":"outbox","pattern":"payment#N-N#cust-N","scope":"item","values":160,"hottest":{"key":"payment#2026-09#cust-0000105","item":6,"unit":0,"shard":0,"read":4},"total":{"item":676,"unit":0,"shard":0,"read":302},"readsGrow":"shard"},
    {"role":"outbox","pattern":"payment#N-N#cust-N>payment-failed","scope":"item","values":16,"hottest":{"key":"payment#2026-09#cust-0000026>payment-failed","item":6,"unit":0,"shard":0,"read":3.5},"total":{"item":70,"unit":0,"shard":0,"read":42},"readsGrow":"item"},
    {"role":"outbox","pattern":"payment#N-N#cust-N>receipt","scope":"item","values":144,"hottest":{"key":"payment#2026-09#cust-0000028>receipt","item":7,"unit":0,"shard":0,"read":4.5},"total":{"item":627,"unit":0,"shard":0,"read":353},"readsGrow":"item"},
    {"role":"outbox","index":"unsent-by-shard","pattern":"open#N","scope":"fixed","values":32,"hottest":{"key":"open#14","item":42,"unit":0,"shard":0,"read":15.5},"total":{"item":960,"unit":0,"shard":0,"read":435},"readsGrow":"fixed"},
    {"role":"outbox","index":"unsent-by-shard","pattern":"open","scope":"fixed","values":1,"hottest":{"key":"open","item":0,"unit":0,"shard":0,"read":0},"total":{"item":0,"unit":0,"shard":0,"read":0},"readsGrow":"item"},
    {"role":"records","pattern":"invoice#N-N#cust-N","scope":"item","values":160,"hottest":{"key":"invoice#2026-09#cust-0000026","item":2,"unit":0,"shard":0,"read":0},"total":{"item":320,"unit":0,"shard":0,"read":0},"readsGrow":"item"},
    {"role":"records","pattern":"charge#N-N#cust-N","scope":"item","values":160,"hottest":{"key":"charge#2026-09#cust-0000026","item":2,"unit":0,"shard":0,"read":0},"total":{"item":320,"unit":0,"shard":0,"read":0},"readsGrow":"item"},
  ],
  indexRules: {"checked":985,"agreed":985},
};
