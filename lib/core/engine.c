/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.c - the data-path thread: joining the job and streaming allreduce.
 *
 * Allreduce, SwitchML-style over a pool of W switch slots:
 * - The tensor is cut into chunks of elems_per_pkt values; chunk j always
 *   travels through slot j mod W (W = min(window, chunks)), so every worker
 *   uses every slot in the same order and the slots' shadow bits agree.
 * - A slot's first round of a call is an exponent hint (no payload): it
 *   carries next_exp = this worker's exponent of the slot's first chunk.
 *   Each later round carries a chunk quantized with the exponent the switch
 *   max-reduced in the round before, plus the hint for the slot's next
 *   chunk. So all workers quantize a chunk with one common exponent, and
 *   the int32 sum cannot overflow (quant.h).
 * - Each round flips the slot's shadow bit; the switch keeps the previous
 *   round's result under the other bit for workers that missed it.
 * - Every packet in flight has a timer in the one retransmission engine
 *   (lib/reliab); a retransmission is byte-identical but for the
 *   RETRANSMIT flag, and the switch's bitmap makes it idempotent.
 * A NaN/Inf chunk is announced with the exponent SR_WIRE_EXP_NONFINITE;
 * max-reduction spreads it, so every worker completes the call, fills the
 * chunk with NaN and returns SERENE_ERR_NONFINITE, and the slots stay in
 * step for the next call.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ctx.h"

/* ---- sending ------------------------------------------------------------ */

static void tx_flush(serene_ctx *ctx)
{
    unsigned off = 0;
    while (off < ctx->ntx) {
        int k = ctx->tp->send(ctx->tps, ctx->txq + off, ctx->ntx - off);
        if (k <= 0) {
            /* Unsent packets count as lost; their timers resend them. */
            if (k < 0)
                SR_DEBUG(&ctx->log, "send: %s", serene_strerror(k));
            break;
        }
        for (unsigned i = off; i < off + (unsigned)k; i++) {
            SR_STAT_ADD(ctx, bytes_sent, ctx->txq[i].iov_len);
            if (ctx->trace)
                sr_trace_packet(ctx->trace, SR_TRACE_TX, ctx->txq[i].iov_base,
                                ctx->txq[i].iov_len);
        }
        SR_STAT_ADD(ctx, pkts_sent, (uint64_t)k);
        off += (unsigned)k;
    }
    ctx->ntx = 0;
}

void sr_tx_queue(serene_ctx *ctx, uint8_t *msg, uint32_t len)
{
    if (ctx->ntx == SR_TP_BURST)
        tx_flush(ctx);
    ctx->txq[ctx->ntx].iov_base = msg;
    ctx->txq[ctx->ntx].iov_len = len;
    ctx->ntx++;
}

void sr_slot_send(serene_ctx *ctx, uint32_t s, uint16_t words, uint64_t now)
{
    sr_slot *sl = &ctx->slots[s];
    sl->busy = 1;
    sl->len = SR_WIRE_HDR_LEN + 4u * words;
    sr_tx_queue(ctx, sl->msg, sl->len);
    sr_rel_arm(&ctx->rel, s, now);
}

void sr_hdr_base(const serene_ctx *ctx, sr_hdr *h, uint8_t op)
{
    memset(h, 0, sizeof *h);
    h->version = SR_WIRE_VERSION;
    h->op = op;
    h->job = (uint16_t)ctx->cfg.job_id;
    h->worker = (uint16_t)ctx->cfg.rank;
}

/* ---- op completion -------------------------------------------------------- */

void sr_op_finish(serene_ctx *ctx, serene_op *op, int rc)
{
    op->result = rc;
    if (rc == 0)
        SR_STAT_ADD(ctx, ops_completed, 1);
    pthread_mutex_lock(&ctx->mu);
    atomic_store_explicit(&op->state, SR_OPS_DONE, memory_order_release);
    pthread_cond_broadcast(&ctx->cv);
    pthread_mutex_unlock(&ctx->mu);
    if (ctx->cur == op) {
        ctx->cur = NULL;
        sr_rel_reset(&ctx->rel);
    }
}

