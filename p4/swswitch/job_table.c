/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job_table.c - the pipeline and its job table: create and destroy, job
 * add, remove, reset, list and info, and the counters: the control plane
 * of ingress.p4's job_table (exact match on the 16-bit job id; here a
 * direct-indexed array).
 *
 * Adding a job allocates the state of every control (controls.h) at once;
 * nothing is allocated afterwards until the job is removed, so the
 * dispatch never allocates.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controls.h"

/* ---- the pipeline ------------------------------------------------------------ */

static void job_free(sr_pipe *p, sr_pipe_job *j)
{
    if (!j)
        return;
    sr_allreduce_free(j);
    sr_pool_job_free(p, j);
    sr_store_free(j);
    sr_step_free(j);
    sr_epoch_free(j);
    sr_barrier_job_free(j);
    free(j);
}

int sr_pipe_create(sr_pipe **out)
{
    sr_pipe *p;

    if (!out)
        return -EINVAL;
    p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->lease_ms = SR_PIPE_LEASE_DEFAULT_MS;
    *out = p;
    return 0;
}

void sr_pipe_destroy(sr_pipe **pp)
{
    sr_pipe *p;

    if (!pp || !*pp)
        return;
    p = *pp;
    for (size_t i = 0; i < SR_PIPE_NJOBS; i++)
        job_free(p, p->jobs[i]);
    sr_pool_destroy(p);
    sr_tna_free(p);
    free(p);
    *pp = NULL;
}

void sr_pipe_set_lease(sr_pipe *p, uint64_t lease_ms)
{
    p->lease_ms = lease_ms;
}

void sr_pipe_set_proof(sr_pipe *p, const uint64_t key[2])
{
    p->proof = key != NULL;
    p->key[0] = key ? key[0] : 0;
    p->key[1] = key ? key[1] : 0;
}

void sr_pipe_tick(sr_pipe *p, uint64_t now_ms)
{
    p->now_ms = now_ms;
    sr_pool_tick(p);
}

/* ---- job parameters -------------------------------------------------------- */

void sr_pipe_job_params_init(sr_pipe_job_params *jp)
{
    if (!jp)
        return;
    memset(jp, 0, sizeof *jp);
    jp->elems_per_pkt = SR_WIRE_DEF_ELEMS;
    jp->pool_slots = SR_WIRE_DEF_SLOTS;
    jp->store_words = SR_PIPE_STORE_DEFAULT;
    jp->ring = SR_BARRIER_RING_DEFAULT;
    jp->mode = SR_SYNC_BSP;
}

int sr_pipe_job_params_check(const sr_pipe_job_params *jp, const char **why)
{
    const char *msg = NULL;

    _Static_assert(SR_WIRE_MAX_WORKERS == 64 && SR_WIRE_MAX_ELEMS == 2048 &&
                       SR_WIRE_MAX_SLOTS == 32768 && SR_PIPE_STORE_MAX == 268435456 &&
                       SR_BARRIER_RING_MAX == 4096 && SR_PIPE_PUSH_TABLE_MAX == 268435456,
                   "the messages below spell out these limits");
    if (!jp)
        msg = "no parameters given";
    else if (jp->n_workers < 1 || jp->n_workers > SR_WIRE_MAX_WORKERS)
        msg = "workers must be in 1..64";
    else if (jp->elems_per_pkt < 1 || jp->elems_per_pkt > SR_WIRE_MAX_ELEMS)
        msg = "elements per packet must be in 1..2048";
    else if (jp->pool_slots > SR_WIRE_MAX_SLOTS)
        msg = "slots must be in 0..32768 (0: a job without allreduce)";
    else if (jp->store_words > SR_PIPE_STORE_MAX)
        msg = "store words must be in 0..268435456 (2^28)";
    else if (jp->ring < 2 || jp->ring > SR_BARRIER_RING_MAX || (jp->ring & (jp->ring - 1)))
        msg = "ring must be a power of 2 in 2..4096";
    else if (jp->mode != SR_SYNC_BSP && jp->mode != SR_SYNC_SSP && jp->mode != SR_SYNC_ASP)
        msg = "policy must be bsp, ssp or asp";
    else if (jp->mode == SR_SYNC_SSP && jp->s > jp->ring - 2)
        msg = "ssp's s must be at most ring - 2";
    else if (jp->local_n > jp->n_workers || jp->local_first > jp->n_workers - jp->local_n)
        msg = "local workers must be a range within the job's workers";
    else if (jp->up && jp->up_member >= SR_WIRE_MAX_WORKERS)
        msg = "a leaf's member id must be in 0..63";
    else if (jp->up && jp->fallback)
        msg = "a leaf of a tree cannot be shared (fallback=): its parent holds its rounds";
    else if (jp->whole_rows && jp->store_words % jp->elems_per_pkt)
        msg = "rows=whole needs a store of whole rows (a multiple of ELEMS words)";
    else if (jp->tna_model && !sr_tna_job_check(jp))
        msg = "model=tna takes ELEMS 32, at most 256 slots, 32 workers and a store of whole "
              "rows, at most 16384 words, not shared, not a leaf";
    else if (((uint64_t)jp->store_words + jp->elems_per_pkt - 1) / jp->elems_per_pkt *
                 jp->n_workers >
             SR_PIPE_PUSH_TABLE_MAX)
        msg = "store rows (store words / elements per packet) times workers must be at most "
              "268435456 (2^28): use more elements per packet or a smaller store";
    else if (((uint64_t)jp->store_words + jp->elems_per_pkt - 1) / jp->elems_per_pkt * jp->ring >
             SR_PIPE_PUSH_TABLE_MAX)
        msg = "store rows (store words / elements per packet) times the ring must be at most "
              "268435456 (2^28): use more elements per packet, a smaller store or ring";
    if (why)
        *why = msg;
    return msg ? -EINVAL : 0;
}

