/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline.h - the aggregator's packet pipeline, shared by serene-switch and
 * (as the reference it mirrors) the P4 program.
 *
 * One call processes one received message (Serene header + payload, as from
 * a UDP datagram) and fills in the actions to take: zero or more messages,
 * each sent either back to the source or to every worker of the job, with
 * the header's worker field rewritten per replica (or, for a leaf of a tree,
 * to its parent or to one worker: upstream.c).
 *
 * Ops: JOIN and LEAVE (membership.c), streaming allreduce (AR_DATA and
 * AR_PROBE, allreduce.c), the SSP parameter store (PUSH, PULL, store.c) and barrier
 * (CLOCK, barrier.c), one file per control of the P4 program (controls.h);
 * ingress.c dispatches, job_table.c holds the jobs. Each job has a
 * store of store_words uint32 accumulators (int32 on the wire, sums modulo
 * 2^32) in rows of elems_per_pkt words, the last push number applied per
 * (row, worker), and a barrier (barrier.h) with its clock-indexed policy
 * rules. A JOIN with a new nonce resets all of it, with the slots.
 *
 * Invariants:
 * - Pure: no I/O, no clock of its own, no globals, no randomness. The same
 *   sequence of (source, message) pairs and sr_pipe_tick times always
 *   gives the same actions and counters.
 * - No allocation per packet: a job's state is allocated when the job is
 *   added and freed when it is removed. Callers own the output struct.
 * - Every piece of state is a fixed-size array indexed by worker, by
 *   (slot, version), by store word, by (store row, worker) or by barrier
 *   ring entry, so the P4 program can hold it in registers.
 * - Not thread-safe: one thread owns a pipeline.
 */
#ifndef SERENE_SWSWITCH_PIPELINE_H
#define SERENE_SWSWITCH_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "barrier.h"
#include "proto/wire.h"

/* A source or destination address. Opaque to the pipeline (it only compares
 * them): IPv4 address and UDP port, host byte order, for the udp daemon. */
typedef struct sr_peer {
    uint32_t ip;
    uint16_t port;
} sr_peer;

/* ---- Output actions ----------------------------------------------------- */

/* Every op emits at most one action, except CLOCK: its answer to the sender
 * can come with a RELEASE multicast to the job's workers; and at a leaf of a
 * tree, a request whose answer comes with a message to the parent (AR_HELD
 * and AR_PROBE, ERROR and the poison marker, a relayed JOIN or LEAVE and
 * the leaf's own). */
#define SR_PIPE_MAX_ACTIONS 2

/* One destination of an action: the worker id written into that replica's
 * header, and the address it goes to. */
typedef struct sr_pipe_dest {
    sr_peer peer;
    uint16_t worker;
    /* A STEP_RESP replica's own fields (its action's dest_seq set): its
     * receiver's clock (seq) and the policy at it (exp = mode, slot = s). */
    uint32_t seq;
    uint16_t s;
    uint8_t mode;
} sr_pipe_dest;

typedef struct sr_pipe_action {
    uint8_t multicast; /* 0: unicast back to the source; 1: workers of the job (every
                          one, or those a STEP_RESP goes to) */
    uint8_t dest_seq;  /* 1: each replica's seq, exp and slot are its dests[k]'s (STEP_RESP) */
    unsigned n_dests;  /* replicas: 1 for unicast, the job's workers for multicast */
    sr_pipe_dest dests[SR_WIRE_MAX_WORKERS];
    sr_hdr hdr;        /* header template: hdr.worker is replaced per replica */
    size_t payload_len; /* 4 * hdr.count bytes */
    /* NULL: the payload is payload[]. Otherwise (only with
     * sr_pipe_set_lazy_payload) payload[] is not filled: the payload is
     * the big-endian form of words[0 .. payload_len / 4), host words in the
     * pipeline's own state, valid until the next sr_pipe_* call that
     * changes the pipeline. sr_pipe_payload_write writes it either way. */
    const uint32_t *words;
    uint8_t payload[SR_WIRE_MAX_PAYLOAD]; /* big-endian int32 words */
} sr_pipe_action;

