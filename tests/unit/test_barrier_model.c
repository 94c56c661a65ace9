/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_barrier_model.c - the in-switch SSP barrier (p4/swswitch/barrier.c)
 * under randomized legal schedules: workers obey their answers, and CLOCKs
 * and RELEASEs are lost, retransmitted and duplicated, against a reference
 * model that keeps every worker's last clock and the policy of every clock
 * in plain arrays. Each answer is checked against it: low and high are the
 * min and max of the workers' clocks, nobody proceeds at c while some
 * worker's clock is below c - s(c), and every worker sees one and the same
 * policy at every clock, also across clock wrap-around and while the
 * policy is hot-swapped. Seeds are fixed: a run is reproducible.
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

#define WRAP_FIRST (UINT32_MAX - 4) /* 2^32 - 5 */

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

/* ---- The hot swap ------------------------------------------------------------- */

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wrap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_legal_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hot_swap, setup, teardown),
    };

    return cmocka_run_group_tests_name("barrier_model", tests, NULL, NULL);
}
