/*
 * fenced.pml — the lease + fence + idempotency protocol of this repository, for SPIN.
 *
 * One job of U units, NW workers (Lambda invocations that loop over queue messages), the
 * sweeper, and an abstract clock that can make a lease lapse. See model/README.md for the
 * mapping to lib/, the abstractions, and the numbers.
 *
 * Every DynamoDB request is ONE atomic step (DynamoDB serialises single-item conditional
 * writes and TransactWriteItems). Between two requests of a worker anything may happen: the
 * interleaving IS the "pause" (GC, stalled host), and the clock may make the lease lapse
 * during it. A worker may also crash (stop forever) at the named points of lib/workflow/worker.ts.
 *
 * Broken variants (compile with -D<NAME>; each must give a counterexample):
 *   NO_FENCE        lease only: no fence raise, no fence condition in the unit's transaction
 *   CHECK_THEN_ACT  generation read and compared in application code, then written without
 *                   a condition in a separate request (both the raise and every unit)
 *   RELEASE_NO_GEN  release and renew conditioned on the owner only, not on the generation
 *   COUNTER_RESET   release deletes the lease item: the generation counter restarts
 *   SWEEPER_COUNT   (with VERSION_WATCH) the claimant trusts the sweeper's count of unchanged
 *                   sweeps and claims with no wait of its own
 *   SEAL_SKIPS_ABSENT (with SEAL) the seal raises only fences that exist already
 * Liveness control (only the LTL property can catch it): NO_SWEEPER (+ NO_ENDCHECK).
 *
 * Modes and drills (compile with -D<NAME>; the safe model must verify with each):
 *   VERSION_WATCH   the version-watch lease: a free lease is claimed at once; a held one only by
 *                   the receiver of the sweeper's requeue, which observes the version, waits a
 *                   full duration on its own clock, and claims if the version is unchanged. The
 *                   sweeper compares no clocks: two unchanged observations trigger a requeue.
 *   SEAL            a disaster-recovery drill at any moment: the operator seals (every lease
 *                   counter, then every fence a lease key protects, created if absent) to the
 *                   new epoch's floor; no generation below it may commit afterwards.
 */

/* ---------- bounds (override with -D) ---------- */
#ifndef NW
#define NW 2            /* workers */
#endif
#ifndef U
#define U 2             /* units of the job (customers): invoice#u and charge#u per unit */
#endif
#ifndef QMAX
#define QMAX 2          /* queue capacity (a send to a full queue is a duplicate: dropped) */
#endif
#ifndef LAPSES
#define LAPSES 1        /* times a LIVE holder is paused past its lease */
#endif
#ifndef CRASHES
#define CRASHES 1       /* workers that stop forever (must stay < NW for PROGRESS) */
#endif
#ifndef AMBIG
#define AMBIG 1         /* ambiguous requests: lost commit responses, uncertain renewals */
#endif
#ifdef SEAL
#define EPOCH_FLOOR 16  /* epoch 1's floor: above every token the bounds let epoch 0 issue */
#endif
#ifndef MAXGEN
#ifdef SEAL
#define MAXGEN 31
#else
#define MAXGEN 15       /* model bound on the counter: reaching it is reported, never hidden */
#endif
#endif
#ifndef RQMAX
#define RQMAX 1         /* the sweeper's requeue messages (version-watch: they start a watch) */
#endif
#ifndef NOWNERS
#define NOWNERS 1       /* distinct owner ids; 1 = all workers share one id (one host) */
#endif

#define OWNER(w)  (((w) % NOWNERS) + 1)
#define NONE      0

/* outcome of one unit's TransactWriteItems, as lib/protocol/fence.ts decodeCancellation reports it */
#define COMMITTED   1
#define ALREADY     2   /* an earlier attempt of ours committed it (checkpoint says so) */
#define STALE       3   /* StaleGenerationError: the fence is above us */
#define MOVED       4   /* CheckpointMovedError: someone else progressed */
#define AMB_APPLIED 5   /* applied, response lost */
#define AMB_NOTHING 6   /* request lost, nothing applied */

