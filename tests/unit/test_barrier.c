/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_barrier.c - the in-switch SSP barrier (p4/swswitch/barrier.c) driven
 * directly, CLOCK by CLOCK: its setup, BSP, SSP(s) for s in {1, 3, 10},
 * ASP; duplicate, reordered and lost CLOCKs; a full ring and CLOCKs beyond
 * it. Randomized runs against a reference model are in
 * test_barrier_model.c, the policy rules in test_barrier_policy.c; the
 * fixture and the checks all three use are in barrier_helpers.h.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "barrier.h"
#include "barrier_helpers.h"

/* ---- Setup ---------------------------------------------------------------- */

static void test_init_validation(void **state)
{
    fixture *f = *state;
    sr_barrier_params p;
    sr_barrier_result r;

    sr_barrier_params_init(&p);
    assert_int_equal(p.ring, SR_BARRIER_RING_DEFAULT);
    assert_int_equal(p.mode, SR_SYNC_BSP);
    assert_int_equal(sr_barrier_init(NULL, &p), -EINVAL);
    assert_int_equal(sr_barrier_init(&f->b, NULL), -EINVAL);
    assert_int_equal(try_init(&f->b, 0, 16, 0, SR_SYNC_BSP, 0), -EINVAL);
    assert_int_equal(try_init(&f->b, 65, 16, 0, SR_SYNC_BSP, 0), -EINVAL);
    assert_int_equal(try_init(&f->b, 4, 48, 0, SR_SYNC_BSP, 0), -EINVAL); /* not 2^k */
    assert_int_equal(try_init(&f->b, 4, 1, 0, SR_SYNC_BSP, 0), -EINVAL);
    assert_int_equal(try_init(&f->b, 4, 2 * SR_BARRIER_RING_MAX, 0, SR_SYNC_BSP, 0), -EINVAL);
    assert_int_equal(try_init(&f->b, 4, 16, 0, (enum sr_sync_mode)7, 0), -EINVAL);
    assert_int_equal(try_init(&f->b, 4, 16, 0, SR_SYNC_SSP, 15), -ERANGE); /* > R - 2 */
    assert_null(f->b.ring);
    sr_barrier_fini(&f->b); /* safe after a failed init */

    assert_int_equal(try_init(&f->b, 4, 16, 0, SR_SYNC_SSP, 14), 0);
    expect_policy(&f->b, 0, SR_SYNC_SSP, 14);
    assert_int_equal(sr_barrier_clock(&f->b, 4, 0, &r), -EINVAL); /* worker >= N */
    assert_int_equal(sr_barrier_clock(&f->b, 0, 0, NULL), -EINVAL);
    assert_int_equal(sr_barrier_clock(NULL, 0, 0, &r), -EINVAL);
    assert_int_equal(counters(&f->b).clocks, 0);
    assert_int_equal(sr_barrier_high(&f->b), UINT32_MAX);
    sr_barrier_fini(&f->b);
    sr_barrier_fini(&f->b);
    sr_barrier_fini(NULL);

    /* ring 0 = the default; ASP is SSP(R - 2) whatever s says */
    assert_int_equal(try_init(&f->b, 3, 0, 42, SR_SYNC_ASP, 1000), 0);
    expect_policy(&f->b, 42, SR_SYNC_ASP, SR_BARRIER_RING_DEFAULT - 2);
    assert_int_equal(sr_barrier_low(&f->b), 41);
    assert_int_equal(sr_barrier_high(&f->b), 41);
    assert_string_equal(sr_sync_mode_name(SR_SYNC_ASP), "ASP");
    assert_string_equal(sr_sync_mode_name((enum sr_sync_mode)9), "?");
}

/* ---- BSP ------------------------------------------------------------------ */

static void test_bsp(void **state)
{
    fixture *f = *state;

    bsp_rounds(&f->b, 4, 0, 50, 1);
    bsp_rounds(&f->b, 64, 1000, 20, 2); /* a full bitmap word */
    bsp_rounds(&f->b, 1, 0, 20, 3);
}

/* ---- SSP and ASP ------------------------------------------------------------ */

#define SSP_TEST(s, first)                                                                        \
    static void test_ssp_##s(void **state)                                                        \
    {                                                                                             \
        ssp_run(&((fixture *)*state)->b, SR_SYNC_SSP, s, first, 40);                              \
    }
SSP_TEST(1, 0)
SSP_TEST(3, 100)
SSP_TEST(10, 0)

/* ASP is never held within the ring bound: it is SSP(R - 2), held only at
 * R - 1 ahead of low. */
static void test_asp(void **state)
{
    ssp_run(&((fixture *)*state)->b, SR_SYNC_ASP, 14, 7, 100);
}

/* ---- Duplicates, reordering, loss ------------------------------------------ */

