/* SPDX-License-Identifier: Apache-2.0 */
/*
 * step.c - the worker side of the SSP step: push, clock and pull of one
 * iteration as one pipelined operation, the module the engine runs and the
 * public calls.
 *
 * The step's range is cut at the store's rows, one piece per row (as a
 * push), each a STEP carrying this worker's clock c and its update words;
 * each also says how many pieces the step has, so that the switch records
 * the clock in the barrier once it applied them all. The switch adds each
 * piece once per (row, worker, clock) and answers it with the
 * whole row as soon as the row holds every worker's steps of clocks
 * <= c - s(c) (p4/swswitch/step.c): under BSP the row's last worker
 * releases it to all, as an allreduce round; a worker the barrier holds
 * waits in the switch, not in a second round trip. Up to the engine's
 * window of pieces are in flight, each with its timer in the one
 * retransmission engine, and no more than the congestion window admits
 * (reliab/window.h, as for allreduce rounds: piece j is unit j of slot
 * j mod W): a row is as large as an allreduce round, and a full window
 * of them overflows a shaped link's queue.
 * Waiting is not loss, as for allreduce: an expired piece is not resent
 * but probed (STEP_PROBE, header only). STEP_HELD says the switch applied
 * it and the row waits (the timer backs off); STEP_NAK says it is not
 * there, or the row is ready and its answer was lost: the piece is resent
 * in full, which the switch applies once and answers with the row.
 * A piece with NaN/Inf in the update is sent as zeros and the step ends
 * with SERENE_ERR_NONFINITE, as an allreduce does: every worker's rows and
 * clock stay in step. An answer counts only for a piece in flight, at this step's clock (the
 * switch writes each receiver's own clock into its copy), so a late copy
 * from an earlier clock is never taken for the current one. The step ends
 * the clock (serene_get_clock_info's clock moves on) when every piece has
 * its row; on a timeout the clock stays, and the same step may be
 * repeated: the switch does not add a piece twice.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "proto/wire.h"
#include "reliab/reliab.h"
#include "ssp/ssp.h"

/* ---- the module ------------------------------------------------------------ */

static int step_init(void *self, sr_engine *e)
{
    sr_step *sp = self;
    sp->clock = sr_engine_self(e, &sr_clock_class);
    sp->store = sr_engine_self(e, &sr_store_class);
    return sp->clock && sp->store ? 0 : SERENE_ERR_INVAL;
}

static int step_on_join(void *self, sr_engine *e)
{
    sr_step *sp = self;
    sp->pieces = calloc(e->window, sizeof *sp->pieces);
    if (!sp->pieces)
        return SERENE_ERR_NOMEM;
    return sr_arw_init(&sp->win, e->window) ? SERENE_ERR_NOMEM : 0;
}

static void step_fini(void *self, sr_engine *e)
{
    sr_step *sp = self;
    free(sp->pieces);
    sr_arw_fini(&sp->win);
}


static void send_piece(sr_step *sp, sr_engine *e, const serene_op *op, uint32_t j, uint64_t now)
{
    uint32_t s = j % sp->w_eff;
    sr_step_piece *pc = &sp->pieces[s];
    uint8_t *msg = sr_slot_msg(e, s);
    size_t start, end;
    sr_store_piece(e, op, j, &start, &end);
    uint32_t n = (uint32_t)(end - start);
    size_t k = start - op->offset;
    sr_hdr h;
    sr_hdr_base(e, &h, SR_OP_STEP);
    h.seq = sp->clk;
    h.offset = (uint32_t)start;
    h.count = (uint16_t)n;
    h.aux = sp->n_pieces; /* the switch records the clock once it applied them all */
    sr_hdr_pack(msg, &h);
    float m;
    /* NaN/Inf: the piece goes as zeros, so that every row and the clock
     * stay in step on every worker, and the step ends NONFINITE. Checked
     * here, piece by piece, while the piece is in the cache for the
     * encode, rather than in a pass over the whole update before sending. */
    if (op->src && e->qk.maxabs(op->src + k, n, &m)) {
        memset(msg + SR_WIRE_HDR_LEN, 0, 4u * n);
        sp->nonfinite = 1;
    } else {
        sr_store_encode(e, msg + SR_WIRE_HDR_LEN, op->src ? op->src + k : NULL,
                        op->src_i32 ? op->src_i32 + k : NULL, n);
    }
    pc->busy = 1;
    pc->probed = 0;
    pc->sent_ns = now;
    pc->probe_out_ns = 0;
    pc->start = h.offset;
    pc->count = h.count;
    sr_slot_send(e, s, 4u * h.count, now);
}

