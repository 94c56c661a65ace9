/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctx.h - the context's internals, shared by ctx.c (the API side) and
 * engine.c (the data-path thread).
 *
 * Threads: the API thread fills an op, publishes its index on a
 * single-producer/single-consumer ring and wakes the engine through an
 * eventfd; the engine thread runs ops one at a time, in order, and marks
 * each done under ctx->mu (waiters sleep on ctx->cv). Everything under
 * "engine only" is touched by the engine thread alone after creation.
 */
#ifndef SERENE_CORE_CTX_H
#define SERENE_CORE_CTX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/log.h"
#include "common/now.h"
#include "core/handle.h"
#include "proto/wire.h"
#include "quant/quant.h"
#include "reliab/reliab.h"
#include "serene/serene.h"
#include "trace/trace.h"
#include "transport/transport.h"

enum sr_op_state { SR_OPS_FREE = 0, SR_OPS_QUEUED = 1, SR_OPS_DONE = 2 };
enum sr_op_kind { SR_OPK_JOIN = 1, SR_OPK_ALLREDUCE = 2, SR_OPK_PUSH = 3, SR_OPK_PULL = 4, SR_OPK_CLOCK = 5 };

/* One per SR_OP_STRIDE bytes of the region: handle.h says why. */
struct serene_op {
    _Alignas(SR_OP_STRIDE) uint32_t magic; /* SR_OP_MAGIC; 0 once the context is gone */
    _Atomic uint32_t gen; /* allocations of this descriptor; its low bits tag the handle */
    serene_ctx *ctx;
    _Atomic int state;
    int kind;
    int result;
    const float *src;
    float *dst;
    size_t count;
    serene_reduce_op redop;
    uint64_t deadline_ns;
    uint64_t start_ns;
    /* push / pull */
    size_t offset;
    const int32_t *src_i32;
    int32_t *dst_i32;
    unsigned flags;
};
_Static_assert(sizeof(struct serene_op) == SR_OP_STRIDE, "one descriptor per stride (handle.h)");

/* Worker-side state of one switch slot (one packet in flight at most). */
typedef struct sr_slot {
    uint8_t next_ver; /* shadow bit of the slot's next new round; persists across calls */
    uint8_t ver;      /* shadow bit of the round in flight */
    uint8_t busy;     /* a round is in flight */
    uint16_t count;   /* elements of the round in flight (0: exponent-hint round) */
    uint32_t offset;  /* element offset of the round in flight */
    uint32_t next_chunk; /* chunk this slot sends after the answer */
    uint32_t req_seq;    /* push / pull number of the request in flight */
    uint32_t len;     /* bytes of msg */
    uint8_t *msg;     /* the packet, kept for retransmission */
} sr_slot;

/* Counters: written by the engine thread only, read by anyone. */
typedef struct sr_ctx_stats {
    _Atomic uint64_t pkts_sent, pkts_recv, bytes_sent, bytes_recv, retransmissions, timeouts,
        saturations, duplicates, rejected, ops_completed, clock_wait_ns, holds, releases;
} sr_ctx_stats;

/* The worker's view of the barrier: written by the engine, read by anyone. */
typedef struct sr_sync_view {
    _Atomic uint32_t clock, low, high, mode, staleness;
} sr_sync_view;

#define SR_STAT_ADD(ctx, f, n)                                                                     \
    atomic_store_explicit(&(ctx)->stats.f,                                                         \
                          atomic_load_explicit(&(ctx)->stats.f, memory_order_relaxed) + (n),       \
                          memory_order_relaxed)

struct serene_ctx {
    uint32_t magic;     /* SR_CTX_MAGIC while alive; 0 once destroyed (handle.h) */
    size_t region_size; /* bytes of the mapping that holds this and the ops */
    /* Misuse guards: a call that starts operations holds `entered` (one
     * thread at a time); op waiters count themselves; destroy sets dying. */
    _Atomic int entered, waiters, dying;
    serene_config cfg; /* its string pointers point at the copies below */
    char *dpdk_eal_args; /* copies of the caller's strings (NULL if none) */
    char *dpdk_port;
    sr_log log;
    sr_quant_kernels qk;
    const sr_transport *tp;
    void *tps;
    sr_trace *trace; /* SERENE_PCAP; NULL when off. Engine thread after creation */

