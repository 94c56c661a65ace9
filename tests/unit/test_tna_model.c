/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tna_model.c - the Tofino program's allreduce rules, run on its C
 * model (p4/tna/model): a new round whose pieces share the old 31-bit
 * fingerprint with the cell's complete round (a constructed CRC-32
 * collision) is summed, where the rules before the round number answered
 * it with the old round's sums; a failed round is replaced by the slot's
 * next round, where the old rules poisoned the cell for good; a delayed
 * copy of an older round changes nothing; probes; the event counters. The
 * model's sizes are checked against p4/tna/tna_headers.p4.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../p4/tna/model/tna_model.h"
#include "proto/wire.h"

#define FULL2 0x3u /* two workers */

static sr_hdr piece(uint8_t n, uint16_t w, uint32_t seq, uint32_t off, uint16_t count, int8_t exp,
                    uint32_t aux)
{
    sr_hdr h;
    memset(&h, 0, sizeof h);
    h.version = SR_WIRE_VERSION;
    h.op = SR_OP_AR_DATA;
    h.job = 1;
    h.worker = w;
    h.seq = seq;
    h.slot = 0;
    h.shadow = (uint8_t)(n & 1u);
    h.count = count;
    h.exp = exp;
    h.next_exp = 0;
    h.offset = off;
    h.aux = aux;
    h.status = n;
    return h;
}

static const tna_job JOB = {1, FULL2, 0};

/* Round n's piece of both workers (32 values at off of call seq). */
static void pieces(uint8_t n, uint32_t seq, uint32_t off, sr_hdr *h0, sr_hdr *h1)
{
    *h0 = piece(n, 0, seq, off, TNA_ELEMS, 0, 64);
    *h1 = *h0;
    h1->worker = 1;
}

static void fill(uint32_t *v, uint32_t base)
{
    for (unsigned k = 0; k < TNA_ELEMS; k++)
        v[k] = base + k;
}

/* Both workers' pieces h0, h1 (values a, b + k); returns the multicast. */
static tna_out round2(tna_model *m, sr_hdr h0, sr_hdr h1, uint32_t a, uint32_t b)
{
    uint32_t v0[TNA_ELEMS], v1[TNA_ELEMS];
    tna_out o;
    fill(v0, a);
    fill(v1, b);
    tna_model_ar(m, &JOB, &h0, v0, &o);
    assert_int_equal(o.verdict, TNA_DROP);
    tna_model_ar(m, &JOB, &h1, v1, &o);
    assert_int_equal(o.verdict, TNA_MULTICAST);
    assert_int_equal(o.hdr.op, SR_OP_AR_RESULT);
    return o;
}

static void expect_sums(const tna_out *o, uint32_t s)
{
    for (unsigned k = 0; k < o->hdr.count; k++)
        assert_int_equal(o->vals[k], s + 2 * k);
}

/* seq for b, b's other fields a's, with the legacy fingerprint of a: a
 * combination of seq's bits whose CRC-32 differences cancel in the 31 bits
 * kept (CRC is affine over GF(2): 32 columns in 31 bits are dependent). */
static uint32_t colliding_seq(const tna_model *legacy, sr_hdr a)
{
    uint32_t base = tna_model_fp(legacy, &a), col[32], mix[32];
    for (unsigned i = 0; i < 32; i++) {
        sr_hdr t = a;
        t.seq ^= 1u << i;
        col[i] = tna_model_fp(legacy, &t) ^ base;
        mix[i] = 1u << i;
    }
    for (unsigned r = 0, bit = 31; bit-- > 0;) { /* eliminate bit by bit (fp bits 31:1) */
        unsigned p = r;
        while (p < 32 && !(col[p] >> (bit + 1) & 1u))
            p++;
        if (p == 32)
            continue;
        uint32_t tc = col[p], tm = mix[p];
        col[p] = col[r], mix[p] = mix[r], col[r] = tc, mix[r] = tm;
        for (unsigned q = 0; q < 32; q++)
            if (q != r && col[q] >> (bit + 1) & 1u)
                col[q] ^= col[r], mix[q] ^= mix[r];
        r++;
    }
    for (unsigned q = 0; q < 32; q++)
        if (!col[q] && mix[q])
            return a.seq ^ mix[q];
    fail_msg("no colliding seq");
    return 0;
}

