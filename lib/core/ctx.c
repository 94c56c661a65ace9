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

uint64_t sr_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

/* Take a free op descriptor (API thread only), or NULL. */
static serene_op *op_alloc(serene_ctx *ctx)
{
    for (unsigned i = 0; i < ctx->max_ops; i++) {
        int expect = SR_OPS_FREE;
        if (atomic_load(&ctx->ops[i].state) == SR_OPS_FREE &&
            atomic_compare_exchange_strong(&ctx->ops[i].state, &expect, SR_OPS_QUEUED))
            return &ctx->ops[i];
    }
    return NULL;
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

SERENE_API int serene_op_test(serene_op *op)
{
    if (!op)
        return SERENE_ERR_INVAL;
    return atomic_load_explicit(&op->state, memory_order_acquire) == SR_OPS_DONE
               ? 0
               : SERENE_ERR_AGAIN;
}

SERENE_API int serene_op_wait(serene_op **opp)
{
    if (!opp || !*opp)
        return SERENE_ERR_INVAL;
    serene_op *op = *opp;
    serene_ctx *ctx = op->ctx;
    pthread_mutex_lock(&ctx->mu);
    while (atomic_load_explicit(&op->state, memory_order_acquire) != SR_OPS_DONE) {
        /* The engine finishes every op by its deadline; the timed wait only
         * guards against a lost wake-up. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&ctx->cv, &ctx->mu, &ts);
    }
    pthread_mutex_unlock(&ctx->mu);
    int rc = op->result;
    atomic_store_explicit(&op->state, SR_OPS_FREE, memory_order_release);
    *opp = NULL;
    return rc;
}

SERENE_API void serene_ctx_destroy(serene_ctx **pctx)
{
    if (!pctx || !*pctx)
        return;
    serene_ctx *ctx = *pctx;
    if (ctx->thread_started) {
        atomic_store_explicit(&ctx->stop, 1, memory_order_release);
        wake(ctx);
        pthread_join(ctx->thread, NULL);
    }
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
    free(ctx->ops);
    free(ctx->ring);
    free(ctx->dpdk_eal_args);
    free(ctx->dpdk_port);
    if (ctx->rxbuf[0])
        free(ctx->rxbuf[0]);
    free(ctx);
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
    serene_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return SERENE_ERR_NOMEM;
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
    ctx->max_ops = (unsigned)cfg->max_ops;
    ctx->ops = calloc(ctx->max_ops, sizeof *ctx->ops);
    ctx->ring = calloc(ctx->max_ops, sizeof *ctx->ring);
    uint8_t *rx = malloc((size_t)SR_TP_BURST * SR_WIRE_MAX_MSG);
    sr_rel_params rp = {
        .rto_ns = (uint64_t)cfg->rto_us * 1000u,
        .rto_max_ns = (uint64_t)cfg->rto_max_us * 1000u,
        .retry_limit = (uint32_t)cfg->retry_limit,
    };
    if (!ctx->ops || !ctx->ring || !rx || (cfg->dpdk_eal_args && !ctx->dpdk_eal_args) ||
        (cfg->dpdk_port && !ctx->dpdk_port) || sr_rel_init(&ctx->rel, 1, &rp)) {
        free(rx);
        serene_ctx_destroy(&ctx);
        return SERENE_ERR_NOMEM;
    }
    for (unsigned i = 0; i < SR_TP_BURST; i++)
        ctx->rxbuf[i] = rx + (size_t)i * SR_WIRE_MAX_MSG;
    for (unsigned i = 0; i < ctx->max_ops; i++)
        ctx->ops[i].ctx = ctx;
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
    if ((rc = serene_op_wait(&op))) {
        serene_ctx_destroy(&ctx);
        return rc;
    }
    *pctx = ctx;
    return 0;
}

SERENE_API int serene_ctx_config(const serene_ctx *ctx, serene_config *out)
{
    if (!ctx || !out)
        return SERENE_ERR_INVAL;
    *out = ctx->cfg;
    out->window = (int)ctx->window;
    return 0;
}

static int ranges_overlap(const float *a, const float *b, size_t n)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b, len = n * sizeof(float);
    return x < y + len && y < x + len;
}

SERENE_API int serene_allreduce_start(serene_ctx *ctx, const float *sendbuf, float *recvbuf,
                                      size_t count, serene_reduce_op op, serene_op **op_out)
{
    if (!op_out)
        return SERENE_ERR_INVAL;
    *op_out = NULL;
    if (!ctx || (count && (!sendbuf || !recvbuf)) || (op != SERENE_SUM && op != SERENE_AVG))
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
    if (count == 0) {
        /* Nothing to send: every worker agrees without a message. */
        atomic_store_explicit(&o->state, SR_OPS_DONE, memory_order_release);
    } else {
        op_submit(ctx, o);
    }
    *op_out = o;
    return 0;
}

SERENE_API int serene_allreduce(serene_ctx *ctx, const float *sendbuf, float *recvbuf,
                                size_t count, serene_reduce_op op)
{
    serene_op *o;
    int rc = serene_allreduce_start(ctx, sendbuf, recvbuf, count, op, &o);
    if (rc)
        return rc;
    return serene_op_wait(&o);
}

SERENE_API int serene_get_stats(const serene_ctx *ctx, serene_stats *out)
{
    if (!ctx || !out)
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
    return ctx ? atomic_load(&((serene_ctx *)ctx)->store_words) : 0;
}

/* Validate and queue a push (src or src_i32) or pull (dst or dst_i32). */
static int store_start(serene_ctx *ctx, int kind, size_t offset, const float *src,
                       const int32_t *src_i32, float *dst, int32_t *dst_i32, size_t count,
                       unsigned flags, serene_op **op_out)
{
    if (!op_out)
        return SERENE_ERR_INVAL;
    *op_out = NULL;
    if (!ctx || (count && !src && !src_i32 && !dst && !dst_i32) || (flags & ~SERENE_PULL_DELTA))
        return SERENE_ERR_INVAL;
    size_t cap = serene_store_capacity(ctx);
    if (offset > cap || count > cap - offset) {
        SR_ERR(&ctx->log, "%s of %zu words at offset %zu is beyond the store's %zu words",
               kind == SR_OPK_PUSH ? "push" : "pull", count, offset, cap);
        return SERENE_ERR_RANGE;
    }
    serene_op *o = op_alloc(ctx);
    if (!o)
        return SERENE_ERR_BUSY;
    o->kind = kind;
    o->offset = offset;
    o->count = count;
    o->src = src;
    o->src_i32 = src_i32;
    o->dst = dst;
    o->dst_i32 = dst_i32;
    o->flags = flags;
    o->result = 0;
    if (count == 0)
        atomic_store_explicit(&o->state, SR_OPS_DONE, memory_order_release);
    else
        op_submit(ctx, o);
    *op_out = o;
    return 0;
}

SERENE_API int serene_push_start(serene_ctx *ctx, size_t offset, const float *values,
                                 size_t count, serene_op **op_out)
{
    return store_start(ctx, SR_OPK_PUSH, offset, values, NULL, NULL, NULL, count, 0, op_out);
}

SERENE_API int serene_pull_start(serene_ctx *ctx, size_t offset, float *out, size_t count,
                                 unsigned flags, serene_op **op_out)
{
    return store_start(ctx, SR_OPK_PULL, offset, NULL, NULL, out, NULL, count, flags, op_out);
}


SERENE_API int serene_push(serene_ctx *ctx, size_t offset, const float *values, size_t count)
{
    serene_op *o;
    int rc = store_start(ctx, SR_OPK_PUSH, offset, values, NULL, NULL, NULL, count, 0, &o);
    return rc ? rc : serene_op_wait(&o);
}

SERENE_API int serene_push_i32(serene_ctx *ctx, size_t offset, const int32_t *values,
                               size_t count)
{
    serene_op *o;
    int rc = store_start(ctx, SR_OPK_PUSH, offset, NULL, values, NULL, NULL, count, 0, &o);
    return rc ? rc : serene_op_wait(&o);
}

SERENE_API int serene_pull(serene_ctx *ctx, size_t offset, float *out, size_t count,
                           unsigned flags)
{
    serene_op *o;
    int rc = store_start(ctx, SR_OPK_PULL, offset, NULL, NULL, out, NULL, count, flags, &o);
    return rc ? rc : serene_op_wait(&o);
}

SERENE_API int serene_pull_i32(serene_ctx *ctx, size_t offset, int32_t *out, size_t count,
                               unsigned flags)
{
    serene_op *o;
    int rc = store_start(ctx, SR_OPK_PULL, offset, NULL, NULL, NULL, out, count, flags, &o);
    return rc ? rc : serene_op_wait(&o);
}

SERENE_API int serene_clock_start(serene_ctx *ctx, serene_op **op_out)
{
    if (!op_out)
        return SERENE_ERR_INVAL;
    *op_out = NULL;
    if (!ctx)
        return SERENE_ERR_INVAL;
    serene_op *o = op_alloc(ctx);
    if (!o)
        return SERENE_ERR_BUSY;
    o->kind = SR_OPK_CLOCK;
    o->result = 0;
    op_submit(ctx, o);
    *op_out = o;
    return 0;
}

SERENE_API int serene_clock(serene_ctx *ctx)
{
    serene_op *o;
    int rc = serene_clock_start(ctx, &o);
    return rc ? rc : serene_op_wait(&o);
}

SERENE_API int serene_get_clock_info(const serene_ctx *ctx, serene_clock_info *out)
{
    if (!ctx || !out)
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
