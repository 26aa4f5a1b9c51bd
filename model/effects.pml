/*
 * effects.pml — the external effects of docs/external-effects.md, for SPIN: the protected
 * file (a document under its generation's key, published by a pointer the fenced unit writes)
 * and the unprotected email (the transactional outbox, the stream-driven senders, the provider
 * and its own record, the reconciler). See model/README.md for the mapping to lib/.
 *
 * The lease and fence protocol itself is fenced.pml's subject; here it is abstracted to what
 * the effects rely on: generations are issued strictly increasing, a successor may take the
 * lease over from a holder that is still running (paused past its lease) or crashed, the fence
 * is raised before the checkpoint read, and a unit's commit is ONE atomic step (one
 * TransactWriteItems: fence condition + raise, checkpoint compare-and-set, the invoice with its
 * pointer, the outbox item once-only). Everything after the commit (the senders, the provider,
 * its record, the reconciler, the collector) interleaves freely with everything else.
 *
 * Broken variants (compile with -D<NAME>; each must give a counterexample):
 *   SEND_FROM_WORKER   no outbox: the worker emails the customer directly while it processes the
 *                      unit (before its commit, which is where a failed send can still stop it)
 *   DOCUMENT_IN_PLACE  no generation key, no pointer: the unit's document is put at one key per
 *                      customer, unconditionally (it overwrites), and readers read that key
 *   COLLECT_POINTER_FIRST (with COLLECTOR) the collector reads the pointer BEFORE it asks
 *                      whether the object's generation can still commit (collector.ts's order)
 * Drill (the safe model must verify with it): COLLECTOR, the orphan collector, asking first
 * whether the generation can still commit (fence above it, or the job DONE), then the pointer.
 *
 * DOCS and DELIVERY are assertions, checked at every step that could break them; EndCheck checks
 * what every finite run must end with.
 */

/* ---------- bounds (override with -D) ---------- */
#ifndef U
#define U 1          /* units = customers: invoice#u + its document + the outbox item email#u */
#endif
#ifndef NW
#define NW 2         /* workers */
#endif
#ifndef NS
#define NS 2         /* senders (stream-driven invocations): two race for a duplicate record */
#endif
#ifndef NR
#define NR 1         /* reconcilers (scheduled: two runs may overlap, NR=2) */
#endif
#ifndef LAPSES
#define LAPSES 1     /* takeovers of a LIVE holder (it was paused past its lease, still running) */
#endif
#ifndef WCRASHES
#define WCRASHES 1   /* workers that stop forever: after the document put, or after the commit */
#endif
#ifndef SCRASHES
#define SCRASHES 1   /* senders that stop forever: after the claim, or after the provider accepted */
#endif
#ifndef AMBSENDS
#define AMBSENDS 1   /* sends whose answer is lost: delivered or not, nobody saw which */
#endif
#ifndef REJECTS
#define REJECTS 1    /* provider refusals: transient (released, sent again) or permanent (FAILED) */
#endif
#ifndef DUPS
#define DUPS 1       /* duplicate INSERT records on the Outbox stream */
#endif
#ifndef MAXATT
#define MAXATT 3     /* reconciler.ts maxAttempts: then UNKNOWN */
#endif
#ifndef COLLECTS
#define COLLECTS 1   /* collector passes (each over every object, at any moment) */
#endif
#if U > 3
#error "U is at most 3 (the PICK macro)"
#endif

/* Generations the bounds can issue: the first grant, a takeover per lapse, one per crashed holder
 * (the lease is free again only once the job is DONE). Asserted at every grant. */
#define MAXG (1 + LAPSES + WCRASHES)

/* Object keys. Safe: [<set>/]invoices/<period>/<customer>/<generation>.json, one per (u, g).
 * DOCUMENT_IN_PLACE: one key per customer. */
#ifdef DOCUMENT_IN_PLACE
#define KEY(u, g)  (u)
#define NKEYS      U
#define DOC_OF(u)  (u)            /* no pointer: readers read the customer's one key */
#else
#define KEY(u, g)  ((u) * (MAXG + 1) + (g))
#define KEY_GEN(k) ((k) % (MAXG + 1))
#define NKEYS      (U * (MAXG + 1))
#define DOC_OF(u)  inv_key[u]     /* the invoice's documentKey */
#endif
#define NOKEY 255

