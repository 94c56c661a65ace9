/* SPDX-License-Identifier: Apache-2.0 */
/*
 * allreduce.c - streaming allreduce, SwitchML-style over a pool of W switch
 * slots: the module the engine runs, and the public calls.
 *
 * - The tensor is cut into chunks of a packet's values (elems_per_pkt
 *   words: as many values, or twice as many 16-bit ones, two to a word:
 *   wire.h's SR_WIRE_AUX_V16); chunk j always
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
 * - Every packet in flight has a timer in the engine's one retransmission
 *   engine; the switch's bitmap makes a retransmission idempotent.
 * - Waiting is not loss. When a packet's timer expires, the worker does not
 *   resend it: where the engine's rule says so (sr_rel_verdict: not while
 *   answers to earlier rounds keep coming, one per round trip, paid for
 *   by answers) it sends a header-only AR_PROBE. The switch answers AR_HELD
 *   while its open round holds the contribution (the round waits for a
 *   late peer, or the answer is merely slow): the timer keeps backing off
 *   towards rto_max, and the worker asks again then. AR_NAK says the switch
 *   lacks it (lost) or the round completed (the result was lost): then the
 *   packet is resent in full at once, and that resend is counted, added
 *   or answered with the shadow copy as any contribution. So only lost
 *   packets are resent (stats.retransmissions), and waiting costs probes
 *   (stats.probes) of 28 bytes, fewer and fewer.
 * - A congestion window (window.h) says how many rounds may be in flight
 *   and which ready round goes next: the rounds of a call are numbered in
 *   the order every worker sends them, its "units" (the hint round of
 *   slot s is unit s, the round of chunk j is unit j + W).
 * A NaN/Inf chunk is announced with the exponent SR_WIRE_EXP_NONFINITE;
 * max-reduction spreads it, so every worker completes the call, fills the
 * chunk with NaN and returns SERENE_ERR_NONFINITE, and the slots stay in
 * step for the next call.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allreduce/allreduce.h"
#include "common/log.h"
#include "proto/wire.h"
#include "quant/quant.h"
#include "quant/quant16.h"
#include "reliab/reliab.h"

/* ---- the module ------------------------------------------------------------ */

static int ar_on_join(void *self, sr_engine *e)
{
    sr_ar *ar = self;
    ar->lease_w = e->join_window;
    ar->slots = calloc(e->window, sizeof *ar->slots);
    if (!ar->slots)
        return SERENE_ERR_NOMEM;
    for (uint32_t s = 0; s < e->window; s++)
        ar->slots[s].next_round = 1;
    ar->bits = sr_quant_bits(e->params.n_workers);
    ar->bits16 = sr_quant16_bits(e->params.n_workers);
    ar->scratch = malloc(2 * sizeof(float) * (e->params.elems_per_pkt ? e->params.elems_per_pkt : 1));
    if (!ar->scratch)
        return SERENE_ERR_NOMEM;
    return sr_arw_init(&ar->win, e->window) ? SERENE_ERR_NOMEM : 0;
}

static void ar_fini(void *self, sr_engine *e)
{
    sr_ar *ar = self;
    free(ar->slots);
    free(ar->scratch);
    free(ar->call_exps);
    sr_arw_fini(&ar->win);
}

/* The values a chunk of op holds (the last one may hold fewer): a
 * packet's words, each one value, or two of 16 bits. */
static uint32_t chunk_vals(const sr_engine *e, const serene_op *op)
{
    return e->params.elems_per_pkt * (op->wire16 ? 2u : 1u);
}

static uint32_t chunk_len(const sr_engine *e, const serene_op *op, uint32_t j)
{
    size_t vpp = chunk_vals(e, op), off = (size_t)j * vpp;
    size_t left = op->count - off;
    return (uint32_t)(left < vpp ? left : vpp);
}

/* The chunks (packets' worth of values) of op's call. */
static size_t chunks_of(const sr_engine *e, const serene_op *op)
{
    size_t vpp = chunk_vals(e, op);
    return (op->count + vpp - 1) / vpp;
}

/* The local exponent of chunk j, or SR_WIRE_EXP_NONFINITE. Read when its
 * hint goes out (hint_exp), or before by the thread inside a blocking call
 * (exps_fill), never in a pass over the whole call before its first packet:
 * a call's first packet leaves at once. */
