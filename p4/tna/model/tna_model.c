/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_model.c - the Tofino program's allreduce as C (tna_model.h): the
 * round registers, nexp_reg and the lanes as arrays, SR_TNA_ROUND_UPDATE
 * and the RegisterActions' outputs, the flags the gateways set, and
 * lane_tbl_i's and answer_tbl's const entries in their order (first match
 * wins), from p4/tna/tna_ingress.p4 and tna_cells.p4.
 */
#include "tna_model.h"

#include <string.h>

#include "proto/roce.h"

/* CRC-32 as bf-p4c's crc_32 (polynomial 0x04c11db7 reflected, init and
 * final xor 0xffffffff: IEEE 802.3's, sr_crc32_update) over the fields'
 * big-endian bytes in list order; the Hash<bit<W>> takes the low W bits. */
static uint32_t crc32(const uint8_t *p, size_t n)
{
    return sr_crc32_update(0xffffffffu, p, n) ^ 0xffffffffu;
}

static size_t put32(uint8_t *p, uint32_t v)
{
    sr_put_be32(p, v);
    return 4;
}

uint32_t tna_model_fp(const tna_model *m, const sr_hdr *h)
{
    uint8_t b[16];
    size_t n = 0;
    n += put32(b + n, h->seq);
    n += put32(b + n, h->offset);
    if (m->legacy) { /* ar_fp: fp[31:1] = CRC of seq, offset, count, exp, aux */
        sr_put_be16(b + n, h->count);
        n += 2;
    }
    b[n++] = (uint8_t)h->exp;
    n += put32(b + n, h->aux);
    uint32_t c = crc32(b, n);
    if (m->legacy)
        return (c & 0x7fffffffu) << 1 | 1u;
    /* ar_fp, ar_round: {status, CRC[22:0], 1} */
    return (uint32_t)h->status << 24 | (c & 0x7fffffu) << 1 | 1u;
}

void tna_model_clear_block(tna_model *m, unsigned blk)
{
    unsigned per = TNA_AR_SLOTS * 2u, c0 = blk * per, r0 = TNA_ROW0 + blk * TNA_STORE_ROWS;
    for (unsigned c = c0; c < c0 + per; c++) {
        m->round[c].lo = m->legacy ? 0 : TNA_ROUND_IDLE;
        m->round[c].hi = 0;
        m->nexp[c] = m->nexp_fp[c] = 0;
    }
    for (unsigned i = 0; i < TNA_ELEMS; i++) {
        memset(&m->lane[i][c0], 0, per * sizeof m->lane[i][0]);
        memset(&m->lane[i][r0], 0, TNA_STORE_ROWS * sizeof m->lane[i][0]);
    }
    memset(&m->push_last[blk * TNA_STORE_ROWS * TNA_MAX_WORKERS], 0,
           TNA_STORE_ROWS * TNA_MAX_WORKERS * sizeof m->push_last[0]);
    memset(&m->ev[blk * 4u], 0, 4u * sizeof m->ev[0]);
}

void tna_model_init(tna_model *m, int legacy)
{
    memset(m, 0, sizeof *m);
    m->legacy = legacy;
    for (unsigned b = 0; b < TNA_MAX_JOBS; b++)
        tna_model_clear_block(m, b);
}

/* What the round registers and the gateways say about one packet. */
typedef struct flags {
    int same, dup, done, isnew, free, poison;
    uint32_t p_hw;
} flags;

/* SR_TNA_ROUND_NEWER: fp - lo > 0, signed. */
static int newer(uint32_t fp, uint32_t lo)
{
    return (int32_t)(fp - lo) > 0;
}

/* The gateways on round_c's output r_fp (lo, or 0 when the piece's round
 * is newer): the same round, a newer one, (legacy) a poisoned one. */
static void fp_flags(const tna_model *m, uint32_t r_fp, uint32_t fp, flags *f)
{
    f->same = r_fp == fp;
    f->isnew = !m->legacy && r_fp == 0;
    f->poison = m->legacy && r_fp == 0;
}

/* round_a/_b/_c_data (SR_TNA_ROUND_UPDATE) and their outputs: hi after,
 * hi before, lo before (0 when the round number is newer). */