/* Filled in by sr_pipe_process; n == 0 means nothing is sent. About 18 KiB:
 * allocate it once, not on a small stack per packet. */
typedef struct sr_pipe_out {
    unsigned n;
    sr_pipe_action act[SR_PIPE_MAX_ACTIONS];
} sr_pipe_out;

/* ---- Counters ----------------------------------------------------------- */

/* Per-job counters, in the order they are printed. The X-macro keeps the
 * struct fields and their printed names in one list. */
#define SR_PIPE_JOB_COUNTERS(X)                                                                   \
    X(rx)              /* parsed messages addressed to the job */                                \
    X(tx)              /* copies sent (one per replica) */                                       \
    X(joins)           /* JOIN_ACKs sent, retransmitted JOINs included */                        \
    X(resets)          /* new incarnations (JOIN with another nonce, or `reset`) */              \
    X(leaves)          /* workers whose context ended (LEAVE) */                                 \
    X(in_use_refused)  /* JOINs with a new nonce refused: workers still bound (JOB_IN_USE) */    \
    X(denied)          /* JOINs without the job's admission token (DENIED) */                     \
    X(lapsed)          /* bindings a new incarnation took over after their lease lapsed */       \
    X(unproven)        /* PULLs and CLOCKs refused with UNPROVEN: address not proven yet */      \
    X(results)         /* rounds completed (each a multicast of AR_RESULT) */                    \
    X(shadow_replies)  /* AR_RESULTs re-sent from a completed slot to a retransmission */        \
    X(dup_dropped)     /* duplicate contributions to a round still in progress: not added,       \
                          answered AR_HELD */                                                    \
    X(probes)          /* AR_PROBEs from bound workers, refused ones (MISMATCH) included */      \
    X(held)            /* AR_HELD answers: to duplicates and probes of an open round */         \
    X(naks)            /* AR_NAK answers: probes of a contribution not held, or of a round       \
                          complete */                                                            \
    X(mismatches)      /* contributions whose seq/offset/count/exp disagree with the slot */     \
    X(stale_dropped)   /* late copies from a worker that already moved on in the slot */         \
    X(dropped_unbound) /* AR_DATA, AR_PROBE, PUSH, PULL or CLOCK from an unbound worker id or  \
                          another address */                                                     \
    X(errors_sent)     /* ERROR replies */                                                       \
    X(pushes)          /* PUSHes applied to the store (PUSH_ACK aux = 1) */                      \
    X(push_dups)       /* PUSHes already applied, acked with aux = 0 and not added again */      \
    X(pulls)           /* PULLs answered (PULL_RESP) */                                          \
    X(clocks)          /* CLOCKs from bound workers, refused ones included */                    \
    X(holds)           /* HOLD answers */                                                        \
    X(proceeds)        /* PROCEED answers */                                                     \
    X(releases)        /* RELEASE multicasts: one per CLOCK that advanced low */                 \
    X(range_errors)    /* PUSHes and PULLs refused with RANGE (beyond the store or a row) */     \
    X(clock_ahead)     /* CLOCKs beyond the barrier ring, refused with CLOCK_AHEAD */         \
    X(up_partials)     /* a leaf's complete rounds sent upstream as one contribution */         \
    X(up_resends)      /* partials (or the leaf's JOIN) sent upstream again for a worker */     \
    X(up_results)      /* results from upstream passed down to the workers */                   \
    X(up_relayed)      /* requests relayed upstream: JOIN, LEAVE, PUSH, PULL, CLOCK */          \
    X(down_relayed)    /* answers from upstream relayed to a worker */                          \
    X(up_dropped)      /* answers from upstream that match nothing: late, duplicate, refused */ \
    X(steps)           /* STEP pieces applied to the store */                                    \
    X(step_dups)       /* STEP pieces already applied: not added again */                        \
    X(step_waits)      /* first STEP pieces whose row waits for other workers (no answer) */    \
    X(step_answers)    /* STEP_RESP copies: rows sent to a sender or released to a waiter */   \
    X(step_probes)     /* STEP_PROBEs from bound workers */                                      \
    X(step_held)       /* STEP_HELD answers: the row waits, the piece is applied */             \
    X(step_naks)       /* STEP_NAK answers: the probed piece is not applied, or ready */ \
    X(grants)          /* pool blocks leased to the job (a shared job: pool.c) */              \
    X(preempted)       /* its blocks taken back for another job (fair share, priority) */      \
    X(returned)        /* its blocks returned to the pool because the job was idle */         \
    X(fb_rounds)       /* rounds sent to the fallback aggregator: no block for their slot */   \
    X(fb_relayed)      /* requests relayed to the fallback: JOIN, LEAVE, AR_DATA, AR_PROBE */  \
    X(fb_answers)      /* the fallback's answers relayed to a worker */                       \
    X(fb_dropped)      /* the fallback's answers that match nothing: late, refused, unbound */ \
    X(lease_lost)      /* requests for a round whose block went back to the pool: dropped */ \
    X(first_wait)      /* rounds the incarnation sent to the fallback before its first block */ \
    X(first_wait_others) /* rounds the other shared jobs started meanwhile (from its first) */

