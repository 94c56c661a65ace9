/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctx.c - context lifetime, configuration and statistics: the API layer.
 *
 * serene_ctx_create maps the region that holds the context and its op
 * descriptors, sets the engine up, plugs the operation modules into it
 * (join here; allreduce; the SSP clock and store), opens the transport,
 * starts the data-path thread and joins the job. The modules' own public
 * calls live in their folders (lib/allreduce, lib/ssp).
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "core/config.h"
#include "core/ctx.h"
#include "transport/transport.h"

/* serene_stats is ABI: counters only ever take a reserved word's place. */
_Static_assert(sizeof(serene_stats) == 24 * sizeof(uint64_t), "serene_stats keeps its size");
_Static_assert(offsetof(serene_stats, results_fallback) == 17 * sizeof(uint64_t),
               "serene_stats keeps its layout");

_Static_assert(offsetof(struct serene_ctx, eng) == 0,
               "the engine is the context's first member (sr_engine_live)");

/* Free what the context owns outside its region, then retire the region. */
static void ctx_free(serene_ctx *ctx)
{
    sr_engine_fini(&ctx->eng); /* the join module's fini says LEAVE */
    free(ctx->dpdk_eal_args);
    free(ctx->dpdk_port);
    sr_region_retire(ctx, ctx->region_size);
}

SERENE_API void serene_ctx_destroy(serene_ctx **pctx)
{
    if (!pctx || !*pctx)
        return;
    sr_engine *e = sr_engine_live(*pctx);
    if (!e) { /* a stale copy of a destroyed context's handle */
        *pctx = NULL;
        return;
    }
    if (sr_call_enter(e))
        return; /* logged; destroying under another thread's call would crash it */
    atomic_store(&e->dying, 1);
    if (atomic_load(&e->waiters)) {
        SR_ERR(&e->log, "serene_ctx_destroy while another thread waits for an operation "
                        "of this context: not destroyed");
        atomic_store(&e->dying, 0);
        sr_call_leave(e);
        return;
    }
    sr_engine_stop(e);
    /* The engine thread is stopped: these counts are final, and a packet
     * trace (SERENE_PCAP) holds exactly the packets they count (the LEAVE
     * that follows is neither). A snapshot taken after the last call can
     * miss answers still on their way, e.g. to probes. */
    SR_INFO(&e->log,
            "closing: sent %" PRIu64 " recv %" PRIu64 " rejected %" PRIu64 " resent %" PRIu64
            " probes %" PRIu64 " duplicates %" PRIu64,
            atomic_load(&e->stats.pkts_sent), atomic_load(&e->stats.pkts_recv),
            atomic_load(&e->stats.rejected), atomic_load(&e->stats.retransmissions),
            atomic_load(&e->stats.probes), atomic_load(&e->stats.duplicates));
    ctx_free(*pctx); /* the engine is the context's first member */
    *pctx = NULL;
}

/* The transport cfg names, or NULL after logging why there is none. */
static const sr_transport *find_transport(const serene_config *cfg, const sr_log *log, int *rc)
{
    const sr_transport *tp = sr_transport_find(cfg->transport);
    if (!tp) {
        int known = !strcmp(cfg->transport, "dpdk") || !strcmp(cfg->transport, "rdma") ||
                    !strncmp(cfg->transport, "rdma:", 5);
        SR_ERR(log, "transport \"%s\" %s", cfg->transport,
               known ? "is not built into this libserene" : "is unknown (try \"udp\")");
        *rc = known ? SERENE_ERR_UNSUPPORTED : SERENE_ERR_CONFIG;
    }
    return tp;
}

/* Bytes of the region in front of the op descriptors. */
static size_t ctx_bytes(void)
{
    return (sizeof(serene_ctx) + SR_OP_STRIDE - 1u) / SR_OP_STRIDE * SR_OP_STRIDE;
}

/* Map the region of a context with max_ops descriptors and fill in what
 * needs no allocation; NULL if the mapping fails. */
