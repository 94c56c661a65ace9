/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctx.c - context lifetime, op submission and completion, statistics.
 *
 * The API side of the context (see ctx.h for the threading contract). All
 * memory the data path needs is allocated here or when the job is joined;
 * an op is a preallocated descriptor, so starting one allocates nothing.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "core/ctx.h"

static uint32_t random_token(void)
{
    uint32_t t = 0;
    while (t == 0) {
        if (getrandom(&t, sizeof t, 0) != (ssize_t)sizeof t)
            t = (uint32_t)sr_now_ns() ^ (uint32_t)getpid() << 16;
    }
    return t;
}

static void wake(serene_ctx *ctx)
{
    uint64_t one = 1;
    /* A full eventfd counter already means "wake up": ignore EAGAIN. */
    if (write(ctx->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        SR_DEBUG(&ctx->log, "wake: %s", strerror(errno));
}

/* A live context, or NULL. Only reads, so it is safe on a retired region
 * (handle.h): a call through a stale copy of a destroyed context's handle
 * lands here and is refused. */
static serene_ctx *ctx_live(const serene_ctx *ctx)
{
    return ctx && ctx->magic == SR_CTX_MAGIC ? (serene_ctx *)ctx : NULL;
}

/* Enter a call that starts operations. The order in which a context
 * starts them pairs them with the other workers' calls, so two threads at
 * once would mix their data silently: the second is refused instead. */
static int ctx_enter(serene_ctx *ctx)
{
    if (atomic_exchange_explicit(&ctx->entered, 1, memory_order_acquire)) {
        SR_ERR(&ctx->log, "another thread is inside a call on this context; a context "
                          "starts operations from one thread at a time");
        return SERENE_ERR_CONCURRENT;
    }
    return 0;
}

static void ctx_leave(serene_ctx *ctx)
{
    atomic_store_explicit(&ctx->entered, 0, memory_order_release);
}

/* Take a free op descriptor (inside ctx_enter), or NULL. Descriptors are
 * used in turn, so a stale handle's descriptor is reused as late as
 * possible (handle.h). */
static serene_op *op_alloc(serene_ctx *ctx)
{
    for (unsigned k = 0; k < ctx->max_ops; k++) {
        unsigned i = (ctx->next_op + k) % ctx->max_ops;
        int expect = SR_OPS_FREE;
        if (atomic_compare_exchange_strong(&ctx->ops[i].state, &expect, SR_OPS_QUEUED)) {
            ctx->next_op = i + 1u;
            atomic_fetch_add(&ctx->ops[i].gen, 1u);
            return &ctx->ops[i];
        }
    }
    return NULL;
}

static serene_op *op_handle(serene_op *op)
{
    return sr_handle_encode(op, atomic_load(&op->gen));
}

/* The descriptor a handle names, or NULL when the handle is stale: its
 * context is gone, or its op was waited for (and maybe reused) since. */
static serene_op *op_resolve(const serene_op *handle)
{
    serene_op *op = sr_handle_desc(handle);
    if (op->magic != SR_OP_MAGIC ||
        ((atomic_load(&op->gen) ^ sr_handle_tag(handle)) & (SR_OP_STRIDE - 1u)) ||
        atomic_load(&op->state) == SR_OPS_FREE)
        return NULL;
    return op;
}

static void op_submit(serene_ctx *ctx, serene_op *op)
{
    op->deadline_ns = sr_now_ns() + (uint64_t)ctx->cfg.timeout_ms * 1000000u;
    pthread_mutex_lock(&ctx->start_mu);
    unsigned tail = atomic_load_explicit(&ctx->ring_tail, memory_order_relaxed);
    ctx->ring[tail % ctx->max_ops] = (unsigned)(op - ctx->ops);
    atomic_store_explicit(&ctx->ring_tail, tail + 1, memory_order_release);
    pthread_mutex_unlock(&ctx->start_mu);
    wake(ctx);
}

SERENE_API int serene_op_test(serene_op *handle)
{
    serene_op *op = handle ? op_resolve(handle) : NULL;
    if (!op)
        return SERENE_ERR_INVAL;
    return atomic_load_explicit(&op->state, memory_order_acquire) == SR_OPS_DONE
               ? 0
               : SERENE_ERR_AGAIN;
}

/* Sleep until op is done, or until another waiter took it (then 0). */
static int op_sleep(serene_ctx *ctx, serene_op *op, uint32_t gen)
{
    int ok = 1;
    pthread_mutex_lock(&ctx->mu);
    while (atomic_load_explicit(&op->state, memory_order_acquire) != SR_OPS_DONE) {
        if (atomic_load(&op->gen) != gen ||
            atomic_load_explicit(&op->state, memory_order_acquire) == SR_OPS_FREE) {
            ok = 0;
            break;
        }
        /* The engine finishes every op by its deadline; the timed wait only
         * guards against a lost wake-up. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&ctx->cv, &ctx->mu, &ts);
    }
    pthread_mutex_unlock(&ctx->mu);
    return ok;
}

SERENE_API int serene_op_wait(serene_op **opp)
{
    if (!opp || !*opp)
        return SERENE_ERR_INVAL;
    serene_op *op = op_resolve(*opp);
    *opp = NULL;
    if (!op)
        return SERENE_ERR_INVAL;
    serene_ctx *ctx = op->ctx;
    uint32_t gen = atomic_load(&op->gen);
    atomic_fetch_add(&ctx->waiters, 1);
    if (atomic_load(&ctx->dying)) {
        atomic_fetch_sub(&ctx->waiters, 1);
        return SERENE_ERR_SHUTDOWN;
    }
    int rc = SERENE_ERR_INVAL;
    if (op_sleep(ctx, op, gen)) {
        rc = op->result;
        /* Two threads waiting for one op: one gets its result, the other
         * INVAL, as if it had come second. */
        int expect = SR_OPS_DONE;
        if (atomic_load(&op->gen) != gen ||
            !atomic_compare_exchange_strong_explicit(&op->state, &expect, SR_OPS_FREE,
                                                     memory_order_acq_rel, memory_order_acquire))
            rc = SERENE_ERR_INVAL;
    }
    atomic_fetch_sub(&ctx->waiters, 1);
    return rc;
}

/* Free what the context owns outside its region, then retire the region. */
static void ctx_free(serene_ctx *ctx)
{
    if (ctx->tp && atomic_load(&ctx->joined)) {
        /* Tell the switch this worker is gone, so the job can be started
         * again. Best effort, twice against a loss; the engine thread is
         * stopped, so this thread owns the transport now. */
        uint8_t msg[SR_WIRE_HDR_LEN];
        sr_hdr h;
        sr_hdr_base(ctx, &h, SR_OP_LEAVE);
        h.seq = ctx->token;
        sr_hdr_pack(msg, &h);
        struct iovec iov[2] = {{msg, sizeof msg}, {msg, sizeof msg}};
        (void)ctx->tp->send(ctx->tps, iov, 2);
    }
    sr_trace_close(ctx->trace);
    if (ctx->tp)
        ctx->tp->close(ctx->tps);
    if (ctx->wake_fd >= 0)
        close(ctx->wake_fd);
    pthread_mutex_destroy(&ctx->mu);
    pthread_cond_destroy(&ctx->cv);
    pthread_mutex_destroy(&ctx->start_mu);
    sr_rel_fini(&ctx->rel);
    free(ctx->slots);
    free(ctx->slot_mem);
    free(ctx->exps);
    free(ctx->pulled);
    free(ctx->ring);
    free(ctx->dpdk_eal_args);
    free(ctx->dpdk_port);
    if (ctx->rxbuf[0])
        free(ctx->rxbuf[0]);
    sr_region_retire(ctx, ctx->region_size);
}

SERENE_API void serene_ctx_destroy(serene_ctx **pctx)
{
    if (!pctx || !*pctx)
        return;
    serene_ctx *ctx = ctx_live(*pctx);
    if (!ctx) { /* a stale copy of a destroyed context's handle */
        *pctx = NULL;
        return;
    }
    if (ctx_enter(ctx))
        return; /* logged; destroying under another thread's call would crash it */
    atomic_store(&ctx->dying, 1);
    if (atomic_load(&ctx->waiters)) {
        SR_ERR(&ctx->log, "serene_ctx_destroy while another thread waits for an operation "
                          "of this context: not destroyed");
        atomic_store(&ctx->dying, 0);
        ctx_leave(ctx);
        return;
    }
    if (ctx->thread_started) {
        atomic_store_explicit(&ctx->stop, 1, memory_order_release);
        wake(ctx);
        pthread_join(ctx->thread, NULL);
    }
    ctx_free(ctx);
    *pctx = NULL;
}

/* The trace needs the transport's addresses, so it opens after the
 * transport and before the engine thread that writes it. */
static int trace_open(serene_ctx *ctx)
{
    struct sockaddr_in local, peer;
    int have = ctx->tp->addrs && ctx->tp->addrs(ctx->tps, &local, &peer) == 0;
    return sr_trace_open(&ctx->trace, ctx->cfg.pcap_path, ctx->cfg.rank, have ? &local : NULL,
                         have ? &peer : NULL, &ctx->log);
}

SERENE_API int serene_ctx_create(serene_ctx **pctx, const serene_config *cfg)
{
    if (!pctx)
        return SERENE_ERR_INVAL;
    *pctx = NULL;
    if (!cfg)
        return SERENE_ERR_INVAL;
    sr_log log;
    sr_log_init(&log, cfg);
    int rc = sr_config_validate(cfg, &log);
    if (rc)
        return rc;
    const sr_transport *tp = sr_transport_find(cfg->transport);
    if (!tp) {
        int known = !strcmp(cfg->transport, "dpdk") || !strcmp(cfg->transport, "rdma");
        SR_ERR(&log, "transport \"%s\" %s", cfg->transport,
               known ? "is not built into this libserene" : "is unknown (try \"udp\")");
        return known ? SERENE_ERR_UNSUPPORTED : SERENE_ERR_CONFIG;
    }
    /* The context and its op descriptors share one region (handle.h). */
    size_t ctx_bytes = (sizeof(serene_ctx) + SR_OP_STRIDE - 1u) / SR_OP_STRIDE * SR_OP_STRIDE;
    size_t region = ctx_bytes + (size_t)cfg->max_ops * sizeof(serene_op);
    serene_ctx *ctx = sr_region_map(region);
    if (!ctx)
        return SERENE_ERR_NOMEM;
    ctx->magic = SR_CTX_MAGIC;
    ctx->region_size = region;
    ctx->max_ops = (unsigned)cfg->max_ops;
    ctx->ops = (serene_op *)((char *)ctx + ctx_bytes);
    for (unsigned i = 0; i < ctx->max_ops; i++) {
        ctx->ops[i].magic = SR_OP_MAGIC;
        ctx->ops[i].ctx = ctx;
    }
    ctx->cfg = *cfg;
    /* The caller's strings need not outlive this call: keep copies. */
    ctx->dpdk_eal_args = cfg->dpdk_eal_args ? strdup(cfg->dpdk_eal_args) : NULL;
    ctx->dpdk_port = cfg->dpdk_port ? strdup(cfg->dpdk_port) : NULL;
    ctx->cfg.dpdk_eal_args = ctx->dpdk_eal_args;
    ctx->cfg.dpdk_port = ctx->dpdk_port;
    ctx->log = log;
    ctx->wake_fd = -1;
    pthread_mutex_init(&ctx->mu, NULL);
    pthread_cond_init(&ctx->cv, NULL);
    pthread_mutex_init(&ctx->start_mu, NULL);
    sr_quant_init(&ctx->qk, cfg->cpu_mask);
    ctx->token = random_token();
    /* Nothing finished yet: low = high = first clock - 1. */
    atomic_store(&ctx->sync.low, UINT32_MAX);
    atomic_store(&ctx->sync.high, UINT32_MAX);
    ctx->ring = calloc(ctx->max_ops, sizeof *ctx->ring);
    uint8_t *rx = malloc((size_t)SR_TP_BURST * SR_WIRE_MAX_MSG);
    sr_rel_params rp = {
        .rto_ns = (uint64_t)cfg->rto_us * 1000u,
        .rto_max_ns = (uint64_t)cfg->rto_max_us * 1000u,
        .retry_limit = (uint32_t)cfg->retry_limit,
    };
    if (!ctx->ring || !rx || (cfg->dpdk_eal_args && !ctx->dpdk_eal_args) ||
        (cfg->dpdk_port && !ctx->dpdk_port) || sr_rel_init(&ctx->rel, 1, &rp)) {
        free(rx);
        serene_ctx_destroy(&ctx);
        return SERENE_ERR_NOMEM;
    }
    for (unsigned i = 0; i < SR_TP_BURST; i++)
        ctx->rxbuf[i] = rx + (size_t)i * SR_WIRE_MAX_MSG;
    ctx->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ctx->wake_fd < 0) {
        rc = -errno;
        serene_ctx_destroy(&ctx);
        return rc;
    }
    if ((rc = tp->open(&ctx->tps, &ctx->cfg, &ctx->log))) {
        serene_ctx_destroy(&ctx);
        return rc;
    }
    ctx->tp = tp;
    if (cfg->pcap_path[0] && (rc = trace_open(ctx))) {
        serene_ctx_destroy(&ctx);
        return rc;
    }
    if ((rc = pthread_create(&ctx->thread, NULL, sr_engine_main, ctx))) {
        serene_ctx_destroy(&ctx);
        return -rc;
    }
    ctx->thread_started = 1;

    serene_op *op = op_alloc(ctx);
    op->kind = SR_OPK_JOIN;
    op_submit(ctx, op);
    op = op_handle(op);
    if ((rc = serene_op_wait(&op))) {
        serene_ctx_destroy(&ctx);
        return rc;
    }
    *pctx = ctx;
    return 0;
}

SERENE_API int serene_ctx_config(const serene_ctx *ctx, serene_config *out)
{
    if (!ctx_live(ctx) || !out)
        return SERENE_ERR_INVAL;
    *out = ctx->cfg;
    out->window = (int)ctx->window;
    return 0;
}

/* End a call that started *h (when rc is 0): hand the op out, or wait for
 * it (the blocking forms pass op_out NULL). Leaves ctx_enter's guard. */
static int call_end(serene_ctx *ctx, int rc, serene_op *h, serene_op **op_out)
{
    if (!rc) {
        if (op_out)
            *op_out = h;
        else
            rc = serene_op_wait(&h);
    }
    ctx_leave(ctx);
    return rc;
}

/* An op finished without a message: nothing to send for it. */
static void op_done_now(serene_op *o)
{
    atomic_store_explicit(&o->state, SR_OPS_DONE, memory_order_release);
}

static int ranges_overlap(const float *a, const float *b, size_t n)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b, len = n * sizeof(float);
    return x < y + len && y < x + len;
}