/* ---------- the store ---------- */
/* Leases table, item job#J (lib/protocol/lease.ts) */
byte lease_owner = NONE;   /* owner attribute; NONE = absent (free) */
byte lease_gen = 0;        /* generation: the last token issued, never removed */
/* version: changes on every acquire, renew and release. Only "changed since I looked" matters,
 * so the model keeps one bit per observer instead of a counter (bit w: worker w, bit 7: the
 * sweeper), set when it looks and cleared by every change. */
byte seen_unchanged = 0;
#define SWEEPER_BIT 128
#define VERSION_CHANGES seen_unchanged = 0
bool lapsed = false;       /* expiresAt has passed (abstract time, set by proctype Clock) */
/* Fences table, item invoices#J (lib/protocol/fence.ts) */
byte fence = 0;            /* greatest accepted generation */
bool fence_exists = false; /* the fence item exists (the first raise creates it) */
/* Jobs table, item J (lib/workflow/jobs.ts) */
byte cursor = 0;           /* next unit */
bool done = false;         /* status = DONE (set by the last unit's transaction) */
byte job_gen = 0;          /* generation of the last committed unit */
bit  hb = 0;               /* heartbeatAt, abstracted to "changed or not" */
/* Invoices table (lib/workloads/invoices.ts) */
byte inv_gen[U];           /* invoice#u: generation of the writer (0 = absent); upserted */
byte charges[U];           /* charge#u: how many times it was CREATED (ONCE: at most 1) */
/* SQS work queue */
byte q = 1;                /* messages {jobId} waiting; the starter sent one */
byte rq = 0;               /* requeue messages {jobId, reason: requeue} from the sweeper */

/* ---------- ghosts (truth the store does not record) ---------- */
byte max_issued = 0;       /* greatest generation ever handed out (TOKENS) */
byte started = 0;          /* greatest generation that has READ the checkpoint (FENCE) */
byte live_grant = 0;       /* the grant still in force in real time, 0 = none (EXCL) */
byte holder = 0;           /* worker index of the last grant (for the clock) */
bool crashed[NW];
byte lapses_left = LAPSES;
byte crashes_left = CRASHES;
byte ambig_left = AMBIG;
byte sealed = 0;           /* the floor once the seal completed (0: no seal yet) */

/* ---------- invariants ---------- */
/* TOKENS: the fence never exceeds the lease's counter */
#define CHECK_TOKENS   assert(fence <= lease_gen)
/* FENCE (store level): the fence item itself never goes down */
#define SET_FENCE(v)   assert((v) >= fence); fence = (v); fence_exists = true; CHECK_TOKENS

#if defined(NO_FENCE) || defined(CHECK_THEN_ACT)
#define FENCE_OK(g)    true
#else
#define FENCE_OK(g)    (fence <= (g))
#endif

#ifdef RELEASE_NO_GEN
#define HOLDS(me, g)   (lease_owner == (me))
#else
#define HOLDS(me, g)   (lease_owner == (me) && lease_gen == (g))
#endif

/* a crash point: the worker stops forever, holding whatever it held */
#define CRASH_POINT \
  if \
  :: atomic { crashes_left > 0 -> crashes_left--; crashed[w] = true; \
              printf("EVT w%d crashes (stops forever)\n", w) }; goto dead \
  :: skip \
  fi

/* a message sent to SQS; a full queue drops it (there is already one to deliver) */
#define ENQUEUE   if :: q < QMAX -> q++ :: else -> skip fi

/* LeaseManager.release: conditional; removes owner and expiresAt, KEEPS generation */
#ifdef COUNTER_RESET
#define RELEASE_BODY  lease_gen = 0   /* DeleteItem: the counter goes with the item */
#else
#define RELEASE_BODY  skip
#endif
#define RELEASE \
  atomic { \
    if \
    :: HOLDS(me, g) -> \
       printf("EVT w%d releases (as generation %d) the lease of generation %d\n", w, g, lease_gen); \
       lease_owner = NONE; lapsed = false; VERSION_CHANGES; RELEASE_BODY; \
       if :: live_grant == g -> live_grant = 0 :: else -> skip fi; \
       CHECK_TOKENS \
    :: else -> printf("EVT w%d: release of generation %d matches nothing\n", w, g) \
    fi \
  }