/* outbox.ts OutboxStatus */
#define ABSENT  0
#define PENDING 1
#define SENDING 2
#define SENT    3
#define FAILED  4
#define UNKNOWN 5

/* providers.ts SendResult */
#define ACCEPTED  1
#define TRANSIENT 2   /* rejected, not permanent: certainly not accepted */
#define PERMANENT 3   /* rejected for good */
#define AMBIGUOUS 4   /* no answer: it may have been delivered */

/* ---------- the store ---------- */
/* Leases + Fences + Jobs (fenced.pml models them in full) */
byte lease_gen = 0;        /* the last generation issued */
bool held = false;         /* the lease has an owner */
byte holder = 0;           /* its worker */
byte fence = 0;            /* Fences: greatest accepted generation */
byte cursor = 0;           /* Jobs: next unit */
bool done = false;         /* Jobs: status DONE */
/* Invoices: invoice#u, upserted by its unit, with its pointer (documentKey + documentEtag) */
byte inv_gen[U];           /* generation of the writer (0: absent) */
byte inv_key[U];           /* documentKey (NOKEY: none); the ETag is the object's content, below */
/* The documents bucket */
byte obj_gen[NKEYS];       /* the generation whose content the object holds (its ETag); 0: absent */
/* Outbox: email#u (outbox.ts) */
byte ob_status[U];         /* status */
byte ob_gen[U];            /* generation: the creating unit's, never changed by delivery */
byte ob_att[U];            /* attempts: + 1 per claim and per takeover */
byte ob_token[U];          /* claimToken while SENDING (0: none). A fresh one per claim: the
                            * attempt number that claim made, unique per item like a UUID */
byte ob_amb[U];            /* ambiguousSends: sends whose outcome nobody saw */
byte stream[U];            /* Outbox stream: INSERT records not yet handed to a sender */
/* The email provider */
byte delivered[U];         /* messages it accepted for outbox id u (the customer's inbox) */
bool rec[U];               /* its own record of a send (SES SEND event), visible to the reconciler */

/* ---------- ghosts (truth the store does not record) ---------- */
byte committed_by[U];      /* the generation whose transaction committed unit u (0: none yet) */
byte delivered_gens[U];    /* bit g: a message with generation g's content was delivered */
bool crashed[NW];
byte lapses_left = LAPSES;
byte wcrashes_left = WCRASHES;
byte scrashes_left = SCRASHES;
byte ambsends_left = AMBSENDS;
byte rejects_left = REJECTS;
byte dups_left = DUPS;
byte du = 0;               /* loop index of the checks: always 0 between steps */

/* A nondeterministic choice of u among those with COND(u); not executable if none has it. */
#if U == 1
#define PICK(v, COND) if :: COND(0) -> v = 0 fi
#elif U == 2
#define PICK(v, COND) if :: COND(0) -> v = 0 :: COND(1) -> v = 1 fi
#else
#define PICK(v, COND) if :: COND(0) -> v = 0 :: COND(1) -> v = 1 :: COND(2) -> v = 2 fi
#endif

/* ---------- invariants ---------- */
/* DOCS: what an invoice publishes is its own generation's document: the object its pointer names
 * exists, with the content (the ETag) of the generation that committed the invoice. Checked after
 * every write to the bucket or to an invoice. */
#define CHECK_DOCS \
  du = 0; \
  do \
  :: du < U -> assert(committed_by[du] == 0 || obj_gen[DOC_OF(du)] == inv_gen[du]); du++ \
  :: else -> du = 0; break \
  od

/* DOCS: an object a committed invoice reads is never overwritten. Checked at every put. */
#define CHECK_NOT_REFERENCED(k) \
  du = 0; \
  do \
  :: du < U -> assert(committed_by[du] == 0 || DOC_OF(du) != (k)); du++ \
  :: else -> du = 0; break \
  od

/* The provider accepts a message for outbox id u carrying generation gen's content.
 * DELIVERY: at most one per id, plus one per ambiguous send recorded on the item; and none with
 * the content of a generation that is not the one whose unit committed it. */
