/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline_allreduce.c - the software switch's pipeline, driven
 * packet by packet: streaming allreduce rounds of 1 to 4 workers (sums in
 * uint32_t arithmetic, wrap cases also written out by hand), duplicates
 * (answered AR_HELD), shadow copies and stale copies, a mismatched call
 * poisoning its round, bad slots and counts, unbound senders, the next
 * exponent's max, two jobs kept apart, and independent slots. Probes are
 * in test_pipeline_probe.c; the streaming protocol over a lossy network
 * is run in test_pipeline_sim.c.
 *
 * Messages are built with sr_hdr_pack, and every answer is checked both as
 * the action's fields and as the bytes a replica carries (header packed by
 * sr_pipe_replica_hdr, parsed back with sr_msg_parse); the fixture and the
 * helpers are in pipeline_helpers.h.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline.h"
#include "pipeline_helpers.h"
#include "proto/wire.h"

#define V(...) ((const int32_t[]){__VA_ARGS__})

/* ---- allreduce ------------------------------------------------------------------- */

/* One round of n workers, in order or reversed; values hit negative
 * numbers and int32 wrap-around. */
static void run_allreduce(fx *f, unsigned n, int reverse)
{
    enum { E = 6 };
    static const int32_t vals[4][E] = {
        {1, -1, INT32_MAX, INT32_MIN, 123456789, -7},
        {2, -2, 1, -1, 987654321, 0},
        {3, 5, INT32_MAX, INT32_MIN, 1111111111, -100},
        {-6, -4, 2, -2, 1, 50},
    };
    static const int32_t want2[4] = {INT32_MAX, INT32_MIN, -1, 1};
    static const int32_t want3[4] = {INT32_MIN, INT32_MAX, -1, -3};
    uint32_t sum[E] = {0};
    sr_hdr h = ar_hdr(5, 3, 1, 77, 4096, E);

    h.exp = -3;
    h.next_exp = 12;
    add_joined(f, 5, n, 8, 4);
    for (unsigned w = 0; w < n; w++)
        for (unsigned i = 0; i < E; i++)
            sum[i] += (uint32_t)vals[w][i];
    assert_int_equal((int32_t)sum[2], want2[n - 1]); /* the reference wraps too */
    assert_int_equal((int32_t)sum[3], want3[n - 1]);
    for (unsigned k = 0; k < n; k++) {
        unsigned w = reverse ? n - 1 - k : k;

        ar(f, &h, w, vals[w]);
        if (k + 1 < n)
            expect_nothing(f);
    }
    expect_result(f, 1, n, &h, sum);
    assert_int_equal(jc(f, 5).results, 1);
    assert_int_equal(jc(f, 5).tx, n + n); /* n JOIN_ACKs + n result copies */
    assert_int_equal(sc(f).tx_total, n + n);
}

static void test_allreduce_n1(void **state) { run_allreduce(*state, 1, 0); }
static void test_allreduce_n2(void **state) { run_allreduce(*state, 2, 1); }
static void test_allreduce_n3(void **state) { run_allreduce(*state, 3, 0); }
static void test_allreduce_n4(void **state) { run_allreduce(*state, 4, 1); }

static void test_dup_before_completion(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 0, 0, 1, 0, 2);
    uint32_t sum[2] = {111, 222};

    add_joined(f, 5, 3, 4, 2);
    ar(f, &h, 0, V(100, 200));
    h.flags = SR_FLAG_RETRANSMIT;
    for (int i = 0; i < 2; i++) {
        ar(f, &h, 0, V(999, 999)); /* not added: the switch says it holds it */
        expect_answer(f, &h, SR_OP_AR_HELD);
    }
    assert_int_equal(jc(f, 5).dup_dropped, 2);
    assert_int_equal(jc(f, 5).held, 2);
    h.flags = 0;
    ar(f, &h, 1, V(10, 20));
    expect_nothing(f);
    ar(f, &h, 2, V(1, 2));
    expect_result(f, 1, 3, &h, sum);
}

static void test_shadow_after_completion(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 1, 1, 9, 256, 3);
    uint32_t sum[3] = {5, (uint32_t)-5, 0};

    add_joined(f, 5, 2, 4, 2);
    ar(f, &h, 0, V(2, -2, 7));
    ar(f, &h, 1, V(3, -3, -7));
    expect_result(f, 1, 2, &h, sum);
    for (int i = 0; i < 3; i++) {
        ar(f, &h, 1, V(99, 99, 99)); /* the sums come from the slot, not the copy */
        expect_result(f, 0, 1, &h, sum);
    }
    ar(f, &h, 0, V(2, -2, 7));
    expect_result(f, 0, 0, &h, sum);
    assert_int_equal(jc(f, 5).shadow_replies, 4);
    assert_int_equal(jc(f, 5).results, 1);
    assert_int_equal(jc(f, 5).dup_dropped, 0);
}