static void test_collision_pair(void **state)
{
    (void)state;
    static tna_model m, old;
    tna_model_init(&old, 1);
    /* Round 1 of slot 0 (cell shadow 1) and round 3 (the same cell). */
    sr_hdr a = piece(1, 0, 1000, 0, TNA_ELEMS, 3, 4096);
    sr_hdr b = a;
    b.status = 3;
    b.seq = colliding_seq(&old, a);
    assert_int_not_equal(b.seq, a.seq);
    assert_int_equal(tna_model_fp(&old, &a), tna_model_fp(&old, &b));
    printf("colliding pair: seq %u and %u, fingerprint 0x%08x\n", a.seq, b.seq,
           tna_model_fp(&old, &a));
    sr_hdr mid = piece(2, 0, 1000, TNA_ELEMS, TNA_ELEMS, 3, 4096);
    for (int legacy = 0; legacy < 2; legacy++) {
        tna_model *t = legacy ? &old : &m;
        sr_hdr a1 = a, m1 = mid, b1 = b;
        a1.worker = m1.worker = b1.worker = 1;
        tna_model_init(t, legacy);
        tna_out o = round2(t, a, a1, 10, 20);
        expect_sums(&o, 30);
        o = round2(t, mid, m1, 100, 200);
        expect_sums(&o, 300);
        /* Round 3: worker 0's piece first. */
        uint32_t v[TNA_ELEMS];
        fill(v, 1000);
        tna_model_ar(t, &JOB, &b, v, &o);
        if (legacy) { /* the old program: round 1's sums under round 3's header */
            assert_int_equal(o.verdict, TNA_UNICAST);
            assert_int_equal(o.hdr.op, SR_OP_AR_RESULT);
            assert_int_equal(o.hdr.seq, b.seq);
            expect_sums(&o, 30);
            continue;
        }
        assert_int_equal(o.verdict, TNA_DROP);
        fill(v, 2000);
        tna_model_ar(t, &JOB, &b1, v, &o);
        assert_int_equal(o.verdict, TNA_MULTICAST);
        assert_int_equal(o.hdr.seq, b.seq);
        expect_sums(&o, 3000);
        assert_int_equal(t->ev[1 * 4 + TNA_EV_DONE], 3);
    }
}

/* Worker 1 disagrees (another aux, its CRC below the round's) in round 1:
 * its MISMATCH at once; the slot's next round in that cell (3) is summed. The old rules poisoned the
 * cell: round 3 was MISMATCH too. */
static void test_failed_round_cleared(void **state)
{
    (void)state;
    static tna_model m;
    for (int legacy = 0; legacy < 2; legacy++) {
        tna_model_init(&m, legacy);
        uint32_t v[TNA_ELEMS] = {0};
        sr_hdr a = piece(1, 0, 7, 0, TNA_ELEMS, 0, 64), bad = piece(1, 1, 7, 0, TNA_ELEMS, 0, 65);
        tna_out o;
        tna_model_ar(&m, &JOB, &a, v, &o);
        assert_int_equal(o.verdict, TNA_DROP);
        tna_model_ar(&m, &JOB, &bad, v, &o);
        assert_int_equal(o.verdict, TNA_ERROR);
        assert_int_equal(o.hdr.op, SR_OP_ERROR);
        assert_int_equal(o.err, SR_ST_MISMATCH);
        sr_hdr c0, c1;
        pieces(3, 8, 0, &c0, &c1);
        if (legacy) {
            tna_model_ar(&m, &JOB, &c0, v, &o);
            assert_int_equal(o.verdict, TNA_ERROR);
            continue;
        }
        o = round2(&m, c0, c1, 5, 6);
        expect_sums(&o, 11);
        assert_int_equal(m.ev[4 + TNA_EV_MISMATCH], 1);
    }
}

/* A disagreeing piece whose CRC is above the round's replaces the open
 * round: the first worker's copy then meets MISMATCH, no result mixes the
 * two, and round 3 is summed. */
static void test_disagreeing_piece_above(void **state)
{
    (void)state;
    static tna_model m;
    tna_model_init(&m, 0);
    uint32_t v[TNA_ELEMS] = {0};
    sr_hdr a = piece(1, 0, 7, 0, TNA_ELEMS, 0, 64), bad = piece(1, 1, 7, 0, TNA_ELEMS, 0, 64);
    while (tna_model_fp(&m, &bad) <= tna_model_fp(&m, &a)) /* another total, a CRC above */
        bad.aux++;
    tna_out o;
    tna_model_ar(&m, &JOB, &a, v, &o);
    tna_model_ar(&m, &JOB, &bad, v, &o);
    assert_int_equal(o.verdict, TNA_DROP); /* it opened a round of its own */
    tna_model_ar(&m, &JOB, &a, v, &o);     /* worker 0's copy */
    assert_int_equal(o.verdict, TNA_ERROR);
    assert_int_equal(o.err, SR_ST_MISMATCH);
    sr_hdr c0, c1;
    pieces(3, 8, 0, &c0, &c1);
    o = round2(&m, c0, c1, 5, 6);
    expect_sums(&o, 11);
}

