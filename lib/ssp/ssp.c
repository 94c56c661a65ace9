/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssp.c - the worker side of the SSP parameter store and barrier: push,
 * pull and clock, run by the context's engine thread.
 *
 * Push and pull cut their range at the store's row boundaries (a row is
 * the job's elems_per_pkt words), one request per row piece, up to the
 * window in flight, each timed by the one retransmission engine. A push
 * carries a per-context push number; the switch applies a push to a row
 * only if its number is newer than the last one applied there for this
 * worker, so a retransmission never double counts. Because an op's pieces
 * are distinct rows and ops run one after another, a row never has two
 * pushes of this worker in flight: arrival order is number order.
 *
 * Delta pulls subtract, modulo 2^32, the value this worker saw at its last
 * pull of the word, so they stay exact across wraps of the accumulators.
 *
 * Clock: CLOCK(c) is resent on its timer until answered; PROCEED ends the
 * call; HOLD carries the staleness s in force at c, and the call ends when
 * a RELEASE (or a later answer) shows c - low <= s. A lost RELEASE costs a
 * retransmission, never a hang; the deadline bounds everything.
 */
#include <stdlib.h>
#include <string.h>

#include "core/ctx.h"

int sr_ssp_setup(serene_ctx *ctx)
{
    uint32_t words = ctx->params.store_capacity;
    atomic_store(&ctx->store_words, words);
    free(ctx->pulled);
    ctx->pulled = NULL;
    if (words) {
        ctx->pulled = calloc(words, sizeof *ctx->pulled);
        if (!ctx->pulled)
            return SERENE_ERR_NOMEM;
    }
    return 0;
}

/* ---- push and pull ------------------------------------------------------ */

/* Store words [start, end) of request j of the current op. */
static void piece(const serene_ctx *ctx, uint32_t j, size_t *start, size_t *end)
{
    const serene_op *op = ctx->cur;
    size_t e = ctx->params.elems_per_pkt;
    size_t first_row = op->offset / e;
    *start = j == 0 ? op->offset : (first_row + j) * e;
    size_t row_end = (first_row + j + 1) * e, op_end = op->offset + op->count;
    *end = row_end < op_end ? row_end : op_end;
}

static void send_request(serene_ctx *ctx, uint32_t j, uint64_t now)
{
    serene_op *op = ctx->cur;
    uint32_t w = j % ctx->window;
    sr_slot *sl = &ctx->slots[w];
    size_t start, end;
    piece(ctx, j, &start, &end);
    uint32_t n = (uint32_t)(end - start);
    sr_hdr h;
    sr_hdr_base(ctx, &h, op->kind == SR_OPK_PUSH ? SR_OP_PUSH : SR_OP_PULL);
    h.seq = ctx->req_base + j;
    h.offset = (uint32_t)start;
    if (op->kind == SR_OPK_PUSH) {
        h.count = (uint16_t)n;
        h.aux = atomic_load_explicit(&ctx->sync.clock, memory_order_relaxed);
        uint8_t *pl = sl->msg + SR_WIRE_HDR_LEN;
        size_t k = start - op->offset;
        if (op->src_i32) {
            for (uint32_t i = 0; i < n; i++)
                sr_put_be32(pl + 4 * i, (uint32_t)op->src_i32[k + i]);
        } else {
            size_t sat = ctx->qk.encode(pl, op->src + k, n,
                                        (float)(1u << ctx->cfg.store_frac_bits));
            if (sat)
                SR_STAT_ADD(ctx, saturations, sat);
        }
    } else {
        h.count = 0;
        h.aux = n;
    }
    sr_hdr_pack(sl->msg, &h);
    sl->req_seq = h.seq;
    sl->offset = h.offset;
    sl->count = (uint16_t)n;
    sr_slot_send(ctx, w, h.count, now);
}

