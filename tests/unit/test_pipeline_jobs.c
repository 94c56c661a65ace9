/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline_jobs.c - the software switch's pipeline, driven packet by
 * packet: its job table (add, remove, list, parameters and their limits),
 * the counters' text form, what a job's incarnation holds (open slots and
 * barrier ring entries, serene-switch's status), and dispatch: malformed
 * datagrams counted by reason, answers arriving at the switch dropped,
 * requests for an unknown job refused.
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

/* ---- job table ---------------------------------------------------------------- */

static void test_job_table(void **state)
{
    fx *f = *state;
    uint16_t ids[4];
    sr_pipe_job_info info;
    sr_pipe_job_counters c;
    sr_pipe *none = NULL;

    assert_int_equal(job_add(f->p, 1, 0, 8, 8), -EINVAL);
    assert_int_equal(job_add(f->p, 1, SR_WIRE_MAX_WORKERS + 1, 8, 8), -EINVAL);
    assert_int_equal(job_add(f->p, 1, 2, 0, 8), -EINVAL);
    assert_int_equal(job_add(f->p, 1, 2, SR_WIRE_MAX_ELEMS + 1, 8), -EINVAL);
    /* 0 slots: a job without allreduce (the Tofino program's), added and
     * removed like any other. */
    assert_int_equal(job_add(f->p, 1, 2, 8, 0), 0);
    assert_int_equal(sr_pipe_job_info_get(f->p, 1, &info), 0);
    assert_int_equal(info.pool_slots, 0);
    assert_int_equal(sr_pipe_job_remove(f->p, 1), 0);
    assert_int_equal(job_add(f->p, 1, 2, 8, SR_WIRE_MAX_SLOTS + 1), -EINVAL);
    assert_int_equal(sr_pipe_job_add(f->p, 1, NULL), -EINVAL);
    assert_int_equal(sr_pipe_job_list(f->p, ids, 4), 0);

    assert_int_equal(job_add(f->p, 65535, SR_WIRE_MAX_WORKERS, 1, 1), 0);
    assert_int_equal(job_add(f->p, 9, 3, 16, 4), 0);
    assert_int_equal(job_add(f->p, 0, 1, SR_WIRE_MAX_ELEMS, 2), 0);
    assert_int_equal(job_add(f->p, 9, 2, 8, 8), -EEXIST);
    assert_int_equal(sr_pipe_job_list(f->p, ids, 2), 3); /* truncated, ascending */
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 9);
    assert_int_equal(sr_pipe_job_list(f->p, ids, 4), 3);
    assert_int_equal(ids[2], 65535);

    info = info_of(f, 9);
    assert_int_equal(info.job, 9);
    assert_int_equal(info.n_workers, 3);
    assert_int_equal(info.elems_per_pkt, 16);
    assert_int_equal(info.pool_slots, 4);
    assert_int_equal(info.store_words, SR_TEST_STORE);
    assert_int_equal(info.ring, SR_BARRIER_RING_DEFAULT);
    assert_int_equal(info.mode, SR_SYNC_BSP);
    assert_int_equal(info.s, 0);
    assert_int_equal(info.nonce, 0);
    assert_int_equal(info.n_bound, 0);

    assert_int_equal(sr_pipe_job_remove(f->p, 9), 0);
    assert_int_equal(sr_pipe_job_remove(f->p, 9), -ENOENT);
    assert_int_equal(sr_pipe_job_info_get(f->p, 9, &info), -ENOENT);
    assert_int_equal(sr_pipe_job_counters_get(f->p, 9, &c), -ENOENT);
    assert_int_equal(sr_pipe_job_list(f->p, ids, 4), 2);
    assert_int_equal(ids[1], 65535);
    assert_int_equal(job_add(f->p, 9, 2, 8, 8), 0); /* a removed id is free again */
    sr_pipe_destroy(&none);
    sr_pipe_destroy(NULL);
}