typedef struct sr_pipe_job_counters {
#define SR_PIPE_X_FIELD(name) uint64_t name;
    SR_PIPE_JOB_COUNTERS(SR_PIPE_X_FIELD)
#undef SR_PIPE_X_FIELD
} sr_pipe_job_counters;

/* Switch-wide counters. */
typedef struct sr_pipe_counters {
    uint64_t rx_total;                     /* every message given to sr_pipe_process */
    uint64_t tx_total;                     /* copies sent, all jobs and no job */
    uint64_t rejected[SR_PARSE_NREASONS];  /* by -sr_msg_parse result; [0] unused */
    uint64_t unknown_job;                  /* requests for a job not in the table */
    uint64_t answers_dropped;              /* switch-to-worker ops received by the switch */
} sr_pipe_counters;

/* ---- Job setup ---------------------------------------------------------- */

#define SR_PIPE_STORE_DEFAULT (1u << 20) /* 4 MiB of accumulators per job */
/* Largest store: 1 GiB of accumulators per job. Also keeps every store
 * word offset far below 2^32, so offset + count never wraps. */
#define SR_PIPE_STORE_MAX (1u << 28)
/* Largest push-dedup table (store rows x workers, one uint32_t each):
 * 1 GiB. Only a tiny ELEMS with a large store and many workers hits it. */
#define SR_PIPE_PUSH_TABLE_MAX (1u << 28)

/* A job's parameters. sr_pipe_job_params_init fills in the defaults. */
typedef struct sr_pipe_job_params {
    uint32_t n_workers;     /* 1..SR_WIRE_MAX_WORKERS; no default (0 is refused) */
    uint32_t elems_per_pkt; /* 1..SR_WIRE_MAX_ELEMS, also the store's row length;
                               default SR_WIRE_DEF_ELEMS */
    uint32_t pool_slots;    /* 1..SR_WIRE_MAX_SLOTS; default SR_WIRE_DEF_SLOTS */
    uint32_t store_words;   /* 0..SR_PIPE_STORE_MAX (0: no store, every access is
                               out of range); default SR_PIPE_STORE_DEFAULT */
    uint32_t ring;          /* barrier ring R: a power of 2 in [2, SR_BARRIER_RING_MAX];
                               default SR_BARRIER_RING_DEFAULT */
    enum sr_sync_mode mode; /* policy from clock 0 on; default SR_SYNC_BSP */
    uint32_t s;             /* SSP's s, at most ring - 2; ignored for BSP and ASP;
                               default 0 */
    uint64_t token;         /* admission token a JOIN must carry (sr_join_req);
                               0: any JOIN is admitted. Default 0 */
    /* Aggregation tree (upstream.c; p4/README.md, "Trees"). A leaf
     * serves the worker ids local_first .. local_first + local_n - 1 of the
     * tree's n_workers (its JOIN_ACK and the workers' headroom count them
     * all); local_n 0 (the default): every id, as a job without a tree. */
    uint32_t local_first, local_n;
    /* up 1: a leaf. Its complete rounds go as one contribution, of member
     * up_member, to job up_job at up_peer (a parent whose members are the
     * leaves), and the parent's result comes down; JOIN, LEAVE, PUSH, PULL
     * and CLOCK are relayed to job `job` at up_peer (the store and barrier
     * live at the root). Default 0. */
    uint8_t up;
    sr_peer up_peer;
    uint16_t up_job, up_member;
    /* A shared job (pool.c; p4/swswitch/README.md, "Sharing the switch"):
     * fallback 1: its cells take blocks from the switch's pool
     * (sr_pipe_set_pool) as rounds start, instead of slots of its own, and
     * a round that gets none goes to its fallback aggregator at fb_peer: a
     * host serene-switch holding the same job id with the same workers,
     * packets and at least its slots. prio: its rank under the priority
     * policy (higher takes blocks from lower). Not with up. Default 0. */
    uint8_t fallback;
    sr_peer fb_peer;
    uint8_t prio;
    /* whole_rows 1: the store takes whole rows only, as the Tofino program
     * does: a PUSH of elems_per_pkt words from a row's first word, a PULL
     * of one row (else BAD_COUNT, or RANGE for a row not begun at its
     * first word); JOIN_ACK says so (SR_FLAG_WHOLE_ROWS) and the library
     * pads its requests. Default 0. */
    uint8_t whole_rows;
    /* tna_model 1: the job's allreduce runs on the Tofino program's model
     * (p4/tna/model; tna_run.c), for tests of that program with real
     * workers: ELEMS 32, at most 256 slots and 32 workers, not shared, not
     * a leaf; its cells are block id mod 4 of the switch's one model.
     * Default 0. */
    uint8_t tna_model;
} sr_pipe_job_params;