/* Validate and queue an allreduce (inside ctx_enter); *h = its handle. */
static int ar_start(serene_ctx *ctx, const float *sendbuf, float *recvbuf, size_t count,
                    serene_reduce_op op, serene_op **h)
{
    if ((count && (!sendbuf || !recvbuf)) || (op != SERENE_SUM && op != SERENE_AVG))
        return SERENE_ERR_INVAL;
    if (count > UINT32_MAX) {
        SR_ERR(&ctx->log, "allreduce of %zu values: at most %u per call", count, UINT32_MAX);
        return SERENE_ERR_INVAL;
    }
    if (sendbuf != recvbuf && count && ranges_overlap(sendbuf, recvbuf, count)) {
        SR_ERR(&ctx->log, "allreduce: sendbuf and recvbuf overlap without being equal");
        return SERENE_ERR_INVAL;
    }
    if (atomic_load(&ctx->broken))
        return SERENE_ERR_BROKEN;
    serene_op *o = op_alloc(ctx);
    if (!o)
        return SERENE_ERR_BUSY;
    o->kind = SR_OPK_ALLREDUCE;
    o->src = sendbuf;
    o->dst = recvbuf;
    o->count = count;
    o->redop = op;
    o->result = 0;
    /* Even a call of 0 values goes to the switch: it pairs with the other
     * workers' call there (engine.c). */
    op_submit(ctx, o);
    *h = op_handle(o);
    return 0;
}