static void round_data(tna_model *m, unsigned cell, uint32_t fp, uint32_t fx, flags *f)
{
    tna_pair *r = &m->round[cell];
    uint32_t lo = r->lo, hi = r->hi, r_fp = lo;
    if (m->legacy) {
        if (lo == fp) {
            r->hi = hi & fx;
        } else if (hi == 0) {
            r->lo = fp;
            r->hi = fx;
        } else {
            r->lo = 0;
        }
    } else if (newer(fp, lo)) {
        r->lo = fp;
        r->hi = fx;
        r_fp = 0;
    } else if (lo == fp) {
        r->hi = hi & fx;
    }
    fp_flags(m, r_fp, fp, f);
    f->dup = r->hi == hi;
    f->done = r->hi == 0;
    f->free = hi == 0;
}

/* round_b/_c_probe: hi, and lo unless the round number is newer. */
static void round_probe(const tna_model *m, unsigned cell, uint32_t fp, uint32_t wbit, flags *f)
{
    const tna_pair *r = &m->round[cell];
    fp_flags(m, !m->legacy && newer(fp, r->lo) ? 0 : r->lo, fp, f);
    f->free = r->hi == 0;
    f->p_hw = r->hi & wbit; /* r_old & ~fx, r_old within full_mask */
}

/* nexp_data: the round's next_exp max, as nexp_in = {n, 0, next_exp ^
 * 0x80} (legacy: a pair of the fingerprint and the max). */
static uint32_t nexp_data(tna_model *m, unsigned cell, const sr_hdr *h, uint32_t fp)
{
    uint32_t in = (uint8_t)(h->next_exp ^ 0x80);
    if (m->legacy) {
        if (m->nexp_fp[cell] != fp) {
            m->nexp_fp[cell] = fp;
            m->nexp[cell] = in;
        } else if ((int32_t)(in - m->nexp[cell]) > 0) {
            m->nexp[cell] = in;
        }
        return m->nexp[cell];
    }
    in |= (uint32_t)h->status << 24;
    if ((int32_t)(in - m->nexp[cell]) > 0)
        m->nexp[cell] = in;
    return m->nexp[cell];
}

enum lane_op { L_NONE, L_SET, L_ADD, L_READ };

/* lane_tbl_i's AR entries, in order. */
static enum lane_op lane_op(const tna_model *m, const flags *f)
{
    if (f->same && !f->dup)
        return L_ADD;
    if (f->same && f->dup && f->done)
        return L_READ;
    if (m->legacy ? !f->same && f->free : f->isnew)
        return L_SET;
    return L_NONE;
}

static void lanes(tna_model *m, unsigned cell, const flags *f, const sr_hdr *h,
                  const uint32_t *vals, tna_out *out)
{
    enum lane_op op = lane_op(m, f);
    for (unsigned i = 0; i < h->count && i < TNA_ELEMS; i++) {
        uint32_t *v = &m->lane[i][cell];
        if (op == L_SET)
            *v = vals[i];
        else if (op == L_ADD)
            *v += vals[i];
        out->vals[i] = op == L_NONE ? vals[i] : *v;
    }
}

/* answer_tbl's AR_DATA entries, in order: the verdict. */
static int ar_answer(const tna_model *m, const flags *f, uint8_t *op, unsigned *ev)
{
    *ev = 0;
    if (f->isnew || (f->same && !f->dup)) { /* a new round, or a new contribution */
        *ev = f->done ? TNA_EV_DONE : 0;
        return f->done ? TNA_MULTICAST : TNA_DROP;
    }
    if (f->same) {
        *ev = TNA_EV_DUP;
        *op = f->done ? SR_OP_AR_RESULT : SR_OP_AR_HELD;
        return TNA_UNICAST;
    }
    if (m->legacy && f->free)
        return f->done ? TNA_MULTICAST : TNA_DROP;
    *ev = TNA_EV_MISMATCH;
    return TNA_ERROR;
}

/* answer_tbl's AR_PROBE entries, in order. */
static int probe_answer(const tna_model *m, const flags *f, uint8_t *op)
{
    if (m->legacy ? f->free : f->isnew || (f->same && f->free))
        *op = SR_OP_AR_NAK;
    else if (m->legacy ? f->poison : !f->same)
        return TNA_ERROR;
    else
        *op = f->p_hw == 0 ? SR_OP_AR_HELD : SR_OP_AR_NAK;
    return TNA_UNICAST;
}

/* error_code / error_answer: the request echoed as an ERROR (egress). */
static void error_out(tna_out *out, const sr_hdr *h, uint8_t st)
{
    out->verdict = TNA_ERROR;
    out->hdr = *h;
    out->hdr.op = SR_OP_ERROR;
    out->hdr.aux = h->op;
    out->hdr.count = 0;
    out->hdr.status = st;
    out->err = st;
}