/* Setup of a job, as given to sr_pipe_job_add, plus its current nonce. */
typedef struct sr_pipe_job_info {
    uint16_t job;
    uint32_t n_workers;
    uint32_t elems_per_pkt;
    uint32_t pool_slots;
    uint32_t store_words;
    uint32_t ring;
    enum sr_sync_mode mode; /* the initial policy, restored by each new incarnation */
    uint32_t s;             /* as given (for SSP) */
    uint32_t nonce;    /* incarnation; 0 until a JOIN brings another */
    uint32_t n_bound;  /* workers bound in this incarnation */
    uint32_t n_live;   /* of those, not left and not lapsed (they keep the job in use) */
    uint64_t bytes;    /* memory allocated for the job's state (slots, store, push
                          table, tags, barrier ring, the job itself); pages of it
                          are mapped only once touched. sr_pipe_job_remove frees it */
    uint8_t fallback;  /* a shared job: its slots' accumulators are pool blocks */
    uint8_t prio;
    uint32_t held;     /* pool blocks it holds now */
} sr_pipe_job_info;

/* A job's barrier as of now (this incarnation). */
typedef struct sr_pipe_sync_state {
    uint32_t low, high;     /* serial clocks; both 2^32 - 1 (clock -1) until a
                               worker reports clock 0 */
    enum sr_sync_mode mode; /* the policy for the next clock not yet reported, */
    uint32_t s;             /* high + 1, with its s as applied (ASP: R - 2) */
    uint32_t ring;          /* R */
    unsigned n_rules;       /* rules[0 .. n_rules), oldest (in force at low) first */
    sr_barrier_range rules[SR_BARRIER_MAX_RULES];
    sr_barrier_counters cnt; /* since the current incarnation began */
} sr_pipe_sync_state;

/* ---- API ---------------------------------------------------------------- */

typedef struct sr_pipe sr_pipe;

/* Create an empty pipeline (no jobs). Returns 0 or -ENOMEM; *out is set on
 * success only. */
int sr_pipe_create(sr_pipe **out);

/* Leases. A worker's binding lapses after lease_ms without a packet from
 * it (at its bound address), unless its job waits for it in a call (an
 * open allreduce round without its contribution, or a barrier whose low
 * clock waits for its CLOCK) while another worker of the job is live
 * (not lapsed, not left): then the callers' deadlines rule, and their
 * LEAVE ends the wait. A lapsed worker keeps its binding and is served as
 * before, but no longer keeps a JOIN with a new nonce from starting a new
 * incarnation: a run that died without LEAVE (SIGKILL, lost LEAVEs) frees
 * its job by itself. Time is an input, in milliseconds of any monotonic
 * clock, given by sr_pipe_tick before the messages it dates; it starts at
 * 0, and a pipeline that is never ticked never lets a lease lapse.
 * sr_pipe_create sets SR_PIPE_LEASE_DEFAULT_MS. */
