/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline.c - the software switch's pipeline, driven packet by packet.
 *
 * Messages are built with sr_hdr_pack, and every answer is checked both as
 * the action's fields and as the bytes a replica carries (header packed by
 * sr_pipe_replica_hdr, parsed back with sr_msg_parse). Expected sums are
 * computed independently with uint32_t arithmetic; the wrap cases are also
 * written out by hand. The streaming protocol over a lossy network is run
 * in test_pipeline_sim.c; the fixture and the helpers both files use are in
 * pipeline_helpers.h.
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

/* ---- helpers (the shared ones are in pipeline_helpers.h) ---------------------- */

/* One AR_RESULT action: metadata from meta, the sums, and destinations:
 * workers 0..n_or_to-1 of the job if multicast, else worker n_or_to. */
static void expect_result(fx *f, int multicast, unsigned n_or_to, const sr_hdr *meta,
                          const uint32_t *sum)
{
    const sr_pipe_action *a = &f->out->act[0];
    unsigned nd = multicast ? n_or_to : 1;
    sr_hdr want = *meta;

    want.op = SR_OP_AR_RESULT;
    want.flags = 0;
    want.status = 0;
    want.aux = meta->aux; /* the call's total count, echoed */
    assert_int_equal(f->out->n, 1);
    assert_int_equal(a->multicast, multicast);
    assert_int_equal(a->n_dests, nd);
    for (unsigned k = 0; k < nd; k++) {
        const uint8_t *pl;
        sr_hdr h = replica(f, a, k, &pl);
        unsigned w = multicast ? k : n_or_to;
        sr_peer pe = peer_of(meta->job, w);

        expect_peer(&a->dests[k].peer, &pe);
        want.worker = (uint16_t)w;
        expect_hdr(&h, &want);
        for (unsigned i = 0; i < h.count; i++)
            assert_int_equal(sr_get_be32(pl + 4u * i), sum[i]);
    }
}

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
    assert_int_equal(job_add(f->p, 1, 2, 8, 0), -EINVAL);
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
    assert_string_equal(buf, "rx=12 tx=34 joins=0 resets=0 leaves=0 in_use_refused=0 results=0 shadow_replies=0 "
                             "dup_dropped=0 mismatches=0 stale_dropped=0 dropped_unbound=0 "
                             "errors_sent=18446744073709551615 pushes=0 push_dups=0 pulls=0 "
                             "clocks=0 holds=0 proceeds=0 releases=0 range_errors=0 "
                             "clock_ahead=5");
    assert_int_equal(r, (int)strlen(buf));
    assert_int_equal(sr_pipe_job_counters_format(small, sizeof small, &c), r);
    assert_string_equal(small, "rx=12 t");
}

/* ---- JOIN ------------------------------------------------------------------------ */

static void test_join_ack(void **state)
{
    fx *f = *state;
    sr_hdr h = mk(SR_OP_JOIN, 7, 1, 0xdeadbeefu, 0);
    sr_peer src = peer_of(7, 1);
    const sr_pipe_action *a = &f->out->act[0];
    const uint8_t *pl;
    sr_join_params jp;
    sr_hdr r, got;

    assert_int_equal(job_add(f->p, 7, 3, 64, 16), 0);
    feed(f, &src, &h, NULL);
    assert_int_equal(f->out->n, 1);
    assert_int_equal(a->multicast, 0);
    assert_int_equal(a->n_dests, 1);
    expect_peer(&a->dests[0].peer, &src);
    r = mk(SR_OP_JOIN_ACK, 7, 1, 0xdeadbeefu, 0);
    r.count = SR_JOIN_PARAMS_WORDS;
    got = replica(f, a, 0, &pl);
    expect_hdr(&got, &r);
    sr_join_params_unpack(pl, &jp);
    assert_int_equal(jp.n_workers, 3);
    assert_int_equal(jp.elems_per_pkt, 64);
    assert_int_equal(jp.pool_slots, 16);
    assert_int_equal(jp.store_capacity, SR_TEST_STORE);
    assert_int_equal(info_of(f, 7).n_bound, 1);
    assert_int_equal(jc(f, 7).joins, 1);
    assert_int_equal(jc(f, 7).rx, 1);
    assert_int_equal(jc(f, 7).tx, 1);
}