/* Many rounds in one slot with alternating versions. Each round, worker 2
 * missed the previous result: while the others already contribute to the
 * new version, its retransmission of the old one gets the old sums. */
static void test_alternating_versions(void **state)
{
    fx *f = *state;
    enum { N = 3, E = 4, ROUNDS = 64 };
    uint32_t prev_sum[E] = {0};
    sr_hdr prev = {0};

    add_joined(f, 5, N, E, 4);
    for (unsigned r = 0; r < ROUNDS; r++) {
        sr_hdr h = ar_hdr(5, 2, (uint8_t)(r & 1u), 1000u + r, r * E, E);
        uint32_t sum[E] = {0};

        h.exp = (int8_t)(r % 20);
        for (unsigned w = 0; w < N; w++) {
            int32_t v[E];

            for (unsigned i = 0; i < E; i++) {
                v[i] = (int32_t)(r * 1000u + w * 10u + i) * (w == 1 ? -1 : 1);
                sum[i] += (uint32_t)v[i];
            }
            if (w == N - 1 && r > 0) {
                ar(f, &prev, w, NULL);
                expect_result(f, 0, w, &prev, prev_sum);
            }
            ar(f, &h, w, v);
            if (w < N - 1)
                expect_nothing(f);
        }
        expect_result(f, 1, N, &h, sum);
        prev = h;
        memcpy(prev_sum, sum, sizeof sum);
    }
    assert_int_equal(jc(f, 5).results, ROUNDS);
    assert_int_equal(jc(f, 5).shadow_replies, ROUNDS - 1);
    assert_int_equal(jc(f, 5).dup_dropped + jc(f, 5).stale_dropped, 0);
}

/* Late copies from a worker that moved on must not open a round nor free
 * its bit in the other version (that would double count its next copy). */
static void test_stale_copies(void **state)
{
    fx *f = *state;
    sr_hdr a = ar_hdr(5, 0, 0, 1, 0, 1), b = ar_hdr(5, 0, 1, 1, 1, 1);
    sr_hdr c = ar_hdr(5, 0, 0, 1, 2, 1), d = ar_hdr(5, 0, 1, 1, 3, 1);
    sr_hdr e = ar_hdr(5, 0, 0, 0, 9, 1);
    uint32_t sa[1] = {3}, sb[1] = {30}, sc3[1] = {300}, sd[1] = {3000};

    add_joined(f, 5, 2, 4, 2);
    ar(f, &a, 0, V(1));
    ar(f, &a, 1, V(2));
    expect_result(f, 1, 2, &a, sa);
    ar(f, &b, 0, V(10)); /* worker 0 moved on to version 1 */
    ar(f, &a, 0, V(1));  /* its overtaken retransmission of a: round b is open */
    expect_nothing(f);
    ar(f, &b, 0, V(10)); /* still one contribution of worker 0 to b */
    expect_answer(f, &b, SR_OP_AR_HELD);
    ar(f, &b, 1, V(20));
    expect_result(f, 1, 2, &b, sb);
    ar(f, &a, 0, V(1)); /* b done, c not started: a is the cell's last round */
    expect_nothing(f);
    ar(f, &a, 1, V(2));
    expect_nothing(f);
    assert_int_equal(jc(f, 5).stale_dropped, 3);
    ar(f, &b, 1, V(20)); /* a real retransmission still gets the shadow copy */
    expect_result(f, 0, 1, &b, sb);
    ar(f, &c, 1, V(200));
    expect_nothing(f);
    ar(f, &b, 1, V(20)); /* overtaken copy of b while c is open */
    expect_nothing(f);
    ar(f, &a, 0, V(1)); /* two rounds late in c's own cell, c open without worker 0 */
    expect_nothing(f);
    ar(f, &e, 0, V(7)); /* a piece of the call before: older by seq alone */
    expect_nothing(f);
    ar(f, &c, 0, V(100));
    expect_result(f, 1, 2, &c, sc3);
    ar(f, &d, 0, V(1000));
    ar(f, &a, 0, V(1)); /* two rounds late while d is open: only cnt[1-v] tells */
    expect_nothing(f);
    ar(f, &d, 0, V(1000));
    expect_answer(f, &d, SR_OP_AR_HELD);
    ar(f, &d, 1, V(2000));
    expect_result(f, 1, 2, &d, sd);
    assert_int_equal(jc(f, 5).stale_dropped, 7);
    assert_int_equal(jc(f, 5).mismatches + jc(f, 5).errors_sent, 0);
}