#define SR_PIPE_LEASE_DEFAULT_MS 30000u
void sr_pipe_set_lease(sr_pipe *p, uint64_t lease_ms); /* 0: never lapse */
void sr_pipe_tick(sr_pipe *p, uint64_t now_ms);

/* Address proof. Off by default (as in the P4 program, whose worker_table
 * fixes the addresses). On, a new binding's JOIN_ACK carries a cookie in
 * its offset field, SipHash-2-4 under key (128 bits, the caller's secret,
 * e.g. from getrandom) of the binding (job, worker, nonce, context token,
 * address); the binding is proven when its JOIN comes again echoing the
 * cookie (sr_join_req), and JOIN_ACK's offset is 0 from then on. Until
 * then its PULL and CLOCK, whose answers are larger than the request, are
 * refused with ERROR UNPROVEN (header only): a JOIN from a spoofed source
 * binds the victim's address but draws no large answer to it. key is only
 * read during the call; NULL turns the proof off. */
void sr_pipe_set_proof(sr_pipe *p, const uint64_t key[2]);

/* Lazy payloads. Off by default: every action's payload is in its
 * payload[]. On, an AR_RESULT's sums are left in the slot (action.words)
 * and converted to the wire's byte order only when the I/O writes them
 * with sr_pipe_payload_write, straight into its frame: one pass over the
 * payload instead of a conversion and then a copy. Same bytes either way. */
void sr_pipe_set_lazy_payload(sr_pipe *p, int on);

/* Free the pipeline and all its jobs. Accepts NULL and *p == NULL; sets *p
 * to NULL. */
void sr_pipe_destroy(sr_pipe **p);

/* Fill jp with the defaults above; the caller then sets n_workers. */
void sr_pipe_job_params_init(sr_pipe_job_params *jp);

/* Check jp against the limits above and the store's push table
 * (ceil(store_words / elems_per_pkt) * n_workers <= SR_PIPE_PUSH_TABLE_MAX).
 * Returns 0 or -EINVAL, and then points *why (if not NULL) at a static,
 * human-readable sentence naming the field and its bounds. */
int sr_pipe_job_params_check(const sr_pipe_job_params *jp, const char **why);

/* Add a job with the parameters jp (only read during the call; checked as
 * sr_pipe_job_params_check does). Its nonce starts at 0 and no worker is
 * bound. Allocates the job's slot pool (2 * pool_slots * elems_per_pkt
 * accumulators; a shared job: none, its cells' round state only), its
 * store (store_words), its push table and its barrier ring. Returns 0,
 * -EINVAL (jp NULL or a limit), -EEXIST (job id taken), -ENOSPC (a leaf
 * beyond SR_PIPE_MAX_LEAVES, services.h, or a shared job beyond
 * SR_POOL_MAX_JOBS), -ENXIO (a shared job on a switch without a pool, or
 * whose elems_per_pkt is not the pool's) or -ENOMEM. */
int sr_pipe_job_add(sr_pipe *p, uint16_t job_id, const sr_pipe_job_params *jp);

/* Remove a job and free its state; its counters are gone too. Later
 * messages for it get SR_ST_UNKNOWN_JOB. Returns 0 or -ENOENT. */
int sr_pipe_job_remove(sr_pipe *p, uint16_t job_id);

/* Unbind every worker and clear the job's state, as a new incarnation
 * would: the operator's way to restart a job whose workers died without
 * LEAVE. Returns 0, -ENOENT or -ENOMEM (then nothing changed). */
int sr_pipe_job_reset(sr_pipe *p, uint16_t job_id);

/* Write up to cap job ids, ascending, to ids (may be NULL when cap is 0).
 * Returns the number of jobs, which may exceed cap. */
unsigned sr_pipe_job_list(const sr_pipe *p, uint16_t *ids, unsigned cap);