static void test_join_idempotent(void **state)
{
    fx *f = *state;

    assert_int_equal(job_add(f->p, 7, 2, 8, 4), 0);
    for (int i = 0; i < 3; i++) {
        join(f, 7, 0, 42, 0);
        assert_int_equal(f->out->act[0].hdr.seq, 42);
    }
    assert_int_equal(info_of(f, 7).n_bound, 1);
    assert_int_equal(jc(f, 7).joins, 3);
    assert_int_equal(jc(f, 7).errors_sent, 0);
}

static void test_join_stale_token(void **state)
{
    fx *f = *state;
    sr_hdr h = mk(SR_OP_JOIN, 7, 0, 43, 0);
    uint32_t sum[1] = {5};

    add_joined(f, 7, 1, 4, 2); /* worker 0 bound with token 1000 */
    ar(f, &h, 0, NULL);
    expect_error_w(f, &h, SR_ST_STALE);
    /* The old binding is untouched: its token still joins, its data counts. */
    join(f, 7, 0, 1000, 0);
    h = ar_hdr(7, 0, 0, 1, 0, 1);
    ar(f, &h, 0, V(5));
    expect_result(f, 1, 1, &h, sum);
    assert_int_equal(jc(f, 7).errors_sent, 1);
}

static void test_join_spoofed_peer(void **state)
{
    fx *f = *state;
    sr_hdr h = mk(SR_OP_JOIN, 7, 1, 1001, 0);
    sr_peer spoof = {peer_of(7, 1).ip, 9999};
    uint32_t sum[1] = {7};

    add_joined(f, 7, 2, 4, 2);
    feed(f, &spoof, &h, NULL);
    expect_error(f, &spoof, &h, SR_ST_NOT_MEMBER);
    /* The spoofer's data is dropped; the real worker still completes. */
    h = ar_hdr(7, 0, 0, 3, 0, 1);
    h.worker = 1;
    feed(f, &spoof, &h, V(100));
    expect_nothing(f);
    assert_int_equal(jc(f, 7).dropped_unbound, 1);
    ar(f, &h, 0, V(3));
    expect_nothing(f);
    ar(f, &h, 1, V(4));
    expect_result(f, 1, 2, &h, sum);
}

static void test_join_unknown_job(void **state)
{
    fx *f = *state;
    sr_hdr h = mk(SR_OP_JOIN, 3, 0, 1, 0);

    assert_int_equal(job_add(f->p, 4, 1, 4, 2), 0);
    ar(f, &h, 0, NULL);
    expect_error_w(f, &h, SR_ST_UNKNOWN_JOB);
    assert_int_equal(sc(f).unknown_job, 1);
    assert_int_equal(sc(f).tx_total, 1);
    assert_int_equal(jc(f, 4).rx, 0);
}

static void test_join_worker_out_of_range(void **state)
{
    fx *f = *state;
    sr_hdr h = mk(SR_OP_JOIN, 7, 2, 1, 0);

    add_joined(f, 7, 2, 4, 2);
    ar(f, &h, 2, NULL);
    expect_error_w(f, &h, SR_ST_NOT_MEMBER);
    /* With another nonce it must not reset the job either. */
    h = mk(SR_OP_JOIN, 7, 64, 1, 99);
    ar(f, &h, 64, NULL);
    expect_error_w(f, &h, SR_ST_NOT_MEMBER);
    assert_int_equal(info_of(f, 7).nonce, 0);
    assert_int_equal(info_of(f, 7).n_bound, 2);
    assert_int_equal(jc(f, 7).resets, 0);
}