/* Fail the current op for a reason that leaves the switch's slots out of
 * step with this worker: later allreduces would mix rounds, so refuse them. */
static void fail_broken(serene_ctx *ctx, int rc)
{
    if (ctx->cur && ctx->cur->kind == SR_OPK_ALLREDUCE)
        atomic_store(&ctx->broken, 1);
    sr_op_finish(ctx, ctx->cur, rc);
}

/* ---- join ------------------------------------------------------------------ */

static void join_begin(serene_ctx *ctx, uint64_t now)
{
    sr_hdr h;
    sr_hdr_base(ctx, &h, SR_OP_JOIN);
    h.seq = ctx->token;
    h.aux = ctx->cfg.job_nonce;
    sr_hdr_pack(ctx->ctl_msg, &h);
    ctx->ctl_len = SR_WIRE_HDR_LEN;
    sr_rel_set_deadline(&ctx->rel, ctx->cur->deadline_ns);
    sr_tx_queue(ctx, ctx->ctl_msg, ctx->ctl_len);
    sr_rel_arm(&ctx->rel, 0, now);
}

/* Size the slot pool and timers for the job the switch described. */
static int join_setup(serene_ctx *ctx, const sr_join_params *p)
{
    const sr_log *log = &ctx->log;
    if (p->n_workers != (uint32_t)ctx->cfg.world_size) {
        SR_ERR(log, "switch says job %d has %u workers, but world_size is %d", ctx->cfg.job_id,
               p->n_workers, ctx->cfg.world_size);
        return SERENE_ERR_CONFIG;
    }
    if (p->elems_per_pkt < 1 || p->elems_per_pkt > SR_WIRE_MAX_ELEMS || p->pool_slots < 1 ||
        p->pool_slots > SR_WIRE_MAX_SLOTS) {
        SR_ERR(log, "switch announced invalid job parameters (elems %u, slots %u)",
               p->elems_per_pkt, p->pool_slots);
        return SERENE_ERR_PROTO;
    }
    uint32_t w = ctx->cfg.window ? (uint32_t)ctx->cfg.window : p->pool_slots;
    if (w > p->pool_slots) {
        SR_ERR(log, "window %u exceeds the job's pool of %u slots", w, p->pool_slots);
        return SERENE_ERR_CONFIG;
    }
    size_t msg_cap = SR_WIRE_HDR_LEN + 4u * p->elems_per_pkt;
    ctx->slots = calloc(w, sizeof *ctx->slots);
    ctx->slot_mem = malloc(msg_cap * w);
    sr_rel_params rp = ctx->rel.p;
    sr_rel_fini(&ctx->rel);
    if (!ctx->slots || !ctx->slot_mem || sr_rel_init(&ctx->rel, w, &rp))
        return SERENE_ERR_NOMEM;
    for (uint32_t i = 0; i < w; i++)
        ctx->slots[i].msg = ctx->slot_mem + msg_cap * i;
    ctx->params = *p;
    ctx->window = w;
    if (sr_ssp_setup(ctx))
        return SERENE_ERR_NOMEM;
    ctx->bits = sr_quant_bits(p->n_workers);
    SR_INFO(log, "joined job %d as worker %d/%u: %u elements per packet, pool %u, window %u",
            ctx->cfg.job_id, ctx->cfg.rank, p->n_workers, p->elems_per_pkt, p->pool_slots, w);
    return 0;
}

static void on_join_ack(serene_ctx *ctx, const sr_hdr *h, const uint8_t *payload)
{
    serene_op *op = ctx->cur;
    if (!op || op->kind != SR_OPK_JOIN || h->seq != ctx->token ||
        h->count != SR_JOIN_PARAMS_WORDS) {
        SR_STAT_ADD(ctx, duplicates, 1);
        return;
    }
    sr_join_params p;
    sr_join_params_unpack(payload, &p);
    atomic_store(&ctx->joined, 1);
    sr_op_finish(ctx, op, join_setup(ctx, &p));
}

/* ---- allreduce ------------------------------------------------------------- */