SERENE_API int serene_allreduce_start(serene_ctx *ctx, const float *sendbuf, float *recvbuf,
                                      size_t count, serene_reduce_op op, serene_op **op_out)
{
    if (!op_out)
        return SERENE_ERR_INVAL;
    *op_out = NULL;
    serene_ctx *c = ctx_live(ctx);
    serene_op *h = NULL;
    int rc = c ? ctx_enter(c) : SERENE_ERR_INVAL;
    if (rc)
        return rc;
    rc = ar_start(c, sendbuf, recvbuf, count, op, &h);
    return call_end(c, rc, h, op_out);
}

SERENE_API int serene_allreduce(serene_ctx *ctx, const float *sendbuf, float *recvbuf,
                                size_t count, serene_reduce_op op)
{
    serene_ctx *c = ctx_live(ctx);
    serene_op *h = NULL;
    int rc = c ? ctx_enter(c) : SERENE_ERR_INVAL;
    if (rc)
        return rc;
    rc = ar_start(c, sendbuf, recvbuf, count, op, &h);
    return call_end(c, rc, h, NULL);
}

SERENE_API int serene_get_stats(const serene_ctx *ctx, serene_stats *out)
{
    if (!ctx_live(ctx) || !out)
        return SERENE_ERR_INVAL;
    memset(out, 0, sizeof *out);
#define LD(f) out->f = atomic_load_explicit(&((serene_ctx *)ctx)->stats.f, memory_order_relaxed)
    LD(pkts_sent);
    LD(pkts_recv);
    LD(bytes_sent);
    LD(bytes_recv);
    LD(retransmissions);
    LD(timeouts);
    LD(saturations);
    LD(duplicates);
    LD(rejected);
    LD(ops_completed);
    LD(clock_wait_ns);
    LD(holds);
    LD(releases);
#undef LD
    return 0;
}