static int8_t chunk_exp(const sr_engine *e, const serene_op *op, uint32_t j)
{
    float m;
    size_t off = (size_t)j * chunk_vals(e, op), bad;
    if (op->src)
        bad = e->qk.maxabs(op->src + off, chunk_len(e, op, j), &m);
    else
        bad = sr_half_maxabs(op->src_h + off, chunk_len(e, op, j),
                             op->dtype == SERENE_BFLOAT16 ? SR_HALF_BF16 : SR_HALF_F16, &m);
    return (int8_t)(bad ? SR_WIRE_EXP_NONFINITE : sr_quant_exponent(m));
}

/* Chunk j's exponent for its hint: from the calling thread when it has read
 * it already (serene_allreduce), else read here. */
static int8_t hint_exp(const sr_engine *e, const serene_op *op, uint32_t j)
{
    if (op->exps && j < atomic_load_explicit(&op->exps_ready, memory_order_acquire))
        return op->exps[j];
    return chunk_exp(e, op, j);
}

/* Quantize the n values at off with exponent exp into pl, in the call's
 * width (16-bit values two to a word, the odd one out padded with 0); a
 * 16-bit float chunk goes through the scratch as float32 first.
 * Returns the values saturated (none, in the scheme). */
static size_t encode_chunk(sr_ar *ar, sr_engine *e, const serene_op *op, uint8_t *pl, size_t off,
                           uint32_t n, int exp)
{
    const float *x = op->src ? op->src + off : ar->scratch;
    if (!op->src)
        (op->dtype == SERENE_BFLOAT16 ? e->qk16.bf16_to_f32 : e->qk16.f16_to_f32)(
            ar->scratch, op->src_h + off, n);
    if (op->wire16)
        return e->qk16.encode(pl, x, n, sr_quant_encode_mul(exp, sr_quant16_bits_at(ar->bits16, exp)),
                              sr_quant16_lim(ar->bits16));
    return e->qk.encode(pl, x, n, sr_quant_encode_mul(exp, ar->bits));
}

/* Build, queue and time the next round of slot s: chunk's data quantized
 * with exponent exp (data != 0), or the hint round announcing chunk's local
 * exponent (data == 0). Either way it carries the hint for the chunk the
 * slot carries next. */
static void send_round(sr_ar *ar, sr_engine *e, const serene_op *op, uint32_t s, uint32_t chunk,
                       int data, int exp, uint64_t now)
{
    sr_ar_slot *sl = &ar->slots[s];
    uint8_t *msg = sr_slot_msg(e, s);
    uint32_t vpp = chunk_vals(e, op), n = data ? chunk_len(e, op, chunk) : 0;
    uint32_t hint_chunk = data ? chunk + ar->w_eff : chunk;
    sr_hdr h;
    sr_hdr_base(e, &h, SR_OP_AR_DATA);
    h.seq = ar->call_seq;
    h.slot = (uint16_t)s;
    h.shadow = sl->next_ver;
    h.status = sl->next_round; /* the Tofino program's round identity */
    h.count = (uint16_t)(op->wire16 ? sr_wire_v16_words(n) : n);
    h.exp = (int8_t)(data ? exp : 0);
    h.next_exp = hint_chunk < ar->n_chunks ? hint_exp(e, op, hint_chunk) : SR_WIRE_EXP_NONE;
    h.offset = chunk * vpp;
    h.aux = ar->aux; /* the switch compares it: see SR_OP_AR_DATA */
    sr_hdr_pack(msg, &h);
    uint32_t len = 4u * h.count;
    if (h.count) {
        uint8_t *pl = msg + SR_WIRE_HDR_LEN;
        if (exp == SR_WIRE_EXP_NONFINITE) {
            memset(pl, 0, len);
        } else {
            size_t sat = encode_chunk(ar, e, op, pl, h.offset, n, exp);
            if (sat)
                SR_STAT_ADD(e, saturations, sat);
        }
    }
    sl->ver = sl->next_ver;
    sl->next_ver ^= 1;
    sl->next_round++;
    sl->busy = 1;
    sl->probe_ns = 0;
    sl->probe_out_ns = 0;
    sl->held = 0;
    sl->resent = 0;
    sl->sent_ns = now;
    sl->count = h.count;
    sl->offset = h.offset;
    sl->next_chunk = data ? chunk + ar->w_eff : chunk;
    sr_slot_send(e, s, len, now);
}

