/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.c - the worker side of the SSP parameter store: push and pull, the
 * module the engine runs and the public calls.
 *
 * Push and pull cut their range at the store's row boundaries (a row is
 * the job's elems_per_pkt words), one request per row piece, up to the
 * engine's window in flight and no more than the congestion window admits
 * (reliab/window.h, as for allreduce rounds and step pieces: request j is
 * unit j of slot j mod W), each timed by the one retransmission engine. A
 * request whose timer fires while answers to later ones keep coming is
 * queued at a slow switch, not lost: it is not resent, and the window
 * shrinks; one that answers overtook is resent whole. A push
 * carries a per-context push number; the switch applies a push to a row
 * only if its number is newer than the last one applied there for this
 * worker, so a retransmission never double counts. Because an op's pieces
 * are distinct rows and ops run one after another, a row never has two
 * pushes of this worker in flight: arrival order is number order.
 *
 * Delta pulls subtract, modulo 2^32, the value this worker saw at its last
 * pull of the word, so they stay exact across wraps of the accumulators.
 *
 * A switch whose store takes whole rows only (JOIN_ACK's
 * SR_FLAG_WHOLE_ROWS: the Tofino program) gets each piece as its whole
 * row: a push's words outside the piece are 0 (adding 0 changes nothing),
 * a pull's answer is read for the piece's words only.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "proto/wire.h"
#include "reliab/reliab.h"
#include "ssp/ssp.h"

enum { STORE_PUSH = 1, STORE_PULL = 2 }; /* serene_op.kind */

/* ---- the module ------------------------------------------------------------ */

static int store_init(void *self, sr_engine *e)
{
    sr_store *st = self;
    st->clock = sr_engine_self(e, &sr_clock_class);
    return st->clock ? 0 : SERENE_ERR_INVAL;
}

static int store_on_join(void *self, sr_engine *e)
{
    sr_store *st = self;
    uint32_t words = e->params.store_capacity;
    atomic_store(&st->words, words);
    st->slots = calloc(e->window, sizeof *st->slots);
    if (!st->slots || sr_arw_init(&st->win, e->window))
        return SERENE_ERR_NOMEM;
    if (words) {
        st->pulled = calloc(words, 4);
        if (!st->pulled)
            return SERENE_ERR_NOMEM;
    }
    return 0;
}

static void store_fini(void *self, sr_engine *e)
{
    sr_store *st = self;
    free(st->pulled);
    free(st->slots);
    sr_arw_fini(&st->win);
}

void sr_store_piece(const sr_engine *e, const serene_op *op, uint32_t j, size_t *start,
                    size_t *end)
{
    size_t w = e->params.elems_per_pkt;
    size_t first_row = op->offset / w;
    *start = j == 0 ? op->offset : (first_row + j) * w;
    size_t row_end = (first_row + j + 1) * w, op_end = op->offset + op->count;
    *end = row_end < op_end ? row_end : op_end;
}

uint32_t sr_store_pieces(const sr_engine *e, const serene_op *op)
{
    size_t w = e->params.elems_per_pkt;
    return (uint32_t)((op->offset + op->count - 1) / w - op->offset / w + 1);
}

void sr_store_encode(sr_engine *e, uint8_t *pl, const float *src, const int32_t *src_i32,
                     uint32_t n)
{
    if (src_i32) {
        for (uint32_t i = 0; i < n; i++)
            sr_put_be32(pl + 4 * i, (uint32_t)src_i32[i]);
        return;
    }
    size_t sat = e->qk.encode(pl, src, n, (float)(1u << e->cfg.store_frac_bits));
    if (sat)
        SR_STAT_ADD(e, saturations, sat);
}

/* The push payload of words [start, start + n) of op at pl. */
static void push_payload(sr_engine *e, const serene_op *op, uint8_t *pl, size_t start,
                         uint32_t n)
{
    size_t k = start - op->offset;
    sr_store_encode(e, pl, op->src ? op->src + k : NULL, op->src_i32 ? op->src_i32 + k : NULL, n);
}

/* What request j puts on the wire: its piece, or with whole rows the
 * piece's row ([*wire_off, *wire_off + *wire_n) holds [start, end)). */
static void wire_range(const sr_engine *e, size_t start, size_t end, size_t *wire_off,
                       uint32_t *wire_n)
{
    size_t w = e->params.elems_per_pkt;
    *wire_off = e->whole_rows ? start - start % w : start;
    *wire_n = (uint32_t)(e->whole_rows ? w : end - start);
}