/* acquire.ts sendGrant: the counter + 1, a new version, the owner (inside an atomic step) */
#define GRANT \
  printf("EVT w%d acquires the lease: generation %d (owner id %d; grant still in force: %d)\n", \
         w, lease_gen + 1, me, live_grant); \
  assert(live_grant == 0);          /* EXCL: no grant in force is taken over */ \
  assert(lease_gen < MAXGEN);       /* model bound (not a protocol property) */ \
  lease_gen++; VERSION_CHANGES; \
  g = lease_gen; \
  assert(g > max_issued);           /* TOKENS: strictly increasing, never reused */ \
  max_issued = g; \
  lease_owner = me; lapsed = false; live_grant = g; holder = w; \
  CHECK_TOKENS

/* lib/workflow/run-job.ts runJob, one invocation per queue message; lib/protocol/lease.ts, lib/protocol/fence.ts */
proctype Worker(byte w) {
  byte g = 0;          /* this invocation's generation (0 = none) */
  byte cur = 0;        /* its copy of the checkpoint cursor */
  byte outcome = 0;
  bit progressed = 0;  /* committed at least one unit in this invocation */
  bool requeue = false; /* the message is the sweeper's requeue */
  bool watching = false;
#define me OWNER(w)

end_idle:
  do
  :: if
     :: atomic { q > 0 -> q--; requeue = false }    /* SQS delivers a message */
     :: atomic { rq > 0 -> rq--; requeue = true }   /* ... or the sweeper's requeue */
     fi;

     /* 1. LeaseManager.tryAcquire: ONE conditional UpdateItem, generation + 1 */
#ifdef VERSION_WATCH
     atomic {
       if
       :: lease_owner == NONE -> GRANT
       :: lease_owner != NONE && requeue -> seen_unchanged = seen_unchanged | (1 << w); watching = true;
          printf("EVT w%d watches the lease of generation %d\n", w, lease_gen)
       :: else -> printf("EVT w%d: lease busy, message dropped\n", w)
       fi
     };
     if
     :: watching ->
#ifndef SWEEPER_COUNT
        /* job-steps.ts watchAndClaim: a full duration on ITS OWN clock. Unchanged for that long,
         * the holder's grant has run out (the clock lapsed it); otherwise the version moved. */
        (lapsed || (seen_unchanged & (1 << w)) == 0);
#endif
        atomic {
          if
          :: lease_owner == NONE || (seen_unchanged & (1 << w)) != 0 -> GRANT    /* version = :observed */
          :: else -> printf("EVT w%d: the version moved (the holder renewed), busy\n", w)
          fi;
          watching = false
        }
     :: else -> skip
     fi;
#else
     atomic {
       if
       :: lease_owner == NONE || lapsed -> GRANT
       :: else -> printf("EVT w%d: lease busy, message dropped\n", w)
       fi
     };
#endif
     if :: g == 0 -> goto ack :: else -> skip fi;
     CRASH_POINT;                           /* after-acquire */

     /* 2. raiseFence, BEFORE reading the state */
#if defined(NO_FENCE)
     skip;
#elif defined(CHECK_THEN_ACT)
     if :: fence > g -> goto superseded                       /* read + compare in code */
        :: else -> printf("EVT w%d reads fence %d <= %d: ok\n", w, fence, g) fi;
     atomic {                                                 /* ...then write, unconditionally */
       printf("EVT w%d writes fence := %d (it was %d)\n", w, g, fence); SET_FENCE(g) };
#else
     atomic {
       if
       :: fence <= g -> printf("EVT w%d raises the fence %d -> %d\n", w, fence, g); SET_FENCE(g)
       :: else -> printf("EVT w%d: fence %d > %d, stale\n", w, fence, g); outcome = STALE
       fi
     };
     if :: outcome == STALE -> goto superseded :: else -> skip fi;
#endif
     CRASH_POINT;                           /* after-fence-raise */

     /* 3. readJob, consistent */
     atomic {
       cur = cursor;
       printf("EVT w%d (generation %d) reads the checkpoint: cursor %d, done %d\n", w, g, cursor, done);
       if :: g > started -> started = g :: else -> skip fi;
       if :: done -> cur = U :: else -> skip fi
     };

     /* 4. units */
     do
     :: cur >= U -> break
     :: cur < U ->
        /* between units: renew when the deadline nears, or hand off when out of time */
        if
        :: skip
        /* LeaseManager.renew: ONE conditional UpdateItem. (Two options, not if/else: an
         * `else` nested as the first statement of an option would be judged against the
         * enclosing selection, where `skip` is always executable.) */
        :: atomic { HOLDS(me, g) -> lapsed = false; live_grant = lease_gen; VERSION_CHANGES;
             printf("EVT w%d (generation %d) renews the lease of generation %d\n", w, g, lease_gen) }
        :: atomic { !HOLDS(me, g) ->                          /* LeaseLostError */
             printf("EVT w%d (generation %d): renewal refused, lease lost\n", w, g) };
           goto ack                                           /* superseded, no release */
        :: atomic { ambig_left > 0 -> ambig_left--;           /* renewal uncertain */
                    printf("EVT w%d: renewal uncertain, stops\n", w) };
           RELEASE; ENQUEUE; goto ack                         /* stop; message retried */
        :: progressed -> printf("EVT w%d out of time, hands off\n", w);
           RELEASE; ENQUEUE; goto ack                         /* out of time: continuation */
        fi;
        CRASH_POINT;                                          /* before-commit */
#ifdef CHECK_THEN_ACT
        if :: fence > g -> goto superseded :: else -> skip fi; /* read + compare in code */
#endif
commit: /* commitFencedUnit: ONE TransactWriteItems { fence, checkpoint, invoice, charge } */
        atomic {
          if
          :: ambig_left > 0 -> ambig_left--; outcome = AMB_NOTHING;  /* request lost */
             printf("EVT w%d commit of unit %d: request lost\n", w, cur)
          :: FENCE_OK(g) && cursor == cur ->
             printf("EVT w%d COMMITS unit %d with generation %d (fence %d, last committed generation %d, newest reader %d)\n",
                    w, cur, g, fence, job_gen, started);
             assert(charges[cur] == 0);    /* a charge exists only with its unit's checkpoint */
             assert(g >= started);         /* FENCE: nobody older commits after a newer read */
             assert(g >= job_gen);         /* FENCE: committed generations never go down */
             assert(g >= inv_gen[cur]);    /* FENCE: no upsert replaces a higher generation */
             assert(g >= sealed);          /* SEAL: no token of an older epoch commits after the seal */
#ifndef NO_FENCE
             SET_FENCE(g);
#endif
             cursor = cur + 1; job_gen = g; hb = 1 - hb; done = (cursor == U);
             inv_gen[cur] = g;
             charges[cur]++;
             assert(charges[cur] == 1);    /* ONCE: attribute_not_exists(pk) */
             if
             :: ambig_left > 0 -> ambig_left--; outcome = AMB_APPLIED;  /* response lost */
                printf("EVT w%d: response lost\n", w)
             :: outcome = COMMITTED
             fi
          :: !FENCE_OK(g) -> outcome = STALE;
             printf("EVT w%d commit of unit %d with generation %d REJECTED by fence %d\n", w, cur, g, fence)
          :: FENCE_OK(g) && cursor != cur ->
             if
             :: cursor > cur && job_gen == g -> outcome = ALREADY
             :: else -> outcome = MOVED
             fi;
             printf("EVT w%d commit of unit %d: checkpoint is at %d (%d: 2 = ours already, 4 = moved)\n", w, cur, cursor, outcome)
          fi
        };
        if
        :: outcome == COMMITTED || outcome == ALREADY -> skip
        :: outcome == STALE || outcome == MOVED -> goto superseded
        :: outcome == AMB_APPLIED -> /* same ClientRequestToken within DynamoDB's window */
           outcome = COMMITTED
        :: outcome == AMB_APPLIED || outcome == AMB_NOTHING ->
           outcome = 0; goto commit                           /* resend, re-evaluated */
        :: outcome == AMB_APPLIED || outcome == AMB_NOTHING ->
           RELEASE; ENQUEUE; goto ack                         /* uncertain: message retried */
        fi;
        outcome = 0; progressed = 1; cur++;
        CRASH_POINT                                           /* after-commit */
     od;
     RELEASE;                               /* 5. finished (the last unit set DONE) */
     goto ack;

superseded:
     RELEASE;
ack:
     atomic { g = 0; cur = 0; outcome = 0; progressed = 0; requeue = false }
  od;
dead:
  skip
}