/* Setup and nonce of a job. Returns 0 or -ENOENT. */
int sr_pipe_job_info_get(const sr_pipe *p, uint16_t job_id, sr_pipe_job_info *info);

/* What a job's current incarnation holds besides its bindings: both 0
 * once every call of its run completed (and after a new incarnation,
 * which clears them), so a run that ended cleanly after others were
 * killed shows that nothing of theirs was left behind. */
typedef struct sr_pipe_job_held {
    uint32_t slots_open;   /* allreduce slots with a round in progress (a cell with
                              some workers' contributions, or a leaf's waiting for
                              its parent) */
    uint32_t ring_entries; /* barrier ring entries with a CLOCK recorded (clocks
                              past low that not every worker reported) */
} sr_pipe_job_held;

/* Fill *h for job_id. O(pool_slots + ring): for the control socket, not
 * the data path. Returns 0 or -ENOENT. */
int sr_pipe_job_held_get(const sr_pipe *p, uint16_t job_id, sr_pipe_job_held *h);

/* Change a job's policy while it runs (sr_barrier_set_policy): (mode, s)
 * is in force from E = max(want_from, high + 1) (serial) on, and E is
 * written to *effective (may be NULL). Lasts until the job's next
 * incarnation, which starts again from the job's initial policy.
 * Returns 0, -ENOENT (no such job) or what sr_barrier_set_policy returns:
 * -EINVAL (unknown mode), -ERANGE (SSP with s > R - 2, or want_from more
 * than SR_BARRIER_MAX_AHEAD past low), -ENOSPC (too many pending rules). */
int sr_pipe_set_policy(sr_pipe *p, uint16_t job_id, enum sr_sync_mode mode, uint32_t s,
                       uint32_t want_from, uint32_t *effective);

/* ---- The shared pool (pool.c) ---------------------------------------- */

/* Who gets a block when a shared job's round finds none in its slot:
 * STATIC   a job's first round takes one block per slot, all at once if
 *          that many are free, else none for its incarnation (a fixed
 *          reservation, as jobs that are not shared have);
 * FIRST    any free block, first come; returned when the job is idle;
 * FAIR     as FIRST, and a job below its share (blocks / active jobs)
 *          takes one back from the job furthest above its share;
 * PRIORITY as FIRST, and a job takes one back from the lowest-priority
 *          job below its own that holds any.
 * Taking back is at a round boundary for PRIORITY: the holder's next
 * round in that slot goes to its fallback, and the block moves once that
 * round has completed (every worker then has the previous round's
 * result, which the block kept as the shadow copy). For FAIR it is at
 * the holder's next call, whose window leaves the slot out: the block
 * moves when a round of that call completes (every worker then has every
 * result of its earlier calls). */
enum sr_pool_policy { SR_POOL_STATIC, SR_POOL_FIRST, SR_POOL_FAIR, SR_POOL_PRIORITY };
#define SR_POOL_MAX_BLOCKS (1u << 20)
#define SR_POOL_MAX_JOBS 256u          /* shared jobs per switch */
#define SR_POOL_IDLE_DEFAULT_MS 500u   /* no allreduce packet for this long: idle */

/* "static", "first", "fair", "priority"; NULL for another value. */
const char *sr_pool_policy_name(enum sr_pool_policy policy);
/* The policy named s (the names above, any case). Returns 0 or -EINVAL. */
int sr_pool_policy_parse(const char *s, enum sr_pool_policy *policy);

/* Give the switch a pool of blocks, each a slot's two cells of elems
 * accumulators, for its shared jobs. Once, before the first shared job is
 * added. Returns 0, -EINVAL (blocks not in 1..SR_POOL_MAX_BLOCKS, elems
 * not in 1..SR_WIRE_MAX_ELEMS, more than 1 GiB, or an unknown policy),
 * -EEXIST (the switch has a pool) or -ENOMEM. */
int sr_pipe_set_pool(sr_pipe *p, uint32_t blocks, uint32_t elems, enum sr_pool_policy policy);

/* Change the policy while jobs run: it rules the next block anyone asks
 * for; what is held stays held. Returns 0, -ENOENT (no pool) or -EINVAL. */
