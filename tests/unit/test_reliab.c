/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_reliab.c - the retransmission engine driven with a fake clock:
 * expiry, exponential backoff and its cap, retry limit, deadline, the
 * cached earliest timer across arm/disarm, the adaptive timeout, a packet
 * the switch holds (sr_rel_held), the floor stalls leave
 * (sr_rel_stall), and the recovery rule (sr_rel_verdict: probe what later
 * answers overtook, wait for what is queued behind answers that come, and
 * in silence probe only the oldest).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "reliab/reliab.h"

#define MS 1000000ull

static int setup(void **state)
{
    static sr_rel r;
    sr_rel_params p = {.rto_ns = 10 * MS, .rto_max_ns = 80 * MS, .retry_limit = 0};
    if (sr_rel_init(&r, 8, &p))
        return -1;
    *state = &r;
    return 0;
}

static int teardown(void **state)
{
    sr_rel_fini(*state);
    return 0;
}

static void test_init_rejects_bad_params(void **state)
{
    (void)state;
    sr_rel r;
    sr_rel_params p = {.rto_ns = 0, .rto_max_ns = 1, .retry_limit = 0};
    assert_int_not_equal(sr_rel_init(&r, 4, &p), 0);
    p.rto_ns = 10;
    p.rto_max_ns = 5;
    assert_int_not_equal(sr_rel_init(&r, 4, &p), 0);
    p.rto_max_ns = 10;
    assert_int_not_equal(sr_rel_init(&r, 0, &p), 0);
}

static void test_nothing_armed(void **state)
{
    sr_rel *r = *state;
    uint32_t out[8], n = 99;
    assert_int_equal(sr_rel_next_due(r), SR_REL_NEVER);
    assert_int_equal(sr_rel_poll(r, 1000 * MS, out, 8, &n), SR_REL_OK);
    assert_int_equal(n, 0);
}

static void test_expiry_and_backoff(void **state)
{
    sr_rel *r = *state;
    uint32_t out[8], n;
    sr_rel_arm(r, 3, 0);
    assert_int_equal(sr_rel_next_due(r), 10 * MS);
    /* Not yet due. */
    assert_int_equal(sr_rel_poll(r, 10 * MS - 1, out, 8, &n), SR_REL_OK);
    assert_int_equal(n, 0);
    /* Due: reported, timeout doubles to 20 ms from now. */
    assert_int_equal(sr_rel_poll(r, 10 * MS, out, 8, &n), SR_REL_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], 3);
    assert_int_equal(sr_rel_next_due(r), 30 * MS);
    assert_int_equal(sr_rel_poll(r, 29 * MS, out, 8, &n), SR_REL_OK);
    assert_int_equal(n, 0);
    /* 20 -> 40 -> 80 -> capped at 80. */
    uint64_t t = 30 * MS;
    uint64_t expect_rto[] = {40 * MS, 80 * MS, 80 * MS, 80 * MS};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sr_rel_poll(r, t, out, 8, &n), SR_REL_OK);
        assert_int_equal(n, 1);
        assert_int_equal(sr_rel_next_due(r), t + expect_rto[i]);
        t += expect_rto[i];
    }
    assert_int_equal(r->e[3].retries, 5);
    assert_int_equal(r->retransmits, 5);
}

static void test_disarm_stops_timer(void **state)
{
    sr_rel *r = *state;
    uint32_t out[8], n;
    sr_rel_arm(r, 0, 0);
    sr_rel_arm(r, 1, 5 * MS);
    sr_rel_disarm(r, 0);
    sr_rel_disarm(r, 0); /* idempotent */
    /* The cached minimum may still say 10 ms; polling there finds nothing
     * due and moves the cache to entry 1's 15 ms. */
    assert_int_equal(sr_rel_poll(r, 10 * MS, out, 8, &n), SR_REL_OK);
    assert_int_equal(n, 0);
    assert_int_equal(sr_rel_next_due(r), 15 * MS);
    assert_int_equal(sr_rel_poll(r, 15 * MS, out, 8, &n), SR_REL_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], 1);
    sr_rel_disarm(r, 1);
    assert_int_equal(r->armed, 0);
    assert_int_equal(sr_rel_next_due(r), SR_REL_NEVER);
}

