/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ctl.c - unit tests of libserene-ctl through its public API: the
 * compiler's rules, error positions, status parsing, and the dynamic
 * controller driven with synthetic status samples (no switch).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "serene/ctl.h"

static serene_ctl_policy *parse_ok(const char *text, uint32_t ring)
{
    serene_ctl_policy *p = NULL;
    char err[SERENE_CTL_ERR_MAX] = "";
    int rc = serene_ctl_policy_parse(text, strlen(text), ring, &p, err, sizeof err);
    if (rc)
        fprintf(stderr, "parse error: %s\n", err);
    assert_int_equal(rc, 0);
    assert_non_null(p);
    return p;
}

static void test_schedule_rules(void **state)
{
    (void)state;
    serene_ctl_policy *p =
        parse_ok("bsp until clock 100; ssp 4 until clock 5000; asp until clock 6000; bsp", 0);
    serene_ctl_rule r[8];
    assert_int_equal(serene_ctl_policy_rules(p, r, 8), 4);
    assert_int_equal(r[0].from, 0);
    assert_int_equal(r[0].to, 100);
    assert_int_equal(r[1].mode, SERENE_CTL_SSP);
    assert_int_equal(r[1].s, 4);
    assert_int_equal(r[2].mode, SERENE_CTL_ASP);
    assert_int_equal(r[3].from, 6000);
    assert_true(r[3].open);
    assert_int_equal(serene_ctl_policy_stop(p, NULL), -ENOENT);
    serene_ctl_policy_free(&p);
    assert_null(p);
    serene_ctl_policy_free(&p); /* NULL is fine */
}

static void test_empty_and_clock_override(void **state)
{
    (void)state;
    serene_ctl_policy *p = parse_ok("# nothing but comments\n\n", 0);
    serene_ctl_rule r[4];
    assert_int_equal(serene_ctl_policy_rules(p, r, 4), 1);
    assert_int_equal(r[0].mode, SERENE_CTL_BSP);
    assert_true(r[0].open);
    serene_ctl_policy_free(&p);

    /* A closed schedule, then a clock override past its end. */
    p = parse_ok("ssp 3 until clock 50\nwhen clock >= 80: bsp", 16);
    assert_int_equal(serene_ctl_policy_rules(p, r, 4), 2);
    assert_int_equal(r[0].to, 80);
    assert_int_equal(r[1].from, 80);
    assert_int_equal(serene_ctl_policy_stop(p, NULL), -ENOENT);
    assert_int_equal(serene_ctl_policy_reactive_count(p), 1);
    serene_ctl_policy_free(&p);
}

static void test_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint32_t ring;
        const char *want;
    } cases[] = {
        {"ssp", 0, "1:1: ssp needs a staleness: 'ssp S'"},
        {"bsp until clock 5\n\n  ssp 100", 64, "3:7: s 100 is above 62, the most a ring of 64 allows"},
        {"asp until clock 9; bsp until clock 9", 0,
         "1:36: until clocks must increase: 9 is not above 9, the until of the statement at 1:1"},
        {"when clock >= 99999999999: bsp", 0,
         "1:15: number 99999999999 is out of range (0..4294967295)"},
        {"stop at clock 5; stop at clock 6", 0, "1:18: a second 'stop'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        serene_ctl_policy *p = NULL;
        char err[SERENE_CTL_ERR_MAX] = "";
        assert_int_equal(serene_ctl_policy_parse(cases[i].text, strlen(cases[i].text),
                                                 cases[i].ring, &p, err, sizeof err),
                         -EINVAL);
        assert_null(p);
        assert_string_equal(err, cases[i].want);
    }
}

static const char *status_line =
    "ok job=0 workers=4 low=9 high=10 mode=bsp s=0 rules=0-50:bsp:0,50-inf:ssp:3 clocks=44 "
    "holds=12 proceeds=32 advances=10 pushes=0 push_dups=0 pulls=0 bound=4 nonce=1 ring=64 "
    "store=64 clock_ahead=0 range_errors=0";

static void test_status_parse(void **state)
{
    (void)state;
    serene_ctl_status st;
    assert_int_equal(serene_ctl_status_parse(status_line, &st), 0);
    assert_int_equal(st.high, 10);
    assert_int_equal(st.holds, 12);
    assert_int_equal(st.ring, 64);
    assert_int_equal(st.n_rules, 2);
    assert_true(st.rules[1].open);
    assert_int_equal(st.rules[1].s, 3);
    assert_int_equal(serene_ctl_status_parse("error unknown job 3", &st), -EINVAL);
    assert_int_equal(serene_ctl_status_parse("ok job=0 workers=4", &st), -EINVAL);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(serene_ctl_status_parse(status_line, &st), 0);
    assert_int_equal(serene_ctl_status_json(&st, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "\"rules\": [{\"from\": 0, \"to\": 50, \"mode\": \"bsp\", \"s\": 0}, "
                                "{\"from\": 50, \"to\": null, \"mode\": \"ssp\", \"s\": 3}]"));
    free(buf);
}