/* Defaults, and every limit of the SSP parameters with its message. */
static void test_job_params(void **state)
{
    fx *f = *state;
    sr_pipe_job_params jp, bad;
    sr_pipe_job_info info;
    const char *why = "x";

    sr_pipe_job_params_init(NULL);
    sr_pipe_job_params_init(&jp);
    assert_int_equal(jp.n_workers, 0);
    assert_int_equal(jp.elems_per_pkt, SR_WIRE_DEF_ELEMS);
    assert_int_equal(jp.pool_slots, SR_WIRE_DEF_SLOTS);
    assert_int_equal(jp.store_words, 1u << 20);
    assert_int_equal(jp.ring, 64);
    assert_int_equal(jp.mode, SR_SYNC_BSP);
    assert_int_equal(jp.s, 0);
    assert_int_equal(sr_pipe_job_params_check(&jp, &why), -EINVAL); /* no workers */
    assert_non_null(strstr(why, "workers"));
    jp.n_workers = 4;
    assert_int_equal(sr_pipe_job_params_check(&jp, &why), 0);
    assert_null(why);
    assert_int_equal(sr_pipe_job_params_check(NULL, &why), -EINVAL);

    /* One field out of range at a time, each refused with its reason. */
#define BAD(field, value, word)                                                                   \
    do {                                                                                          \
        bad = jp;                                                                                 \
        bad.field = (value);                                                                      \
        assert_int_equal(sr_pipe_job_params_check(&bad, &why), -EINVAL);                          \
        assert_non_null(strstr(why, word));                                                       \
        assert_int_equal(sr_pipe_job_add(f->p, 1, &bad), -EINVAL);                                \
    } while (0)
    BAD(store_words, (1u << 28) + 1, "store");
    BAD(ring, 0, "ring");
    BAD(ring, 1, "ring");
    BAD(ring, 48, "ring");
    BAD(ring, 8192, "ring");
    BAD(mode, (enum sr_sync_mode)7, "policy");
    bad = jp;
    bad.mode = SR_SYNC_SSP;
    bad.ring = 8;
    bad.s = 7;
    assert_int_equal(sr_pipe_job_params_check(&bad, &why), -EINVAL);
    assert_non_null(strstr(why, "ring - 2"));
    bad.s = 6; /* s = R - 2 is the largest */
    assert_int_equal(sr_pipe_job_params_check(&bad, &why), 0);
    bad.mode = SR_SYNC_ASP; /* s is ignored outside SSP */
    bad.s = 1000;
    assert_int_equal(sr_pipe_job_params_check(&bad, &why), 0);
    /* The push table: rows x workers <= 2^28. */
    bad = jp;
    bad.n_workers = 64;
    bad.elems_per_pkt = 1;
    bad.store_words = 1u << 22;
    assert_int_equal(sr_pipe_job_params_check(&bad, &why), 0);
    bad.store_words++;
    assert_int_equal(sr_pipe_job_params_check(&bad, &why), -EINVAL);
    assert_non_null(strstr(why, "rows"));
#undef BAD

    /* Limits that pass; the setup shows in the info and the JOIN_ACK. */
    jp.store_words = 0;
    jp.ring = 2;
    assert_int_equal(sr_pipe_job_add(f->p, 1, &jp), 0);
    jp.store_words = 1000; /* not a whole number of rows */
    jp.elems_per_pkt = 7;
    jp.ring = 4096;
    jp.mode = SR_SYNC_SSP;
    jp.s = 4094;
    assert_int_equal(sr_pipe_job_add(f->p, 2, &jp), 0);
    assert_int_equal(sr_pipe_job_info_get(f->p, 2, &info), 0);
    assert_int_equal(info.store_words, 1000);
    assert_int_equal(info.elems_per_pkt, 7);
    assert_int_equal(info.ring, 4096);
    assert_int_equal(info.mode, SR_SYNC_SSP);
    assert_int_equal(info.s, 4094);
    assert_int_equal(sr_pipe_job_add(f->p, 2, &jp), -EEXIST);
}

