/* SPDX-License-Identifier: Apache-2.0 */
/*
 * services.h - the pipeline's internal interface: the state every control
 * reads and writes (the pipeline and its jobs, laid out as the P4 program's
 * registers) and the services every control uses (sr_svc_*: the binding
 * check, building actions, counting what is sent, ERROR replies).
 *
 * Private to the pipeline's files: the controls (membership.c,
 * allreduce.c, store.c, barrier.c, see controls.h), the job table
 * (job_table.c) and the dispatch (ingress.c). The daemon and the tests go
 * through pipeline.h. Dependencies run one way: the dispatch and the job
 * table use the controls, the controls use these services, and the
 * services use nothing of theirs.
 */
#ifndef SERENE_SWSWITCH_SERVICES_H
#define SERENE_SWSWITCH_SERVICES_H

#include <stdint.h>

#include "barrier.h"
#include "pipeline.h"

#define SR_PIPE_NJOBS 65536u /* the job id is 16 bits: a direct-indexed table */
#define SR_PIPE_MAX_LEAVES 64u /* leaf jobs (with an upstream) per switch */

/* One job: its setup, then its state grouped by the control that owns it,
 * then its counters. Every array is allocated when the job is added
 * (job_table.c) and has a fixed size from then on. */
typedef struct sr_pipe_job {
    uint16_t id;
    uint32_t n;     /* workers */
    uint32_t elems; /* accumulators per cell, and words per store row */
    uint32_t slots;
    sr_pipe_job_params params; /* as added: the barrier's initial policy on reset */

    /* Membership (membership.c): the incarnation and the worker bindings. */
    uint32_t nonce; /* incarnation */
    uint64_t bound; /* bit w: worker w is bound */
    uint64_t left;  /* bit w: bound worker w has left (LEAVE); still holds its id */
    uint64_t proven; /* bit w: w echoed its JOIN_ACK's cookie (sr_pipe_set_proof) */
    sr_peer peer[SR_WIRE_MAX_WORKERS];
    uint32_t token[SR_WIRE_MAX_WORKERS];
    uint64_t seen_ms[SR_WIRE_MAX_WORKERS]; /* last packet from the binding (sr_pipe_tick's
                                               clock): its lease */

    /* Allreduce (allreduce.c): the slot pool, arrays of 2 * slots cells
     * (cell 2 * slot + version), values of 2 * slots * elems. */
    uint64_t *seen;    /* workers that contributed to the cell's round */
    uint8_t *cnt;      /* contributors so far, mod n (0: idle or complete) */
    uint32_t *m_seq;   /* round metadata, set by the first contributor */
    uint32_t *m_off;
    uint32_t *m_total; /* the call's total count (aux of AR_DATA) */
    uint16_t *m_count; /* SR_WIRE_COUNT_POISON: the round saw a mismatch */
    int8_t *m_exp;
    int8_t *nexp;      /* max of the contributors' next_exp */
    uint32_t *values;  /* sums mod 2^32 (int32 on the wire) */

    /* Store (store.c): store_words accumulators in rows of elems words,
     * and per (row, worker), at index row * n + w, the last push number
     * applied (0: none yet). NULL when store_words is 0. */
    uint32_t store_words;
    uint32_t rows;
    uint32_t *store;
    uint32_t *push_last;

    /* Step (step.c, which explains them): per store row, the workers that
     * stepped it, those waiting for it, its low clock; per (row, worker)
     * the last clock stepped; per (row, clock mod step_ring) the workers
     * that stepped that clock. NULL when store_words is 0. */
    uint32_t step_ring; /* the barrier's ring R */
    uint64_t *step_on;
    uint64_t *step_wait;
    uint32_t *step_low;
    uint32_t *step_last;
    uint8_t *step_cnt;
    /* Per worker: the clock whose pieces it is stepping, and how many of
     * them were applied (a STEP's aux says how many there are). */
    uint32_t step_clk[SR_WIRE_MAX_WORKERS];
    uint32_t step_n[SR_WIRE_MAX_WORKERS];

    /* Incarnation tags (epoch.c): the job's epoch, and the epoch each slot
     * and each store row was last cleared in. */
    uint32_t epoch;
    uint32_t *slot_epoch; /* slots entries */
    uint32_t *row_epoch;  /* rows entries; NULL when store_words is 0 */

    /* Barrier (barrier.c): the clock ring, low, high and the policy rules. */
    sr_barrier bar;

    /* Tree (upstream.c; a leaf's cells in allreduce.c). n_local: the
     * contributions a round waits for (params.local_n, or n). Per cell,
     * up_wait 1: the local round is complete and its partial sum went up,
     * the parent's result is awaited; up_ms: when it last went up. up_bound:
     * the parent acknowledged the leaf's JOIN in incarnation up_nonce;
     * up_err: it refused it in incarnation up_err_nonce, with that status
     * (or the JOIN_ACK's parameters did not fit: BAD_COUNT, BAD_SLOT). */
    uint32_t n_local;
    uint8_t *up_wait;
    uint64_t *up_ms;
    uint8_t up_bound;
    uint32_t up_nonce;
    uint8_t up_err;
    uint32_t up_err_nonce;

    /* Shared job (pool.c; its cells in allreduce.c, its fallback in
     * fallback.c). blk[slot]: the pool block whose two cells the slot's
     * rounds use, or SR_POOL_NONE; revoke[slot] 1: that block is being
     * taken back (2 + v once the round of version v
     * that hands it over has gone to the fallback). Per cell, relay: SR_CELL_HERE (the round is, or was,
     * summed here), SR_CELL_AWAY (at the fallback: its requests are
     * relayed there) or SR_CELL_GONE (complete here, its block since
     * returned). claims: blocks taken back on this job's behalf not yet
     * handed over; spare: those handed over, not yet in a slot (a list
     * through the pool's next[]). fb_bound bit w: the fallback
     * acknowledged w's JOIN in this incarnation. */
    uint32_t *blk;
    uint16_t *stamp;   /* per cell: the window its result announced (SR_STAMP_UNSET: none yet) */
    uint8_t win;       /* the latest window announced (0: every slot) */
    uint8_t join_win;  /* the window this incarnation's JOIN_ACKs announce */
    uint32_t sweep_at; /* the idle sweep's next slot */
    uint64_t *slot_ms; /* the slot's last packet (contribution or probe) */
    uint8_t *revoke;
    uint8_t *relay;
    uint32_t held;
    uint32_t n_revoke; /* slots with revoke set */
    uint32_t claims;
    uint32_t spare, n_spare;
    uint8_t reserved; /* STATIC: 0 not decided yet, 1 holds every slot, 2 none */
    uint64_t active_ms; /* last allreduce packet (sr_pipe_tick's clock) */
    uint64_t fb_bound;
    uint8_t got_block;  /* a block came in this incarnation (first_wait is set) */
    uint64_t inc_away;  /* c.fb_rounds when the incarnation began */
    uint64_t rounds;    /* rounds it started in this incarnation (sr_pool_round_here) */
    uint64_t wait_from; /* the other jobs' rounds before its incarnation's first */
    uint32_t done_seq;  /* the latest call with a complete round (done_call set) */
    uint8_t done_call;

    sr_pipe_job_counters c;
} sr_pipe_job;