/* Send the ready rounds the window admits, lowest unit first. */
static void drain(sr_ar *ar, sr_engine *e, const serene_op *op, uint64_t now)
{
    uint32_t u, s;
    while (sr_arw_next(&ar->win, &u, &s)) {
        if (u < ar->w_eff)
            send_round(ar, e, op, s, s, 0, 0, now);
        else
            send_round(ar, e, op, s, u - ar->w_eff, 1, ar->slots[s].wait_exp, now);
    }
}

static void ar_begin(void *self, sr_engine *e, serene_op *op, uint64_t now)
{
    sr_ar *ar = self;
    if (atomic_load(&ar->broken)) {
        sr_op_finish(e, op, SERENE_ERR_BROKEN);
        return;
    }
    ar->n_chunks = (uint32_t)chunks_of(e, op);
    ar->chunks_done = 0;
    ar->nonfinite = 0;
    ar->stream = e->qk.decode_stream && e->qk.decode_avg_stream && op->dst && !op->wire16 &&
                 op->count >= SR_AR_STREAM_MIN_BYTES / 4;
    ar->aux = (uint32_t)op->count | (op->wire16 ? SR_WIRE_AUX_V16 : 0u);
    ar->call_seq++;
    ar->w_eff = ar->n_chunks < e->window ? ar->n_chunks : e->window;
    if (ar->lease_w && ar->lease_w < ar->w_eff)
        ar->w_eff = ar->lease_w;
    /* A call of 0 values still meets the others' call in slot 0 (one hint
     * round): calls pair up the same on every worker, and a count that
     * differs is reported there. */
    if (ar->w_eff == 0)
        ar->w_eff = 1;
    sr_rel_set_deadline(&e->rel, op->deadline_ns);
    /* Units: the w_eff hint rounds, then chunk c as unit w_eff + c. */
    sr_arw_call(&ar->win, ar->w_eff + ar->n_chunks, ar->w_eff);
    drain(ar, e, op, now);
}

/* Decode a result, the n values of the chunk at h->offset, into the
 * call's result (a 16-bit float result through the scratch); flags the
 * call nonfinite when the switch spread a NaN/Inf or the sum overflows the
 * result's format. */
static void decode_result(sr_ar *ar, sr_engine *e, const serene_op *op, const sr_hdr *h,
                          const uint8_t *payload, uint32_t n)
{
    float *dst = op->dst ? op->dst + h->offset : ar->scratch;
    int fmt = op->dtype == SERENE_BFLOAT16 ? SR_HALF_BF16 : SR_HALF_F16;
    if (h->exp == SR_WIRE_EXP_NONFINITE) {
        ar->nonfinite = 1;
        for (uint32_t i = 0; i < n; i++) {
            if (op->dst)
                dst[i] = NAN;
            else
                op->dst_h[h->offset + i] = sr_half_nan(fmt);
        }
        return;
    }
    int bits = op->wire16 ? sr_quant16_bits_at(ar->bits16, h->exp) : ar->bits;
    if (op->redop == SERENE_AVG) { /* rounded once: quant.h */
        double hi, lo;
        sr_quant_avg_mul(h->exp, bits, e->params.n_workers, &hi, &lo);
        if (op->wire16)
            e->qk16.decode_avg(dst, payload, n, hi, lo);
        else
            (ar->stream ? e->qk.decode_avg_stream : e->qk.decode_avg)(dst, payload, n, hi, lo);
    } else {
        float mul = sr_quant_decode_mul(h->exp, bits);
        if (op->wire16)
            e->qk16.decode(dst, payload, n, mul);
        else
            (ar->stream ? e->qk.decode_stream : e->qk.decode)(dst, payload, n, mul);
    }
    /* A sum past FLT_MAX is +-Inf, reported like NaN/Inf input; only
     * packets of the top binades can get there (the same E for either
     * width: 30 - bits = 15 - bits16 = ceil(log2 N)). */
    float big;
    if (sr_quant_sum_may_overflow(h->exp, ar->bits) && e->qk.maxabs(dst, n, &big))
        ar->nonfinite = 1;
    /* A 16-bit float result: one more rounding, where a sum can leave the
     * format's range (65504 for float16). */
    if (!op->dst && (fmt == SR_HALF_BF16 ? e->qk16.f32_to_bf16 : e->qk16.f32_to_f16)(
                        op->dst_h + h->offset, dst, n))
        ar->nonfinite = 1;
}