static void send_request(sr_store *st, sr_engine *e, const serene_op *op, uint32_t j,
                         uint64_t now)
{
    uint32_t w = j % st->w_eff;
    sr_req_slot *sl = &st->slots[w];
    uint8_t *msg = sr_slot_msg(e, w);
    size_t start, end, off;
    uint32_t n;
    sr_store_piece(e, op, j, &start, &end);
    wire_range(e, start, end, &off, &n);
    sr_hdr h;
    sr_hdr_base(e, &h, op->kind == STORE_PUSH ? SR_OP_PUSH : SR_OP_PULL);
    h.seq = st->req_base + j;
    h.offset = (uint32_t)off;
    if (op->kind == STORE_PUSH) {
        uint8_t *pl = msg + SR_WIRE_HDR_LEN;
        h.count = (uint16_t)n;
        h.aux = atomic_load_explicit(&st->clock->sync.clock, memory_order_relaxed);
        if (n != end - start)
            memset(pl, 0, 4u * (size_t)n);
        push_payload(e, op, pl + 4u * (start - off), start, (uint32_t)(end - start));
    } else {
        h.count = 0;
        h.aux = n;
    }
    sr_hdr_pack(msg, &h);
    sl->busy = 1;
    sl->resent = 0;
    sl->sent_ns = now;
    sl->req_seq = h.seq;
    sl->offset = h.offset;
    sl->count = (uint16_t)n;
    sr_slot_send(e, w, 4u * h.count, now);
}

/* Send the ready requests the congestion window admits, lowest first. */
static void drain(sr_store *st, sr_engine *e, const serene_op *op, uint64_t now)
{
    uint32_t j, s;
    while (sr_arw_next(&st->win, &j, &s))
        send_request(st, e, op, j, now);
}

static void store_begin(void *self, sr_engine *e, serene_op *op, uint64_t now)
{
    sr_store *st = self;
    if (op->kind == STORE_PUSH && op->src) {
        float m;
        if (e->qk.maxabs(op->src, op->count, &m)) {
            sr_op_finish(e, op, SERENE_ERR_NONFINITE);
            return;
        }
    }
    st->n_req = sr_store_pieces(e, op);
    st->req_done = 0;
    /* Push numbers are this worker's, consecutive over its whole life in
     * the job, so every push is newer than the last applied to its row. */
    uint32_t *seq = op->kind == STORE_PUSH ? &st->push_seq : &st->pull_seq;
    st->req_base = *seq + 1;
    *seq += st->n_req;
    sr_rel_set_deadline(&e->rel, op->deadline_ns);
    st->w_eff = st->n_req < e->window ? st->n_req : e->window;
    sr_arw_call(&st->win, st->n_req, st->w_eff);
    drain(st, e, op, now);
}

/* The request this answer is for, or NULL (a duplicate or a stray). */
static sr_req_slot *req_match(sr_store *st, const sr_engine *e, const serene_op *op,
                              const sr_hdr *h, int kind, uint32_t *j)
{
    if (op->kind != kind)
        return NULL;
    *j = h->seq - st->req_base;
    if (*j >= st->n_req)
        return NULL;
    sr_req_slot *sl = &st->slots[*j % st->w_eff];
    if (!sl->busy || sl->req_seq != h->seq || sl->offset != h->offset)
        return NULL;
    return sl;
}

static void req_done(sr_store *st, sr_engine *e, serene_op *op, sr_req_slot *sl, uint32_t j,
                     uint64_t now)
{
    uint32_t s = j % st->w_eff;
    sl->busy = 0;
    sr_rel_ack(&e->rel, s, now);
    st->req_done++;
    if (!sl->resent)
        sr_arw_rtt(&st->win, now - sl->sent_ns, now);
    sr_arw_done(&st->win, j);
    drain(st, e, op, now);
    if (st->req_done == st->n_req)
        sr_op_finish(e, op, 0);
}

/* A big-endian word as one load and a byte swap, which vectorizes (the
 * byte-wise sr_get_be32 does not). */
static inline uint32_t be32_load(const uint8_t *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return x;
#else
    return __builtin_bswap32(x);
#endif
}