static void test_join_new_nonce_resets(void **state)
{
    fx *f = *state;
    sr_hdr d = ar_hdr(7, 1, 0, 5, 0, 2);
    uint32_t sum[2] = {11, 22};

    add_joined(f, 7, 2, 2, 4);
    ar(f, &d, 0, V(1000, 2000)); /* a partial round of the old incarnation */
    expect_nothing(f);
    /* While its workers are bound, a new nonce is refused: a stray or
     * forged JOIN cannot wipe a running job. */
    sr_hdr nj = mk(SR_OP_JOIN, 7, 0, 555, 77);
    sr_peer other = {0x0a000063u, 4000}, w0 = peer_of(7, 0);
    feed(f, &other, &nj, NULL);
    expect_error(f, &other, &nj, SR_ST_JOB_IN_USE);
    assert_int_equal(info_of(f, 7).nonce, 0);
    assert_int_equal(jc(f, 7).in_use_refused, 1);
    /* A forged LEAVE (wrong token, or wrong address) unbinds nobody. */
    leave(f, 7, 0, 999);
    assert_int_equal(jc(f, 7).leaves, 0);
    /* Worker 0 leaves: still refused while worker 1 is bound. */
    leave(f, 7, 0, 1000);
    assert_int_equal(jc(f, 7).leaves, 1);
    feed(f, &other, &nj, NULL);
    expect_error(f, &other, &nj, SR_ST_JOB_IN_USE);
    /* A worker that left cannot come back in the same incarnation. */
    sr_hdr rj = mk(SR_OP_JOIN, 7, 0, 1000, 0);
    feed(f, &w0, &rj, NULL);
    expect_error(f, &w0, &rj, SR_ST_STALE);
    leave(f, 7, 1, 1001);
    assert_int_equal(jc(f, 7).leaves, 2);
    join(f, 7, 0, 555, 77);
    assert_int_equal(f->out->act[0].hdr.aux, 77);
    assert_int_equal(info_of(f, 7).nonce, 77);
    assert_int_equal(info_of(f, 7).n_bound, 1);
    assert_int_equal(jc(f, 7).resets, 1);
    ar(f, &d, 1, V(1, 2)); /* worker 1's old binding is gone */
    expect_nothing(f);
    assert_int_equal(jc(f, 7).dropped_unbound, 2); /* and the forged LEAVE */
    join(f, 7, 0, 555, 77); /* a retransmitted JOIN does not reset again */
    join(f, 7, 1, 556, 77);
    assert_int_equal(jc(f, 7).resets, 1);
    /* The old round is gone: worker 0 is no duplicate, the sum is new. */
    ar(f, &d, 0, V(10, 20));
    expect_nothing(f);
    ar(f, &d, 1, V(1, 2));
    expect_result(f, 1, 2, &d, sum);
}

/* ---- allreduce ------------------------------------------------------------------- */

/* One round of n workers, in order or reversed; values hit negative
 * numbers and int32 wrap-around. */
static void run_allreduce(fx *f, unsigned n, int reverse)
{
    enum { E = 6 };
    static const int32_t vals[4][E] = {
        {1, -1, INT32_MAX, INT32_MIN, 123456789, -7},
        {2, -2, 1, -1, 987654321, 0},
        {3, 5, INT32_MAX, INT32_MIN, 1111111111, -100},
        {-6, -4, 2, -2, 1, 50},
    };
    static const int32_t want2[4] = {INT32_MAX, INT32_MIN, -1, 1};
    static const int32_t want3[4] = {INT32_MIN, INT32_MAX, -1, -3};
    uint32_t sum[E] = {0};
    sr_hdr h = ar_hdr(5, 3, 1, 77, 4096, E);

    h.exp = -3;
    h.next_exp = 12;
    add_joined(f, 5, n, 8, 4);
    for (unsigned w = 0; w < n; w++)
        for (unsigned i = 0; i < E; i++)
            sum[i] += (uint32_t)vals[w][i];
    assert_int_equal((int32_t)sum[2], want2[n - 1]); /* the reference wraps too */
    assert_int_equal((int32_t)sum[3], want3[n - 1]);
    for (unsigned k = 0; k < n; k++) {
        unsigned w = reverse ? n - 1 - k : k;

        ar(f, &h, w, vals[w]);
        if (k + 1 < n)
            expect_nothing(f);
    }
    expect_result(f, 1, n, &h, sum);
    assert_int_equal(jc(f, 5).results, 1);
    assert_int_equal(jc(f, 5).tx, n + n); /* n JOIN_ACKs + n result copies */
    assert_int_equal(sc(f).tx_total, n + n);
}