static uint32_t chunk_len(const serene_ctx *ctx, uint32_t j)
{
    size_t off = (size_t)j * ctx->params.elems_per_pkt;
    size_t left = ctx->cur->count - off;
    return (uint32_t)(left < ctx->params.elems_per_pkt ? left : ctx->params.elems_per_pkt);
}

/* Build, queue and time the next round of slot s: chunk's data quantized
 * with exponent exp (data != 0), or the hint round announcing chunk's local
 * exponent (data == 0). Either way it carries the hint for the chunk the
 * slot carries next. */
static void send_round(serene_ctx *ctx, uint32_t s, uint32_t chunk, int data, int exp,
                       uint64_t now)
{
    sr_slot *sl = &ctx->slots[s];
    const serene_op *op = ctx->cur;
    uint32_t epp = ctx->params.elems_per_pkt;
    uint32_t hint_chunk = data ? chunk + ctx->w_eff : chunk;
    sr_hdr h;
    sr_hdr_base(ctx, &h, SR_OP_AR_DATA);
    h.seq = ctx->call_seq;
    h.slot = (uint16_t)s;
    h.shadow = sl->next_ver;
    h.count = (uint16_t)(data ? chunk_len(ctx, chunk) : 0);
    h.exp = (int8_t)(data ? exp : 0);
    h.next_exp = (int8_t)(hint_chunk < ctx->n_chunks ? ctx->exps[hint_chunk] : SR_WIRE_EXP_NONE);
    h.offset = chunk * epp;
    h.aux = (uint32_t)op->count; /* the switch compares it: see SR_OP_AR_DATA */
    sr_hdr_pack(sl->msg, &h);
    if (h.count) {
        uint8_t *pl = sl->msg + SR_WIRE_HDR_LEN;
        if (exp == SR_WIRE_EXP_NONFINITE) {
            memset(pl, 0, 4u * h.count);
        } else {
            size_t sat = ctx->qk.encode(pl, op->src + h.offset, h.count,
                                        sr_quant_encode_mul(exp, ctx->bits));
            if (sat)
                SR_STAT_ADD(ctx, saturations, sat);
        }
    }
    sl->ver = sl->next_ver;
    sl->next_ver ^= 1;
    sl->count = h.count;
    sl->offset = h.offset;
    sl->next_chunk = data ? chunk + ctx->w_eff : chunk;
    sr_slot_send(ctx, s, h.count, now);
}

static void ar_begin(serene_ctx *ctx, uint64_t now)
{
    serene_op *op = ctx->cur;
    uint32_t epp = ctx->params.elems_per_pkt;
    size_t n_chunks = (op->count + epp - 1) / epp;
    if (n_chunks > ctx->exps_cap) {
        int8_t *e = realloc(ctx->exps, n_chunks);
        if (!e) {
            sr_op_finish(ctx, op, SERENE_ERR_NOMEM);
            return;
        }
        ctx->exps = e;
        ctx->exps_cap = n_chunks;
    }
    ctx->n_chunks = (uint32_t)n_chunks;
    ctx->chunks_done = 0;
    ctx->nonfinite = 0;
    for (uint32_t j = 0; j < ctx->n_chunks; j++) {
        float m;
        size_t bad = ctx->qk.maxabs(op->src + (size_t)j * epp, chunk_len(ctx, j), &m);
        ctx->exps[j] = (int8_t)(bad ? SR_WIRE_EXP_NONFINITE : sr_quant_exponent(m));
    }
    ctx->call_seq++;
    ctx->w_eff = ctx->n_chunks < ctx->window ? ctx->n_chunks : ctx->window;
    /* A call of 0 values still meets the others' call in slot 0 (one hint
     * round): calls pair up the same on every worker, and a count that
     * differs is reported there. */
    if (ctx->w_eff == 0)
        ctx->w_eff = 1;
    sr_rel_set_deadline(&ctx->rel, op->deadline_ns);
    for (uint32_t s = 0; s < ctx->w_eff; s++)
        send_round(ctx, s, s, 0, 0, now);
}

