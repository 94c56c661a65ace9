/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_barrier_policy.c - the in-switch SSP barrier's policy rules
 * (p4/swswitch/barrier.c): clock-indexed (mode, s) ranges, the effective
 * clock of a change (never before high + 1), a change superseding a later
 * one, rules dropped as low passes them, and the errors of
 * sr_barrier_set_policy, a full rule list included.
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

/* ---- Policies -------------------------------------------------------------- */

static void assert_range(const sr_barrier_range *g, uint32_t from, uint32_t to, int open,
                         enum sr_sync_mode mode, uint32_t s)
{
    assert_int_equal(g->from, from);
    assert_int_equal(g->open, open);
    if (!open)
        assert_int_equal(g->to, to);
    assert_int_equal(g->mode, mode);
    assert_int_equal(g->s, s);
}

/* A change that must be accepted; returns its effective clock. */
static uint32_t set_ok(sr_barrier *b, enum sr_sync_mode mode, uint32_t s, uint32_t want)
{
    uint32_t e = 0;

    assert_int_equal(sr_barrier_set_policy(b, mode, s, want, &e), 0);
    return e;
}

static void test_policy_rules(void **state)
{
    fixture *f = *state;
    sr_barrier *b = &f->b;
    sr_barrier_range g[SR_BARRIER_MAX_RULES];
    uint32_t c;

    init_b(b, 2, 64, 10, SR_SYNC_BSP, 0);
    assert_int_equal(sr_barrier_rules(b, g, 8), 1);
    assert_range(&g[0], 10, 0, 1, SR_SYNC_BSP, 0);
    /* before any CLOCK: a past clock means from the first one */
    assert_int_equal(set_ok(b, SR_SYNC_SSP, 3, 0), 10);
    assert_int_equal(sr_barrier_rules(b, g, 8), 1);
    assert_range(&g[0], 10, 0, 1, SR_SYNC_SSP, 3);

    for (c = 10; c <= 14; c++)
        clk(b, 0, c);
    assert_int_equal(set_ok(b, SR_SYNC_BSP, 9, 12), 15); /* not before high + 1 */
    assert_int_equal(set_ok(b, SR_SYNC_ASP, 0, 30), 30);
    assert_int_equal(sr_barrier_rules(b, g, 8), 3);
    assert_range(&g[0], 10, 15, 0, SR_SYNC_SSP, 3);
    assert_range(&g[1], 15, 30, 0, SR_SYNC_BSP, 0);
    assert_range(&g[2], 30, 0, 1, SR_SYNC_ASP, 62);
    /* an earlier change supersedes the later one */
    assert_int_equal(set_ok(b, SR_SYNC_SSP, 5, 20), 20);
    assert_int_equal(sr_barrier_rules(b, g, 8), 3);
    assert_range(&g[1], 15, 20, 0, SR_SYNC_BSP, 0);
    assert_range(&g[2], 20, 0, 1, SR_SYNC_SSP, 5);
    /* asking again for the policy in force adds no rule */
    assert_int_equal(set_ok(b, SR_SYNC_SSP, 5, 25), 25);
    assert_int_equal(sr_barrier_rules(b, NULL, 0), 3);
    memset(g, 0, sizeof g); /* cap smaller than the list */
    assert_int_equal(sr_barrier_rules(b, g, 1), 3);
    assert_range(&g[0], 10, 15, 0, SR_SYNC_SSP, 3);
    assert_int_equal(g[1].from, 0);
    expect_policy(b, 14, SR_SYNC_SSP, 3);
    expect_policy(b, 15, SR_SYNC_BSP, 0);
    expect_policy(b, 19, SR_SYNC_BSP, 0);
    expect_policy(b, 20, SR_SYNC_SSP, 5);
    expect_policy(b, 100000, SR_SYNC_SSP, 5);

    /* a want_from 2^31 behind is in the past: as soon as possible */
    assert_int_equal(set_ok(b, SR_SYNC_ASP, 0, 15u + (1u << 31)), 15);
    assert_int_equal(sr_barrier_rules(b, g, 8), 2);
    assert_range(&g[1], 15, 0, 1, SR_SYNC_ASP, 62);
    assert_int_equal(set_ok(b, SR_SYNC_BSP, 0, 20), 20);

    /* low passes 15: the SSP(3) rule goes, the one in force at low stays */
    for (c = 10; c <= 16; c++)
        clk(b, 1, c);
    for (c = 15; c <= 16; c++)
        clk(b, 0, c);
    assert_int_equal(sr_barrier_low(b), 16);
    assert_int_equal(sr_barrier_rules(b, g, 8), 2);
    assert_range(&g[0], 15, 20, 0, SR_SYNC_ASP, 62);
    assert_range(&g[1], 20, 0, 1, SR_SYNC_BSP, 0);
    for (c = 17; c <= 20; c++) {
        clk(b, 0, c);
        clk(b, 1, c);
    }
    assert_int_equal(sr_barrier_rules(b, g, 8), 1);
    assert_range(&g[0], 20, 0, 1, SR_SYNC_BSP, 0);
    assert_int_equal(counters(b).policy_changes, 7);
}

