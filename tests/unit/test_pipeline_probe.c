/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline_probe.c - the software switch's answers to a worker that
 * waits (p4/swswitch/allreduce.c, sr_allreduce_probe): AR_PROBE and a
 * resent AR_DATA to an open round that holds the worker's contribution
 * get AR_HELD; a probe of a contribution the switch lacks, or of a round
 * already complete, gets AR_NAK, and the full resend that follows is
 * counted once or answered with the shadow copy; a poisoned round answers
 * probes MISMATCH; probes are header only, checked like contributions
 * (binding, slot), and change no state; the answers, sent back to the
 * switch, are dropped.
 *
 * The fixture and the helpers are in pipeline_helpers.h; every answer is
 * checked as the bytes a replica carries.
 */
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

/* The probe standing for contribution h: its header, op AR_PROBE, count 0. */
static sr_hdr probe_of(const sr_hdr *h)
{
    sr_hdr p = *h;

    p.op = SR_OP_AR_PROBE;
    p.count = 0;
    p.flags = SR_FLAG_RETRANSMIT; /* informational: the answer clears it */
    return p;
}

/* A worker waiting for a late peer: its probes and resends get AR_HELD and
 * are not added; a peer that has not contributed gets AR_NAK; once the
 * round completes, a probe gets AR_NAK and the resend the shadow copy. */
static void test_held_while_waiting(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 1, 1, 7, 512, 2), p;
    uint32_t sum[2] = {111, 222};

    h.exp = 4;
    h.next_exp = 5;
    h.aux = 4096;
    add_joined(f, 5, 3, 4, 2);
    ar(f, &h, 0, V(100, 200));
    expect_nothing(f);
    p = probe_of(&h);
    for (int i = 0; i < 3; i++) {
        ar(f, &p, 0, NULL);
        expect_answer(f, &p, SR_OP_AR_HELD);
    }
    ar(f, &h, 0, V(5, 5)); /* an old worker's full resend: held, not added */
    expect_answer(f, &h, SR_OP_AR_HELD);
    ar(f, &p, 1, NULL); /* worker 1 has not contributed: its copy was lost */
    expect_answer(f, &p, SR_OP_AR_NAK);
    ar(f, &h, 1, V(10, 20)); /* so it resends in full */
    expect_nothing(f);
    ar(f, &p, 1, NULL);
    expect_answer(f, &p, SR_OP_AR_HELD);
    ar(f, &h, 2, V(1, 2));
    expect_result(f, 1, 3, &h, sum);
    ar(f, &p, 2, NULL); /* complete: worker 2 lost its result */
    expect_answer(f, &p, SR_OP_AR_NAK);
    ar(f, &h, 2, V(1, 2));
    expect_result(f, 0, 2, &h, sum);
    assert_int_equal(jc(f, 5).probes, 6);
    assert_int_equal(jc(f, 5).held, 5);
    assert_int_equal(jc(f, 5).naks, 2);
    assert_int_equal(jc(f, 5).dup_dropped, 1);
    assert_int_equal(jc(f, 5).results, 1);
    assert_int_equal(jc(f, 5).shadow_replies, 1);
    assert_int_equal(jc(f, 5).mismatches + jc(f, 5).errors_sent, 0);
}

/* One worker: its round completes at once, so a probe always gets AR_NAK,
 * and the resend the shadow copy. */
static void test_single_worker(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 0, 0, 1, 0, 1), p;
    uint32_t sum[1] = {42};

    add_joined(f, 5, 1, 4, 2);
    p = probe_of(&h);
    ar(f, &p, 0, NULL); /* before the contribution: not held */
    expect_answer(f, &p, SR_OP_AR_NAK);
    ar(f, &h, 0, V(42));
    expect_result(f, 1, 1, &h, sum);
    ar(f, &p, 0, NULL);
    expect_answer(f, &p, SR_OP_AR_NAK);
    ar(f, &h, 0, V(42));
    expect_result(f, 0, 0, &h, sum);
    assert_int_equal(jc(f, 5).naks, 2);
    assert_int_equal(jc(f, 5).held, 0);
}

/* Probes write nothing: not to the probed cell (a probe of an idle cell
 * opens no round), not to the other version (a probe of an old round does
 * not free the worker's bit there), whatever their fields say. The answer
 * echoes the probe, and the worker matches it with its round in flight. */