    pthread_t thread;
    int thread_started;
    int wake_fd;
    _Atomic int stop;
    _Atomic int broken; /* an op failed in a way that desynchronizes the slots */

    pthread_mutex_t mu; /* guards op completion for waiters */
    pthread_cond_t cv;
    pthread_mutex_t start_mu; /* serializes producers on the ring */
    serene_op *ops; /* in the region, after this struct */
    unsigned max_ops;
    unsigned next_op; /* where op_alloc looks first: descriptors are used in turn */
    unsigned *ring; /* max_ops entries */
    _Atomic unsigned ring_head, ring_tail;

    uint32_t token;     /* this context's identity in JOIN */
    _Atomic int joined; /* the switch bound this worker: LEAVE at destroy */
    sr_ctx_stats stats;
    sr_sync_view sync;
    _Atomic uint32_t store_words; /* from JOIN_ACK */

    /* --- engine only ------------------------------------------------------ */
    sr_join_params params; /* from JOIN_ACK */
    int bits;              /* B of the fixed-point scheme for this job */
    uint32_t window;
    sr_rel rel;
    sr_slot *slots;
    uint8_t *slot_mem;
    uint8_t ctl_msg[SR_WIRE_HDR_LEN]; /* JOIN, CLOCK */
    uint32_t ctl_len;
    int8_t *exps; /* per-chunk local exponents of the current allreduce */
    size_t exps_cap;
    uint32_t call_seq;
    serene_op *cur;
    uint32_t n_chunks, chunks_done, w_eff;
    int nonfinite; /* the current op met a NaN/Inf chunk (own or reduced) */
    /* SSP (lib/ssp/ssp.c) */
    uint32_t push_seq;  /* last push number used; the switch dedups on it */
    uint32_t pull_seq;  /* last pull request number */
    uint32_t req_base, n_req, req_done; /* requests of the current push/pull */
    uint32_t *pulled;   /* per store word: value at this worker's last pull */
    int held;           /* the current CLOCK was answered HOLD */
    uint32_t held_s;
    struct iovec txq[SR_TP_BURST];
    unsigned ntx;
    uint8_t *rxbuf[SR_TP_BURST];
    uint32_t rxlen[SR_TP_BURST];
    uint64_t truncated;
};

/* The engine thread's entry point (engine.c). */
void *sr_engine_main(void *arg);
/* Mark op finished with result rc and wake its waiter (engine.c). */
void sr_op_finish(serene_ctx *ctx, serene_op *op, int rc);
/* Queue a message for the next burst; flushed by the engine loop. */
void sr_tx_queue(serene_ctx *ctx, uint8_t *msg, uint32_t len);
/* Mark slot s in flight with its packed message of `words` payload words,
 * queue it and start its timer. */
void sr_slot_send(serene_ctx *ctx, uint32_t s, uint16_t words, uint64_t now);
/* A header with version, op, job and worker filled in. */
void sr_hdr_base(const serene_ctx *ctx, sr_hdr *h, uint8_t op);
/* The switch's status code as a serene error code. */
int sr_map_status(unsigned st);

/* SSP operations (lib/ssp/ssp.c), called by the engine thread. */
void sr_ssp_begin(serene_ctx *ctx, uint64_t now);
void sr_ssp_on_message(serene_ctx *ctx, const sr_hdr *h, const uint8_t *payload, uint64_t now);
/* Set up the store view after JOIN; 0 or SERENE_ERR_NOMEM. */
int sr_ssp_setup(serene_ctx *ctx);

#endif /* SERENE_CORE_CTX_H */