static void on_ar_result(serene_ctx *ctx, const sr_hdr *h, const uint8_t *payload, uint64_t now)
{
    serene_op *op = ctx->cur;
    sr_slot *sl = h->slot < ctx->window ? &ctx->slots[h->slot] : NULL;
    if (!op || op->kind != SR_OPK_ALLREDUCE || h->seq != ctx->call_seq || !sl || !sl->busy ||
        h->shadow != sl->ver || h->offset != sl->offset || h->count != sl->count ||
        h->aux != (uint32_t)op->count || h->worker != ctx->cfg.rank) {
        SR_STAT_ADD(ctx, duplicates, 1);
        return;
    }
    sl->busy = 0;
    sr_rel_ack(&ctx->rel, h->slot, now);
    if (h->count) {
        float *dst = op->dst + h->offset;
        if (h->exp == SR_WIRE_EXP_NONFINITE) {
            ctx->nonfinite = 1;
            for (uint32_t i = 0; i < h->count; i++)
                dst[i] = NAN;
        } else {
            if (op->redop == SERENE_AVG) { /* rounded once: quant.h */
                double hi, lo;
                sr_quant_avg_mul(h->exp, ctx->bits, ctx->params.n_workers, &hi, &lo);
                ctx->qk.decode_avg(dst, payload, h->count, hi, lo);
            } else {
                ctx->qk.decode(dst, payload, h->count, sr_quant_decode_mul(h->exp, ctx->bits));
            }
            /* A sum past FLT_MAX is +-Inf, reported like NaN/Inf input; only
             * packets of the top binades can get there. */
            float big;
            if (sr_quant_sum_may_overflow(h->exp, ctx->bits) && ctx->qk.maxabs(dst, h->count, &big))
                ctx->nonfinite = 1;
        }
        ctx->chunks_done++;
    }
    if (sl->next_chunk < ctx->n_chunks)
        send_round(ctx, h->slot, sl->next_chunk, 1, h->next_exp, now);
    if (ctx->chunks_done == ctx->n_chunks)
        sr_op_finish(ctx, op, ctx->nonfinite ? SERENE_ERR_NONFINITE : 0);
}

/* ---- receive ------------------------------------------------------------- */

int sr_map_status(unsigned st)
{
    switch (st) {
    case SR_ST_UNKNOWN_JOB:
        return SERENE_ERR_NOJOB;
    case SR_ST_NOT_MEMBER:
        return SERENE_ERR_NOTMEMBER;
    case SR_ST_STALE:
        return SERENE_ERR_STALE;
    case SR_ST_MISMATCH:
        return SERENE_ERR_MISMATCH;
    case SR_ST_UNSUPPORTED:
        return SERENE_ERR_UNSUPPORTED;
    case SR_ST_RANGE:
        return SERENE_ERR_RANGE;
    case SR_ST_JOB_IN_USE:
        return SERENE_ERR_JOB_IN_USE;
    default:
        return SERENE_ERR_PROTO;
    }
}

static void on_error(serene_ctx *ctx, const sr_hdr *h)
{
    serene_op *op = ctx->cur;
    int for_join = h->aux == SR_OP_JOIN && h->seq == ctx->token;
    int for_ar = h->aux == SR_OP_AR_DATA && h->seq == ctx->call_seq;
    int for_req = (h->aux == SR_OP_PUSH || h->aux == SR_OP_PULL) &&
                  h->seq - ctx->req_base < ctx->n_req;
    int for_clock = h->aux == SR_OP_CLOCK && h->seq == atomic_load(&ctx->sync.clock);
    if (!op || !((op->kind == SR_OPK_JOIN && for_join) || (op->kind == SR_OPK_ALLREDUCE && for_ar) ||
                 ((op->kind == SR_OPK_PUSH || op->kind == SR_OPK_PULL) && for_req &&
                  h->aux == (op->kind == SR_OPK_PUSH ? SR_OP_PUSH : SR_OP_PULL)) ||
                 (op->kind == SR_OPK_CLOCK && for_clock))) {
        SR_STAT_ADD(ctx, duplicates, 1);
        return;
    }
    int rc = sr_map_status(h->status);
    SR_ERR(&ctx->log, "switch refused %s of job %d worker %d (slot %u): %s", sr_op_name(h->aux),
           ctx->cfg.job_id, ctx->cfg.rank, h->slot, sr_status_name(h->status));
    fail_broken(ctx, rc);
}