static void test_counters_format(void **state)
{
    sr_pipe_job_counters c;
    char buf[1024], small[8];
    int r;

    (void)state;
    memset(&c, 0, sizeof c);
    c.rx = 12;
    c.tx = 34;
    c.errors_sent = UINT64_MAX;
    c.clock_ahead = 5;
    r = sr_pipe_job_counters_format(buf, sizeof buf, &c);
    assert_string_equal(buf, "rx=12 tx=34 joins=0 resets=0 leaves=0 in_use_refused=0 denied=0 lapsed=0 unproven=0 results=0 shadow_replies=0 "
                             "dup_dropped=0 probes=0 held=0 naks=0 mismatches=0 stale_dropped=0 dropped_unbound=0 "
                             "errors_sent=18446744073709551615 pushes=0 push_dups=0 pulls=0 "
                             "clocks=0 holds=0 proceeds=0 releases=0 range_errors=0 "
                             "clock_ahead=5 up_partials=0 up_resends=0 up_results=0 "
                             "up_relayed=0 down_relayed=0 up_dropped=0 steps=0 step_dups=0 "
                             "step_waits=0 step_answers=0 step_probes=0 step_held=0 step_naks=0 "
                             "grants=0 preempted=0 returned=0 fb_rounds=0 fb_relayed=0 "
                             "fb_answers=0 fb_dropped=0 lease_lost=0 first_wait=0 first_wait_others=0");
    assert_int_equal(r, (int)strlen(buf));
    assert_int_equal(sr_pipe_job_counters_format(small, sizeof small, &c), r);
    assert_string_equal(small, "rx=12 t");
}

/* ---- what a job holds ------------------------------------------------------------ */

static sr_pipe_job_held held_of(fx *f, uint16_t job)
{
    sr_pipe_job_held h;

    memset(&h, 0xa5, sizeof h); /* every field must be written */
    assert_int_equal(sr_pipe_job_held_get(f->p, job, &h), 0);
    return h;
}

static void clock_of(fx *f, uint16_t job, unsigned w, uint32_t c)
{
    sr_hdr h = mk(SR_OP_CLOCK, job, 0, c, 0);

    ar(f, &h, w, NULL);
    assert_true(f->out->n >= 1);
    assert_int_not_equal(f->out->act[0].hdr.op, SR_OP_ERROR);
}

/* A round or a clock some workers reported is held until the others'
 * arrive; a new incarnation holds nothing of the old one's. */
static void test_job_held(void **state)
{
    fx *f = *state;
    sr_hdr d0 = ar_hdr(5, 0, 0, 1, 0, 2), d1 = ar_hdr(5, 1, 0, 2, 2, 2);
    sr_pipe_job_held h;

    add_joined(f, 5, 3, 2, 4);
    h = held_of(f, 5);
    assert_int_equal(h.slots_open, 0);
    assert_int_equal(h.ring_entries, 0);
    assert_int_equal(sr_pipe_job_held_get(f->p, 6, &h), -ENOENT);
    assert_int_equal(sr_pipe_job_held_get(NULL, 5, &h), -ENOENT);

    ar(f, &d0, 0, V(1, 2));
    ar(f, &d1, 1, V(3, 4));
    ar(f, &d1, 2, V(5, 6));
    assert_int_equal(held_of(f, 5).slots_open, 2);
    ar(f, &d0, 1, V(1, 2));
    ar(f, &d0, 2, V(1, 2));
    assert_int_equal(held_of(f, 5).slots_open, 1); /* slot 0's round is done */
    ar(f, &d1, 0, V(7, 8));
    assert_int_equal(held_of(f, 5).slots_open, 0);

    clock_of(f, 5, 0, 0);
    clock_of(f, 5, 0, 1);
    clock_of(f, 5, 1, 0);
    assert_int_equal(held_of(f, 5).ring_entries, 2); /* clocks 0 and 1; worker 2's missing */
    clock_of(f, 5, 2, 0);
    assert_int_equal(held_of(f, 5).ring_entries, 1); /* clock 1 only */

    d1.shadow = 1; /* slot 1's next round */
    d1.seq = 3;
    ar(f, &d1, 0, V(7, 8)); /* left behind by a run ... */
    assert_int_equal(held_of(f, 5).slots_open, 1);
    for (unsigned w = 0; w < 3; w++)
        leave(f, 5, (uint16_t)w, 1000u + w);
    join(f, 5, 0, 2000, 9); /* ... and the next incarnation starts with nothing */
    h = held_of(f, 5);
    assert_int_equal(h.slots_open, 0);
    assert_int_equal(h.ring_entries, 0);
    assert_int_equal(jc(f, 5).resets, 1);
}

/* ---- dispatch ------------------------------------------------------------------- */