static void test_rearm_resets_backoff(void **state)
{
    sr_rel *r = *state;
    uint32_t out[8], n;
    sr_rel_arm(r, 2, 0);
    assert_int_equal(sr_rel_poll(r, 10 * MS, out, 8, &n), SR_REL_OK);
    assert_int_equal(n, 1);
    sr_rel_arm(r, 2, 12 * MS); /* answered, next packet on the same entry */
    assert_int_equal(r->e[2].retries, 0);
    /* The expiry backed the timeout of new packets off to 20 ms ... */
    assert_int_equal(r->e[2].due_ns, 32 * MS);
    assert_true(sr_rel_next_due(r) <= 32 * MS); /* the cache may be early, never late */
    assert_int_equal(r->armed, 1);
    /* ... until a clean answer (5 ms: srtt 5, rttvar 2.5) sets it to
     * srtt + 4 rttvar = 15 ms. */
    sr_rel_ack(r, 2, 17 * MS);
    sr_rel_arm(r, 2, 20 * MS);
    assert_int_equal(r->rto_cur_ns, 15 * MS);
    assert_int_equal(r->e[2].due_ns, 35 * MS);
}

static void test_burst_limit(void **state)
{
    sr_rel *r = *state;
    uint32_t out[8], n;
    for (uint32_t i = 0; i < 8; i++)
        sr_rel_arm(r, i, 0);
    /* Only 3 reported per call; the rest stay due for the next call. */
    assert_int_equal(sr_rel_poll(r, 10 * MS, out, 3, &n), SR_REL_OK);
    assert_int_equal(n, 3);
    assert_int_equal(sr_rel_next_due(r), 10 * MS);
    assert_int_equal(sr_rel_poll(r, 10 * MS, out, 8, &n), SR_REL_OK);
    assert_int_equal(n, 5);
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(out[i], 3 + i);
}

static void test_deadline(void **state)
{
    sr_rel *r = *state;
    uint32_t out[8], n;
    sr_rel_arm(r, 0, 0);
    sr_rel_set_deadline(r, 25 * MS);
    assert_int_equal(sr_rel_poll(r, 10 * MS, out, 8, &n), SR_REL_OK);
    assert_int_equal(n, 1);
    /* Next due at 30 ms but the deadline comes first. */
    assert_int_equal(sr_rel_next_due(r), 25 * MS);
    assert_int_equal(sr_rel_poll(r, 24 * MS, out, 8, &n), SR_REL_OK);
    assert_int_equal(sr_rel_poll(r, 25 * MS, out, 8, &n), SR_REL_DEADLINE);
    assert_int_equal(n, 0);
    sr_rel_reset(r);
    assert_int_equal(sr_rel_next_due(r), SR_REL_NEVER);
    assert_int_equal(sr_rel_poll(r, 1000 * MS, out, 8, &n), SR_REL_OK);
}

static void test_adaptive_timeout(void **state)
{
    sr_rel *r = *state;
    uint32_t out[8], n;
    /* Answers after 30 ms: the timeout of new packets grows above it
     * (first sample: srtt 30, rttvar 15 -> 90 ms, capped at 80). */
    sr_rel_arm(r, 0, 0);
    sr_rel_ack(r, 0, 30 * MS);
    assert_int_equal(r->srtt_ns, 30 * MS);
    assert_int_equal(r->rto_cur_ns, 80 * MS);
    sr_rel_arm(r, 1, 100 * MS);
    assert_int_equal(sr_rel_next_due(r), 180 * MS);
    sr_rel_disarm(r, 1);
    /* Steady 1 ms answers shrink it back to the floor rto_ns = 10 ms. */
    for (uint64_t k = 0; k < 40; k++) {
        sr_rel_arm(r, 2, 200 * MS + k * MS);
        sr_rel_ack(r, 2, 200 * MS + k * MS + MS);
    }
    assert_true(r->srtt_ns < 2 * MS);
    assert_int_equal(r->rto_cur_ns, 10 * MS);
    /* Karn's rule: an answer to a resent packet is no sample. */
    uint64_t srtt = r->srtt_ns;
    sr_rel_arm(r, 3, 300 * MS);
    assert_int_equal(sr_rel_poll(r, 310 * MS, out, 8, &n), SR_REL_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], 3);
    sr_rel_ack(r, 3, 350 * MS);
    assert_int_equal(r->srtt_ns, srtt);
    /* ack of a disarmed entry changes nothing. */
    sr_rel_ack(r, 3, 400 * MS);
    assert_int_equal(r->srtt_ns, srtt);
}