static void test_allreduce_n1(void **state) { run_allreduce(*state, 1, 0); }
static void test_allreduce_n2(void **state) { run_allreduce(*state, 2, 1); }
static void test_allreduce_n3(void **state) { run_allreduce(*state, 3, 0); }
static void test_allreduce_n4(void **state) { run_allreduce(*state, 4, 1); }

static void test_dup_before_completion(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 0, 0, 1, 0, 2);
    uint32_t sum[2] = {111, 222};

    add_joined(f, 5, 3, 4, 2);
    ar(f, &h, 0, V(100, 200));
    h.flags = SR_FLAG_RETRANSMIT;
    for (int i = 0; i < 2; i++) {
        ar(f, &h, 0, V(100, 200));
        expect_nothing(f);
    }
    assert_int_equal(jc(f, 5).dup_dropped, 2);
    h.flags = 0;
    ar(f, &h, 1, V(10, 20));
    expect_nothing(f);
    ar(f, &h, 2, V(1, 2));
    expect_result(f, 1, 3, &h, sum);
}

static void test_shadow_after_completion(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 1, 1, 9, 256, 3);
    uint32_t sum[3] = {5, (uint32_t)-5, 0};

    add_joined(f, 5, 2, 4, 2);
    ar(f, &h, 0, V(2, -2, 7));
    ar(f, &h, 1, V(3, -3, -7));
    expect_result(f, 1, 2, &h, sum);
    for (int i = 0; i < 3; i++) {
        ar(f, &h, 1, V(99, 99, 99)); /* the sums come from the slot, not the copy */
        expect_result(f, 0, 1, &h, sum);
    }
    ar(f, &h, 0, V(2, -2, 7));
    expect_result(f, 0, 0, &h, sum);
    assert_int_equal(jc(f, 5).shadow_replies, 4);
    assert_int_equal(jc(f, 5).results, 1);
    assert_int_equal(jc(f, 5).dup_dropped, 0);
}

/* Many rounds in one slot with alternating versions. Each round, worker 2
 * missed the previous result: while the others already contribute to the
 * new version, its retransmission of the old one gets the old sums. */
static void test_alternating_versions(void **state)
{
    fx *f = *state;
    enum { N = 3, E = 4, ROUNDS = 64 };
    uint32_t prev_sum[E] = {0};
    sr_hdr prev = {0};

    add_joined(f, 5, N, E, 4);
    for (unsigned r = 0; r < ROUNDS; r++) {
        sr_hdr h = ar_hdr(5, 2, (uint8_t)(r & 1u), 1000u + r, r * E, E);
        uint32_t sum[E] = {0};

        h.exp = (int8_t)(r % 20);
        for (unsigned w = 0; w < N; w++) {
            int32_t v[E];

            for (unsigned i = 0; i < E; i++) {
                v[i] = (int32_t)(r * 1000u + w * 10u + i) * (w == 1 ? -1 : 1);
                sum[i] += (uint32_t)v[i];
            }
            if (w == N - 1 && r > 0) {
                ar(f, &prev, w, NULL);
                expect_result(f, 0, w, &prev, prev_sum);
            }
            ar(f, &h, w, v);
            if (w < N - 1)
                expect_nothing(f);
        }
        expect_result(f, 1, N, &h, sum);
        prev = h;
        memcpy(prev_sum, sum, sizeof sum);
    }
    assert_int_equal(jc(f, 5).results, ROUNDS);
    assert_int_equal(jc(f, 5).shadow_replies, ROUNDS - 1);
    assert_int_equal(jc(f, 5).dup_dropped + jc(f, 5).stale_dropped, 0);
}

