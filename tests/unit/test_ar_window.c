/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ar_window.c - the congestion window (reliab/window.h): ready
 * rounds go out lowest unit first; at most cwnd in flight, except the
 * base; a loss halves cwnd only on a queueing path and once per window of
 * rounds sent, never below its floor (a quarter of the slots, at least
 * 2); a delay (timers firing while answers come) halves it down to 2;
 * it starts at SR_ARW_INIT and doubles per round trip up to the slots
 * or until the path queues (slow start); answers grow it back;
 * a call's units follow one another in their slots and the base is the
 * lowest unanswered (sr_arw_call, sr_arw_done); and a model of the
 * protocol (workers that see answers in different orders, windows cut to
 * the floor) always completes every round.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reliab/window.h"

#define US 1000ull

/* Slow start to the whole pool: one more round per answer. */
static void open_window(sr_arw *w)
{
    unsigned answers = 0;
    assert_int_equal(w->cwnd, w->cwnd_max < SR_ARW_INIT ? w->cwnd_max : SR_ARW_INIT);
    while (w->cwnd < w->cwnd_max && answers < 100000) {
        sr_arw_answered(w, 0, 0);
        answers++;
    }
    assert_int_equal(answers, w->cwnd_max - (w->cwnd_max < SR_ARW_INIT ? w->cwnd_max : SR_ARW_INIT));
}

static void test_init_rejects_bad_args(void **state)
{
    (void)state;
    sr_arw w;
    assert_int_equal(sr_arw_init(&w, 0), -EINVAL);
    assert_int_equal(sr_arw_init(NULL, 4), -EINVAL);
}

static void test_lowest_unit_first(void **state)
{
    (void)state;
    sr_arw w;
    uint32_t u, s;
    static const uint32_t units[] = {13, 2, 7, 0, 9, 4, 11, 6};

    assert_int_equal(sr_arw_init(&w, 8), 0);
    for (unsigned i = 0; i < 8; i++)
        sr_arw_ready(&w, units[i], units[i] % 8);
    for (uint32_t want = 0, k = 0; k < 8; k++) {
        assert_true(sr_arw_next(&w, &u, &s));
        assert_true(u >= want);
        assert_int_equal(s, u % 8);
        want = u + 1;
    }
    assert_false(sr_arw_next(&w, &u, &s));
    assert_int_equal(w.inflight, 8);
    assert_int_equal(w.sent_hi, 14);
    sr_arw_fini(&w);
}

/* Cut to the floor, the window admits cwnd rounds, then only the base. */
static void test_cwnd_limits_but_base_goes(void **state)
{
    (void)state;
    sr_arw w;
    uint32_t u, s;

    assert_int_equal(sr_arw_init(&w, 8), 0);
    sr_arw_rtt(&w, 10 * US, 1);
    for (int i = 0; i < 3; i++) {
        w.recover = 0;
        sr_arw_loss(&w, 0, 1000 * US);
    }
    assert_int_equal(w.cwnd, 2);
    sr_arw_begin(&w);
    for (uint32_t k = 1; k < 6; k++)
        sr_arw_ready(&w, k, k);
    assert_true(sr_arw_next(&w, &u, &s));
    assert_true(sr_arw_next(&w, &u, &s));
    assert_int_equal(u, 2);
    assert_false(sr_arw_next(&w, &u, &s)); /* two in flight */
    sr_arw_ready(&w, 0, 0);                /* the base is ready: it goes anyway */
    assert_true(sr_arw_next(&w, &u, &s));
    assert_int_equal(u, 0);
    assert_int_equal(w.inflight, 3);
    assert_false(sr_arw_next(&w, &u, &s));
    sr_arw_answered(&w, 1, 0);
    sr_arw_answered(&w, 1, 0);
    assert_true(sr_arw_next(&w, &u, &s));
    assert_int_equal(u, 3);
    sr_arw_fini(&w);
}