/* The abstract clock: a lease lapses while its holder is paused (LAPSES times at most) or
 * crashed (always, eventually: weak fairness). The ghost grant ends with it. */
active proctype Clock() {
end_clock:
  do
  :: atomic {
       lease_owner != NONE && !lapsed && (crashed[holder] || lapses_left > 0) ->
       if :: !crashed[holder] -> lapses_left-- :: else -> skip fi;
       lapsed = true; live_grant = 0;
       printf("EVT the lease of generation %d lapses (its holder w%d crashed: %d)\n", lease_gen, holder, crashed[holder])
     }
  od
}

/* lib/workflow/sweeper.ts sweep. Wall-clock verdict: an unfinished job whose lease is not live is
 * requeued by a conditional update on the observed heartbeat, then a queue send. Every
 * heartbeat is considered possibly stale (staleAfterMs is a timing parameter).
 * Version-watch verdict: no clock at all. Two observations of (version, heartbeat) with
 * anything in between, back-to-back sweeps included, trigger the requeue. */
#ifndef NO_SWEEPER
active proctype Sweeper() {
  bit h;
end_sweep:
  do
  :: atomic { !done -> h = hb; seen_unchanged = seen_unchanged | SWEEPER_BIT };  /* Query the index (+ GetItem lease) */
#ifdef VERSION_WATCH
     atomic {                                        /* a later sweep: unchanged? claimRequeue, SendMessage */
       if
       :: !done && hb == h && (seen_unchanged & SWEEPER_BIT) != 0 -> hb = 1 - hb;
          if :: rq < RQMAX -> rq++ :: else -> skip fi;
          printf("EVT sweeper requeues the job (seen unchanged)\n")
       :: else -> skip
       fi
     };
#else
     if
     :: lease_owner == NONE || lapsed ->             /* GetItem on the lease: not live */
        atomic {                                     /* claimRequeue, then SendMessage */
          if
          :: hb == h && !done -> hb = 1 - hb; ENQUEUE;
             printf("EVT sweeper requeues the job (lease not live)\n")
          :: else -> skip
          fi
        }
     :: else -> skip
     fi;
#endif
     h = 0
  od
}
#endif