/* ---- jobs ---------------------------------------------------------------------- */

int sr_pipe_job_add(sr_pipe *p, uint16_t job_id, const sr_pipe_job_params *jp)
{
    sr_pipe_job *j;

    if (!p || sr_pipe_job_params_check(jp, NULL))
        return -EINVAL;
    if (p->jobs[job_id])
        return -EEXIST;
    if (jp->up && p->n_leaves == SR_PIPE_MAX_LEAVES)
        return -ENOSPC;
    if (jp->fallback && (!p->pool.blocks || p->pool.elems != jp->elems_per_pkt))
        return -ENXIO;
    if (jp->fallback && p->pool.n_jobs == SR_POOL_MAX_JOBS)
        return -ENOSPC;

    j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    j->id = job_id;
    j->n = jp->n_workers;
    j->elems = jp->elems_per_pkt;
    j->slots = jp->pool_slots;
    j->params = *jp;
    j->n_local = jp->local_n ? jp->local_n : jp->n_workers;
    if (sr_allreduce_alloc(j) < 0 || sr_store_alloc(j) < 0 ||
        sr_step_alloc(j) < 0 || sr_epoch_alloc(j) < 0 ||
        sr_barrier_job_alloc(j) < 0 || (jp->fallback && sr_pool_job_alloc(p, j) < 0) ||
        (jp->tna_model && sr_tna_job_added(p, j) < 0)) {
        job_free(p, j);
        return -ENOMEM;
    }
    p->jobs[job_id] = j;
    p->n_jobs++;
    if (jp->up)
        p->leaves[p->n_leaves++] = job_id;
    return 0;
}

int sr_pipe_job_remove(sr_pipe *p, uint16_t job_id)
{
    if (!p || !p->jobs[job_id])
        return -ENOENT;
    for (unsigned i = 0; i < p->n_leaves; i++)
        if (p->leaves[i] == job_id)
            p->leaves[i] = p->leaves[--p->n_leaves];
    job_free(p, p->jobs[job_id]);
    p->jobs[job_id] = NULL;
    p->n_jobs--;
    return 0;
}

int sr_pipe_job_reset(sr_pipe *p, uint16_t job_id)
{
    sr_pipe_job *j = p->jobs[job_id];

    if (!j)
        return -ENOENT;
    if (sr_membership_renew(j) < 0)
        return -ENOMEM;
    if (j->params.fallback)
        sr_pool_job_release(p, j);
    j->c.resets++;
    return 0;
}

unsigned sr_pipe_job_list(const sr_pipe *p, uint16_t *ids, unsigned cap)
{
    unsigned k = 0;

    if (!p)
        return 0;
    for (size_t i = 0; i < SR_PIPE_NJOBS && k < cap; i++)
        if (p->jobs[i])
            ids[k++] = (uint16_t)i;
    return p->n_jobs;
}