/* The slot whose round in flight the answer h is about, or NULL: a result,
 * AR_HELD and AR_NAK all carry the round's call, slot, shadow bit, offset
 * and total count, which name one round of this worker. */
static sr_ar_slot *round_of(sr_ar *ar, const sr_engine *e, const serene_op *op, const sr_hdr *h)
{
    sr_ar_slot *sl = h->slot < e->window ? &ar->slots[h->slot] : NULL;
    if (h->seq != ar->call_seq || !sl || !sl->busy || h->shadow != sl->ver ||
        h->offset != sl->offset || h->aux != ar->aux || h->worker != e->cfg.rank)
        return NULL;
    return sl;
}

/* A slot's timer expired: ask the switch, header only, whether it holds
 * the packet (see the top of this file). */
static void ar_on_expire(void *self, sr_engine *e, serene_op *op, uint32_t s, uint64_t now)
{
    sr_ar *ar = self;
    sr_ar_slot *sl = &ar->slots[s];
    int v = sr_rel_verdict(&e->rel, s, sl->probe_out_ns, now);
    /* Answers keep coming, just not this one yet: a delay (window.h). */
    if (v == SR_REL_QUEUED && sr_arw_delay(&ar->win, sl->next_chunk, ar->win.srtt_ns))
        SR_STAT_ADD(e, window_cuts, 1);
    if (v != SR_REL_PROBE)
        return;
    if (!sl->probe_ns)
        sl->probe_ns = now ? now : 1;
    sl->probe_out_ns = now ? now : 1;
    sr_probe_send(e, sl->probe, s, SR_OP_AR_PROBE);
}

/*
 * An answer to no round in flight. If it is the AR_NAK to the first probe
 * of the slot's last round, come after that round's result, the probe was
 * for nothing: the result was late, no peer kept it (no AR_HELD), and
 * nothing was resent. When the probe's own round trip took a good part of
 * that delay (a quarter or more), the switch or the path stalled: new
 * timeouts stay above the delay for a while (sr_rel_stall), so that stalls
 * like it fire no more probes. A quick probe round trip instead means the
 * round waited for something else, such as a peer's loss recovery, which
 * the timeout must not learn: it would learn its own value back.
 */
static void on_stale(sr_ar *ar, sr_engine *e, const sr_hdr *h, uint64_t now)
{
    sr_ar_slot *sl = h->slot < e->window ? &ar->slots[h->slot] : NULL;
    SR_STAT_ADD(e, duplicates, 1);
    if (h->op != SR_OP_AR_NAK || !sl || !sl->done_delay_ns || h->seq != sl->done_seq ||
        h->shadow != sl->done_ver || h->offset != sl->done_offset)
        return;
    if (4 * (now - sl->done_probe_ns) >= sl->done_delay_ns)
        sr_rel_stall(&e->rel, sl->done_delay_ns, now);
    sl->done_delay_ns = 0;
}