/* Late copies from a worker that moved on must not open a round nor free
 * its bit in the other version (that would double count its next copy). */
static void test_stale_copies(void **state)
{
    fx *f = *state;
    sr_hdr a = ar_hdr(5, 0, 0, 1, 0, 1), b = ar_hdr(5, 0, 1, 1, 1, 1);
    sr_hdr c = ar_hdr(5, 0, 0, 1, 2, 1), d = ar_hdr(5, 0, 1, 1, 3, 1);
    uint32_t sa[1] = {3}, sb[1] = {30}, sc3[1] = {300}, sd[1] = {3000};

    add_joined(f, 5, 2, 4, 2);
    ar(f, &a, 0, V(1));
    ar(f, &a, 1, V(2));
    expect_result(f, 1, 2, &a, sa);
    ar(f, &b, 0, V(10)); /* worker 0 moved on to version 1 */
    ar(f, &a, 0, V(1));  /* its overtaken retransmission of a: round b is open */
    expect_nothing(f);
    ar(f, &b, 0, V(10)); /* still one contribution of worker 0 to b */
    expect_nothing(f);
    ar(f, &b, 1, V(20));
    expect_result(f, 1, 2, &b, sb);
    ar(f, &a, 0, V(1)); /* b done, c not started: a is the cell's last round */
    expect_nothing(f);
    ar(f, &a, 1, V(2));
    expect_nothing(f);
    assert_int_equal(jc(f, 5).stale_dropped, 3);
    ar(f, &b, 1, V(20)); /* a real retransmission still gets the shadow copy */
    expect_result(f, 0, 1, &b, sb);
    ar(f, &c, 1, V(200));
    expect_nothing(f);
    ar(f, &b, 1, V(20)); /* overtaken copy of b while c is open */
    expect_nothing(f);
    ar(f, &c, 0, V(100));
    expect_result(f, 1, 2, &c, sc3);
    ar(f, &d, 0, V(1000));
    ar(f, &a, 0, V(1)); /* two rounds late while d is open: only cnt[1-v] tells */
    expect_nothing(f);
    ar(f, &d, 0, V(1000));
    expect_nothing(f);
    ar(f, &d, 1, V(2000));
    expect_result(f, 1, 2, &d, sd);
    assert_int_equal(jc(f, 5).stale_dropped, 5);
    assert_int_equal(jc(f, 5).mismatches + jc(f, 5).errors_sent, 0);
}

/* A contribution that disagrees with an open round in any field the round
 * is matched on (seq, offset, count, exp, the call's total count in aux)
 * poisons it: it, the first contributor's resend and every later
 * contribution are answered MISMATCH, and no sum goes out. Other slots go
 * on as before. */
static void test_mismatch_poisons_round(void **state)
{
    fx *f = *state;
    uint32_t sum[4] = {111, 222, 333, 444};

    add_joined(f, 5, 3, 8, 8);
    for (uint16_t i = 0; i < 5; i++) {
        sr_hdr h = ar_hdr(5, i, 0, 10, 64, 4), bad;

        h.exp = 3;
        h.next_exp = 4;
        h.aux = 1000;
        ar(f, &h, 0, V(100, 200, 300, 400));
        expect_nothing(f);
        bad = h;
        bad.next_exp = 100;
        switch (i) {
        case 0: bad.seq = 11; break;
        case 1: bad.offset = 65; break;
        case 2: bad.count = 3; break;
        case 3: bad.exp = 4; break;
        default: bad.aux = 1001; break;
        }
        ar(f, &bad, 1, V(5000, 5000, 5000, 5000));
        expect_error_w(f, &bad, SR_ST_MISMATCH);
        ar(f, &h, 0, V(100, 200, 300, 400)); /* the first contributor's resend */
        expect_error_w(f, &h, SR_ST_MISMATCH);
        for (unsigned w = 1; w < 3; w++) { /* agreeing now is too late */
            ar(f, &h, w, V(10, 20, 30, 40));
            expect_error_w(f, &h, SR_ST_MISMATCH);
        }
    }
    assert_int_equal(jc(f, 5).mismatches, 20);
    assert_int_equal(jc(f, 5).errors_sent, 20);
    assert_int_equal(jc(f, 5).results, 0);

    sr_hdr h = ar_hdr(5, 5, 0, 10, 64, 4);
    h.exp = 3;
    h.next_exp = 4;
    h.aux = 1000;
    ar(f, &h, 0, V(100, 200, 300, 400));
    ar(f, &h, 1, V(10, 20, 30, 40));
    ar(f, &h, 2, V(1, 2, 3, 4));
    expect_result(f, 1, 3, &h, sum);
    assert_int_equal(jc(f, 5).dup_dropped, 0);
}

