/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline_join.c - the software switch's pipeline, driven packet by
 * packet: JOIN and its answers (JOIN_ACK, idempotent retransmissions,
 * stale tokens, spoofed peers, unknown jobs, worker ids out of range) and a
 * new nonce starting a new incarnation of the job.
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
#include "services.h" /* the epoch, to test its wrap */

#define V(...) ((const int32_t[]){__VA_ARGS__})

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

/* ---- admission token -------------------------------------------------------------- */

/* A JOIN carrying adm (sr_join_req's words) from worker w's address. */
static void join_adm(fx *f, uint16_t job, uint16_t w, uint32_t seq, uint32_t nonce, uint64_t adm)
{
    sr_hdr h = mk(SR_OP_JOIN, job, w, seq, nonce);
    sr_peer src = peer_of(job, w);
    int32_t v[SR_JOIN_REQ_WORDS] = {(int32_t)(uint32_t)(adm >> 32), (int32_t)(uint32_t)adm, 0, 0};

    h.count = SR_JOIN_REQ_WORDS;
    feed(f, &src, &h, v);
}

static void test_join_token(void **state)
{
    fx *f = *state;
    const uint64_t tok = 0x0123456789abcdefull;
    const uint64_t wrong[] = {0, tok ^ 1, tok ^ (1ull << 63), ~tok};
    sr_pipe_job_params jp;
    sr_hdr h;

    sr_pipe_job_params_init(&jp);
    jp.n_workers = 2;
    jp.store_words = SR_TEST_STORE;
    jp.token = tok;
    assert_int_equal(sr_pipe_job_add(f->p, 7, &jp), 0);
    /* Before anyone joined, while bound, and with a nonce right or wrong:
     * one answer, DENIED, and no state change. */
    for (int bound = 0; bound < 2; bound++) {
        for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
            for (uint32_t nonce = 77; nonce < 79; nonce++) {
                h = mk(SR_OP_JOIN, 7, 1, 900 + (uint32_t)i, nonce);
                h.count = SR_JOIN_REQ_WORDS;
                join_adm(f, 7, 1, h.seq, nonce, wrong[i]);
                expect_error_w(f, &h, SR_ST_DENIED);
            }
        }
        h = mk(SR_OP_JOIN, 7, 0, 901, 78); /* no payload: token 0 */
        feed(f, &(sr_peer){peer_of(7, 0).ip, peer_of(7, 0).port}, &h, NULL);
        expect_error_w(f, &h, SR_ST_DENIED);
        h = mk(SR_OP_JOIN, 7, 0, 902, 78); /* the right token, a bad length */
        h.count = 2;
        feed(f, &(sr_peer){peer_of(7, 0).ip, peer_of(7, 0).port}, &h,
             (const int32_t[]){(int32_t)(uint32_t)(tok >> 32), (int32_t)(uint32_t)tok});
        expect_error_w(f, &h, SR_ST_DENIED);
        assert_int_equal(info_of(f, 7).n_bound, bound);
        assert_int_equal(info_of(f, 7).nonce, bound ? 77 : 0);
        if (!bound) {
            join_adm(f, 7, 0, 1000, 77, tok);
            assert_int_equal(f->out->act[0].hdr.op, SR_OP_JOIN_ACK);
        }
    }
    assert_int_equal(jc(f, 7).denied, 2 * (2 * 4 + 2));
    assert_int_equal(jc(f, 7).resets, 1);
    join_adm(f, 7, 1, 1001, 77, tok);
    assert_int_equal(f->out->act[0].hdr.op, SR_OP_JOIN_ACK);
    assert_int_equal(info_of(f, 7).n_bound, 2);
}

/* A job without a token admits a JOIN with or without one (no payload:
 * workers of before the token). */