/* ---- SSP store and barrier ------------------------------------------------ */

SERENE_API size_t serene_store_capacity(const serene_ctx *ctx)
{
    return ctx_live(ctx) ? atomic_load(&((serene_ctx *)ctx)->store_words) : 0;
}

/* What a push or pull moves: src or src_i32 for a push, dst or dst_i32 for
 * a pull, count words at offset. */
typedef struct store_req {
    int kind;
    size_t offset;
    size_t count;
    const float *src;
    const int32_t *src_i32;
    float *dst;
    int32_t *dst_i32;
    unsigned flags;
} store_req;

/* Validate and queue a push or pull (inside ctx_enter); *h = its handle. */
static int store_start(serene_ctx *ctx, const store_req *r, serene_op **h)
{
    if ((r->count && !r->src && !r->src_i32 && !r->dst && !r->dst_i32) ||
        (r->flags & ~SERENE_PULL_DELTA))
        return SERENE_ERR_INVAL;
    size_t cap = serene_store_capacity(ctx);
    if (r->offset > cap || r->count > cap - r->offset) {
        SR_ERR(&ctx->log, "%s of %zu words at offset %zu is beyond the store's %zu words",
               r->kind == SR_OPK_PUSH ? "push" : "pull", r->count, r->offset, cap);
        return SERENE_ERR_RANGE;
    }
    serene_op *o = op_alloc(ctx);
    if (!o)
        return SERENE_ERR_BUSY;
    o->kind = r->kind;
    o->offset = r->offset;
    o->count = r->count;
    o->src = r->src;
    o->src_i32 = r->src_i32;
    o->dst = r->dst;
    o->dst_i32 = r->dst_i32;
    o->flags = r->flags;
    o->result = 0;
    if (r->count == 0)
        op_done_now(o); /* the store needs no pairing between workers */
    else
        op_submit(ctx, o);
    *h = op_handle(o);
    return 0;
}