static void test_probe_changes_nothing(void **state)
{
    fx *f = *state;
    sr_hdr a = ar_hdr(5, 0, 0, 3, 0, 2), b = ar_hdr(5, 0, 1, 3, 8, 2), p, q;
    uint32_t sa[2] = {3, 3}, sb[2] = {30, 30};

    add_joined(f, 5, 2, 4, 2);
    p = probe_of(&a);
    ar(f, &p, 0, NULL);
    expect_answer(f, &p, SR_OP_AR_NAK);
    ar(f, &a, 0, V(1, 1));
    ar(f, &a, 1, V(2, 2));
    expect_result(f, 1, 2, &a, sa);
    ar(f, &b, 0, V(10, 10)); /* worker 0 moved on to version 1 */
    expect_nothing(f);
    ar(f, &p, 0, NULL); /* its late probe of a: not held there any more */
    expect_answer(f, &p, SR_OP_AR_NAK);
    q = probe_of(&b);
    q.seq = 99; /* fields unlike the round's: echoed all the same */
    q.offset = 12345;
    q.exp = -7;
    ar(f, &q, 0, NULL);
    expect_answer(f, &q, SR_OP_AR_HELD);
    ar(f, &b, 0, V(10, 10)); /* still worker 0's one contribution to b */
    expect_answer(f, &b, SR_OP_AR_HELD);
    ar(f, &b, 1, V(20, 20));
    expect_result(f, 1, 2, &b, sb);
    ar(f, &a, 1, V(2, 2)); /* worker 1's late copy of a, after b: stale */
    expect_nothing(f);
    assert_int_equal(jc(f, 5).stale_dropped, 1);
    assert_int_equal(jc(f, 5).results, 2);
}

/* A poisoned round answers probes MISMATCH, as contributions; the probe of
 * a worker whose bit is set learns it too. */
static void test_probe_poisoned(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 2, 0, 10, 64, 2), bad, p;

    add_joined(f, 5, 3, 4, 4);
    h.aux = 1000;
    ar(f, &h, 0, V(1, 2));
    bad = h;
    bad.aux = 1001;
    ar(f, &bad, 1, V(1, 2));
    expect_error_w(f, &bad, SR_ST_MISMATCH);
    for (unsigned w = 0; w < 3; w++) {
        p = probe_of(&h);
        p.worker = (uint16_t)w;
        ar(f, &p, w, NULL);
        expect_error_w(f, &p, SR_ST_MISMATCH);
    }
    assert_int_equal(jc(f, 5).mismatches, 4);
    assert_int_equal(jc(f, 5).probes, 3);
    assert_int_equal(jc(f, 5).held + jc(f, 5).naks, 0);
}

/* A probe is header only, to a slot of the pool, from a bound worker; the
 * refused ones leave no trace but counters. */
static void test_probe_refused(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 1, 0, 1, 0, 2), p;
    sr_peer other = {peer_of(5, 0).ip, 1};
    uint32_t sum[2] = {3, 3};

    add_joined(f, 5, 2, 4, 2);
    ar(f, &h, 0, V(1, 1));
    p = probe_of(&h);
    p.count = 1; /* a payload: not a probe */
    ar(f, &p, 0, V(7));
    expect_error_w(f, &p, SR_ST_BAD_COUNT);
    p = probe_of(&h);
    p.slot = 2;
    ar(f, &p, 0, NULL);
    expect_error_w(f, &p, SR_ST_BAD_SLOT);
    p = probe_of(&h);
    p.worker = 0;
    feed(f, &other, &p, NULL); /* worker 0 from another port */
    expect_nothing(f);
    ar(f, &p, 2, NULL); /* no such worker */
    expect_nothing(f);
    p.job = 6;
    ar(f, &p, 0, NULL);
    expect_error_w(f, &p, SR_ST_UNKNOWN_JOB);
    assert_int_equal(jc(f, 5).dropped_unbound, 2);
    assert_int_equal(jc(f, 5).probes, 0);
    assert_int_equal(jc(f, 5).errors_sent, 2);
    ar(f, &h, 1, V(2, 2));
    expect_result(f, 1, 2, &h, sum);
}

/* AR_HELD and AR_NAK are answers: the switch drops them. */
static void test_answers_dropped(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 0, 0, 1, 0, 0);

    add_joined(f, 5, 2, 4, 2);
    h.op = SR_OP_AR_HELD;
    ar(f, &h, 0, NULL);
    expect_nothing(f);
    h.op = SR_OP_AR_NAK;
    ar(f, &h, 0, NULL);
    expect_nothing(f);
    assert_int_equal(sc(f).answers_dropped, 2);
    assert_int_equal(jc(f, 5).rx, 2);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_held_while_waiting),
        T(test_single_worker),
        T(test_probe_changes_nothing),
        T(test_probe_poisoned),
        T(test_probe_refused),
        T(test_answers_dropped),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