/* Send the ready pieces the congestion window admits, lowest first. */
static void drain(sr_step *sp, sr_engine *e, const serene_op *op, uint64_t now)
{
    uint32_t j, s;
    while (sr_arw_next(&sp->win, &j, &s))
        send_piece(sp, e, op, j, now);
}

static void step_begin(void *self, sr_engine *e, serene_op *op, uint64_t now)
{
    sr_step *sp = self;
    sp->n_pieces = sr_store_pieces(e, op);
    sp->w_eff = sp->n_pieces < e->window ? sp->n_pieces : e->window;
    sp->done = 0;
    sp->held = 0;
    sp->nonfinite = 0;
    sp->clk = atomic_load_explicit(&sp->clock->sync.clock, memory_order_relaxed);
    sr_rel_set_deadline(&e->rel, op->deadline_ns);
    sr_arw_call(&sp->win, sp->n_pieces, sp->w_eff);
    drain(sp, e, op, now);
}

/* The piece in flight an answer h is about, or NULL (late, duplicate or
 * foreign): its clock is this step's, and its offset lies in the piece's
 * row (a STEP_RESP carries the whole row, the others echo the piece). */
static sr_step_piece *piece_of(sr_step *sp, const sr_engine *e, const serene_op *op,
                               const sr_hdr *h, uint32_t *j)
{
    size_t w = e->params.elems_per_pkt;
    if (h->seq != sp->clk || h->worker != e->cfg.rank)
        return NULL;
    *j = (uint32_t)(h->offset / w - op->offset / w);
    if (h->offset < op->offset / w * w || *j >= sp->n_pieces)
        return NULL;
    sr_step_piece *pc = &sp->pieces[*j % sp->w_eff];
    if (!pc->busy || pc->start / w != h->offset / w)
        return NULL;
    return pc;
}

static void step_on_message(void *self, sr_engine *e, serene_op *op, const sr_hdr *h,
                            const uint8_t *payload, uint64_t now)
{
    sr_step *sp = self;
    uint32_t j;
    sr_step_piece *pc = piece_of(sp, e, op, h, &j);
    if (!pc) {
        SR_STAT_ADD(e, duplicates, 1);
        return;
    }
    uint32_t s = j % sp->w_eff;
    if (h->op != SR_OP_STEP_RESP)
        sr_probe_answered(e, &pc->probe_out_ns, now);
    if (h->op == SR_OP_STEP_HELD) { /* applied; the row waits: ask again later */
        if (!sp->held)
            SR_STAT_ADD(e, holds, 1);
        sp->held = 1;
        sr_rel_held(&e->rel, s);
        SR_STAT_ADD(e, held, 1);
        return;
    }
    if (h->op == SR_OP_STEP_NAK) { /* lost, or its row was: resend it whole */
        pc->probed = 1;
        if (sr_arw_loss(&sp->win, j, sp->win.srtt_ns))
            SR_STAT_ADD(e, window_cuts, 1);
        sr_slot_resend(e, s, now);
        return;
    }
    /* STEP_RESP: the row from h->offset; the piece's words must be in it. */
    uint32_t skip = pc->start - h->offset;
    if (pc->start < h->offset || h->count < skip + pc->count) {
        SR_STAT_ADD(e, rejected, 1);
        return;
    }
    /* The policy in force at this clock, for serene_get_clock_info, and the
     * lowest row low clock: every worker's whole steps up to it are in the
     * store, so the barrier's low is at least that. */
    if (!sp->done || (int32_t)(h->aux - sp->min_low) < 0)
        sp->min_low = h->aux;
    atomic_store(&sp->clock->sync.mode, (uint32_t)(uint8_t)h->exp);
    atomic_store(&sp->clock->sync.staleness, h->slot);
    size_t k = pc->start - op->offset;
    const uint8_t *own = op->flags & SERENE_STEP_OTHERS ? sr_slot_msg(e, s) + SR_WIRE_HDR_LEN
                                                         : NULL;
    sr_store_read(sp->store, e, pc->start, pc->count, payload + 4u * skip, own, op->flags,
                  op->dst ? op->dst + k : NULL, op->dst_i32 ? op->dst_i32 + k : NULL);
    pc->busy = 0;
    sr_rel_ack(&e->rel, s, now);
    sp->done++;
    if (!pc->probed)
        sr_arw_rtt(&sp->win, now - pc->sent_ns, now);
    sr_arw_done(&sp->win, j);
    drain(sp, e, op, now);
    if (sp->done == sp->n_pieces) {
        if ((int32_t)(sp->min_low - atomic_load(&sp->clock->sync.low)) > 0)
            atomic_store(&sp->clock->sync.low, sp->min_low);
        atomic_fetch_add(&sp->clock->sync.clock, 1);
        sr_op_finish(e, op, sp->nonfinite ? SERENE_ERR_NONFINITE : 0);
    }
}