static void test_join_no_token(void **state)
{
    fx *f = *state;

    assert_int_equal(job_add(f->p, 7, 2, 8, 4), 0);
    join(f, 7, 0, 1, 5);
    join_adm(f, 7, 1, 2, 5, 0x55);
    assert_int_equal(f->out->act[0].hdr.op, SR_OP_JOIN_ACK);
    assert_int_equal(jc(f, 7).denied, 0);
}

/* ---- leases ------------------------------------------------------------------------ */

/* A JOIN of worker w with a new nonce: JOIN_ACK (1) or ERROR JOB_IN_USE (0). */
static int new_run(fx *f, uint16_t w, uint32_t nonce)
{
    sr_hdr h = mk(SR_OP_JOIN, 7, w, 600 + nonce, nonce);
    sr_peer src = peer_of(7, w);

    feed(f, &src, &h, NULL);
    if (f->out->act[0].hdr.op == SR_OP_JOIN_ACK)
        return 1;
    expect_error_w(f, &h, SR_ST_JOB_IN_USE);
    return 0;
}

static void test_lease_lapses(void **state)
{
    fx *f = *state;

    sr_pipe_set_lease(f->p, 1000);
    sr_pipe_tick(f->p, 5000);
    assert_int_equal(job_add(f->p, 7, 2, 8, 4), 0);
    join(f, 7, 0, 1, 5);
    join(f, 7, 1, 2, 5);
    /* Both die without LEAVE: the job is in use for the lease, then free. */
    sr_pipe_tick(f->p, 5999);
    assert_int_equal(info_of(f, 7).n_live, 2);
    assert_false(new_run(f, 0, 6));
    sr_pipe_tick(f->p, 6000);
    assert_int_equal(info_of(f, 7).n_live, 0);
    assert_true(new_run(f, 0, 6));
    assert_int_equal(jc(f, 7).lapsed, 2);
    assert_int_equal(info_of(f, 7).nonce, 6);
    /* A packet from the binding renews its lease; one from elsewhere not. */
    sr_pipe_tick(f->p, 6500);
    join(f, 7, 0, 606, 6); /* worker 0's JOIN again (its ACK was lost) */
    {
        sr_peer other = {peer_of(7, 0).ip + 1, peer_of(7, 0).port};
        sr_hdr h = mk(SR_OP_JOIN, 7, 0, 606, 6);
        sr_pipe_tick(f->p, 7400);
        feed(f, &other, &h, NULL); /* NOT_MEMBER: another address */
    }
    sr_pipe_tick(f->p, 7499);
    assert_false(new_run(f, 1, 8));
    sr_pipe_tick(f->p, 7500);
    assert_true(new_run(f, 1, 8));
    /* A lease of 0 never lapses. */
    sr_pipe_set_lease(f->p, 0);
    sr_pipe_tick(f->p, UINT64_C(1) << 40);
    assert_false(new_run(f, 0, 9));
}

/* An idle worker that a live one waits for in a call keeps the job; once
 * nobody live waits (the waiter left, or lapsed too), it lapses. */
static void test_lease_held_by_call(void **state)
{
    fx *f = *state;
    sr_hdr d = ar_hdr(7, 0, 0, 1, 0, 2);

    sr_pipe_set_lease(f->p, 1000);
    assert_int_equal(job_add(f->p, 7, 2, 8, 4), 0);
    join(f, 7, 0, 1, 5);
    join(f, 7, 1, 2, 5);
    ar(f, &d, 0, V(1, 2)); /* worker 0 waits for worker 1's contribution */
    sr_pipe_tick(f->p, 900);
    ar(f, &d, 0, V(1, 2)); /* its retransmission: AR_HELD, lease renewed */
    sr_pipe_tick(f->p, 1500); /* worker 1 idle 1500 ms, worker 0 600 ms */
    assert_int_equal(info_of(f, 7).n_live, 2);
    assert_false(new_run(f, 1, 6));
    sr_pipe_tick(f->p, 1900); /* both idle: nobody live waits */
    assert_int_equal(info_of(f, 7).n_live, 0);
    assert_true(new_run(f, 1, 6));
    /* The waiter leaves (its deadline passed): the idle one lapses. */
    join(f, 7, 0, 3, 6);
    ar(f, &d, 1, V(1, 2)); /* worker 1 waits for worker 0 */
    sr_pipe_tick(f->p, 2950);
    ar(f, &d, 1, V(1, 2));
    sr_pipe_tick(f->p, 3000); /* worker 0 idle 1100 ms, waited for by worker 1 */
    assert_int_equal(info_of(f, 7).n_live, 2);
    assert_false(new_run(f, 0, 7));
    leave(f, 7, 1, 606);
    assert_int_equal(info_of(f, 7).n_live, 0);
    assert_true(new_run(f, 0, 7));
}

