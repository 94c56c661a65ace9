/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_barrier.c - the in-switch SSP barrier (p4/swswitch/barrier.c) driven
 * directly: BSP, SSP(s) for s in {1, 3, 10}, ASP; duplicate, reordered and
 * lost CLOCKs; clock wrap-around; a full ring and CLOCKs beyond it; policy
 * rules, their validation and the consistent hot swap.
 *
 * The randomized tests run legal schedules (workers obey their answers, and
 * CLOCKs and RELEASEs are lost, retransmitted and duplicated) against a
 * reference model that keeps every worker's last clock and the policy of
 * every clock in plain arrays. Each answer is checked against it: low and
 * high are the min and max of the workers' clocks, nobody proceeds at c
 * while some worker's clock is below c - s(c), and every worker sees one and
 * the same policy at every clock. Seeds are fixed: a run is reproducible.
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

#define WRAP_FIRST (UINT32_MAX - 4) /* 2^32 - 5 */

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

static int setup(void **state)
{
    static fixture f;

    memset(&f, 0, sizeof f);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    sr_barrier_fini(&f->b);
    free(f->cr);
    f->cr = NULL;
    return 0;
}

/* splitmix64, as in chaos.c. */
static uint64_t rnd(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint32_t rnd_below(uint64_t *x, uint32_t n)
{
    return (uint32_t)(rnd(x) % n);
}

static int try_init(sr_barrier *b, uint32_t n, uint32_t ring, uint32_t first,
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

static void init_b(sr_barrier *b, uint32_t n, uint32_t ring, uint32_t first, enum sr_sync_mode mode,
                   uint32_t s)
{
    sr_barrier_fini(b);
    assert_int_equal(try_init(b, n, ring, first, mode, s), 0);
}

static sr_barrier_result clk(sr_barrier *b, uint32_t w, uint32_t c)
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
static sr_barrier_result expect(sr_barrier_result r, int decision, int64_t low, int advanced,
                                int duplicate)
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
static void expect_again(sr_barrier *b, uint32_t w, uint32_t c, const sr_barrier_result *a)
{
    sr_barrier_result r = expect(clk(b, w, c), a->decision, a->low, 0, 1);

    assert_int_equal(r.mode, a->mode);
    assert_int_equal(r.s, a->s);
    assert_int_equal(r.high, a->high);
}

static void expect_policy(const sr_barrier *b, uint32_t c, enum sr_sync_mode mode, uint32_t s)
{
    enum sr_sync_mode m;
    uint32_t ms;

    sr_barrier_policy_at(b, c, &m, &ms);
    assert_int_equal(m, mode);
    assert_int_equal(ms, s);
}

static sr_barrier_counters counters(const sr_barrier *b)
{
    sr_barrier_counters c;

    sr_barrier_counters_get(b, &c);
    return c;
}

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

/* Rounds of BSP with the n workers reporting in a random order: the first
 * n - 1 are held (and stay held on retransmission), the last one proceeds
 * and flags the RELEASE, which then lets the held ones go. */
static void bsp_rounds(sr_barrier *b, uint32_t n, uint32_t first, uint32_t rounds, uint64_t seed)
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

static void test_bsp(void **state)
{
    fixture *f = *state;

    bsp_rounds(&f->b, 4, 0, 50, 1);
    bsp_rounds(&f->b, 64, 1000, 20, 2); /* a full bitmap word */
    bsp_rounds(&f->b, 1, 0, 20, 3);
}

/* ---- SSP and ASP ------------------------------------------------------------ */

/* A fast worker 0 and two slow ones: 0 proceeds while c - low <= s, is held
 * at s + 1 ahead, and is released when the slower of 1 and 2 catches up.
 * s is the one the mode applies (R - 2 = 14 for ASP). */
static void ssp_run(sr_barrier *b, enum sr_sync_mode mode, uint32_t s, uint32_t first,
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

/* ---- The reference model ----------------------------------------------------- */

typedef struct run_cfg {
    uint32_t n, ring, first, clocks;
    enum sr_sync_mode mode;
    uint32_t s;
    uint64_t seed;
    unsigned loss_pct;       /* CLOCKs and RELEASEs lost */
    unsigned dup_pct;        /* steps that resend an old CLOCK */
    unsigned swap_per_mille; /* steps that ask for a policy change */
    int swap_lead;           /* change only to SSP(s >= R / 2) or ASP: the rules
                                pile up between low and high and fill the list */
} run_cfg;

typedef struct model {
    const run_cfg *cfg;
    sr_barrier *b;
    clock_rec *cr; /* cfg->clocks + cfg->ring + 16 entries */
    uint32_t cr_len;
    uint64_t rng;
    uint32_t next[SR_BARRIER_MAX_WORKERS]; /* offset of the current iteration */
    uint32_t rec[SR_BARRIER_MAX_WORKERS];  /* offset of the last CLOCK the barrier got */
    uint8_t held[SR_BARRIER_MAX_WORKERS];
    enum sr_sync_mode hold_mode[SR_BARRIER_MAX_WORKERS];
    uint32_t hold_s[SR_BARRIER_MAX_WORKERS];
    uint64_t advanced, duplicates, swaps, full;
} model;

static uint32_t applied(const run_cfg *cfg, enum sr_sync_mode mode, uint32_t s)
{
    return mode == SR_SYNC_BSP ? 0 : mode == SR_SYNC_SSP ? s : cfg->ring - 2;
}

static uint32_t off_of(const model *m, uint32_t c)
{
    return c - (m->cfg->first - 1);
}

/* The model's policy from offset from on. */
static void set_pol(model *m, uint32_t from, enum sr_sync_mode mode, uint32_t s)
{
    for (; from < m->cr_len; from++)
        m->cr[from] = (clock_rec){.pol_mode = mode, .pol_s = applied(m->cfg, mode, s)};
}

/* The slowest worker's clock (what low must be); *hi: the fastest's. */
static uint32_t min_rec(const model *m, uint32_t *hi)
{
    uint32_t i, lo = m->rec[0], h = m->rec[0];

    for (i = 1; i < m->cfg->n; i++) {
        lo = m->rec[i] < lo ? m->rec[i] : lo;
        h = m->rec[i] > h ? m->rec[i] : h;
    }
    if (hi)
        *hi = h;
    return lo;
}

/* Check one answer for the clock at offset off against the model. */
static void check_answer(model *m, uint32_t off, const sr_barrier_result *r, uint32_t low_before)
{
    uint32_t hi, lo = min_rec(m, &hi);
    clock_rec *cr = &m->cr[off];

    assert_int_equal(off_of(m, r->low), lo);
    assert_int_equal(off_of(m, r->high), hi);
    assert_int_equal(r->advanced, r->low != low_before);
    m->advanced += r->advanced;
    m->duplicates += r->duplicate;
    if (off < lo)
        return; /* a stale copy: only low, high and PROCEED are guaranteed */
    assert_int_equal(r->mode, cr->pol_mode);
    assert_int_equal(r->s, cr->pol_s);
    assert_int_equal(r->decision, off - lo <= r->s ? SR_BARRIER_PROCEED : SR_BARRIER_HOLD);
    if (r->decision == SR_BARRIER_PROCEED) /* nobody below c - s(c) */
        assert_true(lo + r->s >= off);
    else if (r->mode == SR_SYNC_ASP) /* ASP holds only at the ring bound */
        assert_true(off - lo > m->cfg->ring - 2);
}

/* Worker w goes on past its current clock, logging the (mode, s) it was
 * answered for it: at every worker the one policy the model fixed for that
 * clock. The model changes a clock's policy only from E on, and E > high
 * is checked, so a policy is fixed from its clock's first answer on. */
static void proceed(model *m, uint32_t w, enum sr_sync_mode mode, uint32_t s)
{
    clock_rec *cr = &m->cr[m->next[w]];

    assert_int_equal(mode, cr->pol_mode);
    assert_int_equal(s, cr->pol_s);
    assert_true(min_rec(m, NULL) + s >= m->next[w]);
    cr->logged++;
    m->held[w] = 0;
    m->next[w]++;
}

static void deliver_release(model *m, uint32_t low)
{
    uint32_t v;

    for (v = 0; v < m->cfg->n; v++) {
        if (!m->held[v] || rnd_below(&m->rng, 100) < m->cfg->loss_pct)
            continue;
        if (sr_barrier_released(m->cfg->first - 1 + m->next[v], m->hold_s[v], low))
            proceed(m, v, m->hold_mode[v], m->hold_s[v]);
    }
}

/* Ask for a change at a random clock near high; check E and that the rules
 * agree with the model from low on, answered clocks included. */
static void swap_policy(model *m)
{
    const run_cfg *cfg = m->cfg;
    enum sr_sync_mode mode = (enum sr_sync_mode)rnd_below(&m->rng, 3), pm;
    uint32_t s = rnd_below(&m->rng, cfg->ring - 1), high = sr_barrier_high(m->b), ps;
    int32_t delta = (int32_t)rnd_below(&m->rng, 13) - 4;
    uint32_t want = high + (uint32_t)delta, e = 0, off, lo = min_rec(m, NULL);
    int rc;

    if (cfg->swap_lead) {
        mode = mode == SR_SYNC_BSP ? SR_SYNC_ASP : mode;
        s = cfg->ring / 2 + s % (cfg->ring / 2 - 1);
    }
    rc = sr_barrier_set_policy(m->b, mode, s, want, &e);
    if (rc == -ENOSPC) {
        assert_int_equal(sr_barrier_rules(m->b, NULL, 0), SR_BARRIER_MAX_RULES);
        m->full++;
        return;
    }
    assert_int_equal(rc, 0);
    m->swaps++;
    assert_int_equal(e, delta > 1 ? want : high + 1);
    assert_true((int32_t)(e - high) > 0);
    set_pol(m, off_of(m, e), mode, s);
    for (off = lo; off < m->cr_len && off <= off_of(m, high) + 10; off++) {
        sr_barrier_policy_at(m->b, cfg->first - 1 + off, &pm, &ps);
        assert_int_equal(pm, m->cr[off].pol_mode);
        assert_int_equal(ps, m->cr[off].pol_s);
    }
}

static void step(model *m)
{
    const run_cfg *cfg = m->cfg;
    /* worker 0 is the straggler: picked a third as often as the others */
    uint32_t pick = rnd_below(&m->rng, 3 * cfg->n - 2), w = pick < 1 ? 0 : 1 + (pick - 1) / 3;
    uint32_t roll = rnd_below(&m->rng, 1000), off, low_before;
    sr_barrier_result r;

    if (roll < cfg->swap_per_mille) {
        swap_policy(m);
        return;
    }
    if (m->next[w] > cfg->clocks)
        return;
    roll = rnd_below(&m->rng, 100);
    off = m->next[w];
    if (roll < cfg->dup_pct && off > 1) /* a late copy of an older CLOCK */
        off -= 1 + rnd_below(&m->rng, off - 1 < 4 ? off - 1 : 4);
    else if (roll < cfg->dup_pct + cfg->loss_pct)
        return; /* the CLOCK (first copy or retransmission) is lost */
    low_before = sr_barrier_low(m->b);
    r = clk(m->b, w, cfg->first - 1 + off);
    if (m->rec[w] < off)
        m->rec[w] = off;
    check_answer(m, off, &r, low_before);
    if (off < m->next[w]) {
        expect(r, PROCEED, ANY, 0, 1);
        return;
    }
    if (m->held[w]) { /* a retransmission answers with the policy of the HOLD */
        assert_int_equal(r.mode, m->hold_mode[w]);
        assert_int_equal(r.s, m->hold_s[w]);
    }
    if (r.decision == SR_BARRIER_PROCEED) {
        proceed(m, w, r.mode, r.s);
    } else {
        m->held[w] = 1;
        m->hold_mode[w] = r.mode;
        m->hold_s[w] = r.s;
    }
    if (r.advanced)
        deliver_release(m, r.low);
}

/* Run cfg->clocks clocks on every worker and check the whole run. */
static void run_model(fixture *f, const run_cfg *cfg)
{
    model m;
    sr_barrier_counters cnt;
    uint64_t steps = 0;
    uint32_t off, w;
    int done = 0;

    memset(&m, 0, sizeof m);
    m.cfg = cfg;
    m.b = &f->b;
    m.rng = cfg->seed;
    m.cr_len = cfg->clocks + cfg->ring + 16;
    free(f->cr);
    f->cr = calloc(m.cr_len, sizeof *f->cr);
    assert_non_null(f->cr);
    m.cr = f->cr;
    set_pol(&m, 0, cfg->mode, cfg->s);
    for (w = 0; w < cfg->n; w++)
        m.next[w] = 1;
    init_b(&f->b, cfg->n, cfg->ring, cfg->first, cfg->mode, cfg->s);
    while (!done) {
        assert_true(++steps < (uint64_t)200 * cfg->clocks * cfg->n); /* no deadlock */
        step(&m);
        done = 1;
        for (w = 0; w < cfg->n; w++)
            done &= m.next[w] > cfg->clocks;
    }
    for (off = 1; off <= cfg->clocks; off++)
        assert_int_equal(m.cr[off].logged, cfg->n);
    assert_int_equal(sr_barrier_low(&f->b), cfg->first - 1 + cfg->clocks);
    cnt = counters(&f->b);
    assert_int_equal(cnt.violations, 0);
    assert_int_equal(cnt.clocks, cnt.holds + cnt.proceeds);
    assert_int_equal(cnt.advances, m.advanced);
    assert_int_equal(cnt.duplicates, m.duplicates);
    assert_int_equal(cnt.policy_changes, m.swaps);
    assert_true(cnt.holds > 0 || cfg->mode == SR_SYNC_ASP);
    assert_true(m.full > 0 || !cfg->swap_lead);
}

static void test_wrap(void **state)
{
    fixture *f = *state;
    run_cfg cfg = {.n = 3, .ring = 8, .first = WRAP_FIRST, .clocks = 20, .mode = SR_SYNC_SSP,
                   .s = 2, .loss_pct = 10, .dup_pct = 5};
    uint64_t seed;

    bsp_rounds(&f->b, 4, WRAP_FIRST, 20, 4);
    ssp_run(&f->b, SR_SYNC_SSP, 3, WRAP_FIRST, 20);
    /* the first clock may be 0 with low = 2^32 - 1 */
    init_b(&f->b, 1, 4, 0, SR_SYNC_BSP, 0);
    assert_int_equal(sr_barrier_low(&f->b), UINT32_MAX);
    expect(clk(&f->b, 0, 0), PROCEED, 0, 1, 0);
    for (seed = 1; seed <= 20; seed++) {
        cfg.seed = seed;
        run_model(f, &cfg);
    }
}

static void test_random_legal_runs(void **state)
{
    fixture *f = *state;
    const run_cfg cfgs[] = {
        {.n = 5, .ring = 16, .first = 0, .clocks = 10000, .mode = SR_SYNC_SSP, .s = 3, .seed = 11,
         .loss_pct = 10, .dup_pct = 5},
        {.n = 4, .ring = 8, .first = UINT32_MAX - 5000, .clocks = 10000, .mode = SR_SYNC_BSP,
         .seed = 12, .loss_pct = 20, .dup_pct = 10},
        {.n = 3, .ring = 16, .first = 77, .clocks = 10000, .mode = SR_SYNC_ASP, .seed = 13,
         .loss_pct = 5, .dup_pct = 5},
        {.n = 64, .ring = 4, .first = 1u << 31, .clocks = 1000, .mode = SR_SYNC_SSP, .s = 2,
         .seed = 14, .loss_pct = 10, .dup_pct = 5},
        {.n = 2, .ring = 2, .first = 5, .clocks = 10000, .mode = SR_SYNC_SSP, .s = 0, .seed = 15,
         .loss_pct = 10, .dup_pct = 5},
    };
    size_t i;

    for (i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
        run_model(f, &cfgs[i]);
}

/* ---- Policies -------------------------------------------------------------- */

static void test_hot_swap(void **state)
{
    fixture *f = *state;
    run_cfg cfg = {.n = 4, .ring = 16, .first = UINT32_MAX - 2000, .clocks = 5000,
                   .mode = SR_SYNC_BSP, .loss_pct = 10, .dup_pct = 5, .swap_per_mille = 20};
    uint64_t seed;

    for (seed = 21; seed <= 25; seed++) {
        cfg.seed = seed;
        run_model(f, &cfg);
    }
    /* changes so frequent, and leads so long, that the rule list fills up */
    cfg.swap_per_mille = 400;
    cfg.swap_lead = 1;
    cfg.clocks = 2000;
    cfg.ring = 64;
    cfg.seed = 26;
    run_model(f, &cfg);
}

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
        cmocka_unit_test_setup_teardown(test_init_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bsp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ssp_1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ssp_3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ssp_10, setup, teardown),
        cmocka_unit_test_setup_teardown(test_asp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicates_and_reordering, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_clock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_ring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_legal_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hot_swap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policy_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_policy_errors, setup, teardown),
    };

    return cmocka_run_group_tests_name("barrier", tests, NULL, NULL);
}