static void test_loss_halves_only_when_queueing(void **state)
{
    (void)state;
    sr_arw w;
    uint32_t u, s;

    assert_int_equal(sr_arw_init(&w, 64), 0);
    open_window(&w);
    assert_int_equal(sr_arw_loss(&w, 0, 10000 * US), 0); /* no delay seen yet */
    sr_arw_rtt(&w, 50 * US, 1);
    sr_arw_rtt(&w, 80 * US, 2);
    assert_int_equal(w.min_rtt_ns, 50 * US);
    /* 2 * 50 us + 200 us = 300 us: a lossy path without a queue. */
    assert_int_equal(sr_arw_loss(&w, 0, 299 * US), 0);
    assert_int_equal(w.cwnd, 64);
    for (uint32_t k = 0; k < 40; k++)
        sr_arw_ready(&w, k, k);
    while (sr_arw_next(&w, &u, &s))
        ;
    assert_int_equal(sr_arw_loss(&w, 3, 300 * US), 1);
    assert_int_equal(w.cwnd, 32);
    assert_int_equal(sr_arw_loss(&w, 39, 900 * US), 0); /* same window of rounds */
    assert_int_equal(w.cwnd, 32);
    sr_arw_ready(&w, 40, 40);
    assert_false(sr_arw_next(&w, &u, &s)); /* 40 in flight, more than 32 */
    for (int i = 0; i < 9; i++)
        sr_arw_answered(&w, 0, 0);
    assert_true(sr_arw_next(&w, &u, &s));
    assert_int_equal(u, 40);
    assert_int_equal(sr_arw_loss(&w, 40, 900 * US), 1); /* sent after the cut */
    assert_int_equal(w.cwnd, 16);
    for (int i = 0; i < 4; i++) {
        w.recover = 0;
        sr_arw_loss(&w, 40, 900 * US);
    }
    assert_int_equal(w.cwnd, 64 / SR_ARW_FLOOR_DIV); /* the floor: a quarter of the slots */
    sr_arw_fini(&w);
    assert_int_equal(sr_arw_init(&w, 4), 0); /* few slots: the floor is 2 */
    sr_arw_rtt(&w, 10 * US, 1);
    for (int i = 0; i < 3; i++) {
        w.recover = 0;
        sr_arw_loss(&w, 0, 900 * US);
    }
    assert_int_equal(w.cwnd, 2);
    sr_arw_fini(&w);
}

/* Timers that fire while other answers keep coming on a queueing path (a
 * slow switch): the window halves once per window of rounds, down to 2,
 * not the loss floor; without a queue it stays; prompt answers grow it
 * back to the slots. */
static void test_delay_shrinks_and_answers_grow_back(void **state)
{
    (void)state;
    sr_arw w;
    uint32_t u, s;
    unsigned answers = 0;

    assert_int_equal(sr_arw_init(&w, 64), 0);
    open_window(&w);
    for (uint32_t k = 0; k < 64; k++)
        sr_arw_ready(&w, k, k);
    while (sr_arw_next(&w, &u, &s))
        ;
    assert_int_equal(sr_arw_delay(&w, 0, 10000 * US), 0); /* no base delay yet */
    sr_arw_rtt(&w, 50 * US, 1);
    assert_int_equal(sr_arw_delay(&w, 0, 299 * US), 0); /* no queue: a loss, or a late peer */
    assert_int_equal(w.cwnd, 64);
    assert_int_equal(sr_arw_delay(&w, 0, 300 * US), 1);
    assert_int_equal(w.cwnd, 32);
    assert_int_equal(sr_arw_delay(&w, 63, 900 * US), 0); /* the same window of rounds */
    assert_int_equal(w.cwnd, 32);
    for (int i = 0; i < 10; i++) {
        w.recover = 0;
        sr_arw_delay(&w, 0, 900 * US);
    }
    assert_int_equal(w.cwnd, 2); /* below the loss floor of 16 */
    assert_int_equal(sr_arw_delay(&w, 100, 900 * US), 0); /* at 2 already */
    while (w.cwnd < 64 && answers < 10000) {
        sr_arw_answered(&w, 0, 0);
        answers++;
    }
    assert_int_equal(w.cwnd, 64);
    assert_int_equal(answers, 62 * (2 + 63) / 2); /* 2 + 3 + ... + 63 */
    sr_arw_fini(&w);
    assert_int_equal(sr_arw_init(&w, 1), 0); /* one slot: nothing to halve */
    sr_arw_rtt(&w, 50 * US, 1);
    assert_int_equal(sr_arw_delay(&w, 0, 900 * US), 0);
    assert_int_equal(w.cwnd, 1);
    sr_arw_fini(&w);
}

static void test_answers_grow_back_to_the_slots(void **state)
{
    (void)state;
    sr_arw w;
    unsigned answers = 0;

    assert_int_equal(sr_arw_init(&w, 16), 0);
    open_window(&w);
    sr_arw_rtt(&w, 10 * US, 1);
    sr_arw_loss(&w, 0, 1000 * US);
    assert_int_equal(w.cwnd, 8);
    while (w.cwnd < 16 && answers < 1000) {
        sr_arw_answered(&w, 0, 0);
        answers++;
    }
    /* 8 + 9 + ... + 15 answers: one more per window. */
    assert_int_equal(answers, 8 + 9 + 10 + 11 + 12 + 13 + 14 + 15);
    for (int i = 0; i < 100; i++)
        sr_arw_answered(&w, 0, 0);
    assert_int_equal(w.cwnd, 16);
    sr_arw_fini(&w);
}