static serene_ctx *ctx_map(const serene_config *cfg, const sr_log *log)
{
    size_t region = ctx_bytes() + (size_t)cfg->max_ops * sizeof(serene_op);
    serene_ctx *ctx = sr_region_map(region);
    if (!ctx)
        return NULL;
    ctx->eng.magic = SR_CTX_MAGIC;
    ctx->region_size = region;
    ctx->eng.cfg = *cfg;
    ctx->eng.log = *log;
    return ctx;
}

/* Everything but the join: copies, engine, modules, transport, thread. */
static int ctx_setup(serene_ctx *ctx, const serene_config *cfg, const sr_transport *tp)
{
    sr_engine *e = &ctx->eng;
    /* The caller's strings need not outlive this call: keep copies. */
    ctx->dpdk_eal_args = cfg->dpdk_eal_args ? strdup(cfg->dpdk_eal_args) : NULL;
    ctx->dpdk_port = cfg->dpdk_port ? strdup(cfg->dpdk_port) : NULL;
    e->cfg.dpdk_eal_args = ctx->dpdk_eal_args;
    e->cfg.dpdk_port = ctx->dpdk_port;
    serene_op *ops = (serene_op *)((char *)ctx + ctx_bytes());
    int rc = sr_engine_init(e, ops, (unsigned)cfg->max_ops);
    if (!rc && ((cfg->dpdk_eal_args && !ctx->dpdk_eal_args) || (cfg->dpdk_port && !ctx->dpdk_port)))
        rc = SERENE_ERR_NOMEM;
    /* The clock before the store, both before the step: pushes carry the
     * worker's clock, and a step uses both. */
    if (!rc && !(rc = sr_engine_plug(e, &sr_join_class, &ctx->join)) &&
        !(rc = sr_engine_plug(e, &sr_allreduce_class, &ctx->ar)) &&
        !(rc = sr_engine_plug(e, &sr_clock_class, &ctx->clock)) &&
        !(rc = sr_engine_plug(e, &sr_store_class, &ctx->store)))
        rc = sr_engine_plug(e, &sr_step_class, &ctx->step);
    if (!rc)
        rc = sr_engine_open(e, tp);
    if (!rc)
        rc = sr_engine_start(e);
    return rc;
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
    const sr_transport *tp = find_transport(cfg, &log, &rc);
    if (!tp)
        return rc;
    serene_ctx *ctx = ctx_map(cfg, &log);
    if (!ctx)
        return SERENE_ERR_NOMEM;
    if ((rc = sr_config_job_token(&log, &ctx->join.admission)) || (rc = ctx_setup(ctx, cfg, tp))) {
        serene_ctx_destroy(&ctx);
        return rc;
    }
    serene_op *op = sr_op_alloc(&ctx->eng, &sr_join_class, &ctx->join);
    sr_op_submit(&ctx->eng, op);
    op = sr_op_handle(op);
    if ((rc = serene_op_wait(&op))) {
        serene_ctx_destroy(&ctx);
        return rc;
    }
    *pctx = ctx;
    return 0;
}

SERENE_API int serene_ctx_config(const serene_ctx *ctx, serene_config *out)
{
    const sr_engine *e = sr_engine_live(ctx);
    if (!e || !out)
        return SERENE_ERR_INVAL;
    *out = e->cfg;
    out->window = (int)e->window;
    return 0;
}

SERENE_API int serene_get_stats(const serene_ctx *ctx, serene_stats *out)
{
    sr_engine *e = sr_engine_live(ctx);
    if (!e || !out)
        return SERENE_ERR_INVAL;
    memset(out, 0, sizeof *out);
#define LD(f) out->f = atomic_load_explicit(&e->stats.f, memory_order_relaxed)
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
    LD(probes);
    LD(held);
    LD(window_cuts);
    LD(results_switch);
    LD(results_fallback);
#undef LD
    return 0;
}
