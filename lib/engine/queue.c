/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue.c - the op queue as the API thread sees it: the misuse guards of a
 * call, op descriptors and their handles, submission, and waiting.
 *
 * Every public call that starts an operation (the modules' serene_allreduce,
 * serene_push, serene_clock, ... and the API layer's join) goes through
 * here: sr_engine_live, sr_call_enter, sr_op_alloc, sr_op_submit,
 * sr_call_end. An op is a preallocated descriptor, so starting one
 * allocates nothing.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/now.h"
#include "engine/engine.h"

sr_engine *sr_engine_live(const serene_ctx *ctx)
{
    const sr_engine *e = (const void *)ctx;
    return e && e->magic == SR_CTX_MAGIC ? (sr_engine *)e : NULL;
}

/* The order in which a context starts operations pairs them with the other
 * workers' calls, so two threads at once would mix their data silently:
 * the second is refused instead. */
int sr_call_enter(sr_engine *e)
{
    if (atomic_exchange_explicit(&e->entered, 1, memory_order_acquire)) {
        SR_ERR(&e->log, "another thread is inside a call on this context; a context "
                        "starts operations from one thread at a time");
        return SERENE_ERR_CONCURRENT;
    }
    return 0;
}

void sr_call_leave(sr_engine *e)
{
    atomic_store_explicit(&e->entered, 0, memory_order_release);
}

int sr_call_end(sr_engine *e, int rc, serene_op *h, serene_op **op_out)
{
    if (!rc) {
        if (op_out)
            *op_out = h;
        else
            rc = serene_op_wait(&h);
    }
    sr_call_leave(e);
    return rc;
}

int sr_call(serene_ctx *ctx, int (*start)(sr_engine *e, const void *req, serene_op **h),
            const void *req, serene_op **op_out)
{
    if (op_out)
        *op_out = NULL;
    sr_engine *e = sr_engine_live(ctx);
    serene_op *h = NULL;
    int rc = e ? sr_call_enter(e) : SERENE_ERR_INVAL;
    if (rc)
        return rc;
    rc = start(e, req, &h);
    return sr_call_end(e, rc, h, op_out);
}

void *sr_engine_self(const sr_engine *e, const sr_op_class *cls)
{
    for (unsigned i = 0; i < e->n_mods; i++)
        if (e->mods[i].cls == cls)
            return e->mods[i].self;
    return NULL;
}

/* Descriptors are used in turn, so a stale handle's descriptor is reused as
 * late as possible (handle.h). */
serene_op *sr_op_alloc(sr_engine *e, const sr_op_class *cls, void *self)
{
    for (unsigned k = 0; k < e->max_ops; k++) {
        unsigned i = (e->next_op + k) % e->max_ops;
        serene_op *op = &e->ops[i];
        int expect = SR_OPS_FREE;
        if (atomic_compare_exchange_strong(&op->state, &expect, SR_OPS_QUEUED)) {
            e->next_op = i + 1u;
            atomic_fetch_add(&op->gen, 1u);
            op->cls = cls;
            op->self = self;
            op->result = 0;
            memset(&op->kind, 0, sizeof *op - offsetof(serene_op, kind));
            return op;
        }
    }
    return NULL;
}

serene_op *sr_op_handle(serene_op *op)
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

void sr_engine_wake(sr_engine *e)
{
    uint64_t one = 1;
    /* A full eventfd counter already means "wake up": ignore EAGAIN. */
    if (write(e->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        SR_DEBUG(&e->log, "wake: %s", strerror(errno));
}

void sr_op_submit(sr_engine *e, serene_op *op)
{
    op->deadline_ns = sr_now_ns() + (uint64_t)e->cfg.timeout_ms * 1000000u;
    pthread_mutex_lock(&e->start_mu);
    unsigned tail = atomic_load_explicit(&e->ring_tail, memory_order_relaxed);
    e->ring[tail % e->max_ops] = (unsigned)(op - e->ops);
    atomic_store_explicit(&e->ring_tail, tail + 1, memory_order_release);
    pthread_mutex_unlock(&e->start_mu);
    sr_engine_wake(e);
}

void sr_op_done_now(serene_op *op)
{
    atomic_store_explicit(&op->state, SR_OPS_DONE, memory_order_release);
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
static int op_sleep(sr_engine *e, serene_op *op, uint32_t gen)
{
    int ok = 1;
    pthread_mutex_lock(&e->mu);
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
        pthread_cond_timedwait(&e->cv, &e->mu, &ts);
    }
    pthread_mutex_unlock(&e->mu);
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
    sr_engine *e = op->eng;
    uint32_t gen = atomic_load(&op->gen);
    atomic_fetch_add(&e->waiters, 1);
    if (atomic_load(&e->dying)) {
        atomic_fetch_sub(&e->waiters, 1);
        return SERENE_ERR_SHUTDOWN;
    }
    int rc = SERENE_ERR_INVAL;
    if (op_sleep(e, op, gen)) {
        rc = op->result;
        /* Two threads waiting for one op: one gets its result, the other
         * INVAL, as if it had come second. */
        int expect = SR_OPS_DONE;
        if (atomic_load(&op->gen) != gen ||
            !atomic_compare_exchange_strong_explicit(&op->state, &expect, SR_OPS_FREE,
                                                     memory_order_acq_rel, memory_order_acquire))
            rc = SERENE_ERR_INVAL;
    }
    atomic_fetch_sub(&e->waiters, 1);
    return rc;
}
