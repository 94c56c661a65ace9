/* SPDX-License-Identifier: Apache-2.0 */
/*
 * barrier_helpers.h - the fixture, answer checks and scenarios that the
 * barrier tests share: test_barrier.c (setup, BSP, SSP, ASP, duplicates,
 * loss, the ring), test_barrier_model.c (randomized legal runs against a
 * reference model, wrap-around, the hot swap) and test_barrier_policy.c
 * (policy rules and their errors). Header-only (static inline), so each
 * test binary stays a single source file.
 */
#ifndef SERENE_TESTS_BARRIER_HELPERS_H
#define SERENE_TESTS_BARRIER_HELPERS_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "barrier.h"

/* What the reference model knows about one clock (by offset from
 * first_clock - 1, so the first clock is 1). */
typedef struct clock_rec {
    enum sr_sync_mode pol_mode; /* the policy the model says is in force */
    uint32_t pol_s;
    uint32_t logged;            /* workers that proceeded past this clock */
} clock_rec;

typedef struct fixture {
    sr_barrier b;
    clock_rec *cr;
} fixture;

static inline int setup(void **state)
{
    static fixture f;

    memset(&f, 0, sizeof f);
    *state = &f;
    return 0;
}

static inline int teardown(void **state)
{
    fixture *f = *state;

    sr_barrier_fini(&f->b);
    free(f->cr);
    f->cr = NULL;
    return 0;
}