static void on_message(serene_ctx *ctx, const uint8_t *buf, uint32_t len, uint64_t now)
{
    sr_hdr h;
    const uint8_t *payload = NULL;
    int pr = len ? sr_msg_parse(buf, len, &h, &payload) : SR_PARSE_TRUNCATED;
    if (pr != SR_PARSE_OK || h.job != (uint16_t)ctx->cfg.job_id) {
        SR_STAT_ADD(ctx, rejected, 1);
        return;
    }
    SR_STAT_ADD(ctx, pkts_recv, 1);
    SR_STAT_ADD(ctx, bytes_recv, len);
    switch (h.op) {
    case SR_OP_JOIN_ACK:
        on_join_ack(ctx, &h, payload);
        break;
    case SR_OP_AR_RESULT:
        on_ar_result(ctx, &h, payload, now);
        break;
    case SR_OP_ERROR:
        on_error(ctx, &h);
        break;
    case SR_OP_PUSH_ACK:
    case SR_OP_PULL_RESP:
    case SR_OP_PROCEED:
    case SR_OP_HOLD:
    case SR_OP_RELEASE:
        sr_ssp_on_message(ctx, &h, payload, now);
        break;
    default:
        SR_STAT_ADD(ctx, rejected, 1);
        break;
    }
}

static int rx_burst(serene_ctx *ctx, uint64_t now)
{
    int k = ctx->tp->recv(ctx->tps, ctx->rxbuf, ctx->rxlen, SR_TP_BURST, SR_WIRE_MAX_MSG,
                          &ctx->truncated);
    if (k < 0) {
        SR_DEBUG(&ctx->log, "recv: %s", serene_strerror(k));
        return 0;
    }
    for (int i = 0; i < k; i++) {
        /* Traced before parsing: malformed packets are what a trace is for.
         * A truncated one (length 0) left nothing to trace. */
        if (ctx->trace && ctx->rxlen[i])
            sr_trace_packet(ctx->trace, SR_TRACE_RX, ctx->rxbuf[i], ctx->rxlen[i]);
        on_message(ctx, ctx->rxbuf[i], ctx->rxlen[i], now);
    }
    return k;
}

/* ---- timers ---------------------------------------------------------------- */

static void on_timers(serene_ctx *ctx, uint64_t now)
{
    uint32_t idx[SR_TP_BURST], n;
    int st;
    do {
        st = sr_rel_poll(&ctx->rel, now, idx, SR_TP_BURST, &n);
        for (uint32_t i = 0; i < n; i++) {
            int ctl = ctx->cur->kind == SR_OPK_JOIN || ctx->cur->kind == SR_OPK_CLOCK;
            uint8_t *msg = ctl ? ctx->ctl_msg : ctx->slots[idx[i]].msg;
            uint32_t len = ctl ? ctx->ctl_len : ctx->slots[idx[i]].len;
            msg[SR_WIRE_OFF_FLAGS] |= SR_FLAG_RETRANSMIT;
            sr_tx_queue(ctx, msg, len);
        }
        SR_STAT_ADD(ctx, retransmissions, n);
    } while (st == SR_REL_OK && n == SR_TP_BURST);
    if (st == SR_REL_OK)
        return;
    SR_STAT_ADD(ctx, timeouts, 1);
    if (ctx->cur->kind == SR_OPK_JOIN)
        SR_ERR(&ctx->log, "no answer from the switch at %s to JOIN of job %d within %d ms%s",
               ctx->cfg.switch_addr, ctx->cfg.job_id, ctx->cfg.timeout_ms,
               st == SR_REL_RETRY_LIMIT ? " (retry limit)" : "");
    else if (ctx->cur->kind != SR_OPK_ALLREDUCE)
        SR_ERR(&ctx->log, "%s timed out (%s) after %d ms%s",
               ctx->cur->kind == SR_OPK_CLOCK ? "clock" :
               ctx->cur->kind == SR_OPK_PUSH ? "push" : "pull",
               st == SR_REL_RETRY_LIMIT ? "retry limit" : "deadline", ctx->cfg.timeout_ms,
               ctx->cur->kind == SR_OPK_CLOCK && ctx->held ? ", held by the barrier" : "");
    else
        SR_ERR(&ctx->log,
               "allreduce of %zu values timed out (%s): %u of %u chunks done; "
               "are all %d workers running?",
               ctx->cur->count, st == SR_REL_RETRY_LIMIT ? "retry limit" : "deadline",
               ctx->chunks_done, ctx->n_chunks, ctx->cfg.world_size);
    fail_broken(ctx, SERENE_ERR_TIMEOUT);
}