/* ---- address proof ------------------------------------------------------------------ */

/* JOIN of worker w echoing cookie; returns the JOIN_ACK's offset. */
static uint32_t join_cookie(fx *f, uint16_t w, uint32_t cookie)
{
    sr_hdr h = mk(SR_OP_JOIN, 7, w, 900 + w, 5);
    sr_peer src = peer_of(7, w);

    h.count = SR_JOIN_REQ_WORDS;
    feed(f, &src, &h, (const int32_t[]){0, 0, (int32_t)cookie, 0});
    assert_int_equal(f->out->n, 1);
    assert_int_equal(f->out->act[0].hdr.op, SR_OP_JOIN_ACK);
    return f->out->act[0].hdr.offset;
}

static void test_join_proof(void **state)
{
    fx *f = *state;
    const uint64_t key[2] = {1, 2}, key2[2] = {1, 3};
    sr_hdr pull = mk(SR_OP_PULL, 7, 0, 1, 8), clock = mk(SR_OP_CLOCK, 7, 0, 0, 0);
    sr_peer src = peer_of(7, 0);
    uint32_t c, c1;

    sr_pipe_set_proof(f->p, key);
    assert_int_equal(job_add(f->p, 7, 2, 8, 4), 0);
    c = join_cookie(f, 0, 0);
    assert_int_not_equal(c, 0);
    assert_int_equal(join_cookie(f, 0, 0), c); /* retransmitted: the same cookie */
    feed(f, &src, &pull, NULL);
    expect_error_w(f, &pull, SR_ST_UNPROVEN);
    feed(f, &src, &clock, NULL);
    expect_error_w(f, &clock, SR_ST_UNPROVEN);
    assert_int_equal(join_cookie(f, 0, c ^ 1), c); /* a wrong guess proves nothing */
    feed(f, &src, &pull, NULL);
    expect_error_w(f, &pull, SR_ST_UNPROVEN);
    assert_int_equal(jc(f, 7).unproven, 3);
    assert_int_equal(join_cookie(f, 0, c), 0); /* the echo proves the address */
    assert_int_equal(join_cookie(f, 0, c), 0);
    feed(f, &src, &pull, NULL);
    assert_int_equal(f->out->act[0].hdr.op, SR_OP_PULL_RESP);
    /* Another worker's cookie differs, and so does one under another key. */
    c1 = join_cookie(f, 1, 0);
    assert_int_not_equal(c1, 0);
    assert_int_not_equal(c1, c);
    sr_pipe_set_proof(f->p, key2);
    assert_int_not_equal(join_cookie(f, 1, 0), c1);
    /* Off (the P4 program's behaviour): JOIN_ACK offset 0, no refusal. */
    sr_pipe_set_proof(f->p, NULL);
    assert_int_equal(join_cookie(f, 1, 0), 0);
    assert_int_equal(jc(f, 7).unproven, 3);
}

/* ---- a new incarnation clears lazily ------------------------------------------------- */