/* The first window is SR_ARW_INIT rounds and doubles per round trip
 * (one more per answer) until the path shows a queue; from there it grows
 * by one per window (slow start ended where the path began to queue, not
 * at a loss, as a slow switch's short queue would take); a loss never
 * raises a window already below the loss floor. */
static void test_slow_start_ends_at_a_queue(void **state)
{
    (void)state;
    sr_arw w;
    uint32_t u, s;

    assert_int_equal(sr_arw_init(&w, 128), 0);
    assert_int_equal(w.cwnd, SR_ARW_INIT);
    for (uint32_t k = 0; k < 128; k++)
        sr_arw_ready(&w, k, k);
    unsigned sent = 0;
    while (sr_arw_next(&w, &u, &s))
        sent++;
    assert_int_equal(sent, SR_ARW_INIT); /* the first burst */
    sr_arw_rtt(&w, 1000 * US, 1);
    for (unsigned i = 0; i < SR_ARW_INIT; i++) /* one round trip of prompt answers */
        sr_arw_answered(&w, 0, 1000 * US);
    assert_int_equal(w.cwnd, 2 * SR_ARW_INIT);
    /* A queue of 1.2 ms over a base of 1 ms: one more per window. */
    for (unsigned i = 0; i < 2 * SR_ARW_INIT; i++)
        sr_arw_answered(&w, 0, 3200 * US);
    assert_int_equal(w.cwnd, 2 * SR_ARW_INIT + 1);
    assert_int_equal(w.ssthresh, 2 * SR_ARW_INIT);
    for (unsigned i = 0; i < 2 * SR_ARW_INIT + 1; i++) /* the queue drained: still one */
        sr_arw_answered(&w, 0, 1100 * US);
    assert_int_equal(w.cwnd, 2 * SR_ARW_INIT + 2);
    w.cwnd = w.cwnd_min - 1;
    assert_int_equal(sr_arw_loss(&w, 0, 3200 * US), 0); /* below the loss floor already */
    assert_int_equal(w.cwnd, w.cwnd_min - 1);
    sr_arw_fini(&w);
    assert_int_equal(sr_arw_init(&w, 4), 0); /* fewer slots than the first window */
    assert_int_equal(w.cwnd, 4);
    sr_arw_fini(&w);
}

/* The base delay is the minimum of the last one or two periods: a standing
 * queue of a few seconds does not become the base; a path that got slower
 * for good does after two periods. */
static void test_rtt_minimum_over_periods(void **state)
{
    (void)state;
    sr_arw w;
    const uint64_t P = SR_ARW_MIN_PERIOD_NS;

    assert_int_equal(sr_arw_init(&w, 4), 0);
    sr_arw_rtt(&w, 0, 1);
    assert_int_equal(w.min_rtt_ns, 1);
    sr_arw_rtt(&w, 100 * US, 1 + P); /* a new period: the old one still counts */
    assert_int_equal(w.min_rtt_ns, 1);
    for (uint64_t t = 0; t < 100000; t++) /* a queue of 9 ms for most of a period */
        sr_arw_rtt(&w, 9000 * US, 2 + P + t * (P / 200000));
    assert_int_equal(w.min_rtt_ns, 1);
    sr_arw_rtt(&w, 9000 * US, 1 + 2 * P); /* the first period is forgotten */
    assert_int_equal(w.min_rtt_ns, 100 * US);
    sr_arw_rtt(&w, 9000 * US, 1 + 3 * P);
    assert_int_equal(w.min_rtt_ns, 9000 * US);
    sr_arw_rtt(&w, 7000 * US, 2 + 3 * P);
    assert_int_equal(w.min_rtt_ns, 7000 * US);
    sr_arw_rtt(&w, 8000 * US, 1 + 6 * P); /* two periods of silence: both forgotten */
    assert_int_equal(w.min_rtt_ns, 8000 * US);
    sr_arw_fini(&w);
}

/* ---- a model of the protocol --------------------------------------------------- */

enum { MW = 4, MSLOTS = 8, MUNITS = 8 + 200 };

typedef struct mworker {
    sr_arw w;
    uint32_t inbox[MUNITS], n_in; /* answers sent to it, not yet read */
    uint32_t done;
} mworker;

static void msend(mworker *wk, unsigned n, uint8_t *cnt, unsigned me)
{
    uint32_t u, s;
    while (sr_arw_next(&wk[me].w, &u, &s)) {
        assert_int_equal(s, u % MSLOTS);
        if (++cnt[u] == n) /* complete: the answer goes to everyone */
            for (unsigned k = 0; k < n; k++)
                wk[k].inbox[wk[k].n_in++] = u;
    }
}