/* A copy of round 1 delayed into round 3's open round: MISMATCH to its
 * sender (whose library ignores it), nothing changed: not its values, not
 * its next_exp (larger than the round's). */
static void test_stale_copy(void **state)
{
    (void)state;
    static tna_model m;
    tna_model_init(&m, 0);
    sr_hdr a0, a1, mid0, mid1, c0, c1;
    pieces(1, 1, 0, &a0, &a1);
    pieces(2, 1, 32, &mid0, &mid1);
    pieces(3, 2, 0, &c0, &c1);
    a0.next_exp = 40;
    c0.next_exp = 5;
    c1.next_exp = 7;
    tna_out o = round2(&m, a0, a1, 1, 1);
    round2(&m, mid0, mid1, 1, 1);
    uint32_t v[TNA_ELEMS];
    fill(v, 50);
    tna_model_ar(&m, &JOB, &c0, v, &o);
    assert_int_equal(o.verdict, TNA_DROP);
    tna_model_ar(&m, &JOB, &a0, v, &o); /* the stale copy */
    assert_int_equal(o.verdict, TNA_ERROR);
    assert_int_equal(o.hdr.seq, a0.seq);
    fill(v, 60);
    tna_model_ar(&m, &JOB, &c1, v, &o);
    assert_int_equal(o.verdict, TNA_MULTICAST);
    expect_sums(&o, 110);
    assert_int_equal(o.hdr.next_exp, 7);
}

/* AR_PROBE: NAK while the cell holds an older round (the piece was lost),
 * HELD while the open round holds it, NAK once complete (the resend is
 * answered from the cell), MISMATCH for an older round; a retransmission
 * to the complete round gets its sums, counted as a duplicate. */
static void test_probes(void **state)
{
    (void)state;
    static tna_model m;
    tna_model_init(&m, 0);
    sr_hdr a0, a1, c0, c1;
    pieces(1, 1, 0, &a0, &a1);
    pieces(3, 2, 0, &c0, &c1);
    sr_hdr p0 = a0;
    p0.op = SR_OP_AR_PROBE;
    p0.count = 0;
    tna_out o;
    uint32_t v[TNA_ELEMS];
    fill(v, 4);
    tna_model_ar(&m, &JOB, &p0, NULL, &o);
    assert_int_equal(o.hdr.op, SR_OP_AR_NAK);
    tna_model_ar(&m, &JOB, &a0, v, &o);
    tna_model_ar(&m, &JOB, &p0, NULL, &o);
    assert_int_equal(o.hdr.op, SR_OP_AR_HELD);
    assert_int_equal(o.hdr.count, 0);
    tna_model_ar(&m, &JOB, &a0, v, &o); /* a copy while it waits */
    assert_int_equal(o.hdr.op, SR_OP_AR_HELD);
    tna_model_ar(&m, &JOB, &a1, v, &o);
    assert_int_equal(o.verdict, TNA_MULTICAST);
    tna_model_ar(&m, &JOB, &p0, NULL, &o);
    assert_int_equal(o.hdr.op, SR_OP_AR_NAK);
    tna_model_ar(&m, &JOB, &a1, v, &o); /* its result was lost: the shadow copy */
    assert_int_equal(o.verdict, TNA_UNICAST);
    assert_int_equal(o.hdr.op, SR_OP_AR_RESULT);
    expect_sums(&o, 8);
    tna_model_ar(&m, &JOB, &c0, v, &o);
    tna_model_ar(&m, &JOB, &p0, NULL, &o); /* round 1's probe, round 3 open */
    assert_int_equal(o.verdict, TNA_ERROR);
    assert_int_equal(m.ev[4 + TNA_EV_DUP], 2);
    assert_int_equal(m.ev[4 + TNA_EV_DONE], 1);
}

/* The store: whole rows, applied once per row, worker and push number;
 * RANGE and BAD_COUNT as classify answers. A second job in a block keeps
 * the first job's push numbers and sums until the block is cleared
 * (serene-ctl's script clears it when it sets a job up): its push 1 was
 * taken as a repeat. */