/* A contribution that disagrees with an open round in any field the round
 * is matched on (seq, offset, count, exp, the call's total count in aux)
 * poisons it: it, the first contributor's resend and every later
 * contribution are answered MISMATCH, and no sum goes out. Other slots go
 * on as before. */
static void test_mismatch_poisons_round(void **state)
{
    fx *f = *state;
    uint32_t sum[4] = {111, 222, 333, 444};

    add_joined(f, 5, 3, 8, 8);
    for (uint16_t i = 0; i < 5; i++) {
        sr_hdr h = ar_hdr(5, i, 0, 10, 64, 4), bad;

        h.exp = 3;
        h.next_exp = 4;
        h.aux = 1000;
        ar(f, &h, 0, V(100, 200, 300, 400));
        expect_nothing(f);
        bad = h;
        bad.next_exp = 100;
        switch (i) {
        case 0: bad.seq = 11; break;
        case 1: bad.offset = 65; break;
        case 2: bad.count = 3; break;
        case 3: bad.exp = 4; break;
        default: bad.aux = 1001; break;
        }
        ar(f, &bad, 1, V(5000, 5000, 5000, 5000));
        expect_error_w(f, &bad, SR_ST_MISMATCH);
        ar(f, &h, 0, V(100, 200, 300, 400)); /* the first contributor's resend */
        expect_error_w(f, &h, SR_ST_MISMATCH);
        for (unsigned w = 1; w < 3; w++) { /* agreeing now is too late */
            ar(f, &h, w, V(10, 20, 30, 40));
            expect_error_w(f, &h, SR_ST_MISMATCH);
        }
    }
    assert_int_equal(jc(f, 5).mismatches, 20);
    assert_int_equal(jc(f, 5).errors_sent, 20);
    assert_int_equal(jc(f, 5).results, 0);

    sr_hdr h = ar_hdr(5, 5, 0, 10, 64, 4);
    h.exp = 3;
    h.next_exp = 4;
    h.aux = 1000;
    ar(f, &h, 0, V(100, 200, 300, 400));
    ar(f, &h, 1, V(10, 20, 30, 40));
    ar(f, &h, 2, V(1, 2, 3, 4));
    expect_result(f, 1, 3, &h, sum);
    assert_int_equal(jc(f, 5).dup_dropped, 0);
}

static void test_bad_slot_and_count(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 4, 0, 1, 0, 1);
    uint32_t sum[8] = {1, 2, 3, 4, 5, 6, 7, 8};

    add_joined(f, 5, 1, 8, 4);
    ar(f, &h, 0, V(1));
    expect_error_w(f, &h, SR_ST_BAD_SLOT);
    h.slot = SR_WIRE_SLOT_MASK;
    ar(f, &h, 0, V(1));
    expect_error_w(f, &h, SR_ST_BAD_SLOT);
    h = ar_hdr(5, 3, 1, 1, 0, 9);
    ar(f, &h, 0, NULL);
    expect_error_w(f, &h, SR_ST_BAD_COUNT);
    assert_int_equal(jc(f, 5).errors_sent, 3);
    h.count = 8; /* the refused packet set no state: this one completes */
    ar(f, &h, 0, V(1, 2, 3, 4, 5, 6, 7, 8));
    expect_result(f, 1, 1, &h, sum);
    assert_int_equal(jc(f, 5).shadow_replies, 0);
}

static void test_unbound_data_dropped(void **state)
{
    fx *f = *state;
    sr_peer other = {peer_of(5, 0).ip, 1};
    sr_hdr h = ar_hdr(5, 0, 0, 1, 0, 1);
    uint32_t sum[1] = {3};

    assert_int_equal(job_add(f->p, 5, 2, 4, 2), 0);
    join(f, 5, 0, 1, 0);
    ar(f, &h, 1, V(50)); /* worker 1 never joined */
    expect_nothing(f);
    h.worker = 0;
    feed(f, &other, &h, V(50)); /* worker 0 from another port */
    expect_nothing(f);
    ar(f, &h, 2, V(50)); /* out of range */
    expect_nothing(f);
    h.slot = 999; /* isolation comes before the slot check */
    ar(f, &h, 1, V(50));
    expect_nothing(f);
    assert_int_equal(jc(f, 5).dropped_unbound, 4);
    assert_int_equal(jc(f, 5).errors_sent, 0);
    join(f, 5, 1, 2, 0); /* none of it touched the slot */
    h = ar_hdr(5, 0, 0, 1, 0, 1);
    ar(f, &h, 0, V(1));
    expect_nothing(f);
    ar(f, &h, 1, V(2));
    expect_result(f, 1, 2, &h, sum);
}