/* A synthetic job: each step (one sample) one clock; waiting: some worker
 * is held (high - low > s). */
static void feed(serene_ctl_status *st, unsigned waiting)
{
    uint32_t s = st->mode == SERENE_CTL_SSP ? st->s : 0;
    st->high++;
    st->low = waiting ? st->high - s - 1 : st->high;
    st->clocks += 4;
}

static void test_controller(void **state)
{
    (void)state;
    serene_ctl_policy *p = parse_ok("bsp until clock 30; ssp 1\n"
                                    "when wait_fraction > 0.5 for 5 clocks: staleness += 4 max 8\n"
                                    "when clock >= 60: bsp\nstop at clock 70",
                                    64);
    serene_ctl_controller *c = NULL;
    serene_ctl_decision d[16];
    serene_ctl_status st;
    memset(&st, 0, sizeof st);
    st.high = UINT32_MAX;
    st.ring = 64;
    assert_int_equal(serene_ctl_controller_create(&c, p), 0);

    /* First step: the static schedule, 3 rules. */
    unsigned n = serene_ctl_controller_step(c, &st, -1, d, 16);
    assert_int_equal(n, 3);
    assert_int_equal(d[1].from, 30);
    assert_int_equal(d[1].new_mode, SERENE_CTL_SSP);
    assert_int_equal(d[2].from, 60);
    assert_false(d[0].reactive);

    /* Clocks 0..9 with no waiting: nothing. */
    st.high = UINT32_MAX;
    for (int i = 0; i < 10; i++) {
        feed(&st, 0);
        assert_int_equal(serene_ctl_controller_step(c, &st, -1, d, 16), 0);
    }
    /* Heavy waiting: the rule fires after 5 clocks of it. */
    unsigned fired = 0;
    for (int i = 0; i < 6 && !fired; i++) {
        feed(&st, 3);
        fired = serene_ctl_controller_step(c, &st, -1, d, 16);
    }
    assert_int_equal(fired, 3); /* the raise, then rules 30 and 60 again */
    assert_true(d[0].reactive);
    assert_int_equal(d[0].new_mode, SERENE_CTL_SSP);
    assert_int_equal(d[0].new_s, 4);
    assert_int_equal(d[0].from, st.high + 1);
    assert_int_equal(d[1].from, 30);
    assert_int_equal(d[2].from, 60);
    serene_ctl_controller_applied(c, &d[0], st.high + 1);
    st.mode = SERENE_CTL_SSP;
    st.s = 4;
    /* Still waiting, but the window must first refill under SSP(4). */
    feed(&st, 3);
    assert_int_equal(serene_ctl_controller_step(c, &st, -1, d, 16), 0);
    for (int i = 0; i < 4; i++) {
        feed(&st, 3);
        (void)serene_ctl_controller_step(c, &st, -1, d, 16);
    }
    feed(&st, 3);
    n = serene_ctl_controller_step(c, &st, -1, d, 16);
    assert_true(n >= 1);
    assert_int_equal(d[0].new_s, 8); /* capped by max 8 */
    serene_ctl_controller_applied(c, &d[0], st.high + 1);
    st.s = 8;
    /* Past clock 60 nothing reactive happens; at 70 it is done. */
    while (st.high < 58) {
        feed(&st, 0);
        (void)serene_ctl_controller_step(c, &st, -1, d, 16);
    }
    st.mode = SERENE_CTL_BSP;
    st.s = 0;
    while (st.high < 68) {
        feed(&st, 4);
        assert_int_equal(serene_ctl_controller_step(c, &st, -1, d, 16), 0);
        assert_false(serene_ctl_controller_done(c));
    }
    feed(&st, 4);
    assert_int_equal(serene_ctl_controller_step(c, &st, -1, d, 16), 0);
    assert_true(serene_ctl_controller_done(c));
    serene_ctl_controller_destroy(&c);
    assert_null(c);
    serene_ctl_policy_free(&p);
}

static void test_plateau(void **state)
{
    (void)state;
    serene_ctl_policy *p = parse_ok("ssp 4\nwhen loss_plateau for 3 clocks: bsp", 0);
    serene_ctl_controller *c = NULL;
    serene_ctl_decision d[4];
    serene_ctl_status st;
    memset(&st, 0, sizeof st);
    st.mode = SERENE_CTL_SSP;
    st.s = 4;
    assert_int_equal(serene_ctl_controller_create(&c, p), 0);
    assert_int_equal(serene_ctl_controller_step(c, &st, -1, d, 4), 1);
    /* Without a loss signal it never fires. */
    for (int i = 0; i < 10; i++) {
        feed(&st, 0);
        assert_int_equal(serene_ctl_controller_step(c, &st, -1, d, 4), 0);
    }
    unsigned n = 0;
    for (int i = 0; i < 5 && !n; i++) {
        feed(&st, 0);
        n = serene_ctl_controller_step(c, &st, 1, d, 4);
    }
    assert_int_equal(n, 1);
    assert_int_equal(d[0].new_mode, SERENE_CTL_BSP);
    serene_ctl_controller_destroy(&c);
    serene_ctl_policy_free(&p);
}