static void test_bad_slot_and_count(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 4, 0, 1, 0, 1);
    uint32_t sum[8] = {1, 2, 3, 4, 5, 6, 7, 8};

    add_joined(f, 5, 1, 8, 4);
    ar(f, &h, 0, V(1));
    expect_error_w(f, &h, SR_ST_BAD_SLOT);
    h.slot = SR_WIRE_SLOT_MASK;
    ar(f, &h, 0, V(1));
    expect_error_w(f, &h, SR_ST_BAD_SLOT);
    h = ar_hdr(5, 3, 1, 1, 0, 9);
    ar(f, &h, 0, NULL);
    expect_error_w(f, &h, SR_ST_BAD_COUNT);
    assert_int_equal(jc(f, 5).errors_sent, 3);
    h.count = 8; /* the refused packet set no state: this one completes */
    ar(f, &h, 0, V(1, 2, 3, 4, 5, 6, 7, 8));
    expect_result(f, 1, 1, &h, sum);
    assert_int_equal(jc(f, 5).shadow_replies, 0);
}

static void test_unbound_data_dropped(void **state)
{
    fx *f = *state;
    sr_peer other = {peer_of(5, 0).ip, 1};
    sr_hdr h = ar_hdr(5, 0, 0, 1, 0, 1);
    uint32_t sum[1] = {3};

    assert_int_equal(job_add(f->p, 5, 2, 4, 2), 0);
    join(f, 5, 0, 1, 0);
    ar(f, &h, 1, V(50)); /* worker 1 never joined */
    expect_nothing(f);
    h.worker = 0;
    feed(f, &other, &h, V(50)); /* worker 0 from another port */
    expect_nothing(f);
    ar(f, &h, 2, V(50)); /* out of range */
    expect_nothing(f);
    h.slot = 999; /* isolation comes before the slot check */
    ar(f, &h, 1, V(50));
    expect_nothing(f);
    assert_int_equal(jc(f, 5).dropped_unbound, 4);
    assert_int_equal(jc(f, 5).errors_sent, 0);
    join(f, 5, 1, 2, 0); /* none of it touched the slot */
    h = ar_hdr(5, 0, 0, 1, 0, 1);
    ar(f, &h, 0, V(1));
    expect_nothing(f);
    ar(f, &h, 1, V(2));
    expect_result(f, 1, 2, &h, sum);
}

static void test_ar_unknown_job_and_removed(void **state)
{
    fx *f = *state;
    sr_hdr h = ar_hdr(5, 0, 0, 1, 0, 1);

    add_joined(f, 5, 2, 4, 2);
    assert_int_equal(sr_pipe_job_remove(f->p, 5), 0);
    ar(f, &h, 0, V(1));
    expect_error_w(f, &h, SR_ST_UNKNOWN_JOB);
    assert_int_equal(sc(f).unknown_job, 1);
}

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