/* answer_hdr: the request's job, worker, seq and offset; the rest set. */
static void answer_hdr(tna_out *out, const sr_hdr *h, uint8_t op, uint16_t count, uint32_t aux)
{
    out->verdict = TNA_UNICAST;
    out->hdr = *h;
    out->hdr.op = op;
    out->hdr.count = count;
    out->hdr.aux = aux;
    out->hdr.flags = out->hdr.status = 0;
    out->hdr.exp = out->hdr.next_exp = 0;
    out->hdr.shadow = 0;
    out->hdr.slot = 0;
}

void tna_model_store(tna_model *m, const tna_job *j, const sr_hdr *h, const uint32_t *vals,
                     tna_out *out)
{
    const uint32_t offmask = (0xffffffffu ^ ((TNA_STORE_ROWS * TNA_ELEMS) - 1u)) | (TNA_ELEMS - 1u);
    unsigned blk = j->id % TNA_MAX_JOBS, row = (h->offset / TNA_ELEMS) % TNA_STORE_ROWS;
    int push = h->op == SR_OP_PUSH, aligned = (h->offset & offmask) == 0;
    int whole = push ? h->count == TNA_ELEMS : h->count == 0 && h->aux == TNA_ELEMS;
    memset(out, 0, sizeof *out);
    if (!aligned) { /* classify: lop_err(RANGE) */
        error_out(out, h, SR_ST_RANGE);
        return;
    }
    /* k_range: the row at or past store_words (offset < 2^15 here). */
    uint16_t ox = (uint16_t)((uint16_t)h->offset - j->store_words);
    int k_range = !(j->store_words & 0x8000u) && !(ox & 0x8000u);
    if (k_range || !whole) {
        error_out(out, h, k_range ? SR_ST_RANGE : SR_ST_BAD_COUNT);
        return;
    }
    uint32_t *lane_row[TNA_ELEMS];
    for (unsigned i = 0; i < TNA_ELEMS; i++)
        lane_row[i] = &m->lane[i][TNA_ROW0 + blk * TNA_STORE_ROWS + row];
    if (!push) { /* l_read, pull_resp */
        answer_hdr(out, h, SR_OP_PULL_RESP, TNA_ELEMS, 0);
        for (unsigned i = 0; i < TNA_ELEMS; i++)
            out->vals[i] = *lane_row[i];
        return;
    }
    /* push_check: applied once per row, worker and push number. */
    uint32_t *last =
        &m->push_last[(blk * TNA_STORE_ROWS + row) * TNA_MAX_WORKERS + (h->worker & 31u)];
    int fresh = (int32_t)(h->seq - *last) > 0;
    if (fresh) {
        *last = h->seq;
        for (unsigned i = 0; i < TNA_ELEMS; i++)
            *lane_row[i] += vals[i];
    }
    answer_hdr(out, h, SR_OP_PUSH_ACK, 0, (uint32_t)fresh);
}

void tna_model_ar(tna_model *m, const tna_job *j, const sr_hdr *h, const uint32_t *vals,
                  tna_out *out)
{
    unsigned blk = j->id % TNA_MAX_JOBS, ev = 0;
    unsigned cell = (blk * TNA_AR_SLOTS + (h->slot % TNA_AR_SLOTS)) * 2u + (h->shadow & 1u);
    uint32_t wbit = 1u << (h->worker & 31u), fx = j->full_mask ^ wbit;
    uint32_t fp = tna_model_fp(m, h);
    uint8_t op = SR_OP_AR_RESULT;
    flags f = {0};

    memset(out, 0, sizeof *out);
    out->hdr = *h;
    if (h->op == SR_OP_AR_PROBE) {
        round_probe(m, cell, fp, wbit, &f);
        out->verdict = probe_answer(m, &f, &op);
    } else {
        round_data(m, cell, fp, fx, &f);
        uint32_t nx = nexp_data(m, cell, h, fp);
        lanes(m, cell, &f, h, vals, out);
        out->verdict = ar_answer(m, &f, &op, &ev);
        out->hdr.next_exp = (int8_t)((uint8_t)nx ^ 0x80);
    }
    if (ev)
        m->ev[blk * 4u + ev]++;
    if (out->verdict == TNA_ERROR) { /* error_code: egress writes the ERROR */
        error_out(out, h, SR_ST_MISMATCH);
        return;
    }
    out->hdr.op = op;
    out->hdr.flags = 0;
    out->hdr.status = 0;
    if (op != SR_OP_AR_RESULT) { /* ar_answer: header only */
        out->hdr.count = 0;
        out->hdr.next_exp = h->next_exp;
    }
}