/* spread: high - low OP N in every sample of the last K clocks, whatever the
 * policy in force. A lag of 4 under SSP(8) holds nobody (wait_fraction 0)
 * and fires neither rule; a lag of 7 raises s; once the straggler catches
 * up (lag 1) s comes down, though nobody was held meanwhile. */
static void feed_lag(serene_ctl_status *st, uint32_t lag)
{
    st->high++;
    st->low = st->high - lag;
    st->clocks += 4;
}

static void test_spread(void **state)
{
    (void)state;
    serene_ctl_policy *p = parse_ok("ssp 8\n"
                                    "when spread > 5 for 3 clocks: staleness += 4 max 12\n"
                                    "when spread < 2 for 4 clocks: staleness -= 6 min 2",
                                    64);
    serene_ctl_controller *c = NULL;
    serene_ctl_decision d[4];
    serene_ctl_status st;
    memset(&st, 0, sizeof st);
    st.high = UINT32_MAX;
    st.ring = 64;
    st.mode = SERENE_CTL_SSP;
    st.s = 8;
    assert_int_equal(serene_ctl_controller_create(&c, p), 0);
    assert_int_equal(serene_ctl_controller_step(c, &st, -1, d, 4), 1);
    st.high = 10; /* low trails by the lag given to each sample */
    for (int i = 0; i < 10; i++) {
        feed_lag(&st, 4);
        assert_int_equal(serene_ctl_controller_step(c, &st, -1, d, 4), 0);
    }
    unsigned n = 0;
    int k;
    for (k = 0; k < 6 && !n; k++) {
        feed_lag(&st, 7);
        n = serene_ctl_controller_step(c, &st, -1, d, 4);
    }
    assert_int_equal(n, 1);
    assert_int_equal(k, 3); /* the window holds 3 clocks of lag 7 */
    assert_int_equal(d[0].new_mode, SERENE_CTL_SSP);
    assert_int_equal(d[0].new_s, 12);
    assert_non_null(strstr(d[0].why, "spread 7 > 5 over 3 clocks"));
    serene_ctl_controller_applied(c, &d[0], st.high + 1);
    st.s = 12;
    /* Lag 7 under SSP(12): nobody held, and s stays (spread > 5 again, but
     * the bound is at its max). */
    for (int i = 0; i < 8; i++) {
        feed_lag(&st, 7);
        assert_int_equal(serene_ctl_controller_step(c, &st, -1, d, 4), 0);
    }
    n = 0;
    for (k = 0; k < 8 && !n; k++) {
        feed_lag(&st, 1);
        n = serene_ctl_controller_step(c, &st, -1, d, 4);
    }
    assert_int_equal(n, 1);
    assert_int_equal(k, 4);
    assert_int_equal(d[0].new_s, 6);
    assert_non_null(strstr(d[0].why, "spread 1 < 2 over 4 clocks"));
    serene_ctl_controller_destroy(&c);
    serene_ctl_policy_free(&p);

    /* The threshold is a whole number of clocks. */
    serene_ctl_policy *q = NULL;
    char err[SERENE_CTL_ERR_MAX] = "";
    const char *bad = "when spread < 0.5 for 3 clocks: bsp";
    assert_int_not_equal(serene_ctl_policy_parse(bad, strlen(bad), 0, &q, err, sizeof err), 0);
    assert_non_null(strstr(err, "must be a whole number"));
    assert_null(q);
}

static void test_job_defaults(void **state)
{
    (void)state;
    const char *text = "job = 7\nworkers = 2\nworker.1 = 1.2.3.4:9\nworker.0 = 1.2.3.4:8 # x\n";
    serene_ctl_job j;
    char err[SERENE_CTL_ERR_MAX] = "";
    assert_int_equal(serene_ctl_job_parse(text, strlen(text), "t", &j, err, sizeof err), 0);
    assert_int_equal(j.mcast_group, 8);
    assert_int_equal(j.ring, 64);
    assert_int_equal(j.workers[1].sw_port, 2);
    assert_int_equal(j.workers[0].addr, 0x01020304u);
    assert_int_equal(j.workers[0].udp_port, 8);
    serene_ctl_target t;
    assert_int_equal(serene_ctl_target_parse("bmv2", &t), 0);
    assert_int_equal(t, SERENE_CTL_TARGET_BMV2);
    assert_int_equal(serene_ctl_target_parse("p4", &t), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule_rules), cmocka_unit_test(test_empty_and_clock_override),
        cmocka_unit_test(test_errors),         cmocka_unit_test(test_status_parse),
        cmocka_unit_test(test_controller),     cmocka_unit_test(test_plateau), cmocka_unit_test(test_spread),
        cmocka_unit_test(test_job_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
