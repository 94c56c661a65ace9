/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.c - the worker side of the SSP barrier: the clock module the engine
 * runs, the worker's view of the barrier, and the public calls.
 *
 * CLOCK(c) is resent on its timer until answered; PROCEED ends the call;
 * HOLD carries the staleness s in force at c, and the call ends when a
 * RELEASE (or a later answer) shows c - low <= s. A lost RELEASE costs a
 * retransmission, never a hang; the deadline bounds everything. Answers
 * that arrive between clock calls still move the view of low and high.
 */
#include <string.h>

#include "common/log.h"
#include "proto/wire.h"
#include "reliab/reliab.h"
#include "ssp/ssp.h"

/* The public sync modes are the wire's: serene_get_clock_info hands the
 * switch's mode word out as it is. */
#define SAME_MODE(name, value, doc)                                                                \
    _Static_assert((int)SERENE_SYNC_##name == SR_SYNC_##name,                                  \
                   "serene_sync_mode and the wire's sync modes differ at " #name);
SR_WIRE_SYNC_MODES(SAME_MODE)
#undef SAME_MODE

/* ---- the module ------------------------------------------------------------ */

static int clock_init(void *self, sr_engine *e)
{
    sr_clock *ck = self;
    /* Nothing finished yet: low = high = first clock - 1. */
    atomic_store(&ck->sync.low, UINT32_MAX);
    atomic_store(&ck->sync.high, UINT32_MAX);
    sr_stale_own(ck, e);
    return 0;
}

static void clock_begin(void *self, sr_engine *e, serene_op *op, uint64_t now)
{
    sr_clock *ck = self;
    sr_hdr h;
    sr_hdr_base(e, &h, SR_OP_CLOCK);
    h.seq = atomic_load_explicit(&ck->sync.clock, memory_order_relaxed);
    ck->held = 0;
    sr_rel_set_deadline(&e->rel, op->deadline_ns);
    sr_ctl_send(e, &h, now);
}

static void sync_seen(sr_clock *ck, uint32_t low, uint32_t high)
{
    /* Serial-number maxima: answers may arrive out of order. */
    if ((int32_t)(low - atomic_load(&ck->sync.low)) > 0)
        atomic_store(&ck->sync.low, low);
    if ((int32_t)(high - atomic_load(&ck->sync.high)) > 0)
        atomic_store(&ck->sync.high, high);
}

static void clock_proceed(sr_clock *ck, sr_engine *e, serene_op *op, uint64_t now)
{
    atomic_fetch_add(&ck->sync.clock, 1);
    SR_STAT_ADD(e, clock_wait_ns, now - op->start_ns);
    sr_op_finish(e, op, 0);
}

/* A held call goes on once low has come within s of its clock. */
static void release_if_near(sr_clock *ck, sr_engine *e, serene_op *op, uint32_t s, uint64_t now)
{
    uint32_t c = atomic_load(&ck->sync.clock);
    if ((int32_t)(c - atomic_load(&ck->sync.low)) <= (int32_t)s) {
        SR_STAT_ADD(e, releases, 1);
        sr_rel_disarm(&e->rel, 0);
        clock_proceed(ck, e, op, now);
    }
}

/* PROCEED or HOLD; op is NULL when no clock call is current. */
static void on_answer(sr_clock *ck, sr_engine *e, serene_op *op, const sr_hdr *h,
                      const uint8_t *payload, uint64_t now)
{
    if (h->count != SR_SYNC_WORDS) {
        SR_STAT_ADD(e, rejected, 1);
        return;
    }
    sync_seen(ck, h->aux, h->offset);
    if (!op && sr_stale_answer(ck, e, h, payload, now))
        return;
    if (!op || h->seq != atomic_load(&ck->sync.clock)) {
        SR_STAT_ADD(e, duplicates, 1);
        return;
    }
    uint32_t mode = sr_get_be32(payload), s = sr_get_be32(payload + 4);
    atomic_store(&ck->sync.mode, mode);
    atomic_store(&ck->sync.staleness, s);
    if (h->op == SR_OP_PROCEED) {
        sr_rel_ack(&e->rel, 0, now);
        clock_proceed(ck, e, op, now);
        return;
    }
    /* HOLD: keep resending CLOCK on its (backed-off) timer, wait for low. */
    if (!ck->held)
        SR_STAT_ADD(e, holds, 1);
    ck->held = 1;
    ck->held_s = s;
    /* A RELEASE overtaken by this HOLD may already have shown enough. */
    release_if_near(ck, e, op, s, now);
}

static void clock_on_message(void *self, sr_engine *e, serene_op *op, const sr_hdr *h,
                             const uint8_t *payload, uint64_t now)
{
    sr_clock *ck = self;
    if (h->op != SR_OP_RELEASE) {
        on_answer(ck, e, op, h, payload, now);
        return;
    }
    sync_seen(ck, h->aux, h->offset);
    if (ck->held)
        release_if_near(ck, e, op, ck->held_s, now);
}

static void clock_on_stray(void *self, sr_engine *e, const sr_hdr *h, const uint8_t *payload,
                           uint64_t now)
{
    sr_clock *ck = self;
    if (h->op == SR_OP_RELEASE)
        sync_seen(ck, h->aux, h->offset);
    else
        on_answer(ck, e, NULL, h, payload, now);
}

static int clock_on_error(void *self, sr_engine *e, serene_op *op, const sr_hdr *h)
{
    sr_clock *ck = self;
    if (h->aux != SR_OP_CLOCK || h->seq != atomic_load(&ck->sync.clock))
        return 0;
    sr_op_finish(e, op, sr_op_refused(e, h));
    return 1;
}

static void clock_on_timeout(void *self, sr_engine *e, serene_op *op, int st)
{
    const sr_clock *ck = self;
    SR_ERR(&e->log, "clock timed out (%s) after %d ms%s",
           st == SR_REL_RETRY_LIMIT ? "retry limit" : "deadline", e->cfg.timeout_ms,
           ck->held ? ", held by the barrier" : "");
    sr_op_finish(e, op, SERENE_ERR_TIMEOUT);
}

const sr_op_class sr_clock_class = {
    .name = "clock",
    .answers = {SR_OP_PROCEED, SR_OP_HOLD, SR_OP_RELEASE},
    /* API thread, at creation: the view before any clock finished. */
    .init = clock_init,
    /* Engine thread: CLOCK(c), resent on timer 0 until answered. */
    .begin = clock_begin,
    /* Engine thread: PROCEED ends the call; HOLD waits for a RELEASE. */
    .on_message = clock_on_message,
    /* Engine thread: answers between clock calls move the view of low/high. */
    .on_stray = clock_on_stray,
    /* Engine thread: the switch refused CLOCK(c) (CLOCK_AHEAD, ...). */
    .on_error = clock_on_error,
    /* Engine thread: deadline or retry limit; the clock stays unfinished. */
    .on_timeout = clock_on_timeout,
};

/* ---- public calls ------------------------------------------------------------ */

/* A clock call: started (op_out) or waited for (op_out NULL). */
static int clock_call(serene_ctx *ctx, serene_op **op_out)
{
    sr_engine *e = sr_engine_live(ctx);
    serene_op *h = NULL;
    int rc = e ? sr_call_enter(e) : SERENE_ERR_INVAL;
    if (rc)
        return rc;
    if ((rc = sr_stale_claim(sr_engine_self(e, &sr_clock_class), e, SR_STALE_CLASSIC)))
        return sr_call_end(e, rc, NULL, op_out);
    serene_op *o = sr_op_alloc(e, &sr_clock_class, sr_engine_self(e, &sr_clock_class));
    if (o) {
        sr_op_submit(e, o);
        h = sr_op_handle(o);
    }
    return sr_call_end(e, o ? 0 : SERENE_ERR_BUSY, h, op_out);
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
    const sr_engine *e = sr_engine_live(ctx);
    if (!e || !out)
        return SERENE_ERR_INVAL;
    sr_clock *ck = sr_engine_self(e, &sr_clock_class);
    memset(out, 0, sizeof *out);
    out->clock = atomic_load(&ck->sync.clock);
    out->low = atomic_load(&ck->sync.low);
    out->high = atomic_load(&ck->sync.high);
    out->mode = (serene_sync_mode)atomic_load(&ck->sync.mode);
    out->staleness = atomic_load(&ck->sync.staleness);
    return 0;
}