/* A piece's timer expired: ask the switch, header only, whether it holds
 * the piece (see the top of this file). */
static void step_on_expire(void *self, sr_engine *e, serene_op *op, uint32_t s, uint64_t now)
{
    sr_step *sp = self;
    sr_step_piece *pc = &sp->pieces[s];
    int v = sr_rel_verdict(&e->rel, s, pc->probe_out_ns, now);
    /* Answers keep coming, just not this one yet: a delay (window.h). The
     * piece in slot s is the one whose row starts at pc->start. */
    if (v == SR_REL_QUEUED &&
        sr_arw_delay(&sp->win, pc->start / e->params.elems_per_pkt -
                                   op->offset / e->params.elems_per_pkt, sp->win.srtt_ns))
        SR_STAT_ADD(e, window_cuts, 1);
    if (v != SR_REL_PROBE)
        return; /* queued behind answers, or its probe or the oldest's speaks for it */
    pc->probed = 1;
    pc->probe_out_ns = now ? now : 1;
    sr_probe_send(e, pc->probe, s, SR_OP_STEP_PROBE);
}

static int step_on_error(void *self, sr_engine *e, serene_op *op, const sr_hdr *h)
{
    const sr_step *sp = self;
    if ((h->aux != SR_OP_STEP && h->aux != SR_OP_STEP_PROBE) || h->seq != sp->clk)
        return 0;
    sr_op_finish(e, op, sr_op_refused(e, h));
    return 1;
}

static void step_on_timeout(void *self, sr_engine *e, serene_op *op, int st)
{
    const sr_step *sp = self;
    SR_ERR(&e->log, "step of clock %u timed out (%s) after %d ms: %u of %u rows answered%s",
           sp->clk, st == SR_REL_RETRY_LIMIT ? "retry limit" : "deadline", e->cfg.timeout_ms,
           sp->done, sp->n_pieces, sp->held ? ", held by the barrier" : "");
    sr_op_finish(e, op, SERENE_ERR_TIMEOUT);
}

const sr_op_class sr_step_class = {
    .name = "step",
    .answers = {SR_OP_STEP_RESP, SR_OP_STEP_HELD, SR_OP_STEP_NAK},
    /* API thread, at creation: finds the clock and the store. */
    .init = step_init,
    /* Engine thread, at the join: the window's pieces. */
    .on_join = step_on_join,
    /* API thread, at destroy. */
    .fini = step_fini,
    /* Engine thread: the first window of pieces. */
    .begin = step_begin,
    /* Engine thread: a row, STEP_HELD or STEP_NAK for a piece. */
    .on_message = step_on_message,
    /* Engine thread: a piece's timer expired: probe it. */
    .on_expire = step_on_expire,
    /* Engine thread: the switch refused a piece (MISMATCH, RANGE, ...). */
    .on_error = step_on_error,
    /* Engine thread: deadline or retry limit; the clock stays. */
    .on_timeout = step_on_timeout,
};

