/* SPDX-License-Identifier: Apache-2.0 */
/*
 * setup.c - an engine's lifetime: set up, plug the operation modules in,
 * open the transport and the trace, size for the joined job, tear down.
 *
 * All memory the data path needs is allocated here, at creation or when
 * the job is joined; the hot path allocates nothing.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/engine.h"

int sr_engine_init(sr_engine *e, serene_op *ops, unsigned max_ops)
{
    e->wake_fd = -1;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_mutex_init(&e->start_mu, NULL);
    e->ops = ops;
    e->max_ops = max_ops;
    for (unsigned i = 0; i < max_ops; i++) {
        ops[i].magic = SR_OP_MAGIC;
        ops[i].eng = e;
    }
    sr_quant_init(&e->qk, e->cfg.cpu_mask);
    sr_quant16_init(&e->qk16, e->cfg.cpu_mask);
    e->ring = calloc(max_ops, sizeof *e->ring);
    uint8_t *rx = malloc((size_t)SR_TP_BURST * SR_WIRE_MAX_MSG);
    sr_rel_params rp = {
        .rto_ns = (uint64_t)e->cfg.rto_us * 1000u,
        .rto_max_ns = (uint64_t)e->cfg.rto_max_us * 1000u,
        .retry_limit = (uint32_t)e->cfg.retry_limit,
    };
    sr_rel_params side = rp;
    side.retry_limit = 0; /* its owner bounds the wait for its answer */
    if (!e->ring || !rx || sr_rel_init(&e->rel, 1, &rp) || sr_rel_init(&e->side.rel, 1, &side)) {
        free(rx);
        return SERENE_ERR_NOMEM;
    }
    for (unsigned i = 0; i < SR_TP_BURST; i++)
        e->rxbuf[i] = rx + (size_t)i * SR_WIRE_MAX_MSG;
    e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return e->wake_fd < 0 ? -errno : 0;
}

int sr_engine_plug(sr_engine *e, const sr_op_class *cls, void *self)
{
    if (e->n_mods == SR_ENGINE_MAX_MODULES)
        return SERENE_ERR_INVAL;
    for (const uint8_t *a = cls->answers; a < cls->answers + sizeof cls->answers && *a; a++)
        if (e->route[*a])
            return SERENE_ERR_INVAL;
    e->mods[e->n_mods] = (sr_module){cls, self};
    e->n_mods++;
    for (const uint8_t *a = cls->answers; a < cls->answers + sizeof cls->answers && *a; a++)
        e->route[*a] = (uint8_t)e->n_mods;
    return cls->init ? cls->init(self, e) : 0;
}

/* The trace needs the transport's addresses, so it opens after the
 * transport and before the engine thread that writes it. */
static int trace_open(sr_engine *e)
{
    struct sockaddr_in local, peer;
    int have = e->tp->addrs && e->tp->addrs(e->tps, &local, &peer) == 0;
    return sr_trace_open(&e->trace, e->cfg.pcap_path, e->cfg.rank, have ? &local : NULL,
                         have ? &peer : NULL, &e->log);
}

int sr_engine_open(sr_engine *e, const sr_transport *tp)
{
    int rc = tp->open(&e->tps, &e->cfg, &e->log);
    if (rc)
        return rc;
    e->tp = tp;
    return e->cfg.pcap_path[0] ? trace_open(e) : 0;
}

void sr_engine_fini(sr_engine *e)
{
    for (unsigned i = e->n_mods; i-- > 0;)
        if (e->mods[i].cls->fini)
            e->mods[i].cls->fini(e->mods[i].self, e);
    sr_trace_close(e->trace);
    if (e->tp)
        e->tp->close(e->tps);
    if (e->wake_fd >= 0)
        close(e->wake_fd);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->start_mu);
    sr_rel_fini(&e->rel);
    sr_rel_fini(&e->side.rel);
    free(e->slots);
    free(e->slot_mem);
    free(e->ring);
    free(e->rxbuf[0]);
}

/* Check what the switch announced against this worker's configuration.
 * Returns 0 with *window set to the packets in flight at most, or an error
 * code after logging why. */
static int join_check(const sr_engine *e, const sr_join_params *p, uint32_t *window)
{
    const sr_log *log = &e->log;
    if (p->n_workers != (uint32_t)e->cfg.world_size) {
        SR_ERR(log, "switch says job %d has %u workers, but world_size is %d", e->cfg.job_id,
               p->n_workers, e->cfg.world_size);
        return SERENE_ERR_CONFIG;
    }
    if (p->elems_per_pkt < 1 || p->elems_per_pkt > SR_WIRE_MAX_ELEMS ||
        p->pool_slots > SR_WIRE_MAX_SLOTS) {
        SR_ERR(log, "switch announced invalid job parameters (elems %u, slots %u)",
               p->elems_per_pkt, p->pool_slots);
        return SERENE_ERR_PROTO;
    }
    /* A switch without allreduce slots (0, as the Tofino program announces)
     * still serves push, pull, clock and step: their packets in flight are
     * the configured window, else the default pool's size; allreduce then
     * fails with SERENE_ERR_UNSUPPORTED (ar_start). */
    uint32_t w = e->cfg.window ? (uint32_t)e->cfg.window
                 : p->pool_slots ? p->pool_slots
                                 : SR_WIRE_DEF_SLOTS;
    if (p->pool_slots && w > p->pool_slots) {
        SR_ERR(log, "window %u exceeds the job's pool of %u slots", w, p->pool_slots);
        return SERENE_ERR_CONFIG;
    }
    *window = w;
    return 0;
}

int sr_engine_join(sr_engine *e, const sr_join_params *p)
{
    uint32_t w;
    int rc = join_check(e, p, &w);
    if (rc)
        return rc;
    size_t msg_cap = SR_WIRE_HDR_LEN + 4u * p->elems_per_pkt;
    e->slots = calloc(w, sizeof *e->slots);
    e->slot_mem = malloc(msg_cap * w);
    sr_rel_params rp = e->rel.p;
    sr_rel_fini(&e->rel);
    if (!e->slots || !e->slot_mem || sr_rel_init(&e->rel, w, &rp))
        return SERENE_ERR_NOMEM;
    for (uint32_t i = 0; i < w; i++)
        e->slots[i].msg = e->slot_mem + msg_cap * i;
    e->params = *p;
    e->window = w;
    for (unsigned i = 0; i < e->n_mods; i++) {
        const sr_module *m = &e->mods[i];
        if (m->cls->on_join && (rc = m->cls->on_join(m->self, e)))
            return rc;
    }
    SR_INFO(&e->log, "joined job %d as worker %d/%u: %u elements per packet, pool %u, window %u%s",
            e->cfg.job_id, e->cfg.rank, p->n_workers, p->elems_per_pkt, p->pool_slots, w,
            e->whole_rows ? ", store in whole rows" : "");
    return 0;
}