/* What job_add allocated for j, in bytes (the sizes of its callocs). */
static uint64_t job_bytes(const sr_pipe_job *j)
{
    uint64_t cells = 2u * (uint64_t)j->slots;
    uint64_t per_cell = sizeof *j->seen + sizeof *j->cnt + sizeof *j->m_seq + sizeof *j->m_off +
                        sizeof *j->m_total + sizeof *j->m_count + sizeof *j->m_exp +
                        sizeof *j->nexp + sizeof *j->up_wait + sizeof *j->up_ms +
                        (uint64_t)j->elems * sizeof *j->values;
    uint64_t store = j->store_words ? (uint64_t)j->store_words * sizeof *j->store +
                                          (uint64_t)j->rows * j->n * sizeof *j->push_last +
                                          (uint64_t)j->rows * sizeof *j->row_epoch +
                                          sr_step_bytes(j)
                                    : 0;

    return sizeof *j + cells * per_cell + (uint64_t)j->slots * sizeof *j->slot_epoch + store +
           ((uint64_t)j->bar.mask + 1) * sizeof *j->bar.ring;
}

int sr_pipe_job_info_get(const sr_pipe *p, uint16_t job_id, sr_pipe_job_info *info)
{
    const sr_pipe_job *j;

    if (!p || !p->jobs[job_id])
        return -ENOENT;
    j = p->jobs[job_id];
    info->job = j->id;
    info->n_workers = j->n;
    info->elems_per_pkt = j->elems;
    info->pool_slots = j->slots;
    info->store_words = j->store_words;
    info->ring = j->params.ring;
    info->mode = j->params.mode;
    info->s = j->params.s;
    info->nonce = j->nonce;
    info->n_bound = (uint32_t)__builtin_popcountll(j->bound);
    info->n_live = (uint32_t)__builtin_popcountll(sr_membership_live(p, j));
    info->bytes = job_bytes(j);
    info->fallback = j->params.fallback;
    info->prio = j->params.prio;
    info->held = j->held;
    return 0;
}

int sr_pipe_job_held_get(const sr_pipe *p, uint16_t job_id, sr_pipe_job_held *h)
{
    const sr_pipe_job *j;

    if (!p || !p->jobs[job_id])
        return -ENOENT;
    j = p->jobs[job_id];
    memset(h, 0, sizeof *h);
    /* A slot whose tag is stale belongs to an earlier incarnation: the
     * first packet that names it clears it (epoch.c), so it holds nothing. */
    for (uint32_t s = 0; s < j->slots; s++) {
        size_t c = 2u * (size_t)s;

        if (sr_epoch_slot_current(j, s) &&
            (j->cnt[c] || j->cnt[c + 1] || j->up_wait[c] || j->up_wait[c + 1]))
            h->slots_open++;
    }
    for (uint32_t e = 0; e <= j->bar.mask; e++)
        if (j->bar.ring[e])
            h->ring_entries++;
    return 0;
}

/* ---- counters ------------------------------------------------------------------ */

int sr_pipe_job_counters_get(const sr_pipe *p, uint16_t job_id, sr_pipe_job_counters *c)
{
    if (!p || !p->jobs[job_id])
        return -ENOENT;
    *c = p->jobs[job_id]->c;
    return 0;
}

void sr_pipe_counters_get(const sr_pipe *p, sr_pipe_counters *c)
{
    *c = p->c;
}

int sr_pipe_job_counters_format(char *buf, size_t cap, const sr_pipe_job_counters *c)
{
    static const struct {
        const char *name;
        size_t off;
    } fields[] = {
#define SR_PIPE_X_ENTRY(name) {#name, offsetof(sr_pipe_job_counters, name)},
        SR_PIPE_JOB_COUNTERS(SR_PIPE_X_ENTRY)
#undef SR_PIPE_X_ENTRY
    };
    size_t used = 0;

    if (cap > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        uint64_t v;
        int r;

        memcpy(&v, (const char *)c + fields[i].off, sizeof v);
        r = snprintf(used < cap ? buf + used : NULL, used < cap ? cap - used : 0,
                     "%s%s=%" PRIu64, i ? " " : "", fields[i].name, v);
        if (r < 0)
            return r;
        used += (size_t)r;
    }
    return (int)used;
}
