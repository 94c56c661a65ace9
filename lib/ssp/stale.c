/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stale.c - the stream mode: SSP for a model of any size, over the
 * streaming allreduce (serene_stale_start, serene_stale_bound).
 *
 * The model stays on the workers; the switch holds the allreduce's window,
 * never the model. A clock is one allreduce of the worker's gradients,
 * queued as any other op (the allreduces of consecutive clocks go in
 * clock order), and one CLOCK announcement to the barrier, which must not
 * wait behind those allreduces: a worker learns s(c) from the answer to
 * CLOCK(c) while the allreduces of its earlier clocks are still in flight.
 * So the announcements go on the engine's side lane (engine.h, sr_side),
 * in clock order, one in flight:
 * - CLOCK(c) is sent once c is started and CLOCK(c - 1) was answered, so
 *   the switch records a worker's clocks in order (the P4 barrier relies
 *   on it, p4/swswitch/barrier.c);
 * - PROCEED or HOLD answers it: either carries the policy in force at c,
 *   which is all a worker here needs (it waits for sums, not for the
 *   barrier: a sum of clock c - s exists only once every worker finished
 *   c - s, so the barrier never holds a worker longer than its own wait);
 * - CLOCK_AHEAD (a worker whose announcements ran R past low, which only
 *   lagging announcements of a peer can cause) is resent on the lane's
 *   backed-off timer until low has moved; any other refusal is kept and
 *   reported by serene_stale_bound.
 * The policy of the last SR_STALE_POLICIES answered clocks is kept.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "allreduce/allreduce.h"
#include "common/log.h"
#include "common/now.h"
#include "proto/wire.h"
#include "ssp/ssp.h"

/* ---- the side lane (engine thread) ---------------------------------------- */

static void stale_poll(void *self, sr_engine *e, uint64_t now)
{
    sr_clock *ck = self;
    sr_stale *st = &ck->stale;
    uint32_t next = atomic_load_explicit(&st->answered, memory_order_relaxed);
    if (st->busy || atomic_load(&st->err) ||
        atomic_load_explicit(&st->started, memory_order_acquire) == next)
        return;
    sr_hdr h;
    sr_hdr_base(e, &h, SR_OP_CLOCK);
    h.seq = next;
    st->busy = 1;
    sr_side_send(e, &h, now);
}