void sr_store_read(const sr_store *st, const sr_engine *e, uint32_t word, uint32_t n,
                   const uint8_t *payload, const uint8_t *own, unsigned flags, float *dst,
                   int32_t *dst_i32)
{
    const float scale = 1.0f / (float)(1u << e->cfg.store_frac_bits);
    uint8_t *seen = st->pulled + 4u * (size_t)word;
    if (!own && !(flags & (SERENE_PULL_DELTA | SERENE_STEP_OTHERS))) {
        /* Absolute: the SIMD decode, and the view is the bytes as read. */
        if (dst)
            e->qk.decode(dst, payload, n, scale);
        else
            for (size_t i = 0; i < n; i++)
                dst_i32[i] = (int32_t)be32_load(payload + 4 * i);
        memcpy(seen, payload, 4u * (size_t)n);
        return;
    }
    /* Modulo 2^32: exact whenever the true change fits an int32. */
    for (size_t i = 0; i < n; i++) {
        uint32_t now_v = be32_load(payload + 4 * i);
        uint32_t v = now_v - be32_load(seen + 4 * i) - (own ? be32_load(own + 4 * i) : 0u);
        if (dst_i32)
            dst_i32[i] = (int32_t)v;
        else
            dst[i] = (float)(int32_t)v * scale;
    }
    memcpy(seen, payload, 4u * (size_t)n);
}

/* Request j's answer: its piece's words (the payload may be the whole row). */
static void pull_copy(const sr_store *st, const sr_engine *e, const serene_op *op,
                      const sr_hdr *h, const uint8_t *payload, uint32_t j)
{
    size_t start, end;
    sr_store_piece(e, op, j, &start, &end);
    size_t k = start - op->offset;
    sr_store_read(st, e, (uint32_t)start, (uint32_t)(end - start),
                  payload + 4u * (start - h->offset), NULL, op->flags,
                  op->dst ? op->dst + k : NULL, op->dst_i32 ? op->dst_i32 + k : NULL);
}

static void store_on_message(void *self, sr_engine *e, serene_op *op, const sr_hdr *h,
                             const uint8_t *payload, uint64_t now)
{
    sr_store *st = self;
    uint32_t j;
    int push = h->op == SR_OP_PUSH_ACK;
    sr_req_slot *sl = req_match(st, e, op, h, push ? STORE_PUSH : STORE_PULL, &j);
    if (!sl || (!push && h->count != sl->count)) {
        SR_STAT_ADD(e, duplicates, 1);
        return;
    }
    if (!push)
        pull_copy(st, e, op, h, payload, j);
    req_done(st, e, op, sl, j, now);
}

/* A request's timer expired: queued behind answers (a delay: the window
 * shrinks), or lost or its answer was (resent whole: the switch applies a
 * push once and answers a pull again). */
static void store_on_expire(void *self, sr_engine *e, serene_op *op, uint32_t s, uint64_t now)
{
    sr_store *st = self;
    sr_req_slot *sl = &st->slots[s];
    uint32_t j = sl->req_seq - st->req_base;
    int v = sr_rel_verdict(&e->rel, s, 0, now);
    if (v == SR_REL_QUEUED && sr_arw_delay(&st->win, j, st->win.srtt_ns))
        SR_STAT_ADD(e, window_cuts, 1);
    if (v != SR_REL_PROBE || !sl->busy)
        return;
    sl->resent = 1;
    if (sr_arw_loss(&st->win, j, st->win.srtt_ns))
        SR_STAT_ADD(e, window_cuts, 1);
    sr_slot_resend(e, s, now);
}

static int store_on_error(void *self, sr_engine *e, serene_op *op, const sr_hdr *h)
{
    const sr_store *st = self;
    if (h->aux != (op->kind == STORE_PUSH ? SR_OP_PUSH : SR_OP_PULL) ||
        h->seq - st->req_base >= st->n_req)
        return 0;
    sr_op_finish(e, op, sr_op_refused(e, h));
    return 1;
}

static void store_on_timeout(void *self, sr_engine *e, serene_op *op, int st)
{
    SR_ERR(&e->log, "%s timed out (%s) after %d ms", op->kind == STORE_PUSH ? "push" : "pull",
           st == SR_REL_RETRY_LIMIT ? "retry limit" : "deadline", e->cfg.timeout_ms);
    sr_op_finish(e, op, SERENE_ERR_TIMEOUT);
}