static void test_next_exp_max(void **state)
{
    fx *f = *state;
    static const int8_t in[][3] = {
        {-5, 7, SR_WIRE_EXP_NONE},
        {SR_WIRE_EXP_NONE, -100, SR_WIRE_EXP_MIN},
        {SR_WIRE_EXP_MAX, 0, -1},
        {SR_WIRE_EXP_NONE, SR_WIRE_EXP_NONE, SR_WIRE_EXP_NONE},
    };
    static const int8_t want[] = {7, SR_WIRE_EXP_MIN, SR_WIRE_EXP_MAX, SR_WIRE_EXP_NONE};
    uint32_t sum[1] = {3};

    add_joined(f, 5, 3, 4, 4);
    for (unsigned c = 0; c < 4; c++) {
        sr_hdr h = ar_hdr(5, (uint16_t)c, 0, 1, 0, 1);

        for (unsigned w = 0; w < 3; w++) {
            h.next_exp = in[c][w];
            ar(f, &h, w, V(1));
        }
        h.next_exp = want[c];
        expect_result(f, 1, 3, &h, sum);
    }
}

static void test_two_jobs_isolated(void **state)
{
    fx *f = *state;
    sr_hdr a = ar_hdr(1, 0, 0, 1, 0, 1), b = ar_hdr(2, 0, 0, 1, 0, 1);
    sr_peer a1 = peer_of(1, 1);
    uint32_t suma[1] = {3}, sumb[1] = {300};

    add_joined(f, 1, 2, 4, 2);
    add_joined(f, 2, 2, 4, 2);
    ar(f, &a, 0, V(1));
    expect_nothing(f);
    ar(f, &b, 0, V(100));
    expect_nothing(f);
    b.worker = 1; /* job 1's worker 1 posing as job 2's worker 1 */
    feed(f, &a1, &b, V(5000));
    expect_nothing(f);
    assert_int_equal(jc(f, 2).dropped_unbound, 1);
    ar(f, &a, 1, V(2));
    expect_result(f, 1, 2, &a, suma);
    ar(f, &b, 1, V(200));
    expect_result(f, 1, 2, &b, sumb);
    assert_int_equal(jc(f, 1).results, 1);
    assert_int_equal(jc(f, 2).results, 1);
    assert_int_equal(jc(f, 1).dropped_unbound, 0);
    assert_int_equal(jc(f, 1).rx, 2 + 2);
    assert_int_equal(jc(f, 2).rx, 2 + 3);
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

/* Interleaved slots each keep their own round. */
static void test_slots_independent(void **state)
{
    fx *f = *state;
    enum { S = 8 };

    add_joined(f, 5, 2, 2, S);
    for (unsigned s = 0; s < S; s++) {
        sr_hdr h = ar_hdr(5, (uint16_t)s, (uint8_t)(s & 1u), 1, 2 * s, 2);

        ar(f, &h, 0, V((int32_t)s, -(int32_t)s));
        expect_nothing(f);
    }
    for (unsigned s = S; s-- > 0;) {
        sr_hdr h = ar_hdr(5, (uint16_t)s, (uint8_t)(s & 1u), 1, 2 * s, 2);
        uint32_t sum[2] = {s + 100u, (uint32_t)-(int32_t)s};

        ar(f, &h, 1, V(100, 0));
        expect_result(f, 1, 2, &h, sum);
    }
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_job_table),
        T(test_job_params),
        T(test_counters_format),
        T(test_join_ack),
        T(test_join_idempotent),
        T(test_join_stale_token),
        T(test_join_spoofed_peer),
        T(test_join_unknown_job),
        T(test_join_worker_out_of_range),
        T(test_join_new_nonce_resets),
        T(test_allreduce_n1),
        T(test_allreduce_n2),
        T(test_allreduce_n3),
        T(test_allreduce_n4),
        T(test_dup_before_completion),
        T(test_shadow_after_completion),
        T(test_alternating_versions),
        T(test_stale_copies),
        T(test_mismatch_poisons_round),
        T(test_bad_slot_and_count),
        T(test_unbound_data_dropped),
        T(test_ar_unknown_job_and_removed),
        T(test_malformed_by_reason),
        T(test_next_exp_max),
        T(test_two_jobs_isolated),
        T(test_other_ops),
        T(test_slots_independent),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