#define DELIVER(u, gen) \
  delivered[u]++; delivered_gens[u] = delivered_gens[u] | (1 << (gen)); \
  printf("EVT the provider delivers email#%d with generation %d's content (delivery %d, ambiguous sends %d)\n", u, gen, delivered[u], ob_amb[u]); \
  assert(delivered[u] <= 1 + ob_amb[u]); \
  assert(committed_by[u] == 0 || committed_by[u] == (gen))

/* lib/workflow/unit-documents.ts publishUnit -> ObjectStore.putNew: If-None-Match: *, and a
 * refusal with our own body is our earlier put (its ETag returned). DOCUMENT_IN_PLACE: a plain
 * PutObject on the customer's one key. */
#ifdef DOCUMENT_IN_PLACE
#define PUT(u, g) \
  printf("EVT w%d (generation %d) puts the document of unit %d in place (it held generation %d's)\n", w, g, u, obj_gen[KEY(u, g)]); \
  obj_gen[KEY(u, g)] = g; \
  CHECK_DOCS; \
  CHECK_NOT_REFERENCED(KEY(u, g))
#else
#define PUT(u, g) \
  if \
  :: obj_gen[KEY(u, g)] == 0 -> \
     printf("EVT w%d (generation %d) puts the document of unit %d at its generation's key\n", w, g, u); \
     obj_gen[KEY(u, g)] = g; \
     CHECK_DOCS; \
     CHECK_NOT_REFERENCED(KEY(u, g)) \
  /* Unreachable here, where each generation puts each key once (the S3 adapter's retry after a \
   * lost answer is where the first branch happens): our own earlier put, the same bytes; or \
   * ObjectExistsError, another body under our generation's key. Never replaced either way. */ \
  :: obj_gen[KEY(u, g)] == g -> skip \
  :: else -> assert(false) \
  fi
#endif

/* ---------- the workers ---------- */
/* a crash point: the worker stops forever, holding whatever it held (merged into the step it
 * precedes or follows: the same runs, fewer intermediate states) */
#define WCRASH (wcrashes_left > 0) -> wcrashes_left--; crashed[w] = true; gone = true

/* The unit's transaction, when its fence and checkpoint conditions hold. */
#ifdef DOCUMENT_IN_PLACE
#define POINTER(u, g) skip                  /* no pointer: readers read the customer's one key */
#else
#define POINTER(u, g) \
  inv_key[u] = KEY(u, g);                   /* documentKey + documentEtag */ \
  assert(KEY_GEN(inv_key[u]) == g)          /* DOCS: the key embeds the invoice's generation */
#endif
#ifdef SEND_FROM_WORKER
#define OUTBOX_ITEM(u, g) skip
#else
/* outboxEmail: once-only (attribute_not_exists(pk)), in lockstep with the checkpoint; its INSERT
 * record goes to the stream, maybe twice */
#define OUTBOX_ITEM(u, g) \
  assert(ob_status[u] == ABSENT); \
  ob_status[u] = PENDING; ob_gen[u] = g; \
  if \
  :: dups_left > 0 -> dups_left--; stream[u] = 2 \
  :: stream[u] = 1 \
  fi
#endif
#define COMMIT(u, g) \
  printf("EVT w%d COMMITS unit %d with generation %d (fence %d)\n", w, u, g, fence); \
  fence = g; cursor = u + 1; done = (cursor == U); \
  inv_gen[u] = g; POINTER(u, g); \
  committed_by[u] = g; \
  assert((delivered_gens[u] & ~(1 << g)) == 0);  /* DELIVERY: no message with another generation's content */ \
  OUTBOX_ITEM(u, g); \
  CHECK_DOCS

/* lib/workflow/run-job.ts runJob, abstracted: acquire, raise the fence, read the checkpoint, then
 * per unit: put its document, commit ONE fenced transaction. */