/* splitmix64, as in chaos.c. */
static inline uint64_t rnd(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline uint32_t rnd_below(uint64_t *x, uint32_t n)
{
    return (uint32_t)(rnd(x) % n);
}

static inline int try_init(sr_barrier *b, uint32_t n, uint32_t ring, uint32_t first,
                           enum sr_sync_mode mode, uint32_t s)
{
    sr_barrier_params p;

    sr_barrier_params_init(&p);
    p.n_workers = n;
    p.ring = ring;
    p.first_clock = first;
    p.mode = mode;
    p.s = s;
    return sr_barrier_init(b, &p);
}

static inline void init_b(sr_barrier *b, uint32_t n, uint32_t ring, uint32_t first,
                          enum sr_sync_mode mode, uint32_t s)
{
    sr_barrier_fini(b);
    assert_int_equal(try_init(b, n, ring, first, mode, s), 0);
}

static inline sr_barrier_result clk(sr_barrier *b, uint32_t w, uint32_t c)
{
    sr_barrier_result r;

    memset(&r, 0xa5, sizeof r);
    assert_int_equal(sr_barrier_clock(b, w, c, &r), 0);
    return r;
}

#define ANY (-1)
#define PROCEED SR_BARRIER_PROCEED
#define HOLD SR_BARRIER_HOLD

/* Check an answer's decision, low, advanced and duplicate flags (ANY: not
 * checked), and pass it on. */
static inline sr_barrier_result expect(sr_barrier_result r, int decision, int64_t low,
                                       int advanced, int duplicate)
{
    if (decision != ANY)
        assert_int_equal(r.decision, decision);
    if (low != ANY)
        assert_int_equal(r.low, (uint32_t)low);
    if (advanced != ANY)
        assert_int_equal(r.advanced, advanced);
    if (duplicate != ANY)
        assert_int_equal(r.duplicate, duplicate);
    return r;
}

/* CLOCK(c, w) again: a duplicate, answered as a was, advancing nothing. */
static inline void expect_again(sr_barrier *b, uint32_t w, uint32_t c,
                                const sr_barrier_result *a)
{
    sr_barrier_result r = expect(clk(b, w, c), a->decision, a->low, 0, 1);

    assert_int_equal(r.mode, a->mode);
    assert_int_equal(r.s, a->s);
    assert_int_equal(r.high, a->high);
}

static inline void expect_policy(const sr_barrier *b, uint32_t c, enum sr_sync_mode mode,
                                 uint32_t s)
{
    enum sr_sync_mode m;
    uint32_t ms;

    sr_barrier_policy_at(b, c, &m, &ms);
    assert_int_equal(m, mode);
    assert_int_equal(ms, s);
}

static inline sr_barrier_counters counters(const sr_barrier *b)
{
    sr_barrier_counters c;

    sr_barrier_counters_get(b, &c);
    return c;
}

/* ---- Scenarios more than one file runs ---------------------------------------- */

/* Rounds of BSP with the n workers reporting in a random order: the first
 * n - 1 are held (and stay held on retransmission), the last one proceeds
 * and flags the RELEASE, which then lets the held ones go. */
static inline void bsp_rounds(sr_barrier *b, uint32_t n, uint32_t first, uint32_t rounds,
                              uint64_t seed)
{
    uint32_t order[SR_BARRIER_MAX_WORKERS], i, k;
    sr_barrier_counters cnt;

    init_b(b, n, 8, first, SR_SYNC_BSP, 0);
    for (i = 0; i < n; i++)
        order[i] = i;
    for (k = 0; k < rounds; k++) {
        uint32_t c = first + k;

        for (i = n - 1; i > 0; i--) {
            uint32_t j = rnd_below(&seed, i + 1), t = order[i];

            order[i] = order[j];
            order[j] = t;
        }
        for (i = 0; i < n; i++) {
            sr_barrier_result r = clk(b, order[i], c);

            assert_int_equal(r.mode, SR_SYNC_BSP);
            assert_int_equal(r.s, 0);
            assert_int_equal(r.high, c);
            if (i + 1 < n) {
                expect(r, HOLD, c - 1, 0, 0);
                assert_false(sr_barrier_released(c, r.s, r.low));
                expect_again(b, order[i], c, &r); /* retransmitted */
            } else {
                expect(r, PROCEED, c, 1, 0);
                assert_true(sr_barrier_released(c, 0, r.low));
            }
        }
    }
    cnt = counters(b);
    assert_int_equal(cnt.advances, rounds);
    assert_int_equal(cnt.proceeds, rounds);
    assert_int_equal(cnt.holds, 2 * rounds * (n - 1));
    assert_int_equal(cnt.duplicates, rounds * (n - 1));
    assert_int_equal(cnt.clocks, cnt.holds + cnt.proceeds);
    assert_int_equal(cnt.violations, 0);
}

/* A fast worker 0 and two slow ones: 0 proceeds while c - low <= s, is held
 * at s + 1 ahead, and is released when the slower of 1 and 2 catches up.
 * s is the one the mode applies (R - 2 = 14 for ASP). */
static inline void ssp_run(sr_barrier *b, enum sr_sync_mode mode, uint32_t s, uint32_t first,
                           uint32_t rounds)
{
    sr_barrier_result r;
    uint32_t c = first, k;

    init_b(b, 3, 16, first, mode, mode == SR_SYNC_ASP ? 3 /* ignored */ : s);
    for (k = 0; k < s; k++, c++) {
        r = expect(clk(b, 0, c), PROCEED, first - 1, 0, 0);
        assert_int_equal(r.mode, mode);
        assert_int_equal(r.s, s);
    }
    for (k = 0; k < rounds; k++, c++) {
        uint32_t low = first - 1 + k;

        r = expect(clk(b, 0, c), HOLD, low, 0, 0);
        assert_int_equal(r.high, c);
        assert_int_equal((int32_t)(c - r.low), (int32_t)s + 1);
        expect(clk(b, 1, low + 1), PROCEED, low, 0, 0);
        expect(clk(b, 0, c), HOLD, low, 0, 1); /* retransmitted while held */
        assert_false(sr_barrier_released(c, r.s, low));
        expect(clk(b, 2, low + 1), PROCEED, low + 1, 1, 0);
        assert_true(sr_barrier_released(c, r.s, low + 1));
        expect(clk(b, 0, c), PROCEED, low + 1, 0, 1); /* after the RELEASE */
    }
    assert_int_equal(counters(b).advances, rounds);
}

#endif /* SERENE_TESTS_BARRIER_HELPERS_H */