static void test_malformed_by_reason(void **state)
{
    fx *f = *state;
    sr_peer src = peer_of(5, 0);
    sr_hdr h = ar_hdr(5, 0, 0, 1, 0, 2);
    sr_pipe_counters c;
    uint8_t *m = f->msg;
    const size_t full = SR_WIRE_HDR_LEN + 8;

    add_joined(f, 5, 1, 4, 2);
    sr_hdr_pack(m, &h);
    memset(m + SR_WIRE_HDR_LEN, 0, 8);
    sr_pipe_process(f->p, &src, m, SR_WIRE_HDR_LEN - 1, f->out);
    expect_nothing(f);
    sr_pipe_process(f->p, &src, m, 0, f->out);
    expect_nothing(f);
    sr_pipe_process(f->p, &src, m, full - 4, f->out); /* one word for count 2 */
    expect_nothing(f);
    m[SR_WIRE_OFF_VERSION] = SR_WIRE_VERSION + 1;
    sr_pipe_process(f->p, &src, m, full, f->out);
    expect_nothing(f);
    m[SR_WIRE_OFF_VERSION] = SR_WIRE_VERSION;
    m[SR_WIRE_OFF_OP] = 99;
    sr_pipe_process(f->p, &src, m, full, f->out);
    expect_nothing(f);
    m[SR_WIRE_OFF_OP] = SR_OP_AR_DATA;
    sr_put_be16(m + SR_WIRE_OFF_COUNT, SR_WIRE_MAX_ELEMS + 1);
    sr_pipe_process(f->p, &src, m, SR_WIRE_HDR_LEN + 4u * (SR_WIRE_MAX_ELEMS + 1), f->out);
    expect_nothing(f);
    m[0] = 'X';
    sr_pipe_process(f->p, &src, m, full, f->out);
    expect_nothing(f);

    c = sc(f);
    assert_int_equal(c.rejected[-SR_PARSE_TRUNCATED], 2);
    assert_int_equal(c.rejected[-SR_PARSE_BAD_LENGTH], 1);
    assert_int_equal(c.rejected[-SR_PARSE_BAD_VERSION], 1);
    assert_int_equal(c.rejected[-SR_PARSE_BAD_OP], 1);
    assert_int_equal(c.rejected[-SR_PARSE_BAD_COUNT], 1);
    assert_int_equal(c.rejected[-SR_PARSE_FOREIGN], 1);
    assert_int_equal(c.rejected[0], 0);
    assert_int_equal(c.rx_total, 1 + 7); /* the JOIN, then the seven above */
    assert_int_equal(jc(f, 5).rx, 1);
}

/* Answers arriving at the switch are dropped, never answered; the SSP
 * requests are served (test_pipeline_ssp.c), also for an unknown job. */
static void test_other_ops(void **state)
{
    fx *f = *state;
    static const uint8_t reqs[] = {SR_OP_PUSH, SR_OP_PULL, SR_OP_CLOCK};
    static const uint8_t answers[] = {SR_OP_JOIN_ACK,  SR_OP_ERROR,   SR_OP_AR_RESULT,
                                      SR_OP_PUSH_ACK,  SR_OP_PULL_RESP, SR_OP_PROCEED,
                                      SR_OP_RELEASE,   SR_OP_HOLD};

    add_joined(f, 5, 1, 4, 2);
    for (unsigned i = 0; i < sizeof reqs; i++) {
        sr_hdr h = mk(reqs[i], 6, 0, 1, 1);

        h.count = 1; /* a PUSH's word; ignored by PULL and CLOCK */
        ar(f, &h, 0, NULL);
        expect_error_w(f, &h, SR_ST_UNKNOWN_JOB);
        h.job = 5;
        ar(f, &h, 0, NULL);
        assert_true(f->out->n >= 1); /* CLOCK: PROCEED, then RELEASE */
        assert_int_not_equal(f->out->act[0].hdr.op, SR_OP_ERROR);
    }
    for (unsigned i = 0; i < sizeof answers; i++) {
        sr_hdr h = mk(answers[i], 5, 0, 1, 0);

        ar(f, &h, 0, NULL);
        expect_nothing(f);
    }
    assert_int_equal(sc(f).answers_dropped, sizeof answers);
    assert_int_equal(sc(f).unknown_job, sizeof reqs);
    assert_int_equal(jc(f, 5).errors_sent, 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_job_table),
        T(test_job_params),
        T(test_counters_format),
        T(test_job_held),
        T(test_malformed_by_reason),
        T(test_other_ops),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