static void test_set_policy_errors(void **state)
{
    fixture *f = *state;
    sr_barrier *b = &f->b;
    sr_barrier_range before[SR_BARRIER_MAX_RULES], now[SR_BARRIER_MAX_RULES];
    uint32_t e = 12345, c, k, n;

    init_b(b, 2, 64, 0, SR_SYNC_ASP, 0);
    assert_int_equal(sr_barrier_set_policy(NULL, SR_SYNC_BSP, 0, 0, &e), -EINVAL);
    assert_int_equal(sr_barrier_set_policy(b, (enum sr_sync_mode)3, 0, 0, &e), -EINVAL);
    assert_int_equal(sr_barrier_set_policy(b, SR_SYNC_SSP, 63, 0, &e), -ERANGE);
    assert_int_equal(sr_barrier_set_policy(b, SR_SYNC_SSP, UINT32_MAX, 0, &e), -ERANGE);
    assert_int_equal(sr_barrier_set_policy(b, SR_SYNC_SSP, 1, SR_BARRIER_MAX_AHEAD, &e), -ERANGE);
    assert_int_equal(e, 12345);
    assert_int_equal(counters(b).policy_changes, 0);
    expect_policy(b, 0, SR_SYNC_ASP, 62);
    assert_int_equal(sr_barrier_set_policy(b, SR_SYNC_SSP, 1, SR_BARRIER_MAX_AHEAD - 1, NULL), 0);
    assert_int_equal(set_ok(b, SR_SYNC_SSP, 62, 0), 0);
    assert_int_equal(set_ok(b, SR_SYNC_ASP, 0, 0), 0);

    /* Fill the rule list: 31 changes at distinct clocks above high. */
    for (c = 0; c < 40; c++)
        clk(b, 0, c);
    for (k = 0; k < SR_BARRIER_MAX_RULES - 1; k++)
        assert_int_equal(set_ok(b, k % 2 ? SR_SYNC_BSP : SR_SYNC_SSP, 1 + k % 5, 40 + k), 40 + k);
    n = sr_barrier_rules(b, before, SR_BARRIER_MAX_RULES);
    assert_int_equal(n, SR_BARRIER_MAX_RULES);
    assert_int_equal(sr_barrier_set_policy(b, SR_SYNC_SSP, 7, 100, &e), -ENOSPC);
    /* the same policy as the last rule needs no room */
    assert_int_equal(set_ok(b, SR_SYNC_SSP, 1, 100), 100);
    /* replacing the last rule frees one entry before adding one */
    assert_int_equal(set_ok(b, SR_SYNC_ASP, 0, 40 + 30), 70);
    assert_int_equal(sr_barrier_rules(b, now, SR_BARRIER_MAX_RULES), SR_BARRIER_MAX_RULES);
    assert_int_equal(now[31].mode, SR_SYNC_ASP);
    assert_int_equal(set_ok(b, SR_SYNC_SSP, 1, 40 + 30), 70);
    assert_int_equal(sr_barrier_rules(b, now, SR_BARRIER_MAX_RULES), SR_BARRIER_MAX_RULES);
    for (k = 0; k < n; k++)
        assert_range(&now[k], before[k].from, before[k].to, before[k].open, before[k].mode,
                     before[k].s);
    assert_int_equal(sr_barrier_set_policy(b, SR_SYNC_SSP, 7, 100, &e), -ENOSPC);

    /* low moves past some rule starts: room again */
    for (c = 40; c < 60; c++)
        clk(b, 0, c);
    for (c = 0; c < 50; c++)
        clk(b, 1, c);
    assert_int_equal(sr_barrier_low(b), 49);
    n = sr_barrier_rules(b, now, SR_BARRIER_MAX_RULES);
    assert_int_equal(n, SR_BARRIER_MAX_RULES - 10);
    assert_int_equal(now[0].from, 49);
    assert_int_equal(set_ok(b, SR_SYNC_SSP, 7, 100), 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_policy_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_policy_errors, setup, teardown),
    };

    return cmocka_run_group_tests_name("barrier_policy", tests, NULL, NULL);
}