static void test_duplicates_and_reordering(void **state)
{
    fixture *f = *state;
    sr_barrier *b = &f->b;
    sr_barrier_result r;
    sr_barrier_counters cnt;
    int i;

    init_b(b, 3, 8, 0, SR_SYNC_SSP, 2);
    r = expect(clk(b, 0, 0), PROCEED, UINT32_MAX, 0, 0);
    expect_again(b, 0, 0, &r);
    clk(b, 1, 0);
    r = expect(clk(b, 2, 0), PROCEED, 0, 1, 0);
    expect_again(b, 2, 0, &r); /* the last one again: no second advance */

    /* w0 runs to 3 = low + 3 > low + s and is held; retransmissions agree */
    clk(b, 0, 1);
    clk(b, 0, 2);
    r = expect(clk(b, 0, 3), HOLD, 0, 0, 0);
    for (i = 0; i < 5; i++)
        expect_again(b, 0, 3, &r);
    r = expect(clk(b, 0, 1), PROCEED, 0, 0, 1); /* a late copy of an older CLOCK */
    assert_int_equal(r.high, 3);

    /* w1's CLOCK(2) overtakes its CLOCK(1), which then is a duplicate */
    expect(clk(b, 1, 2), PROCEED, 0, 0, 0);
    expect(clk(b, 1, 1), PROCEED, 0, 0, 1);
    expect(clk(b, 2, 1), PROCEED, 1, 1, 0);
    expect(clk(b, 2, 2), PROCEED, 2, 1, 0);
    expect(clk(b, 1, 1), PROCEED, 2, 0, 1);          /* older than low now */
    expect(clk(b, 1, 2u - 1000u), PROCEED, 2, 0, 1); /* far older, across the wrap */
    cnt = counters(b);
    assert_int_equal(cnt.advances, 3);
    assert_int_equal(cnt.duplicates, 11);
    assert_int_equal(cnt.clocks, cnt.holds + cnt.proceeds);
}

/* A worker whose CLOCK(c) was lost sends c + 1: low still advances. */
static void test_lost_clock(void **state)
{
    fixture *f = *state;
    sr_barrier *b = &f->b;
    uint32_t c;

    init_b(b, 2, 8, 0, SR_SYNC_SSP, 6);
    clk(b, 0, 0);
    expect(clk(b, 1, 1), PROCEED, 0, 1, 0); /* CLOCK(0) of w1 lost */
    expect(clk(b, 0, 1), PROCEED, 1, 1, 0);
    expect(clk(b, 1, 0), PROCEED, 1, 0, 1); /* the lost one shows up late */
    /* several lost at once, and one CLOCK completing several entries */
    for (c = 2; c <= 7; c++)
        clk(b, 0, c);
    expect(clk(b, 1, 7), PROCEED, 7, 1, 0);
    assert_int_equal(counters(b).advances, 3);
    expect(clk(b, 1, 8), PROCEED, 7, 0, 0); /* nothing stale in the cleared entries */
}

/* ---- The ring -------------------------------------------------------------- */

static void test_full_ring(void **state)
{
    fixture *f = *state;
    sr_barrier *b = &f->b;
    sr_barrier_counters before, after;
    sr_barrier_result r;
    uint32_t c, k, ahead, slow;

    init_b(b, 2, 8, 100, SR_SYNC_ASP, 0);
    for (c = 100; c < 108; c++) /* w0 fills every entry: low + 1 .. low + R */
        clk(b, 0, c);
    before = counters(b);
    memset(&r, 0, sizeof r);
    assert_int_equal(sr_barrier_clock(b, 0, 108, &r), -ERANGE);
    assert_int_equal(expect(r, HOLD, 99, 0, 0).high, 107);
    assert_int_equal(sr_barrier_clock(b, 1, 100 + 1000, &r), -ERANGE);
    after = counters(b); /* counted, and nothing else changed */
    before.violations += 2;
    before.clocks += 2;
    assert_memory_equal(&before, &after, sizeof before);
    assert_int_equal(sr_barrier_low(b), 99);
    assert_int_equal(sr_barrier_high(b), 107);

    expect(clk(b, 1, 100), PROCEED, 100, 1, 0);
    expect(clk(b, 0, 108), HOLD, 100, 0, 0); /* reuses the entry of 100: empty */
    expect(clk(b, 1, 108), PROCEED, 108, 1, 0);
    expect(clk(b, 1, 109), PROCEED, 108, 0, 0); /* nothing of w0 lingers */

    /* Many rounds at the limit: one worker always R ahead of low, the other
     * crawling. Every 50 rounds the slow one catches up in one CLOCK (which
     * completes and clears the whole ring) and the two swap roles. */
    slow = 0;
    ahead = 1;
    c = 108; /* low */
    expect(clk(b, ahead, c + 8), HOLD, c, 0, 0);
    for (k = 0; k < 2000; k++) {
        if (k && k % 50 == 0) {
            uint32_t t = slow;

            expect(clk(b, slow, c + 8), PROCEED, c + 8, 1, 0);
            c += 8;
            slow = ahead;
            ahead = t;
            expect(clk(b, ahead, c + 8), HOLD, c, 0, 0);
        }
        expect(clk(b, slow, c + 1), PROCEED, c + 1, 1, 0);
        c++;
        expect(clk(b, ahead, c + 8), HOLD, c, 0, 0);
        assert_int_equal(sr_barrier_clock(b, ahead, c + 9, &r), -ERANGE);
        assert_int_equal(sr_barrier_clock(b, slow, c + 9, &r), -ERANGE);
    }
    assert_int_equal(counters(b).violations, 2 + 2 * 2000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_init_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bsp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ssp_1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ssp_3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ssp_10, setup, teardown),
        cmocka_unit_test_setup_teardown(test_asp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicates_and_reordering, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_clock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_ring, setup, teardown),
    };

    return cmocka_run_group_tests_name("barrier", tests, NULL, NULL);
}