static void test_retry_limit(void **state)
{
    (void)state;
    sr_rel r;
    sr_rel_params p = {.rto_ns = 1 * MS, .rto_max_ns = 1 * MS, .retry_limit = 3};
    assert_int_equal(sr_rel_init(&r, 2, &p), 0);
    uint32_t out[4], n;
    sr_rel_arm(&r, 1, 0);
    for (uint64_t t = 1; t <= 3; t++) {
        assert_int_equal(sr_rel_poll(&r, t * MS, out, 4, &n), SR_REL_OK);
        assert_int_equal(n, 1);
    }
    assert_int_equal(sr_rel_poll(&r, 4 * MS, out, 4, &n), SR_REL_RETRY_LIMIT);
    assert_int_equal(n, 0);
    assert_int_equal(r.e[1].retries, 3);
    sr_rel_fini(&r);
}

/* A packet the switch holds while a late peer keeps the round open: its
 * expiries back off to rto_max, each sr_rel_held restarts the retry count
 * so the limit never fires while the switch answers, the answer at last is
 * no RTT sample (Karn: it expired), and the deadline still applies. */
static void test_held_waits(void **state)
{
    (void)state;
    sr_rel r;
    sr_rel_params p = {.rto_ns = 2 * MS, .rto_max_ns = 16 * MS, .retry_limit = 2};
    assert_int_equal(sr_rel_init(&r, 2, &p), 0);
    uint32_t out[4], n;
    uint64_t t = 0, gaps[8];
    sr_rel_arm(&r, 0, 0);
    sr_rel_set_deadline(&r, 200 * MS);
    for (int k = 0; k < 8; k++) {
        uint64_t due = sr_rel_next_due(&r);
        gaps[k] = due - t;
        t = due;
        assert_int_equal(sr_rel_poll(&r, t, out, 4, &n), SR_REL_OK);
        assert_int_equal(n, 1);
        sr_rel_held(&r, 0); /* the probe's answer: held */
        assert_int_equal(r.e[0].retries, 0);
    }
    assert_int_equal(gaps[0], 2 * MS);
    assert_int_equal(gaps[1], 4 * MS);
    assert_int_equal(gaps[3], 16 * MS);
    assert_int_equal(gaps[7], 16 * MS); /* capped: probes stay rare */
    sr_rel_ack(&r, 0, t + MS);
    assert_int_equal(r.srtt_ns, 0); /* no sample from a packet that waited */
    sr_rel_arm(&r, 1, t);
    sr_rel_held(&r, 1);
    assert_int_equal(sr_rel_poll(&r, 200 * MS, out, 4, &n), SR_REL_DEADLINE);
    sr_rel_held(&r, 0); /* disarmed: nothing to do */
    assert_int_equal(r.e[0].due_ns, SR_REL_NEVER);
    sr_rel_fini(&r);
}

/* A stall (a late answer although nothing was lost) keeps new timeouts
 * at or above it for one to two periods, within [rto_ns, rto_max_ns]; the
 * RTT samples alone would bring them back down at once. */
static void test_stall_floor(void **state)
{
    sr_rel *r = *state;
    const uint64_t P = SR_REL_STALL_PERIOD_NS, t0 = 10 * P;
    for (uint64_t k = 0; k < 20; k++) { /* steady 1 ms answers: the floor, 10 ms */
        sr_rel_arm(r, 0, t0 + k * MS);
        sr_rel_ack(r, 0, t0 + k * MS + MS);
    }
    assert_int_equal(r->rto_cur_ns, 10 * MS);
    sr_rel_stall(r, 30 * MS, t0 + 30 * MS);
    assert_int_equal(r->rto_cur_ns, 30 * MS);
    sr_rel_arm(r, 1, t0 + 40 * MS);
    assert_int_equal(sr_rel_next_due(r), t0 + 70 * MS);
    sr_rel_disarm(r, 1);
    for (uint64_t k = 0; k < 20; k++) { /* quick answers do not undo it */
        sr_rel_arm(r, 0, t0 + P / 2 + k * MS);
        sr_rel_ack(r, 0, t0 + P / 2 + k * MS + MS);
    }
    assert_int_equal(r->rto_cur_ns, 30 * MS);
    sr_rel_stall(r, 500 * MS, t0 + P); /* capped at rto_max */
    assert_int_equal(r->rto_cur_ns, 80 * MS);
    sr_rel_arm(r, 0, t0 + 3 * P + MS); /* two periods on: forgotten */
    sr_rel_ack(r, 0, t0 + 3 * P + 2 * MS);
    assert_int_equal(r->rto_cur_ns, 10 * MS);
}

