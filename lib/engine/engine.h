/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.h - the data-path engine of a context, and the services it offers
 * to the operation modules (join in lib/core, lib/allreduce, lib/ssp).
 *
 * The engine keeps the op queue, sends and receives, runs the one
 * retransmission engine's timers and the loop of the context's data-path
 * thread. It knows no operation: each op carries its class, a table of
 * function pointers a module fills (sr_op_class below, plugged in the way
 * nng's protocols are), and the engine calls that table. The API layer
 * (lib/core) plugs the modules into the engine when it creates a context.
 *
 * Threads: the API thread fills an op, publishes its index on a
 * single-producer/single-consumer ring and wakes the engine through an
 * eventfd; the engine thread runs ops one at a time, in order, and marks
 * each done under e->mu (waiters sleep on e->cv). Everything under "engine
 * only" is touched by the engine thread alone after creation.
 */
#ifndef SERENE_ENGINE_ENGINE_H
#define SERENE_ENGINE_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/log.h"
#include "engine/handle.h"
#include "proto/wire.h"
#include "quant/quant.h"
#include "quant/quant16.h"
#include "reliab/reliab.h"
#include "serene/serene.h"
#include "trace/trace.h"
#include "transport/transport.h"

typedef struct sr_engine sr_engine;

enum sr_op_state { SR_OPS_FREE = 0, SR_OPS_QUEUED = 1, SR_OPS_DONE = 2 };

/*
 * An operation class: what a module does for one kind of op. Every member
 * but begin may be NULL. self is the module's state, as plugged
 * (sr_engine_plug); op the op in question, always the engine's current op
 * when a member gets one. The engine thread calls every member but init and
 * fini, and never two at once.
 */
typedef struct sr_op_class {
    /* For logs: "allreduce", "store", ... */
    const char *name;
    /* The wire ops that answer this class's requests (0-terminated). The
     * engine hands each such message to this class: to on_message when an
     * op of this class is current, else to on_stray. */
    uint8_t answers[4];
    /* The API thread, once, when the context is created and before the
     * engine thread starts. Returns 0 or a negative error code. */
    int (*init)(void *self, sr_engine *e);
    /* The API thread, once, when the context is destroyed: the engine
     * thread has stopped and the transport is still open. Frees what the
     * module allocated. */
    void (*fini)(void *self, sr_engine *e);
    /* The job was joined and the engine sized for it (e->params, e->window
     * are set): size the module's state. Returns 0 or SERENE_ERR_NOMEM,
     * which fails the join. */
    int (*on_join)(void *self, sr_engine *e);
    /* Start op, now current and before its deadline: send its first
     * packets (sr_slot_send, sr_ctl_send) or finish it (sr_op_finish). */
    void (*begin)(void *self, sr_engine *e, serene_op *op, uint64_t now);
    /* An answer (h->op in answers) while op, of this class, is current.
     * payload points at h->count words, valid during the call only. The
     * member counts what it drops (duplicates, rejected). */
    void (*on_message)(void *self, sr_engine *e, serene_op *op, const sr_hdr *h,
                       const uint8_t *payload, uint64_t now);
    /* An answer (h->op in answers) while no op of this class is current:
     * e.g. a RELEASE that moves the barrier view between clock calls.
     * NULL: the engine counts it as a duplicate. */
    void (*on_stray)(void *self, sr_engine *e, const sr_hdr *h, const uint8_t *payload,
                     uint64_t now);
    /* An SR_OP_ERROR while op is current. Returns 0 when it does not refer
     * to op's request in flight (the engine counts a duplicate); else it
     * finishes op with sr_op_refused's code and returns 1. */
    int (*on_error)(void *self, sr_engine *e, serene_op *op, const sr_hdr *h);
    /* The timer of op's packet in flight i (a slot of the window) expired:
     * recover it, with sr_slot_resend or with a probe the module queues
     * (sr_tx_queue, counted in stats.probes), where sr_rel_verdict says
     * so. The entry is already due again (its timeout doubled if its timer
     * expired; sr_rel_poll says when not). NULL: the engine resends the
     * packet where sr_rel_verdict says so. */
    void (*on_expire)(void *self, sr_engine *e, serene_op *op, uint32_t i, uint64_t now);
    /* op's deadline passed, or one of its packets hit the retry limit (st:
     * SR_REL_DEADLINE or SR_REL_RETRY_LIMIT): log why and finish op with
     * SERENE_ERR_TIMEOUT. NULL: the engine logs the class's name and
     * finishes it. */
    void (*on_timeout)(void *self, sr_engine *e, serene_op *op, int st);
    /* op's deadline passed while it waited in the queue: it never began.
     * Finish it with SERENE_ERR_TIMEOUT and keep what the class needs (an
     * allreduce the other workers make without this one leaves the
     * context a call behind them). NULL: the engine finishes it. */
    void (*on_expired)(void *self, sr_engine *e, serene_op *op);
} sr_op_class;

/* One per SR_OP_STRIDE bytes of the context's region: handle.h says why. */
struct serene_op {
    _Alignas(SR_OP_STRIDE) uint32_t magic; /* SR_OP_MAGIC; 0 once the context is gone */
    _Atomic uint32_t gen; /* allocations of this descriptor; its low bits tag the handle */
    sr_engine *eng;
    _Atomic int state;
    int result;
    const sr_op_class *cls; /* set by sr_op_alloc */
    void *self;             /* the class's module state */
    uint64_t deadline_ns;
    uint64_t start_ns; /* when the engine began it */
    /* The request, filled by the module's public call: */
    int kind; /* the module's own sub-kind (the store: push or pull) */
    const float *src;
    float *dst;
    size_t count;
    serene_reduce_op redop;
    size_t offset;
    const int32_t *src_i32;
    int32_t *dst_i32;
    unsigned flags;
    /* Allreduce of 16-bit floats (dtype SERENE_FLOAT16 / SERENE_BFLOAT16):
     * its buffers (src and dst are NULL then); wire16: 16-bit values on the
     * wire. */
    int dtype;
    int wire16;
    const uint16_t *src_h;
    uint16_t *dst_h;
    /* Allreduce: chunk exponents the calling thread reads while the engine
     * sends (allreduce.c); the first exps_ready of them are set. */
    int8_t *exps;
    _Atomic uint32_t exps_ready;
};
_Static_assert(sizeof(struct serene_op) == SR_OP_STRIDE, "one descriptor per stride (handle.h)");

/* The side lane: one header-only control request in flight beside the op
 * queue, with a timer of its own (rel: one entry, retry limit and deadline
 * none, as its owner's waits are bounded), resent on every expiry until
 * its owner stops it. It is for requests that must not wait behind the
 * ops started before them: the stream mode's CLOCK announcements
 * (lib/ssp/clock.c). Engine thread only, but for the owner, set once
 * before the engine thread starts (sr_side_own). */
typedef struct sr_side {
    sr_rel rel;
    uint8_t msg[SR_WIRE_HDR_LEN];
    int armed;
    /* poll runs on every pass of the engine loop (and when woken) and
     * sends what the owner has to send (sr_side_send); on_error is
     * offered every ERROR before the current op is: 1 if it took it. */
    void (*poll)(void *self, sr_engine *e, uint64_t now);
    int (*on_error)(void *self, sr_engine *e, const sr_hdr *h);
    void *self;
} sr_side;

/* The transmit side of one packet in flight: its timer is entry s of e->rel. */
typedef struct sr_slot {
    uint32_t len; /* bytes of msg */
    uint8_t *msg; /* the packet, kept for retransmission */
} sr_slot;

/* Counters: written by the engine thread only, read by anyone. */
typedef struct sr_engine_stats {
    _Atomic uint64_t pkts_sent, pkts_recv, bytes_sent, bytes_recv, retransmissions, timeouts,
        saturations, duplicates, rejected, ops_completed, clock_wait_ns, holds, releases, probes,
        held, window_cuts, results_switch, results_fallback;
} sr_engine_stats;

#define SR_STAT_ADD(e, f, n)                                                                       \
    atomic_store_explicit(&(e)->stats.f,                                                           \
                          atomic_load_explicit(&(e)->stats.f, memory_order_relaxed) + (n),         \
                          memory_order_relaxed)

#define SR_ENGINE_MAX_MODULES 8

/* A plugged module: its class and its state. */
typedef struct sr_module {
    const sr_op_class *cls;
    void *self;
} sr_module;

struct sr_engine {
    /* First, at the region's start: SR_CTX_MAGIC while the context lives,
     * 0 once it is destroyed (handle.h). */
    uint32_t magic;
    /* Misuse guards: a call that starts operations holds `entered` (one
     * thread at a time); op waiters count themselves; destroy sets dying. */
    _Atomic int entered, waiters, dying;
    serene_config cfg; /* the context's copy */
    sr_log log;
    sr_quant_kernels qk;
    sr_quant16_kernels qk16;
    const sr_transport *tp;
    void *tps;
    sr_trace *trace; /* SERENE_PCAP; NULL when off. Engine thread after creation */
    sr_module mods[SR_ENGINE_MAX_MODULES];
    unsigned n_mods;
    uint8_t route[256]; /* wire op -> 1 + index in mods of the class it answers; 0: none */

    pthread_t thread;
    int thread_started;
    int wake_fd;
    _Atomic int stop;

    pthread_mutex_t mu; /* guards op completion for waiters */
    pthread_cond_t cv;
    pthread_mutex_t start_mu; /* serializes producers on the ring */
    serene_op *ops;           /* max_ops descriptors, in the context's region */
    unsigned max_ops;
    unsigned next_op; /* where sr_op_alloc looks first: descriptors are used in turn */
    unsigned *ring;   /* max_ops entries */
    _Atomic unsigned ring_head, ring_tail;
    sr_engine_stats stats;

    /* --- engine only ------------------------------------------------------ */
    sr_join_params params; /* from JOIN_ACK */
    uint8_t whole_rows;    /* JOIN_ACK's SR_FLAG_WHOLE_ROWS: store requests are whole rows */
    uint8_t join_window;   /* JOIN_ACK's status: the slots calls use until a result says (0: all) */
    uint32_t window;       /* packets in flight at most; the API reads it after the join */
    sr_rel rel;
    sr_slot *slots; /* window entries */
    uint8_t *slot_mem;
    uint8_t ctl_msg[SR_WIRE_HDR_LEN + 16]; /* the request of sr_ctl_send */
    uint32_t ctl_len;                       /* its bytes */
    int ctl_armed;                    /* timer 0 resends ctl_msg, not slot 0 */
    serene_op *cur;
    struct iovec txq[SR_TP_BURST];
    unsigned ntx;
    uint8_t *rxbuf[SR_TP_BURST];
    uint32_t rxlen[SR_TP_BURST];
    uint64_t truncated;
    int trains;      /* SR_TRAINS_*: where the path test (trains.c) stands */
    unsigned trains_tests;   /* path tests sent */
    uint64_t trains_test_ns; /* when the last one went */
    uint8_t trains_msg[2][SR_WIRE_HDR_LEN]; /* its probes: the train's, the single's */
    sr_side side;
};

/* The transport's trains (UDP GSO) and the path test (trains.c). */
enum {
    SR_TRAINS_NONE = 0, /* the transport sends none, or no job joined yet */
    SR_TRAINS_UNTESTED, /* off; the first burst of two or more tests the path */
    SR_TRAINS_TESTING,  /* off until the path test answers */
    SR_TRAINS_ON,       /* the test's train was answered */
    SR_TRAINS_OFF,      /* the path drops them (said once, in a warning) */
};
/* Engine thread, once joined: trains off until tested (UNTESTED). */
void sr_trains_joined(sr_engine *e);
/* Engine thread: the path test sent now, before the burst that could go
 * as a train (and again at an op's start while no answer came, a few
 * times). */
void sr_trains_test(sr_engine *e, uint64_t now);
/* An answer to the path test (consumed: 1) or not (0). */
int sr_trains_answer(sr_engine *e, const sr_hdr *h);

/* ---- lifetime, called by the API layer (setup.c, engine.c) -------------- */

/* Set up e, whose magic, cfg and log the caller has filled, with the
 * max_ops descriptors at ops. Returns 0 or SERENE_ERR_NOMEM or -errno;
 * sr_engine_fini cleans up either way. */
int sr_engine_init(sr_engine *e, serene_op *ops, unsigned max_ops);
/* Plug a module in: route its answers to cls and call its init. Returns 0,
 * SERENE_ERR_INVAL (no room, or an answer another class claims) or what
 * init returns. */
int sr_engine_plug(sr_engine *e, const sr_op_class *cls, void *self);
/* Open the transport tp toward cfg.switch_addr, then the packet trace when
 * cfg.pcap_path asks for one. Returns 0 or the error of either. */
int sr_engine_open(sr_engine *e, const sr_transport *tp);
/* Start and stop the data-path thread. */
int sr_engine_start(sr_engine *e);
void sr_engine_stop(sr_engine *e);
/* Modules' fini, then close and free everything but the region. */
void sr_engine_fini(sr_engine *e);

/* ---- the API side of ops (queue.c) --------------------------------------- */

/* The engine of a live context, or NULL. The engine is the context's first
 * member (core/ctx.h), at the region's start; only magic is read, so this
 * is safe on a retired region: a stale handle is refused here. */
sr_engine *sr_engine_live(const serene_ctx *ctx);
/* Enter a call that starts operations: 0, or SERENE_ERR_CONCURRENT (logged)
 * while another thread is inside one. */
int sr_call_enter(sr_engine *e);
void sr_call_leave(sr_engine *e);
/* End a call that started *h (when rc is 0): hand the op out, or wait for
 * it (the blocking forms pass op_out NULL). Leaves sr_call_enter's guard. */
int sr_call_end(sr_engine *e, int rc, serene_op *h, serene_op **op_out);
/* A module's public call: enter, start(e, req, &h) validates and queues
 * the op (or fails), end: started (op_out) or waited for (op_out NULL). */
int sr_call(serene_ctx *ctx, int (*start)(sr_engine *e, const void *req, serene_op **h),
            const void *req, serene_op **op_out);
/* A free descriptor of class cls with module state self, its request
 * fields zero (inside sr_call_enter), or NULL when max_ops are in use. */
serene_op *sr_op_alloc(sr_engine *e, const sr_op_class *cls, void *self);
/* Wake the engine thread from its wait. */
void sr_engine_wake(sr_engine *e);
/* Queue op for the engine thread, with the configured deadline. */
void sr_op_submit(sr_engine *e, serene_op *op);
/* op finished without a message: nothing to send for it. */
void sr_op_done_now(serene_op *op);
/* The handle the caller gets for op. */
serene_op *sr_op_handle(serene_op *op);
/* The module state plugged with cls, or NULL. */
void *sr_engine_self(const sr_engine *e, const sr_op_class *cls);

/* ---- services to the modules, engine thread (engine.c) ------------------- */

/* Mark op finished with result rc and wake its waiter; if it is current,
 * stop its timers. */
void sr_op_finish(sr_engine *e, serene_op *op, int rc);
/* Log the switch's refusal h of the current op and return it as a serene
 * error code. */
int sr_op_refused(sr_engine *e, const sr_hdr *h);
/* Queue a message for the next burst; flushed by the engine loop. The
 * buffer must stay unchanged until then. */
void sr_tx_queue(sr_engine *e, uint8_t *msg, uint32_t len);
/* Send what is queued now (the engine loop does it after each pass). */
void sr_tx_flush(sr_engine *e);
/* Send msgs[0, n) now, counted and traced; what the transport does not
 * take counts as lost. */
void sr_tx_send(sr_engine *e, struct iovec *msgs, unsigned n);
/* Packet buffer of slot s (SR_WIRE_HDR_LEN + 4 * elems_per_pkt bytes). */
static inline uint8_t *sr_slot_msg(sr_engine *e, uint32_t s)
{
    return e->slots[s].msg;
}
/* Queue slot s's packed message of payload_len payload bytes and start its
 * timer: it is resent until sr_rel_ack / sr_rel_disarm on e->rel. */
void sr_slot_send(sr_engine *e, uint32_t s, uint32_t payload_len, uint64_t now);
/* Queue slot s's packet again at now, whole, marked RETRANSMIT, and count
 * it in stats.retransmissions; its timer is left as it is. */
void sr_slot_resend(sr_engine *e, uint32_t s, uint64_t now);
/* Probes (allreduce, step: "is my packet in slot s held?"), paced by
 * sr_rel_probe_due. Queue slot s's header as a header-only probe of op `op` (built in buf,
 * SR_WIRE_HDR_LEN bytes that stay valid until the flush), count it. */
void sr_probe_send(sr_engine *e, uint8_t *buf, uint32_t s, uint8_t op);
/* A probe's answer came (HELD or NAK): its delay, from *last_ns, is a
 * clean sample of the path's round trip, queues included; *last_ns = 0;
 * it pays for another probe (sr_rel_answer). */
void sr_probe_answered(sr_engine *e, uint64_t *last_ns, uint64_t now);
/* Pack h as the one control request in flight, queue it and start timer 0,
 * which resends it. Its payload (4 * h->count bytes, at most 16) is what
 * the caller wrote at e->ctl_msg + SR_WIRE_HDR_LEN. */
void sr_ctl_send(sr_engine *e, const sr_hdr *h, uint64_t now);
/* The side lane (sr_side). sr_side_own: the owner's hooks, before the
 * engine thread starts. sr_side_send: pack h (header only) as the lane's
 * request, queue it and start its timer; sr_side_stop: its answer came,
 * stop the timer (idempotent). */
void sr_side_own(sr_engine *e, void *self, void (*poll)(void *, sr_engine *, uint64_t),
                 int (*on_error)(void *, sr_engine *, const sr_hdr *));
void sr_side_send(sr_engine *e, const sr_hdr *h, uint64_t now);
void sr_side_stop(sr_engine *e, uint64_t now);
/* A header with version, op, job and worker filled in. */
void sr_hdr_base(const sr_engine *e, sr_hdr *h, uint8_t op);
/* The switch's status code as a serene error code. */
int sr_map_status(unsigned st);
/* Size the slot pool and timers for the job p describes, then call every
 * module's on_join. Returns 0, SERENE_ERR_CONFIG, SERENE_ERR_PROTO or
 * SERENE_ERR_NOMEM, after logging why. */
int sr_engine_join(sr_engine *e, const sr_join_params *p);

#endif /* SERENE_ENGINE_ENGINE_H */