/* PUSH words v at offset by worker w of job 7 (push number seq). */
static void push_words(fx *f, uint16_t w, uint32_t seq, uint32_t off, const int32_t *v, unsigned n)
{
    sr_hdr h = mk(SR_OP_PUSH, 7, w, seq, 0);
    sr_peer src = peer_of(7, w);

    h.offset = off;
    h.count = (uint16_t)n;
    feed(f, &src, &h, v);
    assert_int_equal(f->out->act[0].hdr.op, SR_OP_PUSH_ACK);
}

/* PULL n words at offset; each must be 0. */
static void pull_zero(fx *f, uint16_t w, uint32_t off, unsigned n)
{
    sr_hdr h = mk(SR_OP_PULL, 7, w, 1, n);
    sr_peer src = peer_of(7, w);

    h.offset = off;
    feed(f, &src, &h, NULL);
    assert_int_equal(f->out->act[0].hdr.op, SR_OP_PULL_RESP);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(sr_get_be32(f->out->act[0].payload + 4 * i), 0);
}

/* A new incarnation in three steps: (nonce) all leave, JOIN anew. */
static void new_incarnation(fx *f, uint32_t nonce)
{
    leave(f, 7, 0, 600 + nonce - 1);
    leave(f, 7, 1, 700 + nonce - 1);
    join(f, 7, 0, 600 + nonce, nonce);
    join(f, 7, 1, 700 + nonce, nonce);
}

static void test_lazy_clear(void **state)
{
    fx *f = *state;
    sr_pipe_job *j;
    sr_hdr d = ar_hdr(7, 3, 1, 9, 0, 2);
    uint32_t sum[2] = {11, 22};

    assert_int_equal(job_add(f->p, 7, 2, 8, 4), 0);
    j = f->p->jobs[7];
    join(f, 7, 0, 601, 1);
    join(f, 7, 1, 701, 1);
    /* Old state: a partial round, the store's last row (a partial one: 4096
     * words in rows of 8 ends on a full row; use the middle and the end),
     * and push numbers that would make a new push 1 a duplicate. */
    ar(f, &d, 0, V(1000, 2000));
    push_words(f, 0, 5, 8, V(7, 7, 7), 3);
    push_words(f, 1, 5, SR_TEST_STORE - 8, V(1, 2, 3, 4, 5, 6, 7, 8), 8);
    new_incarnation(f, 2);
    pull_zero(f, 0, 8, 8);
    pull_zero(f, 1, SR_TEST_STORE - 8, 8);
    push_words(f, 0, 1, 8, V(3), 1); /* push number 1 applies again */
    assert_int_equal(f->out->act[0].hdr.aux, 1);
    ar(f, &d, 0, V(10, 20));
    ar(f, &d, 1, V(1, 2));
    expect_result(f, 1, 2, &d, sum);
    /* The epoch wraps: a slot and a row last cleared at epoch 0 must not
     * pass for current when the epoch is 0 again. */
    new_incarnation(f, 3);
    j->epoch = 0; /* as if 2^32 incarnations went by, none touching them */
    j->slot_epoch[3] = 0;
    j->row_epoch[1] = 0;
    ar(f, &d, 0, V(1000, 2000));       /* slot 3, now at epoch 0 */
    push_words(f, 0, 1, 8, V(9), 1);   /* row 1, now at epoch 0 */
    j->epoch = UINT32_MAX;
    new_incarnation(f, 4);             /* wraps to 0: an eager clear */
    assert_int_equal(j->epoch, 0);
    pull_zero(f, 0, 8, 8);
    ar(f, &d, 0, V(10, 20));
    ar(f, &d, 1, V(1, 2));
    expect_result(f, 1, 2, &d, sum);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_join_ack),
        T(test_join_idempotent),
        T(test_join_stale_token),
        T(test_join_spoofed_peer),
        T(test_join_unknown_job),
        T(test_join_worker_out_of_range),
        T(test_join_new_nonce_resets),
        T(test_join_token),
        T(test_join_no_token),
        T(test_lease_lapses),
        T(test_lease_held_by_call),
        T(test_lazy_clear),
        T(test_join_proof),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