/* Probe answers teach the timeout the path's round trip, a slow switch's
 * queue included, and a packet is probed again only once its last probe
 * has had that long to come back. */
static void test_probe_pacing(void **state)
{
    sr_rel *r = *state;
    const uint64_t t0 = 1000 * MS;
    assert_true(sr_rel_probe_due(r, 0, t0));      /* no probe out: due */
    assert_false(sr_rel_probe_due(r, t0, t0 + 10 * MS - 1)); /* no sample: the first timeout */
    assert_true(sr_rel_probe_due(r, t0, t0 + 10 * MS));
    /* A slow switch answers probes after 30 ms: the timeout and the pace
     * follow. */
    for (uint64_t k = 0; k < 30; k++)
        sr_rel_sample(r, 30 * MS, t0 + k * MS);
    assert_true(r->srtt_ns >= 29 * MS && r->srtt_ns <= 30 * MS);
    assert_true(r->rto_cur_ns >= 30 * MS);
    assert_false(sr_rel_probe_due(r, t0, t0 + 20 * MS));
    assert_true(sr_rel_probe_due(r, t0, t0 + 30 * MS));
    /* Prompt answers again: the timeout back at its floor, probes as often
     * as a round trip allows. */
    for (uint64_t k = 0; k < 200; k++)
        sr_rel_sample(r, 1 * MS, t0 + 100 * MS + k * MS);
    assert_int_equal(r->rto_cur_ns, 10 * MS);
    assert_false(sr_rel_probe_due(r, t0, t0 + r->srtt_ns - 1));
    assert_true(sr_rel_probe_due(r, t0, t0 + 2 * MS));
}

/* Expire every armed entry due by t, returning how many were reported. */
static uint32_t expire(sr_rel *r, uint64_t t)
{
    uint32_t out[8], n;
    assert_int_equal(sr_rel_poll(r, t, out, 8, &n), SR_REL_OK);
    return n;
}

/* Four packets sent 1 ms apart behind a slow switch's queue: in silence
 * each is probed; once answers to the first ones keep coming, the later
 * ones' timers fire for nothing (QUEUED: no probe, no backoff, no retry
 * counted, due again a timeout later, and their answer is no sample); an
 * answer that overtakes a packet makes it a probe again, paced at one per
 * round trip, and paid for by answers. */