static void on_ar_answer(void *self, sr_engine *e, serene_op *op, const sr_hdr *h,
                         const uint8_t *payload, uint64_t now)
{
    sr_ar *ar = self;
    sr_ar_slot *sl = round_of(ar, e, op, h);
    if (!sl || (h->op == SR_OP_AR_RESULT && h->count != sl->count)) {
        on_stale(ar, e, h, now);
        return;
    }
    /* A probe's answer: the switch answers at once, so its delay is the
     * path's round trip, queues included (a slow switch's too). */
    if (h->op != SR_OP_AR_RESULT)
        sr_probe_answered(e, &sl->probe_out_ns, now);
    if (h->op == SR_OP_AR_HELD) { /* waiting, not lost: ask again later */
        sl->held = 1;
        sr_rel_held(&e->rel, h->slot);
        SR_STAT_ADD(e, held, 1);
        return;
    }
    if (h->op == SR_OP_AR_NAK) { /* lost, or its result was: resend it whole */
        sl->resent = 1;
        /* The round's unit is its next_chunk: chunk + W, or s for a hint. */
        if (sr_arw_loss(&ar->win, sl->next_chunk, ar->win.srtt_ns))
            SR_STAT_ADD(e, window_cuts, 1);
        sr_slot_resend(e, h->slot, now);
        return;
    }
    if (h->flags & SR_FLAG_FALLBACK)
        SR_STAT_ADD(e, results_fallback, 1);
    else
        SR_STAT_ADD(e, results_switch, 1);
    sl->busy = 0;
    sl->done_delay_ns = sl->probe_ns && !sl->held && !sl->resent ? now - sl->sent_ns : 0;
    sl->done_probe_ns = sl->probe_ns;
    sl->done_seq = h->seq;
    sl->done_ver = sl->ver;
    sl->done_offset = sl->offset;
    sr_rel_ack(&e->rel, h->slot, now);
    if (h->count) {
        uint32_t chunk = h->offset / chunk_vals(e, op);

        decode_result(ar, e, op, h, payload, chunk_len(e, op, chunk));
        ar->chunks_done++;
        if (chunk + 1 == ar->n_chunks)
            ar->lease_w = h->status;
    }
    if (!sl->probe_ns && !sl->resent)
        sr_arw_rtt(&ar->win, now - sl->sent_ns, now);
    if (sl->next_chunk < ar->n_chunks)
        sl->wait_exp = h->next_exp;
    sr_arw_done(&ar->win, sl->next_chunk); /* the round's unit; the slot's next is ready */
    drain(ar, e, op, now);
    if (ar->chunks_done == ar->n_chunks)
        sr_op_finish(e, op, ar->nonfinite ? SERENE_ERR_NONFINITE : 0);
}

/* Fail the call for a reason that leaves the switch's slots out of step
 * with this worker: later allreduces would mix rounds, so refuse them. */
static void fail_broken(sr_ar *ar, sr_engine *e, serene_op *op, int rc)
{
    atomic_store(&ar->broken, 1);
    sr_op_finish(e, op, rc);
}

/* An ERROR echoes the refused request (aux = its op): it fails the call
 * only if that was the slot's round in flight. The Tofino program answers
 * MISMATCH to a copy of an older round of the slot (p4/tna/README.md), a
 * copy the network delayed past the round's result: not this call's
 * failure (counted as a duplicate). */
static int ar_on_error(void *self, sr_engine *e, serene_op *op, const sr_hdr *h)
{
    sr_ar *ar = self;
    if ((h->aux != SR_OP_AR_DATA && h->aux != SR_OP_AR_PROBE) || h->seq != ar->call_seq)
        return 0;
    const sr_ar_slot *sl = h->slot < e->window ? &ar->slots[h->slot] : NULL;
    if (sl && (!sl->busy || h->shadow != sl->ver || h->offset != sl->offset))
        return 0;
    fail_broken(ar, e, op, sr_op_refused(e, h));
    return 1;
}

static void ar_on_timeout(void *self, sr_engine *e, serene_op *op, int st)
{
    sr_ar *ar = self;
    SR_ERR(&e->log,
           "allreduce of %zu values timed out (%s): %u of %u chunks done; "
           "are all %d workers running?",
           op->count, st == SR_REL_RETRY_LIMIT ? "retry limit" : "deadline", ar->chunks_done,
           ar->n_chunks, e->cfg.world_size);
    fail_broken(ar, e, op, SERENE_ERR_TIMEOUT);
}

static void ar_on_expired(void *self, sr_engine *e, serene_op *op)
{
    SR_ERR(&e->log,
           "allreduce of %zu values timed out before it began (the ops ahead of it took its "
           "time): the other workers make this call without this one",
           op->count);
    fail_broken(self, e, op, SERENE_ERR_TIMEOUT);
}

const sr_op_class sr_allreduce_class = {
    .name = "allreduce",
    .answers = {SR_OP_AR_RESULT, SR_OP_AR_HELD, SR_OP_AR_NAK},
    /* Engine thread, at the join: the slots' shadow bits and the scheme. */
    .on_join = ar_on_join,
    /* API thread, at destroy. */
    .fini = ar_fini,
    /* Engine thread: exponents of every chunk, then a hint round per slot. */
    .begin = ar_begin,
    /* Engine thread: a slot's result (decode it, send the slot's next
     * round), or the switch's AR_HELD or AR_NAK to a probe. */
    .on_message = on_ar_answer,
    /* Engine thread: a slot's timer expired: probe it. */
    .on_expire = ar_on_expire,
    /* Engine thread: the switch refused a round (MISMATCH, ...): broken. */
    .on_error = ar_on_error,
    /* Engine thread: deadline or retry limit: broken. */
    .on_timeout = ar_on_timeout,
    /* Engine thread: its deadline passed in the queue: broken. */
    .on_expired = ar_on_expired,
};