/* Workers read their answers in random orders; every worker's window is
 * cut to the floor at the start, some again later. Every round completes. */
static void test_model_always_completes(void **state)
{
    (void)state;
    static mworker wk[MW];
    static uint8_t cnt[MUNITS];

    for (unsigned seed = 1; seed <= 50; seed++) {
        unsigned n = 2 + seed % (MW - 1);
        srand(seed);
        memset(cnt, 0, sizeof cnt);
        for (unsigned k = 0; k < n; k++) {
            memset(&wk[k], 0, sizeof wk[k]);
            assert_int_equal(sr_arw_init(&wk[k].w, MSLOTS), 0);
            sr_arw_rtt(&wk[k].w, 10 * US, 1);
            for (unsigned c = 0; c < k + 2; c++) {
                wk[k].w.recover = 0;
                sr_arw_loss(&wk[k].w, 0, 1000 * US);
            }
            sr_arw_call(&wk[k].w, MUNITS, MSLOTS);
        }
        for (unsigned k = 0; k < n; k++)
            msend(wk, n, cnt, k);
        unsigned steps = 0, finished = 0;
        while (finished < n && steps++ < 100000) {
            unsigned k = (unsigned)rand() % n;
            mworker *m = &wk[k];
            if (!m->n_in)
                continue;
            unsigned i = (unsigned)rand() % m->n_in;
            uint32_t u = m->inbox[i];
            m->inbox[i] = m->inbox[--m->n_in];
            sr_arw_done(&m->w, u);
            if (rand() % 50 == 0) {
                m->w.recover = 0;
                sr_arw_loss(&m->w, u, 1000 * US);
            }
            msend(wk, n, cnt, k);
            if (++m->done == MUNITS)
                finished++;
        }
        for (unsigned k = 0; k < n; k++) {
            assert_int_equal(wk[k].done, MUNITS);
            assert_int_equal(wk[k].w.base, MUNITS);
            assert_int_equal(wk[k].w.inflight, 0);
            sr_arw_fini(&wk[k].w);
        }
    }
}

/* A call's units: unit u in slot u % slots once u - slots is answered;
 * the base is the lowest unit not answered, whatever order answers come
 * in; a second call starts over with the same window. */
static void test_call_units_and_base(void **state)
{
    (void)state;
    sr_arw w;
    uint32_t u, s;

    assert_int_equal(sr_arw_init(&w, 8), 0);
    for (int call = 0; call < 2; call++) {
        sr_arw_call(&w, 10, 3); /* units 0-9 over slots 0-2 */
        for (uint32_t k = 0; k < 3; k++) {
            assert_true(sr_arw_next(&w, &u, &s));
            assert_int_equal(u, k);
            assert_int_equal(s, k);
        }
        assert_false(sr_arw_next(&w, &u, &s)); /* the next of a slot waits for its answer */
        sr_arw_done(&w, 1);
        assert_int_equal(w.base, 0);
        assert_true(sr_arw_next(&w, &u, &s));
        assert_int_equal(u, 4);
        assert_int_equal(s, 1);
        sr_arw_done(&w, 0);
        assert_int_equal(w.base, 2);
        sr_arw_done(&w, 4); /* 4 before 2 and 3: the base stays at 2 */
        assert_int_equal(w.base, 2);
        sr_arw_done(&w, 2);
        assert_int_equal(w.base, 3);
        uint32_t answered = 4, sent[10] = {0};
        while (sr_arw_next(&w, &u, &s)) { /* 3, 5 and 7 (4 answered), then on as answered */
            assert_int_equal(s, u % 3);
            sent[u] = 1;
        }
        for (uint32_t k = 3; k < 10 && answered < 10; k++) {
            if (k == 4)
                continue;
            while (!sent[k] && sr_arw_next(&w, &u, &s))
                sent[u] = 1;
            assert_true(sent[k]);
            sr_arw_done(&w, k);
            answered++;
        }
        assert_int_equal(answered, 10);
        assert_int_equal(w.base, 10);
        assert_int_equal(w.inflight, 0);
        assert_false(sr_arw_next(&w, &u, &s));
    }
    sr_arw_fini(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_rejects_bad_args),
        cmocka_unit_test(test_lowest_unit_first),
        cmocka_unit_test(test_cwnd_limits_but_base_goes),
        cmocka_unit_test(test_loss_halves_only_when_queueing),
        cmocka_unit_test(test_delay_shrinks_and_answers_grow_back),
        cmocka_unit_test(test_answers_grow_back_to_the_slots),
        cmocka_unit_test(test_slow_start_ends_at_a_queue),
        cmocka_unit_test(test_rtt_minimum_over_periods),
        cmocka_unit_test(test_model_always_completes),
        cmocka_unit_test(test_call_units_and_base),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