static void test_verdict(void **state)
{
    sr_rel *r = *state; /* rto 10 ms */
    const uint64_t t0 = 1000 * MS;
    for (uint32_t i = 0; i < 4; i++)
        sr_rel_arm(r, i, t0 + i * MS);
    assert_int_equal(expire(r, t0 + 20 * MS), 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(sr_rel_verdict(r, i, 0, t0 + 20 * MS), SR_REL_PROBE);
    assert_int_equal(r->e[1].rto_ns, 20 * MS); /* backed off */
    /* Entry 0's answer comes (late, after an expiry: no sample); 1..3 are
     * queued behind it: reported, but not as expiries. */
    sr_rel_ack(r, 0, t0 + 25 * MS);
    assert_int_equal(r->srtt_ns, 0);
    assert_int_equal(expire(r, t0 + 41 * MS), 3);
    for (uint32_t i = 1; i < 4; i++) {
        assert_int_equal(sr_rel_verdict(r, i, 0, t0 + 41 * MS), SR_REL_QUEUED);
        assert_int_equal(r->e[i].retries, 0);
        assert_int_equal(r->e[i].rto_ns, 20 * MS);                /* no backoff */
        assert_int_equal(r->e[i].due_ns, t0 + 61 * MS);
    }
    sr_rel_ack(r, 1, t0 + 46 * MS);
    assert_int_equal(r->srtt_ns, 0); /* no sample: the delay may be a peer's */
    /* Entry 3 is answered: entry 2, sent before it, was overtaken. */
    sr_rel_ack(r, 3, t0 + 47 * MS);
    assert_int_equal(expire(r, t0 + 48 * MS), 1); /* RACK: 2 ms after its send */
    assert_int_equal(sr_rel_verdict(r, 2, 0, t0 + 48 * MS), SR_REL_PROBE);
    /* Its probe is out: the next one waits a round trip (the first
     * timeout, 10 ms, before any sample). */
    assert_int_equal(sr_rel_verdict(r, 2, t0 + 48 * MS, t0 + 57 * MS), SR_REL_WAIT);
    /* Resent whole: only an answer to a packet sent after the resend
     * overtakes it again; until then, answers that keep coming (entry 6's,
     * sent before the resend) mean it is queued. */
    sr_rel_resent(r, 2, t0 + 60 * MS);
    sr_rel_arm(r, 6, t0 + 59 * MS);
    sr_rel_ack(r, 6, t0 + 61 * MS);
    assert_int_equal(expire(r, t0 + 61 * MS), 1); /* its timer, due at 61 ms */
    assert_int_equal(sr_rel_verdict(r, 2, 0, t0 + 61 * MS), SR_REL_QUEUED);
    /* Answers stop: once the last is older than the timeout, silence:
     * probed, paid for by the answers before. */
    uint64_t t = t0 + 61 * MS + r->e[2].rto_ns;
    assert_int_equal(expire(r, t), 1);
    assert_int_equal(sr_rel_verdict(r, 2, 0, t), SR_REL_PROBE);
    /* No answer pays for more: one unpaid probe per round trip, the others
     * due again a round trip later with no retry counted. */
    sr_rel_disarm(r, 2);
    r->probe_tokens = 0;
    sr_rel_arm(r, 7, t);
    sr_rel_arm(r, 4, t);
    uint64_t t2 = t + r->rto_cur_ns; /* new packets keep the backed-off timeout */
    assert_int_equal(expire(r, t2), 2);
    assert_int_equal(sr_rel_verdict(r, 4, 0, t2), SR_REL_PROBE);
    assert_int_equal(sr_rel_verdict(r, 7, 0, t2), SR_REL_WAIT);
    assert_int_equal(r->srtt_ns, 2 * MS); /* entry 6: answered 2 ms after its send */
    assert_int_equal(r->e[7].due_ns, t2 + 2 * MS);
    assert_int_equal(r->e[7].retries, 0);
}

/* RACK: a packet overtaken by an answer to a later one is reported once
 * it is older than a round trip and the reordering window (1 ms at
 * least), once per transmission, its timer untouched; a resend makes it
 * a candidate again, and its answer is no sample. */
static void test_rack(void **state)
{
    sr_rel *r = *state; /* rto 10 ms */
    const uint64_t t0 = 1000 * MS;
    sr_rel_arm(r, 0, t0);
    sr_rel_arm(r, 1, t0 + MS);
    sr_rel_ack(r, 1, t0 + 2 * MS); /* srtt 1 ms: the wait is 1 + 1 ms */
    assert_int_equal(r->srtt_ns, MS);
    assert_true(sr_rel_next_due(r) <= t0 + 2 * MS);
    assert_int_equal(expire(r, t0 + 2 * MS - 1), 0); /* 2 ms - 1 ns old */
    uint32_t out[8], n;
    assert_int_equal(sr_rel_poll(r, t0 + 2 * MS, out, 8, &n), SR_REL_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], 0);
    assert_int_equal(r->e[0].retries, 0);             /* no expiry counted */
    assert_int_equal(r->e[0].due_ns, t0 + 10 * MS);   /* its timer as it was */
    assert_int_equal(expire(r, t0 + 5 * MS), 0);      /* once per transmission */
    sr_rel_resent(r, 0, t0 + 5 * MS);
    sr_rel_arm(r, 2, t0 + 6 * MS);
    sr_rel_ack(r, 2, t0 + 7 * MS);
    assert_int_equal(expire(r, t0 + 7 * MS), 1);      /* overtaken again, 2 ms on */
    sr_rel_ack(r, 0, t0 + 8 * MS);
    assert_int_equal(r->srtt_ns, MS);                 /* the resent one: no sample */
    assert_int_equal(sr_rel_next_due(r), SR_REL_NEVER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_rejects_bad_params),
        cmocka_unit_test_setup_teardown(test_nothing_armed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expiry_and_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disarm_stops_timer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rearm_resets_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_burst_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adaptive_timeout, setup, teardown),
        cmocka_unit_test(test_retry_limit),
        cmocka_unit_test(test_held_waits),
        cmocka_unit_test_setup_teardown(test_stall_floor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_pacing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verdict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rack, setup, teardown),
    };
    return cmocka_run_group_tests_name("reliab", tests, NULL, NULL);
}