/* ---- public calls ------------------------------------------------------------ */

/* An allreduce request: the public calls' arguments. */
typedef struct ar_req {
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    serene_dtype dtype;
    serene_reduce_op op;
    unsigned flags;
} ar_req;

static int ranges_overlap(const void *a, const void *b, size_t len)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + len && y < x + len;
}

/* Validate and queue an allreduce (inside sr_call_enter); *h = its handle.
 * With opp (a blocking call), the op gets room for its chunks' exponents,
 * which the caller then reads (exps_fill on *opp), when there is memory for
 * them; else the engine reads them all. */
static int ar_start(sr_engine *e, const ar_req *r, serene_op **h, serene_op **opp,
                    _Atomic uint32_t *announce)
{
    size_t esize = r->dtype == SERENE_FLOAT32 ? 4 : 2;
    if ((r->count && (!r->sendbuf || !r->recvbuf)) || (r->op != SERENE_SUM && r->op != SERENE_AVG))
        return SERENE_ERR_INVAL;
    if (r->dtype != SERENE_FLOAT32 && r->dtype != SERENE_FLOAT16 && r->dtype != SERENE_BFLOAT16) {
        SR_ERR(&e->log, "allreduce: unknown dtype %d (SERENE_FLOAT32, SERENE_FLOAT16 or "
                        "SERENE_BFLOAT16)", (int)r->dtype);
        return SERENE_ERR_INVAL;
    }
    if ((r->flags & ~(SERENE_WIRE16 | SERENE_WIRE32)) ||
        (r->flags & (SERENE_WIRE16 | SERENE_WIRE32)) == (SERENE_WIRE16 | SERENE_WIRE32)) {
        SR_ERR(&e->log, "allreduce: flags 0x%x: at most one of SERENE_WIRE16 and SERENE_WIRE32",
               r->flags);
        return SERENE_ERR_INVAL;
    }
    if (r->count > SR_WIRE_AUX_TOTAL) {
        SR_ERR(&e->log, "allreduce of %zu values: at most %u per call", r->count,
               SR_WIRE_AUX_TOTAL);
        return SERENE_ERR_INVAL;
    }
    if (r->sendbuf != r->recvbuf && r->count &&
        ranges_overlap(r->sendbuf, r->recvbuf, r->count * esize)) {
        SR_ERR(&e->log, "allreduce: sendbuf and recvbuf overlap without being equal");
        return SERENE_ERR_INVAL;
    }
    if (!e->params.pool_slots) {
        SR_ERR(&e->log, "allreduce: the switch has no allreduce slots for job %d (its JOIN_ACK "
                        "announced 0); push, pull, clock and step work on it, allreduce does not",
               e->cfg.job_id);
        return SERENE_ERR_UNSUPPORTED;
    }
    int wire16 = r->flags & SERENE_WIRE16   ? 1
                 : r->flags & SERENE_WIRE32 ? 0
                 : r->dtype != SERENE_FLOAT32 || e->cfg.wire_bits == 16;
    sr_ar *ar = sr_engine_self(e, &sr_allreduce_class);
    if (atomic_load(&ar->broken))
        return SERENE_ERR_BROKEN;
    serene_op *o = sr_op_alloc(e, &sr_allreduce_class, ar);
    if (!o)
        return SERENE_ERR_BUSY;
    o->wire16 = wire16;
    o->dtype = r->dtype;
    if (r->dtype == SERENE_FLOAT32) {
        o->src = r->sendbuf;
        o->dst = r->recvbuf;
    } else {
        o->src_h = r->sendbuf;
        o->dst_h = r->recvbuf;
    }
    o->count = r->count;
    o->redop = r->op;
    if (opp) {
        size_t n_chunks = chunks_of(e, o);
        if (n_chunks > ar->call_exps_cap) {
            int8_t *x = realloc(ar->call_exps, n_chunks);
            if (x) {
                ar->call_exps = x;
                ar->call_exps_cap = n_chunks;
            }
        }
        o->exps = n_chunks && n_chunks <= ar->call_exps_cap ? ar->call_exps : NULL;
        *opp = o;
    }
    /* The stream mode's clock, once nothing can fail: announced before
     * the op is queued, so that the engine, woken by the submission, sends
     * the announcement ahead of the op's packets. */
    if (announce)
        atomic_fetch_add_explicit(announce, 1, memory_order_release);
    /* Even a call of 0 values goes to the switch: it pairs with the other
     * workers' call there (ar_begin). */
    sr_op_submit(e, o);
    *h = sr_op_handle(o);
    return 0;
}