int sr_pipe_pool_set_policy(sr_pipe *p, enum sr_pool_policy policy);

/* A shared job without an allreduce packet for ms is idle and returns
 * its blocks (not under STATIC). ms must exceed the workers' longest wait
 * between resends (a worker waiting for a lost result keeps probing).
 * Returns 0 or -ENOENT (no pool). */
int sr_pipe_pool_set_idle(sr_pipe *p, uint64_t ms);

/* The control plane takes slot `slot`'s block back from shared job `job`
 * for the pool: at once when no worker asks about the slot (quiet or
 * settled, as the policies' take-back), else at the boundary the policy
 * uses (FAIR: the job's next call; the others: the slot's next round,
 * which is summed at the fallback, the block returning when it
 * completes). The block goes to the free list; who gets it next is the
 * policy's. Returns 1 (taken now), 0 (at the boundary), -ENOENT (no
 * pool), -ESRCH (no such shared job), -EINVAL (slot past the job's),
 * -ENODATA (the slot holds no block) or -EALREADY (being taken back). */
int sr_pipe_pool_take(sr_pipe *p, uint16_t job, uint32_t slot);

typedef struct sr_pipe_pool_state {
    uint32_t blocks, elems;
    enum sr_pool_policy policy;
    uint64_t idle_ms;
    uint32_t free;     /* blocks held by no job */
    uint32_t revoking; /* blocks being taken back (their holder's next round is away) */
    uint32_t peak;     /* most blocks held at once */
    unsigned n_jobs;   /* shared jobs */
    uint64_t grants, revokes, returns; /* blocks leased, taken back, returned idle */
} sr_pipe_pool_state;

/* Copy the pool's state. Returns 0, -EINVAL (st NULL) or -ENOENT (no pool). */
int sr_pipe_pool_get(const sr_pipe *p, sr_pipe_pool_state *st);

/* Copy a job's barrier state to *st (owned by the caller). Returns 0,
 * -EINVAL (st NULL) or -ENOENT (no such job). */
int sr_pipe_sync_get(const sr_pipe *p, uint16_t job_id, sr_pipe_sync_state *st);

/* Copy a job's counters. Returns 0 or -ENOENT. */
int sr_pipe_job_counters_get(const sr_pipe *p, uint16_t job_id, sr_pipe_job_counters *c);

/* Copy the switch-wide counters. */
void sr_pipe_counters_get(const sr_pipe *p, sr_pipe_counters *c);

/* Process one message of len bytes received from src. Fills *out (out->n
 * actions); msg and src are only read during the call. Each replica goes
 * to its dests[k].peer: src for an answer, the workers for a multicast,
 * and for a leaf of a tree its parent (params.up_peer) or, passing down a
 * parent's answer, the worker it names. Every outcome, drops included, is
 * counted. */
void sr_pipe_process(sr_pipe *p, const sr_peer *src, const uint8_t *msg, size_t len,
                     sr_pipe_out *out);

/* Pack the header of replica k (< a->n_dests) of an action into
 * out[SR_WIRE_HDR_LEN]: the template with worker = a->dests[k].worker (and
 * seq, exp = mode and slot = s from a->dests[k] when a->dest_seq is set).
 * The payload (a->payload, a->payload_len bytes) follows it unchanged. */
void sr_pipe_replica_hdr(const sr_pipe_action *a, unsigned k, uint8_t *out);

/* Write the payload of a (a->payload_len bytes) to dst, from payload[]
 * or, for a lazy one, from a->words. dst must not overlap a. */
void sr_pipe_payload_write(const sr_pipe_action *a, uint8_t *dst);

/* Make a's payload plain: fill payload[] from a->words (if set) and clear
 * words, for code that reads payload[] itself. */
void sr_pipe_payload_flatten(sr_pipe_action *a);

/* Write "key=value" pairs of c, space-separated, in SR_PIPE_JOB_COUNTERS
 * order, to buf (NUL-terminated, truncated to cap). Returns what snprintf
 * returns. */
int sr_pipe_job_counters_format(char *buf, size_t cap, const sr_pipe_job_counters *c);

#endif /* SERENE_SWSWITCH_PIPELINE_H */