static void req_begin(serene_ctx *ctx, uint64_t now)
{
    serene_op *op = ctx->cur;
    size_t e = ctx->params.elems_per_pkt;
    ctx->n_req = (uint32_t)((op->offset + op->count - 1) / e - op->offset / e + 1);
    ctx->req_done = 0;
    /* Push numbers are this worker's, consecutive over its whole life in
     * the job, so every push is newer than the last applied to its row. */
    uint32_t *seq = op->kind == SR_OPK_PUSH ? &ctx->push_seq : &ctx->pull_seq;
    ctx->req_base = *seq + 1;
    *seq += ctx->n_req;
    sr_rel_set_deadline(&ctx->rel, op->deadline_ns);
    uint32_t first = ctx->n_req < ctx->window ? ctx->n_req : ctx->window;
    for (uint32_t j = 0; j < first; j++)
        send_request(ctx, j, now);
}

/* The request this answer is for, or NULL (a duplicate or a stray). */
static sr_slot *req_match(serene_ctx *ctx, const sr_hdr *h, int kind, uint32_t *j)
{
    const serene_op *op = ctx->cur;
    if (!op || op->kind != kind)
        return NULL;
    *j = h->seq - ctx->req_base;
    if (*j >= ctx->n_req)
        return NULL;
    sr_slot *sl = &ctx->slots[*j % ctx->window];
    if (!sl->busy || sl->req_seq != h->seq || sl->offset != h->offset)
        return NULL;
    return sl;
}

static void req_done(serene_ctx *ctx, sr_slot *sl, uint32_t j, uint64_t now)
{
    sl->busy = 0;
    sr_rel_ack(&ctx->rel, j % ctx->window, now);
    ctx->req_done++;
    if (j + ctx->window < ctx->n_req)
        send_request(ctx, j + ctx->window, now);
    if (ctx->req_done == ctx->n_req)
        sr_op_finish(ctx, ctx->cur, 0);
}

static void on_push_ack(serene_ctx *ctx, const sr_hdr *h, uint64_t now)
{
    uint32_t j;
    sr_slot *sl = req_match(ctx, h, SR_OPK_PUSH, &j);
    if (!sl) {
        SR_STAT_ADD(ctx, duplicates, 1);
        return;
    }
    req_done(ctx, sl, j, now);
}

static void on_pull_resp(serene_ctx *ctx, const sr_hdr *h, const uint8_t *payload, uint64_t now)
{
    uint32_t j;
    sr_slot *sl = req_match(ctx, h, SR_OPK_PULL, &j);
    if (!sl || h->count != sl->count) {
        SR_STAT_ADD(ctx, duplicates, 1);
        return;
    }
    const serene_op *op = ctx->cur;
    size_t k = h->offset - op->offset;
    float scale = 1.0f / (float)(1u << ctx->cfg.store_frac_bits);
    for (uint32_t i = 0; i < h->count; i++) {
        uint32_t now_v = sr_get_be32(payload + 4 * i);
        uint32_t *seen = &ctx->pulled[h->offset + i];
        /* Modulo 2^32: exact whenever the true change fits an int32. */
        int32_t v = (int32_t)(op->flags & SERENE_PULL_DELTA ? now_v - *seen : now_v);
        *seen = now_v;
        if (op->dst_i32)
            op->dst_i32[k + i] = v;
        else
            op->dst[k + i] = (float)v * scale;
    }
    req_done(ctx, sl, j, now);
}

/* ---- clock ------------------------------------------------------------------ */

static void clock_begin(serene_ctx *ctx, uint64_t now)
{
    sr_hdr h;
    sr_hdr_base(ctx, &h, SR_OP_CLOCK);
    h.seq = atomic_load_explicit(&ctx->sync.clock, memory_order_relaxed);
    sr_hdr_pack(ctx->ctl_msg, &h);
    ctx->ctl_len = SR_WIRE_HDR_LEN;
    ctx->held = 0;
    sr_rel_set_deadline(&ctx->rel, ctx->cur->deadline_ns);
    sr_tx_queue(ctx, ctx->ctl_msg, ctx->ctl_len);
    sr_rel_arm(&ctx->rel, 0, now);
}