static void test_store_and_clear(void **state)
{
    (void)state;
    static tna_model m;
    tna_model_init(&m, 0);
    const tna_job a = {1, FULL2, 4096}, b = {5, FULL2, 4096}; /* both block 1 */
    uint32_t v[TNA_ELEMS];
    fill(v, 7);
    tna_out o;
    sr_hdr push = piece(0, 0, 1, 3 * TNA_ELEMS, TNA_ELEMS, 0, 0), pull = push;
    push.op = SR_OP_PUSH;
    pull.op = SR_OP_PULL;
    pull.count = 0;
    pull.aux = TNA_ELEMS;
    for (uint32_t k = 1; k <= 3; k++) {
        push.seq = k;
        tna_model_store(&m, &a, &push, v, &o);
        assert_int_equal(o.hdr.op, SR_OP_PUSH_ACK);
        assert_int_equal(o.hdr.aux, 1);
        tna_model_store(&m, &a, &push, v, &o); /* its copy: acknowledged, not applied */
        assert_int_equal(o.hdr.aux, 0);
    }
    tna_model_store(&m, &a, &pull, NULL, &o);
    assert_int_equal(o.hdr.op, SR_OP_PULL_RESP);
    assert_int_equal(o.hdr.count, TNA_ELEMS);
    assert_int_equal(o.vals[5], 3 * 12);
    static const struct {
        uint32_t off;
        uint16_t count;
        uint8_t st;
    } bad[] = {{3 * TNA_ELEMS + 1, TNA_ELEMS, SR_ST_RANGE}, /* not a row's first word */
               {3 * TNA_ELEMS, 8, SR_ST_BAD_COUNT},         /* a piece of a row */
               {4096, TNA_ELEMS, SR_ST_RANGE}};            /* past the job's store */
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sr_hdr h = push;
        h.offset = bad[i].off;
        h.count = bad[i].count;
        tna_model_store(&m, &a, &h, v, &o);
        assert_int_equal(o.verdict, TNA_ERROR);
        assert_int_equal(o.err, bad[i].st);
    }
    push.seq = 1; /* job 5's first push, the block not cleared */
    tna_model_store(&m, &b, &push, v, &o);
    assert_int_equal(o.hdr.aux, 0);
    tna_model_clear_block(&m, 1);
    tna_model_store(&m, &b, &push, v, &o);
    assert_int_equal(o.hdr.aux, 1);
    tna_model_store(&m, &b, &pull, NULL, &o);
    assert_int_equal(o.vals[5], 12);
}

/* The model's sizes are the program's. */
static void test_sizes(void **state)
{
    (void)state;
    const char *vec = getenv("SERENE_VECTORS");
    char path[1024], line[256];
    assert_non_null(vec);
    snprintf(path, sizeof path, "%s/../../p4/tna/tna_headers.p4", vec);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static const struct {
        const char *name;
        unsigned v;
    } want[] = {{"SR_TNA_ELEMS", TNA_ELEMS},          {"SR_TNA_AR_SLOTS", TNA_AR_SLOTS},
                {"SR_TNA_MAX_JOBS", TNA_MAX_JOBS},    {"SR_TNA_ROUND_IDLE", TNA_ROUND_IDLE},
                {"SR_TNA_EV_DONE", TNA_EV_DONE},      {"SR_TNA_EV_DUP", TNA_EV_DUP},
                {"SR_TNA_EV_MISMATCH", TNA_EV_MISMATCH},
                {"SR_TNA_STORE_ROWS", TNA_STORE_ROWS}, {"SR_TNA_LANE_ENTRIES", TNA_LANE_ENTRIES},
                {"SR_TNA_MAX_WORKERS", TNA_MAX_WORKERS}};
    unsigned found = 0;
    while (fgets(line, sizeof line, f)) {
        char name[64];
        unsigned v;
        if (sscanf(line, "#define %63s %u", name, &v) != 2)
            continue;
        for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++)
            if (!strcmp(name, want[i].name)) {
                assert_int_equal(v, want[i].v);
                found++;
            }
    }
    fclose(f);
    assert_int_equal(found, sizeof want / sizeof want[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),        cmocka_unit_test(test_collision_pair),
        cmocka_unit_test(test_failed_round_cleared), cmocka_unit_test(test_disagreeing_piece_above),
        cmocka_unit_test(test_stale_copy),
        cmocka_unit_test(test_probes),       cmocka_unit_test(test_store_and_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