/* ---- the loop ---------------------------------------------------------------- */

static void op_begin(serene_ctx *ctx, serene_op *op, uint64_t now)
{
    ctx->cur = op;
    if (now >= op->deadline_ns) {
        sr_op_finish(ctx, op, SERENE_ERR_TIMEOUT);
        return;
    }
    if (op->kind == SR_OPK_JOIN) {
        join_begin(ctx, now);
        return;
    }
    if (op->kind != SR_OPK_ALLREDUCE) {
        sr_ssp_begin(ctx, now);
        return;
    }
    if (atomic_load(&ctx->broken)) {
        sr_op_finish(ctx, op, SERENE_ERR_BROKEN);
        return;
    }
    ar_begin(ctx, now);
}

static serene_op *ring_pop(serene_ctx *ctx)
{
    unsigned head = atomic_load_explicit(&ctx->ring_head, memory_order_relaxed);
    if (head == atomic_load_explicit(&ctx->ring_tail, memory_order_acquire))
        return NULL;
    serene_op *op = &ctx->ops[ctx->ring[head % ctx->max_ops]];
    atomic_store_explicit(&ctx->ring_head, head + 1, memory_order_release);
    return op;
}

void *sr_engine_main(void *arg)
{
    serene_ctx *ctx = arg;
    while (!atomic_load_explicit(&ctx->stop, memory_order_acquire)) {
        uint64_t now = sr_now_ns();
        serene_op *op;
        while (!ctx->cur && (op = ring_pop(ctx)))
            op_begin(ctx, op, now);
        /* Drain what has arrived before looking at timers: an answer that
         * sits unread in the socket must not be mistaken for a loss. */
        int got = 0, k;
        do {
            k = rx_burst(ctx, now);
            got += k;
            tx_flush(ctx);
        } while (k == SR_TP_BURST && got < 64 * SR_TP_BURST);
        if (ctx->cur) {
            on_timers(ctx, sr_now_ns());
            tx_flush(ctx);
        }
        /* Once per iteration, so a killed process leaves its trace up to
         * here; a no-op when nothing was traced. */
        if (ctx->trace)
            sr_trace_flush(ctx->trace);
        if (got)
            continue;
        if (!ctx->cur && atomic_load_explicit(&ctx->ring_head, memory_order_relaxed) !=
                             atomic_load_explicit(&ctx->ring_tail, memory_order_acquire))
            continue;
        int64_t timeout = -1;
        if (ctx->cur) {
            uint64_t due = sr_rel_next_due(&ctx->rel), t = sr_now_ns();
            timeout = due == SR_REL_NEVER ? -1 : due > t ? (int64_t)(due - t) : 0;
        }
        if (timeout != 0) {
            ctx->tp->wait(ctx->tps, timeout, ctx->wake_fd);
            uint64_t drain;
            /* The eventfd is non-blocking; EAGAIN just means no wake-up. */
            if (read(ctx->wake_fd, &drain, sizeof drain) < 0 && errno != EAGAIN)
                SR_DEBUG(&ctx->log, "wake read: %s", strerror(errno));
        }
    }
    return NULL;
}