proctype Worker(byte w) {
  byte g = 0;
  byte cur = 0;
  bool stop = false;
  bool gone = false;

end_idle:
  do
  :: atomic {
       /* tryAcquire: a free lease, a crashed holder's, or (LAPSES) a live holder's, paused past
        * its lease. The next generation, strictly greater than every one issued. */
       !done && (!held || crashed[holder] || lapses_left > 0) ->
       if :: held && !crashed[holder] -> lapses_left-- :: else -> skip fi;
       printf("EVT w%d acquires the lease: generation %d (it took over a running holder: %d)\n", w, lease_gen + 1, held && !crashed[holder]);
       lease_gen++; g = lease_gen; held = true; holder = w;
       assert(g <= MAXG)
     };
     atomic {                               /* raiseFence, BEFORE the checkpoint read */
       if
       :: fence <= g -> printf("EVT w%d raises the fence %d -> %d\n", w, fence, g); fence = g
       :: else -> stop = true; printf("EVT w%d: fence %d > %d, stale\n", w, fence, g)
       fi
     };
     if :: stop -> goto finish :: else -> skip fi;
     atomic {                               /* readJob, consistent */
       cur = cursor; if :: done -> cur = U :: else -> skip fi;
       printf("EVT w%d (generation %d) reads the checkpoint: cursor %d, done %d\n", w, g, cursor, done)
     };

     do
     :: cur >= U -> break
     :: cur < U ->
        atomic { PUT(cur, g) };             /* publishUnit: before the transaction */
#ifdef SEND_FROM_WORKER
        atomic {                            /* the worker emails directly: no outbox */
          printf("EVT w%d (generation %d) emails the customer of unit %d itself\n", w, g, cur);
          DELIVER(cur, g)
        };
#endif
        atomic {                            /* commitFencedUnit: ONE TransactWriteItems */
          if
          :: WCRASH ->                      /* before-commit: its document is an orphan */
             printf("EVT w%d crashes before its commit of unit %d\n", w, cur)
          :: fence <= g && cursor == cur ->
             COMMIT(cur, g);
             if
             :: WCRASH -> printf("EVT w%d crashes after its commit\n", w)   /* after-commit */
             :: skip
             fi
          :: fence > g || cursor != cur ->  /* StaleGenerationError (MOVED cannot pass the fence) */
             printf("EVT w%d commit of unit %d with generation %d REJECTED (fence %d, cursor %d)\n", w, cur, g, fence, cursor);
             stop = true
          fi
        };
        if :: gone -> goto dead :: stop -> goto finish :: else -> cur++ fi
     od;
finish:
     atomic {                               /* LeaseManager.release: owner AND generation */
       if :: held && holder == w && lease_gen == g -> held = false :: else -> skip fi;
       g = 0; cur = 0; stop = false
     }
  od;
dead:
  skip
}

/* ---------- delivery ---------- */
#define OURS(u, t) (ob_status[u] == SENDING && ob_token[u] == (t))

/* providers.ts EmailProvider.send: what the send came to. A sender may die (SCRASHES) before
 * sending (after-claim) or after the provider accepted, before SENT (after-send): `gone`. */
#define SEND(u, res, gone) \
  assert(ob_status[u] != ABSENT && committed_by[u] == ob_gen[u]);  /* only what a committed unit created */ \
  if \
  :: DELIVER(u, ob_gen[u]); res = ACCEPTED \
  :: rejects_left > 0 -> rejects_left--; res = TRANSIENT \
  :: rejects_left > 0 -> rejects_left--; res = PERMANENT \
  :: ambsends_left > 0 -> ambsends_left--; DELIVER(u, ob_gen[u]); res = AMBIGUOUS   /* the answer is lost */ \
  :: ambsends_left > 0 -> ambsends_left--; res = AMBIGUOUS                          /* the request is lost */ \
  :: SCRASH(gone) -> printf("EVT the sender dies after its claim of email#%d\n", u) \
  :: SCRASH(gone) -> DELIVER(u, ob_gen[u]); \
     printf("EVT the sender dies after the provider accepted email#%d, before SENT\n", u) \
  fi

/* sender.ts settle: every change conditional on the claim (`#status = SENDING AND #claimToken = :token`). */
#define SETTLE(u, t, res) \
  if \
  :: OURS(u, t) && res == ACCEPTED -> ob_status[u] = SENT; ob_token[u] = 0           /* markSent */ \
  :: OURS(u, t) && res == TRANSIENT -> ob_status[u] = PENDING; ob_token[u] = 0;      /* release ... */ \
     stream[u]++                                                    /* ... and the batch is retried */ \
  :: OURS(u, t) && res == PERMANENT -> ob_status[u] = FAILED; ob_token[u] = 0        /* markFailed */ \
  :: OURS(u, t) && res == AMBIGUOUS -> ob_amb[u]++                                   /* recordAmbiguous */ \
  :: else -> printf("EVT settling email#%d under claim %d matches nothing\n", u, t) \
  fi