/* The calling thread of a blocking allreduce reads its chunks' exponents,
 * in the order the engine sends their hints, while the engine sends: on a
 * host with a core to spare that pass leaves the data-path thread, which
 * takes each one ready (hint_exp) and reads the others itself. Stops early
 * once the call has ended. */
static void exps_fill(const sr_engine *e, serene_op *o)
{
    for (size_t j = 0, n = chunks_of(e, o); j < n; j++) {
        if (j % 64 == 0 && atomic_load_explicit(&o->state, memory_order_relaxed) == SR_OPS_DONE)
            return;
        o->exps[j] = chunk_exp(e, o, (uint32_t)j);
        atomic_store_explicit(&o->exps_ready, (uint32_t)j + 1, memory_order_release);
    }
}

int sr_allreduce_submit(sr_engine *e, const void *sendbuf, void *recvbuf, size_t count,
                        serene_dtype dtype, serene_reduce_op op, unsigned flags, serene_op **h,
                        _Atomic uint32_t *announce)
{
    ar_req r = {sendbuf, recvbuf, count, dtype, op, flags};
    return ar_start(e, &r, h, NULL, announce);
}

static int start_call(serene_ctx *ctx, const ar_req *r, serene_op **op_out)
{
    if (!op_out)
        return SERENE_ERR_INVAL;
    *op_out = NULL;
    sr_engine *e = sr_engine_live(ctx);
    serene_op *h = NULL;
    int rc = e ? sr_call_enter(e) : SERENE_ERR_INVAL;
    if (rc)
        return rc;
    rc = ar_start(e, r, &h, NULL, NULL);
    return sr_call_end(e, rc, h, op_out);
}

static int blocking_call(serene_ctx *ctx, const ar_req *r)
{
    sr_engine *e = sr_engine_live(ctx);
    serene_op *h = NULL;
    int rc = e ? sr_call_enter(e) : SERENE_ERR_INVAL;
    if (rc)
        return rc;
    serene_op *o = NULL;
    rc = ar_start(e, r, &h, &o, NULL);
    if (!rc && o->exps)
        exps_fill(e, o);
    return sr_call_end(e, rc, h, NULL);
}

SERENE_API int serene_allreduce_start(serene_ctx *ctx, const float *sendbuf, float *recvbuf,
                                      size_t count, serene_reduce_op op, serene_op **op_out)
{
    ar_req r = {sendbuf, recvbuf, count, SERENE_FLOAT32, op, 0};
    return start_call(ctx, &r, op_out);
}

SERENE_API int serene_allreduce(serene_ctx *ctx, const float *sendbuf, float *recvbuf,
                                size_t count, serene_reduce_op op)
{
    ar_req r = {sendbuf, recvbuf, count, SERENE_FLOAT32, op, 0};
    return blocking_call(ctx, &r);
}

SERENE_API int serene_allreduce_typed_start(serene_ctx *ctx, const void *sendbuf, void *recvbuf,
                                            size_t count, serene_dtype dtype,
                                            serene_reduce_op op, unsigned flags,
                                            serene_op **op_out)
{
    ar_req r = {sendbuf, recvbuf, count, dtype, op, flags};
    return start_call(ctx, &r, op_out);
}

SERENE_API int serene_allreduce_typed(serene_ctx *ctx, const void *sendbuf, void *recvbuf,
                                      size_t count, serene_dtype dtype, serene_reduce_op op,
                                      unsigned flags)
{
    ar_req r = {sendbuf, recvbuf, count, dtype, op, flags};
    return blocking_call(ctx, &r);
}