#define SR_POOL_NONE UINT32_MAX
#define SR_STAMP_UNSET 0xffffu
enum { SR_CELL_HERE, SR_CELL_AWAY, SR_CELL_GONE };

/* The switch's pool of blocks for shared jobs (pool.c). A block is two
 * cells of elems accumulators, held by a job's slot (its blk[]), free, or
 * in a job's spare list; claim is the job a taken-back block goes to
 * (SR_POOL_NOJOB: the free list), next links the free list and the spare
 * lists. */
#define SR_POOL_NOJOB 0xffffffffu
typedef struct sr_pool {
    uint32_t blocks, elems;
    enum sr_pool_policy policy;
    uint64_t idle_ms, swept_ms;
    uint32_t *values; /* blocks * 2 * elems */
    uint32_t *claim, *next;
    uint32_t free_head, n_free, revoking, peak;
    uint16_t jobs[SR_POOL_MAX_JOBS]; /* the shared jobs' ids */
    unsigned n_jobs;
    uint64_t grants, revokes, returns;
    uint64_t rounds; /* rounds the shared jobs started (sr_pool_round_here) */
} sr_pool;

struct sr_pipe {
    sr_pipe_job *jobs[SR_PIPE_NJOBS];
    unsigned n_jobs;
    uint64_t now_ms;   /* sr_pipe_tick */
    uint64_t lease_ms; /* sr_pipe_set_lease; 0: bindings never lapse */
    int proof;         /* sr_pipe_set_proof: bindings must prove their address */
    uint64_t key[2];   /* its SipHash key for the cookies */
    int lazy_payload;  /* sr_pipe_set_lazy_payload: AR_RESULT sums left in the slot */
    uint16_t leaves[SR_PIPE_MAX_LEAVES]; /* ids of the jobs with an upstream (upstream.c) */
    unsigned n_leaves;
    sr_pool pool; /* blocks 0: no pool */
    struct tna_model *tna; /* the Tofino program's model (tna_run.c), at its first use */
    sr_pipe_counters c;
};