static void sync_seen(serene_ctx *ctx, uint32_t low, uint32_t high)
{
    /* Serial-number maxima: answers may arrive out of order. */
    if ((int32_t)(low - atomic_load(&ctx->sync.low)) > 0)
        atomic_store(&ctx->sync.low, low);
    if ((int32_t)(high - atomic_load(&ctx->sync.high)) > 0)
        atomic_store(&ctx->sync.high, high);
}

static void clock_proceed(serene_ctx *ctx, uint64_t now)
{
    serene_op *op = ctx->cur;
    atomic_fetch_add(&ctx->sync.clock, 1);
    SR_STAT_ADD(ctx, clock_wait_ns, now - op->start_ns);
    sr_op_finish(ctx, op, 0);
}

static void on_answer(serene_ctx *ctx, const sr_hdr *h, const uint8_t *payload, uint64_t now)
{
    serene_op *op = ctx->cur;
    uint32_t c = atomic_load(&ctx->sync.clock);
    if (h->count != SR_SYNC_WORDS) {
        SR_STAT_ADD(ctx, rejected, 1);
        return;
    }
    sync_seen(ctx, h->aux, h->offset);
    if (!op || op->kind != SR_OPK_CLOCK || h->seq != c) {
        SR_STAT_ADD(ctx, duplicates, 1);
        return;
    }
    uint32_t mode = sr_get_be32(payload), s = sr_get_be32(payload + 4);
    atomic_store(&ctx->sync.mode, mode);
    atomic_store(&ctx->sync.staleness, s);
    if (h->op == SR_OP_PROCEED) {
        sr_rel_ack(&ctx->rel, 0, now);
        clock_proceed(ctx, now);
        return;
    }
    /* HOLD: keep resending CLOCK on its (backed-off) timer, wait for low. */
    if (!ctx->held)
        SR_STAT_ADD(ctx, holds, 1);
    ctx->held = 1;
    ctx->held_s = s;
    /* A RELEASE overtaken by this HOLD may already have shown enough. */
    if ((int32_t)(c - atomic_load(&ctx->sync.low)) <= (int32_t)s) {
        SR_STAT_ADD(ctx, releases, 1);
        sr_rel_disarm(&ctx->rel, 0);
        clock_proceed(ctx, now);
    }
}

static void on_release(serene_ctx *ctx, const sr_hdr *h, uint64_t now)
{
    sync_seen(ctx, h->aux, h->offset);
    serene_op *op = ctx->cur;
    uint32_t c = atomic_load(&ctx->sync.clock);
    if (!op || op->kind != SR_OPK_CLOCK || !ctx->held)
        return;
    if ((int32_t)(c - atomic_load(&ctx->sync.low)) <= (int32_t)ctx->held_s) {
        SR_STAT_ADD(ctx, releases, 1);
        sr_rel_disarm(&ctx->rel, 0);
        clock_proceed(ctx, now);
    }
}

/* ---- dispatch ------------------------------------------------------------------ */

void sr_ssp_begin(serene_ctx *ctx, uint64_t now)
{
    serene_op *op = ctx->cur;
    op->start_ns = now;
    if (op->kind == SR_OPK_CLOCK) {
        clock_begin(ctx, now);
        return;
    }
    if (op->kind == SR_OPK_PUSH && op->src) {
        float m;
        if (ctx->qk.maxabs(op->src, op->count, &m)) {
            sr_op_finish(ctx, op, SERENE_ERR_NONFINITE);
            return;
        }
    }
    req_begin(ctx, now);
}

void sr_ssp_on_message(serene_ctx *ctx, const sr_hdr *h, const uint8_t *payload, uint64_t now)
{
    switch (h->op) {
    case SR_OP_PUSH_ACK:
        on_push_ack(ctx, h, now);
        break;
    case SR_OP_PULL_RESP:
        on_pull_resp(ctx, h, payload, now);
        break;
    case SR_OP_PROCEED:
    case SR_OP_HOLD:
        on_answer(ctx, h, payload, now);
        break;
    case SR_OP_RELEASE:
        on_release(ctx, h, now);
        break;
    default:
        break;
    }
}