/* outbox.ts claim: PENDING -> SENDING, a fresh token, attempts + 1. t = 0: lost the claim. */
#define CLAIM(u, t) \
  if \
  :: ob_status[u] == PENDING -> ob_att[u]++; t = ob_att[u]; ob_token[u] = t; ob_status[u] = SENDING \
  :: else -> t = 0 \
  fi

#define HAS_RECORD(x) (stream[x] > 0)

/* sender.ts handleOutboxRecords -> deliver, one stream record at a time. */
proctype Sender(byte s) {
  byte u = 0;
  byte t = 0;
  byte res = 0;
  bool gone = false;
#define SCRASH(gone) (scrashes_left > 0) -> scrashes_left--; gone = true
end_wait:
  do
  :: atomic { PICK(u, HAS_RECORD); stream[u]--; CLAIM(u, t);
       printf("EVT sender %d takes the record of email#%d: claim %d (0: lost)\n", s, u, t);
       if :: t == 0 -> u = 0 :: else -> skip fi };
     if
     :: t != 0 ->
        atomic { SEND(u, res, gone) };
        if :: gone -> goto dead :: else -> skip fi;
        atomic { SETTLE(u, t, res); u = 0; t = 0; res = 0 }
     :: else -> skip
     fi
  od;
dead:
  skip
}
#undef SCRASH
#define SCRASH(gone) false -> skip

/* reconciler.ts reconcile, every item it finds unsent, at any moment: its timeouts are timing
 * parameters, so the model lets it presume any sender dead and any record late. */
#define UNSENT(x) (ob_status[x] == PENDING || ob_status[x] == SENDING)
proctype Reconciler(byte r_id) {
  byte u = 0;
  byte st = 0;
  byte seen = 0;
  byte att = 0;
  bool r = false;
  byte t = 0;
  byte res = 0;
  bool gone = false;   /* never set: the reconciler does not die (a dead one is a late one) */
end_recon:
  do
  :: atomic { PICK(u, UNSENT); st = ob_status[u]; seen = ob_token[u]; att = ob_att[u];
       /* The provider's own record of a send (SES event publishing -> recorder.ts, kept on the
        * item) lags: it shows up at some moment after the delivery. Only this read looks at it,
        * so it is made visible here, when it is read, or not yet. */
       if :: delivered[u] > 0 && !rec[u] -> rec[u] = true :: else -> skip fi;
       r = rec[u] };
     if
     :: st == PENDING ->                               /* missed its stream delivery: deliver */
        atomic { CLAIM(u, t); printf("EVT reconciler %d claims the PENDING email#%d: claim %d (0: lost)\n", r_id, u, t) }
     :: st == SENDING && r ->                          /* the record shows the send: SENT */
        atomic {
          if
          :: OURS(u, seen) -> ob_status[u] = SENT; ob_token[u] = 0;
             printf("EVT reconciler %d: email#%d SENT from the provider's record\n", r_id, u)
          :: else -> skip
          fi
        }
     :: st == SENDING && !r && att >= MAXATT ->        /* cannot tell: UNKNOWN, a person decides */
        atomic {
          if
          :: OURS(u, seen) -> ob_status[u] = UNKNOWN; ob_token[u] = 0;
             printf("EVT reconciler %d: email#%d UNKNOWN after %d attempts\n", r_id, u, att)
          :: else -> skip
          fi
        }
     :: st == SENDING && !r && att < MAXATT ->         /* record silent: take over, send again */
        atomic {
          if
          :: OURS(u, seen) -> ob_att[u]++; t = ob_att[u]; ob_token[u] = t;
             ob_amb[u]++;                              /* takeOver: the earlier send counts as ambiguous */
             printf("EVT reconciler %d takes email#%d over from claim %d (claim %d, ambiguous sends %d)\n", r_id, u, seen, t, ob_amb[u])
          :: else -> t = 0
          fi
        }
     fi;
     if
     :: t != 0 ->
        atomic { SEND(u, res, gone) };
        atomic { SETTLE(u, t, res) }
     :: else -> skip
     fi;
     atomic { u = 0; st = 0; seen = 0; att = 0; r = false; t = 0; res = 0 }
  od
}