#ifdef SEAL
/* The DR drill (lib/protocol/epochs.ts seal, after raiseEpoch and a redeploy): the lease
 * counter, then the fence its key protects, to the new epoch's floor. Workers that acquire
 * afterwards draw from the raised counter; holders of older tokens are still running. */
active proctype Operator() {
  atomic { lease_gen < EPOCH_FLOOR -> lease_gen = EPOCH_FLOOR; printf("EVT seal: the lease counter -> %d\n", EPOCH_FLOOR) };
  atomic {
#ifdef SEAL_SKIPS_ABSENT
    if :: fence_exists && fence < EPOCH_FLOOR -> fence = EPOCH_FLOOR :: else -> skip fi;
#else
    if :: fence < EPOCH_FLOOR -> fence = EPOCH_FLOOR; fence_exists = true :: else -> skip fi;
#endif
    sealed = EPOCH_FLOOR;
    printf("EVT seal complete: the fence is %d (it existed: %d)\n", fence, fence_exists)
  }
}
#endif

/* The end of every finite run: the job is DONE, every unit committed, each charge exactly once. */
#ifndef NO_ENDCHECK
active proctype EndCheck() {
  byte u;
  timeout ->
  atomic {
    assert(done && cursor == U);
    u = 0;
    do
    :: u < U -> assert(charges[u] == 1 && inv_gen[u] > 0); u++
    :: else -> break
    od
  }
}
#endif

init {
  byte i = 0;
  atomic {
    do
    :: i < NW -> run Worker(i); i++
    :: else -> break
    od
  }
}

/* PROGRESS: under weak fairness, with bounded crashes/lapses/ambiguity, the job gets DONE. */
ltl progress { <> done }