/* A push or pull call: started (op_out) or waited for (op_out NULL). */
static int store_call(serene_ctx *ctx, const store_req *r, serene_op **op_out)
{
    if (op_out)
        *op_out = NULL;
    serene_ctx *c = ctx_live(ctx);
    serene_op *h = NULL;
    int rc = c ? ctx_enter(c) : SERENE_ERR_INVAL;
    if (rc)
        return rc;
    rc = store_start(c, r, &h);
    return call_end(c, rc, h, op_out);
}

SERENE_API int serene_push_start(serene_ctx *ctx, size_t offset, const float *values,
                                 size_t count, serene_op **op_out)
{
    store_req r = {.kind = SR_OPK_PUSH, .offset = offset, .count = count, .src = values};
    return op_out ? store_call(ctx, &r, op_out) : SERENE_ERR_INVAL;
}

SERENE_API int serene_pull_start(serene_ctx *ctx, size_t offset, float *out, size_t count,
                                 unsigned flags, serene_op **op_out)
{
    store_req r = {.kind = SR_OPK_PULL, .offset = offset, .count = count, .dst = out,
                   .flags = flags};
    return op_out ? store_call(ctx, &r, op_out) : SERENE_ERR_INVAL;
}

SERENE_API int serene_push(serene_ctx *ctx, size_t offset, const float *values, size_t count)
{
    store_req r = {.kind = SR_OPK_PUSH, .offset = offset, .count = count, .src = values};
    return store_call(ctx, &r, NULL);
}