#ifdef COLLECTOR
/* collector.ts collect: one pass over the bucket at any moment (its age threshold is a timing
 * parameter: every object counts as old). An object is deleted only if its generation can no
 * longer commit and its pointer names another key.
 * `obsolete` reads the fence (above the object's generation?) and the job (DONE?) in one step,
 * where obsolete() sends two GetItems. Both only ever move one way (the fence up, DONE once set),
 * so reading both at the second read's moment finds "obsolete" whenever the two reads would, and
 * sometimes more: the model deletes at least as often as the code. */
#define OBSOLETE     (fence > cg || done)
#define REFERENCED_K (inv_key[k / (MAXG + 1)] == k)
#define READ_POINTER  printf("EVT the collector reads the pointer of unit %d: key %d (255: none; the object of generation %d is key %d)\n", k / (MAXG + 1), inv_key[k / (MAXG + 1)], cg, k)
#define READ_OBSOLETE printf("EVT the collector reads fence %d, done %d: generation %d can still commit: %d\n", fence, done, cg, !OBSOLETE)
active proctype Collector() {
  byte k = 0;
  byte cg = 0;
  bool keep = false;
  byte passes = COLLECTS;
end_col:
  do
  :: passes > 0 ->
     passes--;
     do
     :: atomic {                                   /* ListObjectsV2: the next object */
          do :: k < NKEYS && obj_gen[k] == 0 -> k++ :: else -> break od;
          if :: k < NKEYS -> cg = obj_gen[k] :: else -> skip fi
        };
        if
        :: k >= NKEYS -> k = 0; break
        :: else -> skip
        fi;
#ifdef COLLECT_POINTER_FIRST
        atomic { keep = REFERENCED_K; READ_POINTER };   /* GetItem the pointer, then ... */
        if :: !keep -> atomic { keep = !OBSOLETE; READ_OBSOLETE } :: else -> skip fi;   /* ... can it still commit? */
#else
        atomic { keep = !OBSOLETE; READ_OBSOLETE };     /* can its generation still commit? then ... */
        if :: !keep -> atomic { keep = REFERENCED_K; READ_POINTER } :: else -> skip fi;   /* ... the pointer */
#endif
        atomic {
          if
          :: !keep && obj_gen[k] == cg ->          /* deleteIfMatch: the listed ETag */
             printf("EVT the collector deletes the document of unit %d, generation %d\n", k / (MAXG + 1), cg);
             obj_gen[k] = 0;
             CHECK_DOCS
          :: else -> skip
          fi;
          k++; cg = 0; keep = false
        }
     od
  od
}
#endif

/* The end of every finite run: the job DONE, each invoice publishing its own generation's
 * document, each outbox item settled (SENT with a delivery, or FAILED/UNKNOWN), and no message
 * with the content of a generation that did not commit its unit. */
active proctype EndCheck() {
  timeout ->
  atomic {
    assert(done && cursor == U);
    du = 0;
    do
    :: du < U ->
       assert(committed_by[du] != 0 && obj_gen[DOC_OF(du)] == inv_gen[du]);
       assert((delivered_gens[du] & ~(1 << committed_by[du])) == 0);
#ifdef SEND_FROM_WORKER
       assert(delivered[du] >= 1);
#else
       assert(ob_status[du] == SENT || ob_status[du] == FAILED || ob_status[du] == UNKNOWN);
       assert(ob_status[du] != SENT || delivered[du] >= 1);
#endif
       du++
    :: else -> break
    od
  }
}

init {
  byte i = 0;
  atomic {
    du = 0;
    do :: du < U -> inv_key[du] = NOKEY; du++ :: else -> du = 0; break od;
    do :: i < NW -> run Worker(i); i++ :: else -> break od;
    i = 0;
    do :: i < NS -> run Sender(i); i++ :: else -> break od;
    i = 0;
    do :: i < NR -> run Reconciler(i); i++ :: else -> break od
  }
}