/* ---- services (services.c) ------------------------------------------------ */

/* Same address and port? */
int sr_svc_peer_eq(const sr_peer *a, const sr_peer *b);

/* Is w a bound worker of j (not left) sending from its bound address? The
 * isolation check of every request but JOIN and LEAVE. */
int sr_svc_worker_ok(const sr_pipe_job *j, uint16_t w, const sr_peer *src);

/* A new action in out with an empty header template (version set); NULL if
 * out is full (cannot happen: no op emits more than SR_PIPE_MAX_ACTIONS). */
sr_pipe_action *sr_svc_action_new(sr_pipe_out *out);

/* Make a a unicast to src, whose header gets worker. */
void sr_svc_unicast(sr_pipe_action *a, const sr_peer *src, uint16_t worker);

/* Make a a multicast to every bound worker of j (not left), each replica
 * with its own worker id. */
void sr_svc_multicast(sr_pipe_action *a, const sr_pipe_job *j);

/* A copy of message h and its len payload bytes, unicast to `to` as
 * worker h->worker and counted (a relay: a tree's, a fallback's); the
 * caller may still change its header. NULL if out has no room. */
sr_pipe_action *sr_svc_forward(sr_pipe *p, sr_pipe_job *j, const sr_peer *to, const sr_hdr *h,
                               const uint8_t *payload, size_t len, sr_pipe_out *out);

/* Count the copies a will send, switch-wide and in j (may be NULL). */
void sr_svc_count_tx(sr_pipe *p, sr_pipe_job *j, const sr_pipe_action *a);

/* A header-only answer op to request h from src: its header echoed with
 * count 0, no flags and status 0, to h->worker alone, so never larger
 * than h (AR_HELD, AR_NAK, STEP_HELD, STEP_NAK). Returns the action (the
 * caller may set more fields) or NULL. */
sr_pipe_action *sr_svc_reply_hdr(sr_pipe *p, sr_pipe_job *j, const sr_peer *src,
                                 const sr_hdr *h, uint8_t op, sr_pipe_out *out);

/* ERROR for a refused request: the request's header echoed, with op ERROR,
 * status = the reason, aux = the refused op and no payload, to src. j may
 * be NULL (no such job). */
void sr_svc_reply_error(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *req,
                        unsigned status, sr_pipe_out *out);

/* The payload is big-endian int32 words and the state holds host words:
 * v[i] = word i of src (SR_BE32_SET) or v[i] += it (SR_BE32_ADD), i < n;
 * and dst (4 * n bytes) = the big-endian words of v[0 .. n). AVX2 where
 * the CPU has it; exact either way. */
enum { SR_BE32_SET, SR_BE32_ADD };
void sr_svc_be32_in(uint32_t *v, const uint8_t *src, unsigned n, int op);
void sr_svc_be32_out(uint8_t *dst, const uint32_t *v, unsigned n);

#endif /* SERENE_SWSWITCH_SERVICES_H */