SERENE_API int serene_push_i32(serene_ctx *ctx, size_t offset, const int32_t *values,
                               size_t count)
{
    store_req r = {.kind = SR_OPK_PUSH, .offset = offset, .count = count, .src_i32 = values};
    return store_call(ctx, &r, NULL);
}

SERENE_API int serene_pull(serene_ctx *ctx, size_t offset, float *out, size_t count,
                           unsigned flags)
{
    store_req r = {.kind = SR_OPK_PULL, .offset = offset, .count = count, .dst = out,
                   .flags = flags};
    return store_call(ctx, &r, NULL);
}

SERENE_API int serene_pull_i32(serene_ctx *ctx, size_t offset, int32_t *out, size_t count,
                               unsigned flags)
{
    store_req r = {.kind = SR_OPK_PULL, .offset = offset, .count = count, .dst_i32 = out,
                   .flags = flags};
    return store_call(ctx, &r, NULL);
}

/* A clock call: started (op_out) or waited for (op_out NULL). */
static int clock_call(serene_ctx *ctx, serene_op **op_out)
{
    serene_ctx *c = ctx_live(ctx);
    serene_op *h = NULL;
    int rc = c ? ctx_enter(c) : SERENE_ERR_INVAL;
    if (rc)
        return rc;
    serene_op *o = op_alloc(c);
    if (o) {
        o->kind = SR_OPK_CLOCK;
        o->result = 0;
        op_submit(c, o);
        h = op_handle(o);
    }
    return call_end(c, o ? 0 : SERENE_ERR_BUSY, h, op_out);
}

SERENE_API int serene_clock_start(serene_ctx *ctx, serene_op **op_out)
{
    if (!op_out)
        return SERENE_ERR_INVAL;
    *op_out = NULL;
    return clock_call(ctx, op_out);
}

SERENE_API int serene_clock(serene_ctx *ctx)
{
    return clock_call(ctx, NULL);
}

SERENE_API int serene_get_clock_info(const serene_ctx *ctx, serene_clock_info *out)
{
    if (!ctx_live(ctx) || !out)
        return SERENE_ERR_INVAL;
    serene_ctx *c = (serene_ctx *)ctx;
    memset(out, 0, sizeof *out);
    out->clock = atomic_load(&c->sync.clock);
    out->low = atomic_load(&c->sync.low);
    out->high = atomic_load(&c->sync.high);
    out->mode = (serene_sync_mode)atomic_load(&c->sync.mode);
    out->staleness = atomic_load(&c->sync.staleness);
    return 0;
}