/* ---- public calls ------------------------------------------------------------ */

/* What a step moves: update (src or src_i32) and out (dst or dst_i32). */
typedef struct step_req {
    size_t offset, count;
    const float *src;
    const int32_t *src_i32;
    float *dst;
    int32_t *dst_i32;
    unsigned flags;
} step_req;

/* Do [a, a + n) and [b, b + n) overlap without being the same range? */
static int overlap_shifted(const void *a, const void *b, size_t n)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b, len = n * 4u;
    return x != y && x < y + len && y < x + len;
}

/* Validate and queue a step (inside sr_call_enter); *h = its handle. */
static int step_start(sr_engine *e, const void *req, serene_op **h)
{
    const step_req *r = req;
    const void *src = r->src ? (const void *)r->src : (const void *)r->src_i32;
    const void *dst = r->dst ? (const void *)r->dst : (const void *)r->dst_i32;
    if (!r->count || !src || !dst || (r->flags & ~(SERENE_PULL_DELTA | SERENE_STEP_OTHERS)) ||
        r->flags == (SERENE_PULL_DELTA | SERENE_STEP_OTHERS) ||
        overlap_shifted(src, dst, r->count)) {
        SR_ERR(&e->log, "step: %s", !r->count ? "count is 0 (serene_clock ends a clock alone)"
                                    : !src || !dst ? "update or out is NULL"
                                    : overlap_shifted(src, dst, r->count)
                                        ? "update and out overlap without being the same"
                                        : "unknown or conflicting flags");
        return SERENE_ERR_INVAL;
    }
    sr_step *sp = sr_engine_self(e, &sr_step_class);
    size_t cap = atomic_load(&sp->store->words);
    if (r->offset > cap || r->count > cap - r->offset) {
        SR_ERR(&e->log, "step of %zu words at offset %zu is beyond the store's %zu words",
               r->count, r->offset, cap);
        return SERENE_ERR_RANGE;
    }
    /* Only a step that is valid fixes the context's mode. */
    int rc = sr_stale_claim(sp->clock, e, SR_STALE_CLASSIC);
    if (rc)
        return rc;
    serene_op *o = sr_op_alloc(e, &sr_step_class, sp);
    if (!o)
        return SERENE_ERR_BUSY;
    o->offset = r->offset;
    o->count = r->count;
    o->src = r->src;
    o->src_i32 = r->src_i32;
    o->dst = r->dst;
    o->dst_i32 = r->dst_i32;
    o->flags = r->flags;
    sr_op_submit(e, o);
    *h = sr_op_handle(o);
    return 0;
}

/* A step call: started (op_out) or waited for (op_out NULL). */
static int step_call(serene_ctx *ctx, const step_req *r, serene_op **op_out)
{
    return sr_call(ctx, step_start, r, op_out);
}

SERENE_API int serene_step(serene_ctx *ctx, size_t offset, const float *update, float *out,
                           size_t count, unsigned flags)
{
    step_req r = {.offset = offset, .count = count, .src = update, .dst = out, .flags = flags};
    return step_call(ctx, &r, NULL);
}

SERENE_API int serene_step_i32(serene_ctx *ctx, size_t offset, const int32_t *update,
                               int32_t *out, size_t count, unsigned flags)
{
    step_req r = {.offset = offset, .count = count, .src_i32 = update, .dst_i32 = out,
                  .flags = flags};
    return step_call(ctx, &r, NULL);
}

SERENE_API int serene_step_start(serene_ctx *ctx, size_t offset, const float *update,
                                 float *out, size_t count, unsigned flags, serene_op **op_out)
{
    step_req r = {.offset = offset, .count = count, .src = update, .dst = out, .flags = flags};
    return op_out ? step_call(ctx, &r, op_out) : SERENE_ERR_INVAL;
}