/* The lane's answer is in: wake serene_stale_bound's waiters. */
static void lane_done(sr_engine *e)
{
    pthread_mutex_lock(&e->mu);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

int sr_stale_answer(sr_clock *ck, sr_engine *e, const sr_hdr *h, const uint8_t *payload,
                    uint64_t now)
{
    sr_stale *st = &ck->stale;
    uint32_t c = atomic_load_explicit(&st->answered, memory_order_relaxed);
    if (!st->busy || h->seq != c)
        return 0;
    uint32_t mode = sr_get_be32(payload), s = sr_get_be32(payload + 4);
    atomic_store(&st->policy[c % SR_STALE_POLICIES],
                 (uint64_t)c << 32 | (uint64_t)(mode & 0xffu) << 24 | (s & 0xffffffu));
    atomic_store(&ck->sync.mode, mode);
    atomic_store(&ck->sync.staleness, s);
    if (h->op == SR_OP_HOLD)
        SR_STAT_ADD(e, holds, 1);
    st->busy = 0;
    sr_side_stop(e, now);
    atomic_store_explicit(&st->answered, c + 1, memory_order_release);
    lane_done(e);
    stale_poll(ck, e, now); /* the next clock, if it was started */
    return 1;
}

static int stale_on_error(void *self, sr_engine *e, const sr_hdr *h)
{
    sr_clock *ck = self;
    sr_stale *st = &ck->stale;
    if (!st->busy || h->aux != SR_OP_CLOCK ||
        h->seq != atomic_load_explicit(&st->answered, memory_order_relaxed))
        return 0;
    if (h->status == SR_ST_CLOCK_AHEAD)
        return 1; /* resent on the lane's timer, once low has moved */
    atomic_store(&st->err, sr_op_refused(e, h));
    st->busy = 0;
    sr_side_stop(e, sr_now_ns());
    lane_done(e);
    return 1;
}

void sr_stale_own(sr_clock *ck, sr_engine *e)
{
    sr_side_own(e, ck, stale_poll, stale_on_error);
}

int sr_stale_claim(sr_clock *ck, const sr_engine *e, int use)
{
    int want = SR_STALE_UNUSED;
    if (atomic_compare_exchange_strong(&ck->stale.used, &want, use) || want == use)
        return 0;
    SR_ERR(&e->log, "%s: this context runs %s; one context cannot mix the stream mode "
                    "(serene_stale_start) with serene_clock and serene_step",
           use == SR_STALE_STREAM ? "serene_stale_start" : "serene_clock/serene_step",
           want == SR_STALE_STREAM ? "the stream mode" : "serene_clock/serene_step");
    return SERENE_ERR_INVAL;
}

/* ---- public calls ------------------------------------------------------------ */

SERENE_API int serene_stale_start(serene_ctx *ctx, const void *sendbuf, void *recvbuf,
                                  size_t count, serene_dtype dtype, serene_reduce_op op,
                                  unsigned flags, serene_op **op_out)
{
    if (!op_out)
        return SERENE_ERR_INVAL;
    *op_out = NULL;
    sr_engine *e = sr_engine_live(ctx);
    serene_op *h = NULL;
    int rc = e ? sr_call_enter(e) : SERENE_ERR_INVAL;
    if (rc)
        return rc;
    sr_clock *ck = sr_engine_self(e, &sr_clock_class);
    sr_stale *st = &ck->stale;
    /* The clock is announced (started + 1) as its allreduce is queued:
     * the engine, woken by the submission, sends the announcement first. */
    int fresh = atomic_load(&st->used) == SR_STALE_UNUSED;
    if (!(rc = sr_stale_claim(ck, e, SR_STALE_STREAM)) && (rc = atomic_load(&st->err)) == 0)
        rc = sr_allreduce_submit(e, sendbuf, recvbuf, count, dtype, op, flags, &h, &st->started);
    /* A first call refused (its arguments) leaves the context's mode open. */
    if (rc && fresh && atomic_load(&st->started) == 0) {
        int want = SR_STALE_STREAM;
        atomic_compare_exchange_strong(&st->used, &want, SR_STALE_UNUSED);
    }
    if (!rc)
        atomic_store(&ck->sync.clock, atomic_load(&st->started));
    return sr_call_end(e, rc, h, op_out);
}

SERENE_API int serene_stale_bound(serene_ctx *ctx, uint32_t clock, serene_sync_mode *mode,
                                  uint32_t *staleness)
{
    sr_engine *e = sr_engine_live(ctx);
    if (!e || !staleness)
        return SERENE_ERR_INVAL;
    sr_clock *ck = sr_engine_self(e, &sr_clock_class);
    sr_stale *st = &ck->stale;
    uint32_t started = atomic_load_explicit(&st->started, memory_order_acquire);
    if (atomic_load(&st->used) != SR_STALE_STREAM || (int32_t)(clock - started) >= 0) {
        SR_ERR(&e->log, "serene_stale_bound(%u): clock %u is not started (%u started)", clock,
               clock, started);
        return SERENE_ERR_INVAL;
    }
    atomic_fetch_add(&e->waiters, 1);
    int rc = 0;
    uint64_t deadline = sr_now_ns() + (uint64_t)e->cfg.timeout_ms * 1000000u;
    pthread_mutex_lock(&e->mu);
    while ((int32_t)(clock - atomic_load_explicit(&st->answered, memory_order_acquire)) >= 0) {
        if (atomic_load(&e->dying)) {
            rc = SERENE_ERR_SHUTDOWN;
            break;
        }
        if ((rc = atomic_load(&st->err)))
            break;
        if (sr_now_ns() >= deadline) {
            SR_ERR(&e->log, "serene_stale_bound(%u): the switch did not answer CLOCK(%u) within "
                            "%d ms", clock, clock, e->cfg.timeout_ms);
            rc = SERENE_ERR_TIMEOUT;
            break;
        }
        /* The lane wakes every waiter when it answers; the timed wait only
         * guards against a lost wake-up. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&e->cv, &e->mu, &ts);
    }
    pthread_mutex_unlock(&e->mu);
    atomic_fetch_sub(&e->waiters, 1);
    if (rc)
        return rc;
    uint64_t p = atomic_load(&st->policy[clock % SR_STALE_POLICIES]);
    if ((uint32_t)(p >> 32) != clock) {
        SR_ERR(&e->log, "serene_stale_bound(%u): only the last %u clocks' policies are kept",
               clock, SR_STALE_POLICIES);
        return SERENE_ERR_RANGE;
    }
    if (mode)
        *mode = (serene_sync_mode)(p >> 24 & 0xffu);
    *staleness = (uint32_t)(p & 0xffffffu);
    return 0;
}