static void test_ar_unknown_job_and_removed(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 0, 0, 1, 0, 1);

    add_joined(f, 5, 2, 4, 2);
    assert_int_equal(sr_pipe_job_remove(f->p, 5), 0);
    ar(f, &h, 0, V(1));
    expect_error_w(f, &h, SR_ST_UNKNOWN_JOB);
    assert_int_equal(sc(f).unknown_job, 1);
}

static void test_next_exp_max(void **state)
{
    fx *f = *state;
    static const int8_t in[][3] = {
        {-5, 7, SR_WIRE_EXP_NONE},
        {SR_WIRE_EXP_NONE, -100, SR_WIRE_EXP_MIN},
        {SR_WIRE_EXP_MAX, 0, -1},
        {SR_WIRE_EXP_NONE, SR_WIRE_EXP_NONE, SR_WIRE_EXP_NONE},
    };
    static const int8_t want[] = {7, SR_WIRE_EXP_MIN, SR_WIRE_EXP_MAX, SR_WIRE_EXP_NONE};
    uint32_t sum[1] = {3};

    add_joined(f, 5, 3, 4, 4);
    for (unsigned c = 0; c < 4; c++) {
        sr_hdr h = ar_hdr(5, (uint16_t)c, 0, 1, 0, 1);

        for (unsigned w = 0; w < 3; w++) {
            h.next_exp = in[c][w];
            ar(f, &h, w, V(1));
        }
        h.next_exp = want[c];
        expect_result(f, 1, 3, &h, sum);
    }
}

static void test_two_jobs_isolated(void **state)
{
    fx *f = *state;
    sr_hdr a = ar_hdr(1, 0, 0, 1, 0, 1), b = ar_hdr(2, 0, 0, 1, 0, 1);
    sr_peer a1 = peer_of(1, 1);
    uint32_t suma[1] = {3}, sumb[1] = {300};

    add_joined(f, 1, 2, 4, 2);
    add_joined(f, 2, 2, 4, 2);
    ar(f, &a, 0, V(1));
    expect_nothing(f);
    ar(f, &b, 0, V(100));
    expect_nothing(f);
    b.worker = 1; /* job 1's worker 1 posing as job 2's worker 1 */
    feed(f, &a1, &b, V(5000));
    expect_nothing(f);
    assert_int_equal(jc(f, 2).dropped_unbound, 1);
    ar(f, &a, 1, V(2));
    expect_result(f, 1, 2, &a, suma);
    ar(f, &b, 1, V(200));
    expect_result(f, 1, 2, &b, sumb);
    assert_int_equal(jc(f, 1).results, 1);
    assert_int_equal(jc(f, 2).results, 1);
    assert_int_equal(jc(f, 1).dropped_unbound, 0);
    assert_int_equal(jc(f, 1).rx, 2 + 2);
    assert_int_equal(jc(f, 2).rx, 2 + 3);
}

/* Interleaved slots each keep their own round. */
static void test_slots_independent(void **state)
{
    fx *f = *state;
    enum { S = 8 };

    add_joined(f, 5, 2, 2, S);
    for (unsigned s = 0; s < S; s++) {
        sr_hdr h = ar_hdr(5, (uint16_t)s, (uint8_t)(s & 1u), 1, 2 * s, 2);

        ar(f, &h, 0, V((int32_t)s, -(int32_t)s));
        expect_nothing(f);
    }
    for (unsigned s = S; s-- > 0;) {
        sr_hdr h = ar_hdr(5, (uint16_t)s, (uint8_t)(s & 1u), 1, 2 * s, 2);
        uint32_t sum[2] = {s + 100u, (uint32_t)-(int32_t)s};

        ar(f, &h, 1, V(100, 0));
        expect_result(f, 1, 2, &h, sum);
    }
}

/* Every case twice: with plain payloads, and with the lazy payloads
 * serene-switch uses (the bytes each replica carries must not differ). */
#define CASES(T)                                                                                   \
    T(test_allreduce_n1), T(test_allreduce_n2), T(test_allreduce_n3), T(test_allreduce_n4),       \
        T(test_dup_before_completion), T(test_shadow_after_completion),                          \
        T(test_alternating_versions), T(test_stale_copies), T(test_mismatch_poisons_round),      \
        T(test_bad_slot_and_count), T(test_unbound_data_dropped),                                \
        T(test_ar_unknown_job_and_removed), T(test_next_exp_max), T(test_two_jobs_isolated),     \
        T(test_slots_independent)

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest plain[] = {CASES(T)};
#undef T
#define T(name) cmocka_unit_test_setup_teardown(name, setup_lazy, teardown)
    const struct CMUnitTest lazy[] = {CASES(T)};
#undef T
    int failed = cmocka_run_group_tests_name("plain payloads", plain, NULL, NULL);

    return failed + cmocka_run_group_tests_name("lazy payloads", lazy, NULL, NULL);
}