const sr_op_class sr_store_class = {
    .name = "store",
    .answers = {SR_OP_PUSH_ACK, SR_OP_PULL_RESP},
    /* API thread, at creation: finds the clock, whose number pushes carry. */
    .init = store_init,
    /* Engine thread, at the join: the capacity, the delta-pull view, slots. */
    .on_join = store_on_join,
    /* API thread, at destroy. */
    .fini = store_fini,
    /* Engine thread: the first window of row pieces (a push of NaN/Inf
     * fails without sending). */
    .begin = store_begin,
    /* Engine thread: PUSH_ACK or PULL_RESP of a piece; send what the
     * window admits. */
    .on_message = store_on_message,
    /* Engine thread: a piece's timer expired: a delay, or resend it. */
    .on_expire = store_on_expire,
    /* Engine thread: the switch refused a piece (RANGE, ...). */
    .on_error = store_on_error,
    /* Engine thread: deadline or retry limit. */
    .on_timeout = store_on_timeout,
};

/* ---- public calls ------------------------------------------------------------ */

SERENE_API size_t serene_store_capacity(const serene_ctx *ctx)
{
    const sr_engine *e = sr_engine_live(ctx);
    const sr_store *st = e ? sr_engine_self(e, &sr_store_class) : NULL;
    return st ? atomic_load(&((sr_store *)st)->words) : 0;
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

/* Validate and queue a push or pull (inside sr_call_enter); *h = its handle. */
static int store_start(sr_engine *e, const void *req, serene_op **h)
{
    const store_req *r = req;
    if ((r->count && !r->src && !r->src_i32 && !r->dst && !r->dst_i32) ||
        (r->flags & ~SERENE_PULL_DELTA))
        return SERENE_ERR_INVAL;
    sr_store *st = sr_engine_self(e, &sr_store_class);
    size_t cap = atomic_load(&st->words);
    if (r->offset > cap || r->count > cap - r->offset) {
        SR_ERR(&e->log, "%s of %zu words at offset %zu is beyond the store's %zu words",
               r->kind == STORE_PUSH ? "push" : "pull", r->count, r->offset, cap);
        return SERENE_ERR_RANGE;
    }
    serene_op *o = sr_op_alloc(e, &sr_store_class, st);
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
    if (r->count == 0)
        sr_op_done_now(o); /* the store needs no pairing between workers */
    else
        sr_op_submit(e, o);
    *h = sr_op_handle(o);
    return 0;
}

/* A push or pull call: started (op_out) or waited for (op_out NULL). */
static int store_call(serene_ctx *ctx, const store_req *r, serene_op **op_out)
{
    return sr_call(ctx, store_start, r, op_out);
}

SERENE_API int serene_push_start(serene_ctx *ctx, size_t offset, const float *values,
                                 size_t count, serene_op **op_out)
{
    store_req r = {.kind = STORE_PUSH, .offset = offset, .count = count, .src = values};
    return op_out ? store_call(ctx, &r, op_out) : SERENE_ERR_INVAL;
}

SERENE_API int serene_pull_start(serene_ctx *ctx, size_t offset, float *out, size_t count,
                                 unsigned flags, serene_op **op_out)
{
    store_req r = {.kind = STORE_PULL, .offset = offset, .count = count, .dst = out,
                   .flags = flags};
    return op_out ? store_call(ctx, &r, op_out) : SERENE_ERR_INVAL;
}

SERENE_API int serene_push(serene_ctx *ctx, size_t offset, const float *values, size_t count)
{
    store_req r = {.kind = STORE_PUSH, .offset = offset, .count = count, .src = values};
    return store_call(ctx, &r, NULL);
}

SERENE_API int serene_push_i32(serene_ctx *ctx, size_t offset, const int32_t *values,
                               size_t count)
{
    store_req r = {.kind = STORE_PUSH, .offset = offset, .count = count, .src_i32 = values};
    return store_call(ctx, &r, NULL);
}

SERENE_API int serene_pull(serene_ctx *ctx, size_t offset, float *out, size_t count,
                           unsigned flags)
{
    store_req r = {.kind = STORE_PULL, .offset = offset, .count = count, .dst = out,
                   .flags = flags};
    return store_call(ctx, &r, NULL);
}

SERENE_API int serene_pull_i32(serene_ctx *ctx, size_t offset, int32_t *out, size_t count,
                               unsigned flags)
{
    store_req r = {.kind = STORE_PULL, .offset = offset, .count = count, .dst_i32 = out,
                   .flags = flags};
    return store_call(ctx, &r, NULL);
}
