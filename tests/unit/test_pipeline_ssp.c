/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline_ssp.c - the software switch's SSP parameter store and
 * barrier (PUSH, PULL, CLOCK, the policy control and the control socket's
 * commands), driven packet by packet through sr_pipe_process.
 *
 * Every answer is checked as the bytes a replica carries (packed by
 * sr_pipe_replica_hdr, parsed back with sr_msg_parse). Expected store
 * contents come from an independent uint32_t reference; the wrap cases are
 * also written out by hand. The barrier module's own logic is tested in
 * test_barrier.c; here it is what the pipeline makes of it on the wire.
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

#include "control.h"
#include "job_spec.h"
#include "pipeline.h"
#include "pipeline_helpers.h"
#include "proto/wire.h"

#define V(...) ((const int32_t[]){__VA_ARGS__})
#define LOW0 UINT32_MAX /* low and high before clock 0 completes: clock -1 */

/* ---- helpers ---------------------------------------------------------------- */

/* A job of n workers, all joined, with E = elems, the store and barrier
 * given. */
static void ssp_job(fx *f, uint16_t job, unsigned n, unsigned elems, uint32_t store,
                    uint32_t ring, enum sr_sync_mode mode, uint32_t s)
{
    sr_pipe_job_params jp;

    sr_pipe_job_params_init(&jp);
    jp.n_workers = n;
    jp.elems_per_pkt = elems;
    jp.pool_slots = 2;
    jp.store_words = store;
    jp.ring = ring;
    jp.mode = mode;
    jp.s = s;
    assert_int_equal(sr_pipe_job_add(f->p, job, &jp), 0);
    for (unsigned w = 0; w < n; w++)
        join(f, job, (uint16_t)w, 2000u + w, 0);
}

static sr_hdr push_hdr(uint16_t job, uint32_t seq, uint32_t off, uint16_t count)
{
    sr_hdr h = mk(SR_OP_PUSH, job, 0, seq, 0);

    h.offset = off;
    h.count = count;
    return h;
}

static sr_hdr pull_hdr(uint16_t job, uint32_t seq, uint32_t off, uint32_t n)
{
    sr_hdr h = mk(SR_OP_PULL, job, 0, seq, n);

    h.offset = off;
    return h;
}

/* The one unicast answer to worker w: its parsed header (payload in *pl). */
static sr_hdr answer(fx *f, uint16_t job, unsigned w, const uint8_t **pl)
{
    const sr_pipe_action *a = &f->out->act[0];
    sr_peer pe = peer_of(job, w);

    assert_true(f->out->n >= 1);
    assert_int_equal(a->multicast, 0);
    assert_int_equal(a->n_dests, 1);
    expect_peer(&a->dests[0].peer, &pe);
    return replica(f, a, 0, pl);
}

/* PUSH as w; expect its PUSH_ACK with aux = applied. */
static void push(fx *f, uint16_t job, unsigned w, uint32_t seq, uint32_t off, uint16_t count,
                 const int32_t *vals, int applied)
{
    sr_hdr h = push_hdr(job, seq, off, count), want = mk(SR_OP_PUSH_ACK, job, 0, seq, 0), got;

    h.aux = 77; /* the worker's clock: informational */
    ar(f, &h, w, vals);
    assert_int_equal(f->out->n, 1);
    got = answer(f, job, w, NULL);
    want.worker = (uint16_t)w;
    want.offset = off;
    want.aux = (uint32_t)applied;
    expect_hdr(&got, &want);
}

/* PULL n words at off as w; expect want. */
static void pull(fx *f, uint16_t job, unsigned w, uint32_t seq, uint32_t off, uint32_t n,
                 const uint32_t *want)
{
    sr_hdr h = pull_hdr(job, seq, off, n), exp = mk(SR_OP_PULL_RESP, job, 0, seq, 0), got;
    const uint8_t *pl;

    ar(f, &h, w, NULL);
    assert_int_equal(f->out->n, 1);
    got = answer(f, job, w, &pl);
    exp.worker = (uint16_t)w;
    exp.offset = off;
    exp.count = (uint16_t)n;
    expect_hdr(&got, &exp);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(sr_get_be32(pl + 4u * i), want[i]);
}

/* Expected answer to a CLOCK. release: whether a RELEASE multicast to the
 * job's n workers must follow. */
typedef struct clk_want {
    uint8_t op; /* SR_OP_PROCEED or SR_OP_HOLD */
    uint32_t low, high, mode, s;
    int release;
} clk_want;

static void expect_release(fx *f, uint16_t job, unsigned n, uint32_t low, uint32_t high)
{
    const sr_pipe_action *a = &f->out->act[1];
    sr_hdr want = mk(SR_OP_RELEASE, job, 0, low, low);

    assert_int_equal(f->out->n, 2);
    assert_int_equal(a->multicast, 1);
    assert_int_equal(a->n_dests, n);
    want.offset = high;
    for (unsigned k = 0; k < n; k++) {
        sr_peer pe = peer_of(job, k);
        sr_hdr got = replica(f, a, k, NULL);

        expect_peer(&a->dests[k].peer, &pe);
        want.worker = (uint16_t)k;
        expect_hdr(&got, &want);
    }
}

static void clk(fx *f, uint16_t job, unsigned n, unsigned w, uint32_t c, clk_want x)
{
    sr_hdr h = mk(SR_OP_CLOCK, job, 0, c, 0), want = mk(x.op, job, 0, c, x.low), got;
    const uint8_t *pl;

    ar(f, &h, w, NULL);
    got = answer(f, job, w, &pl);
    want.worker = (uint16_t)w;
    want.offset = x.high;
    want.count = SR_SYNC_WORDS;
    expect_hdr(&got, &want);
    assert_int_equal(sr_get_be32(pl), x.mode);
    assert_int_equal(sr_get_be32(pl + 4), x.s);
    if (x.release)
        expect_release(f, job, n, x.low, x.high);
    else
        assert_int_equal(f->out->n, 1);
}

#define PROCEED(low, high, mode, s, rel) ((clk_want){SR_OP_PROCEED, low, high, mode, s, rel})
#define HOLD(low, high, mode, s, rel) ((clk_want){SR_OP_HOLD, low, high, mode, s, rel})

static sr_pipe_sync_state sync_of(fx *f, uint16_t job)
{
    sr_pipe_sync_state st;

    assert_int_equal(sr_pipe_sync_get(f->p, job, &st), 0);
    return st;
}

/* ---- store ------------------------------------------------------------------- */

static void test_push_pull_exact(void **state)
{
    fx *f = *state;
    static const uint32_t row0[8] = {10, 20, 30, 31, 42, 53, 64, 75};

    ssp_job(f, 3, 2, 8, 64, 64, SR_SYNC_BSP, 0);
    push(f, 3, 0, 1, 3, 5, V(1, 2, 3, 4, 5), 1);
    push(f, 3, 1, 1, 0, 8, V(10, 20, 30, 30, 40, 50, 60, 70), 1);
    pull(f, 3, 0, 1, 0, 8, row0);
    pull(f, 3, 1, 9, 4, 3, row0 + 4); /* any piece of a row */
    pull(f, 3, 1, 10, 7, 1, row0 + 7);
    pull(f, 3, 0, 2, 56, 8, (const uint32_t[8]){0}); /* the last row is untouched */
    assert_int_equal(jc(f, 3).pushes, 2);
    assert_int_equal(jc(f, 3).push_dups, 0);
    assert_int_equal(jc(f, 3).pulls, 4);
    assert_int_equal(jc(f, 3).errors_sent, 0);
    assert_int_equal(jc(f, 3).tx, 2 + 2 + 4); /* JOIN_ACKs, PUSH_ACKs, PULL_RESPs */
}

static void test_push_wraps(void **state)
{
    fx *f = *state;
    uint32_t want[4] = {(uint32_t)INT32_MIN, 0, (uint32_t)INT32_MAX, 0xfffffffeu};

    ssp_job(f, 3, 3, 4, 8, 64, SR_SYNC_BSP, 0);
    push(f, 3, 0, 1, 0, 4, V(INT32_MAX, -1, INT32_MIN, INT32_MAX), 1);
    push(f, 3, 1, 1, 0, 4, V(1, 1, -1, INT32_MAX), 1);
    pull(f, 3, 2, 1, 0, 4, want);
    /* Many pushes: the modular sum against a uint32_t reference. */
    for (uint32_t k = 2; k < 200; k++) {
        int32_t v = (int32_t)(k * 2654435761u);

        push(f, 3, k % 3, k, 5, 1, &v, 1);
        want[1] += (uint32_t)v;
    }
    pull(f, 3, 0, 2, 5, 1, &want[1]);
}

/* A retransmission (same push number) is acknowledged, never added twice,
 * whatever payload it carries. */
static void test_push_duplicate(void **state)
{
    fx *f = *state;
    static const uint32_t once[3] = {7, 8, 9};

    ssp_job(f, 3, 2, 4, 16, 64, SR_SYNC_BSP, 0);
    push(f, 3, 0, 1, 8, 3, V(7, 8, 9), 1);
    for (int i = 0; i < 3; i++)
        push(f, 3, 0, 1, 8, 3, i ? V(100, 100, 100) : V(7, 8, 9), 0);
    pull(f, 3, 1, 1, 8, 3, once);
    assert_int_equal(jc(f, 3).pushes, 1);
    assert_int_equal(jc(f, 3).push_dups, 3);
}

/* Push numbers are per (row, worker) and compared in serial arithmetic: a
 * late, older push is not applied; other rows and workers are independent;
 * the numbers may wrap past 2^32. */
static void test_push_order_and_wrap(void **state)
{
    fx *f = *state;
    uint32_t r0 = 0, r1 = 0;

    ssp_job(f, 3, 2, 4, 8, 64, SR_SYNC_BSP, 0);
    push(f, 3, 0, 2, 0, 1, V(5), 1);
    r0 += 5;
    push(f, 3, 0, 1, 0, 1, V(1000), 0); /* older: the retransmission of a lost push */
    push(f, 3, 0, 1, 4, 1, V(3), 1);    /* another row has its own numbers */
    r1 += 3;
    push(f, 3, 1, 1, 0, 1, V(6), 1);    /* and another worker too */
    r0 += 6;
    push(f, 3, 0, 3, 0, 1, V(7), 1);
    r0 += 7;
    pull(f, 3, 0, 1, 0, 1, &r0);
    pull(f, 3, 0, 2, 4, 1, &r1);

    /* Serial numbers across the wrap, row 1 of worker 1. */
    static const uint32_t seqs[] = {0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu, 0, 1};
    for (unsigned i = 0; i < sizeof seqs / sizeof seqs[0]; i++) {
        push(f, 3, 1, seqs[i], 5, 1, V(1), 1);
        r1++;
    }
    push(f, 3, 1, 0xffffffffu, 5, 1, V(1), 0); /* before 1, in serial order */
    push(f, 3, 1, 0x80000001u, 5, 1, V(1), 0); /* 2^31 behind: not after */
    pull(f, 3, 1, 3, 4, 2, (const uint32_t[]){r1 - 6, 6});
    assert_int_equal(jc(f, 3).push_dups, 3);
}

static void test_store_range(void **state)
{
    fx *f = *state;
    /* Store of 20 words in rows of 8: [0,8) [8,16) [16,20). */
    static const struct {
        uint8_t op;
        uint32_t off, n;
        unsigned status;
    } bad[] = {
        {SR_OP_PUSH, 6, 3, SR_ST_RANGE},          /* crosses rows 0 and 1 */
        {SR_OP_PUSH, 15, 2, SR_ST_RANGE},         /* crosses rows 1 and 2 */
        {SR_OP_PUSH, 17, 4, SR_ST_RANGE},         /* past the end of the short last row */
        {SR_OP_PUSH, 20, 1, SR_ST_RANGE},         /* just past the store */
        {SR_OP_PUSH, 0xffffffffu, 2, SR_ST_RANGE}, /* offset + count wraps 2^32 */
        {SR_OP_PUSH, 0, 0, SR_ST_BAD_COUNT},
        {SR_OP_PUSH, 0, 9, SR_ST_BAD_COUNT},      /* more than a row */
        {SR_OP_PULL, 7, 2, SR_ST_RANGE},
        {SR_OP_PULL, 18, 3, SR_ST_RANGE},
        {SR_OP_PULL, 0x80000000u, 1, SR_ST_RANGE},
        {SR_OP_PULL, 0, 0, SR_ST_BAD_COUNT},
        {SR_OP_PULL, 8, 9, SR_ST_BAD_COUNT},
    };
    static const uint32_t tail[4] = {1, 2, 3, 4};
    unsigned ranges = 0;

    ssp_job(f, 3, 1, 8, 20, 64, SR_SYNC_BSP, 0);
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sr_hdr h = bad[i].op == SR_OP_PUSH ? push_hdr(3, 5, bad[i].off, (uint16_t)bad[i].n)
                                           : pull_hdr(3, 5, bad[i].off, bad[i].n);

        ar(f, &h, 0, NULL);
        expect_error_w(f, &h, bad[i].status);
        ranges += bad[i].status == SR_ST_RANGE;
    }
    assert_int_equal(jc(f, 3).range_errors, ranges);
    assert_int_equal(jc(f, 3).errors_sent, sizeof bad / sizeof bad[0]);
    /* Nothing was applied, and no push number was used up. */
    for (uint32_t off = 0; off < 16; off += 8)
        pull(f, 3, 0, 1, off, 8, (const uint32_t[8]){0});
    push(f, 3, 0, 5, 16, 4, V(1, 2, 3, 4), 1); /* the whole short row */
    pull(f, 3, 0, 2, 16, 4, tail);
    assert_int_equal(jc(f, 3).pushes, 1);
}

/* rows=whole (the Tofino program's store): JOIN_ACK says so, a piece of a
 * row or a row not begun at its first word is refused and uses up no push
 * number, a whole row is applied. */
static void test_store_whole_rows(void **state)
{
    fx *f = *state;
    sr_pipe_job_params jp;
    uint16_t id;
    char why[256];
    /* A piece of row 0; a row's count not at a row's first word (PUSH, PULL). */
    static const struct {
        uint8_t op;
        uint32_t off, n;
        unsigned status;
    } bad[] = {{SR_OP_PUSH, 0, 4, SR_ST_BAD_COUNT}, {SR_OP_PUSH, 4, 8, SR_ST_RANGE},
               {SR_OP_PULL, 8, 7, SR_ST_BAD_COUNT}, {SR_OP_PULL, 3, 8, SR_ST_RANGE}};

    assert_int_equal(sw_job_spec_parse("3:1:8:2,store=16,rows=whole", NULL, &id, &jp, why,
                                       sizeof why),
                     0);
    assert_int_equal(jp.whole_rows, 1);
    assert_int_equal(sr_pipe_job_add(f->p, id, &jp), 0);
    join(f, 3, 0, 2000u, 0);
    assert_int_equal(f->out->act[0].hdr.flags & SR_FLAG_WHOLE_ROWS, SR_FLAG_WHOLE_ROWS);
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sr_hdr h = bad[i].op == SR_OP_PUSH ? push_hdr(3, 5, bad[i].off, (uint16_t)bad[i].n)
                                           : pull_hdr(3, 5, bad[i].off, bad[i].n);

        ar(f, &h, 0, NULL);
        expect_error_w(f, &h, bad[i].status);
    }
    push(f, 3, 0, 5, 8, 8, V(1, 2, 3, 4, 5, 6, 7, 8), 1);
    pull(f, 3, 0, 1, 8, 8, (const uint32_t[]){1, 2, 3, 4, 5, 6, 7, 8});
    assert_int_equal(jc(f, 3).pushes, 1);
}

static void test_no_store(void **state)
{
    fx *f = *state;
    sr_hdr h = push_hdr(3, 1, 0, 1);

    ssp_job(f, 3, 1, 8, 0, 64, SR_SYNC_BSP, 0);
    ar(f, &h, 0, V(1));
    expect_error_w(f, &h, SR_ST_RANGE);
    h = pull_hdr(3, 1, 0, 1);
    ar(f, &h, 0, NULL);
    expect_error_w(f, &h, SR_ST_RANGE);
    assert_int_equal(jc(f, 3).range_errors, 2);
}

/* Every row, the short last one included, holds its own sums. */
static void test_pull_every_row(void **state)
{
    fx *f = *state;
    enum { N = 3, E = 5, W = 4 * E + 3 };
    uint32_t ref[W] = {0};

    ssp_job(f, 3, N, E, W, 64, SR_SYNC_BSP, 0);
    for (unsigned w = 0; w < N; w++)
        for (uint32_t off = 0; off < W; off += E) {
            uint16_t n = (uint16_t)(W - off < E ? W - off : E);
            int32_t v[E];

            for (unsigned i = 0; i < n; i++) {
                v[i] = (int32_t)((w + 1) * 1000003u * (off + i + 1));
                ref[off + i] += (uint32_t)v[i];
            }
            push(f, 3, w, 1, off, n, v, 1);
        }
    for (uint32_t off = 0; off < W; off += E)
        pull(f, 3, off % N, off + 1, off, W - off < E ? W - off : E, ref + off);
    assert_int_equal(jc(f, 3).pushes, N * 5);
}

/* ---- barrier ------------------------------------------------------------------ */

static void test_clock_bsp(void **state)
{
    fx *f = *state;

    ssp_job(f, 3, 3, 4, 8, 64, SR_SYNC_BSP, 0);
    clk(f, 3, 3, 0, 0, HOLD(LOW0, 0, SR_SYNC_BSP, 0, 0));
    clk(f, 3, 3, 1, 0, HOLD(LOW0, 0, SR_SYNC_BSP, 0, 0));
    clk(f, 3, 3, 0, 0, HOLD(LOW0, 0, SR_SYNC_BSP, 0, 0)); /* a held worker's retransmission */
    clk(f, 3, 3, 2, 0, PROCEED(0, 0, SR_SYNC_BSP, 0, 1)); /* the last one: RELEASE(0) */
    clk(f, 3, 3, 0, 0, PROCEED(0, 0, SR_SYNC_BSP, 0, 0)); /* after a lost RELEASE */
    clk(f, 3, 3, 0, 1, HOLD(0, 1, SR_SYNC_BSP, 0, 0));
    clk(f, 3, 3, 1, 1, HOLD(0, 1, SR_SYNC_BSP, 0, 0));
    clk(f, 3, 3, 2, 1, PROCEED(1, 1, SR_SYNC_BSP, 0, 1));
    assert_int_equal(jc(f, 3).clocks, 8);
    assert_int_equal(jc(f, 3).holds, 5);
    assert_int_equal(jc(f, 3).proceeds, 3);
    assert_int_equal(jc(f, 3).releases, 2);
    assert_int_equal(jc(f, 3).tx, 3 + 8 + 2 * 3);
    assert_int_equal(sync_of(f, 3).cnt.duplicates, 2);
}

static void test_clock_ssp(void **state)
{
    fx *f = *state;

    ssp_job(f, 3, 2, 4, 8, 64, SR_SYNC_SSP, 2);
    clk(f, 3, 2, 0, 0, PROCEED(LOW0, 0, SR_SYNC_SSP, 2, 0)); /* 0 - (-1) = 1 <= 2 */
    clk(f, 3, 2, 0, 1, PROCEED(LOW0, 1, SR_SYNC_SSP, 2, 0));
    clk(f, 3, 2, 0, 2, HOLD(LOW0, 2, SR_SYNC_SSP, 2, 0)); /* 3 ahead */
    clk(f, 3, 2, 1, 0, PROCEED(0, 2, SR_SYNC_SSP, 2, 1));
    clk(f, 3, 2, 0, 2, PROCEED(0, 2, SR_SYNC_SSP, 2, 0)); /* 2 ahead now */
    /* A CLOCK that implies lost earlier ones moves low over all of them at
     * once: one RELEASE carrying the new low. */
    clk(f, 3, 2, 1, 2, PROCEED(2, 2, SR_SYNC_SSP, 2, 1));
    assert_int_equal(jc(f, 3).releases, 2);
}

static void test_clock_asp_and_ahead(void **state)
{
    fx *f = *state;
    sr_hdr h = mk(SR_OP_CLOCK, 3, 0, 8, 0);

    /* ASP on a ring of 8 is SSP(6): the ring bounds any lead. */
    ssp_job(f, 3, 2, 4, 8, 8, SR_SYNC_ASP, 0);
    for (uint32_t c = 0; c < 6; c++)
        clk(f, 3, 2, 0, c, PROCEED(LOW0, c, SR_SYNC_ASP, 6, 0));
    clk(f, 3, 2, 0, 6, HOLD(LOW0, 6, SR_SYNC_ASP, 6, 0));
    clk(f, 3, 2, 0, 7, HOLD(LOW0, 7, SR_SYNC_ASP, 6, 0)); /* the ring's last entry */
    ar(f, &h, 0, NULL); /* one more would reuse the entry of clock 0 */
    expect_error_w(f, &h, SR_ST_CLOCK_AHEAD);
    assert_int_equal(jc(f, 3).clock_ahead, 1);
    assert_int_equal(sync_of(f, 3).high, 7); /* refused: nothing changed */
    clk(f, 3, 2, 1, 0, PROCEED(0, 7, SR_SYNC_ASP, 6, 1));
    ar(f, &h, 0, NULL); /* 8 - 0 <= 8 now */
    assert_int_equal(f->out->act[0].hdr.op, SR_OP_HOLD);
    assert_int_equal(jc(f, 3).clocks, 11);
    assert_int_equal(jc(f, 3).errors_sent, 1);
}

/* The RELEASE goes to every worker, each copy with its own worker id. */
static void test_release_to_all(void **state)
{
    fx *f = *state;
    enum { N = 5 };

    ssp_job(f, 3, N, 4, 8, 64, SR_SYNC_BSP, 0);
    for (unsigned c = 0; c < 3; c++)
        for (unsigned k = 0; k < N; k++) {
            unsigned w = (k + c) % N; /* a different worker completes each clock */

            if (k + 1 < N)
                clk(f, 3, N, w, c, HOLD(c - 1, c, SR_SYNC_BSP, 0, 0));
            else
                clk(f, 3, N, w, c, PROCEED(c, c, SR_SYNC_BSP, 0, 1));
        }
    assert_int_equal(jc(f, 3).releases, 3);
    assert_int_equal(jc(f, 3).tx, N + 3 * N + 3 * N);
}

/* A change takes effect at E > high; clocks up to high keep their policy,
 * clocks >= E get the new one. */
static void test_policy_change(void **state)
{
    fx *f = *state;
    uint32_t e = 0;
    sr_pipe_sync_state st;

    ssp_job(f, 3, 2, 4, 8, 64, SR_SYNC_BSP, 0);
    clk(f, 3, 2, 0, 0, HOLD(LOW0, 0, SR_SYNC_BSP, 0, 0));
    clk(f, 3, 2, 1, 0, PROCEED(0, 0, SR_SYNC_BSP, 0, 1));
    clk(f, 3, 2, 0, 1, HOLD(0, 1, SR_SYNC_BSP, 0, 0)); /* high = 1 */
    assert_int_equal(sr_pipe_set_policy(f->p, 3, SR_SYNC_SSP, 2, 0, &e), 0);
    assert_int_equal(e, 2);
    clk(f, 3, 2, 0, 1, HOLD(0, 1, SR_SYNC_BSP, 0, 0)); /* clock 1 keeps BSP */
    clk(f, 3, 2, 0, 2, PROCEED(0, 2, SR_SYNC_SSP, 2, 0));
    /* Asked for a later clock: from then on. */
    assert_int_equal(sr_pipe_set_policy(f->p, 3, SR_SYNC_ASP, 0, 4, &e), 0);
    assert_int_equal(e, 4);
    clk(f, 3, 2, 0, 3, HOLD(0, 3, SR_SYNC_SSP, 2, 0));
    clk(f, 3, 2, 0, 4, PROCEED(0, 4, SR_SYNC_ASP, 62, 0));
    st = sync_of(f, 3);
    assert_int_equal(st.low, 0);
    assert_int_equal(st.high, 4);
    assert_int_equal(st.mode, SR_SYNC_ASP);
    assert_int_equal(st.s, 62);
    assert_int_equal(st.ring, 64);
    assert_int_equal(st.n_rules, 3);
    assert_int_equal(st.rules[0].from, 0);
    assert_int_equal(st.rules[0].to, 2);
    assert_int_equal(st.rules[0].mode, SR_SYNC_BSP);
    assert_int_equal(st.rules[1].from, 2);
    assert_int_equal(st.rules[1].to, 4);
    assert_int_equal(st.rules[1].s, 2);
    assert_int_equal(st.rules[2].from, 4);
    assert_int_equal(st.rules[2].open, 1);
    assert_int_equal(st.cnt.policy_changes, 2);
    /* Refusals change nothing. */
    assert_int_equal(sr_pipe_set_policy(f->p, 4, SR_SYNC_BSP, 0, 0, &e), -ENOENT);
    assert_int_equal(sr_pipe_set_policy(f->p, 3, SR_SYNC_SSP, 63, 0, &e), -ERANGE);
    assert_int_equal(sr_pipe_set_policy(f->p, 3, SR_SYNC_BSP, 0, (1u << 30) + 1, &e), -ERANGE);
    assert_int_equal(sr_pipe_set_policy(f->p, 3, (enum sr_sync_mode)9, 0, 0, &e), -EINVAL);
    assert_int_equal(sync_of(f, 3).n_rules, 3);
    assert_int_equal(sr_pipe_sync_get(f->p, 4, &st), -ENOENT);
}

/* ---- incarnations and isolation -------------------------------------------------- */

/* A new nonce: store, push numbers and barrier all start over; the policy
 * rules are the job's configuration and carry over, the one in force at
 * the reset now starting at clock 0. */
static void test_new_nonce_resets(void **state)
{
    fx *f = *state;
    uint32_t e;
    sr_pipe_sync_state st;

    ssp_job(f, 3, 2, 4, 8, 64, SR_SYNC_SSP, 1);
    push(f, 3, 0, 1, 0, 2, V(5, 6), 1);
    clk(f, 3, 2, 0, 0, PROCEED(LOW0, 0, SR_SYNC_SSP, 1, 0));
    clk(f, 3, 2, 1, 0, PROCEED(0, 0, SR_SYNC_SSP, 1, 1));
    assert_int_equal(sr_pipe_set_policy(f->p, 3, SR_SYNC_BSP, 0, 0, &e), 0);

    leave(f, 3, 0, 2000); /* the old run's contexts end */
    leave(f, 3, 1, 2001);
    join(f, 3, 0, 9000, 42);
    join(f, 3, 1, 9001, 42);
    assert_int_equal(jc(f, 3).resets, 1);
    pull(f, 3, 1, 1, 0, 2, (const uint32_t[2]){0, 0});
    push(f, 3, 0, 1, 0, 2, V(1, 2), 1); /* push number 1 is new again */
    pull(f, 3, 1, 2, 0, 2, (const uint32_t[2]){1, 2});
    st = sync_of(f, 3);
    assert_int_equal(st.low, LOW0);
    assert_int_equal(st.high, LOW0);
    assert_int_equal(st.n_rules, 2);
    assert_int_equal(st.rules[0].mode, SR_SYNC_SSP);
    assert_int_equal(st.rules[0].from, 0);
    assert_int_equal(st.rules[1].mode, SR_SYNC_BSP);
    assert_int_equal(st.rules[1].from, e);
    assert_int_equal(st.cnt.clocks, 0);
    clk(f, 3, 2, 0, 0, PROCEED(LOW0, 0, SR_SYNC_SSP, 1, 0));
    clk(f, 3, 2, 0, 1, HOLD(LOW0, 1, SR_SYNC_BSP, 0, 0)); /* BSP from e = 1 on */
    /* The JOIN_ACK announces the store. */
    join(f, 3, 0, 9000, 42);
    assert_int_equal(sr_get_be32(f->out->act[0].payload + 12), 8);
}

/* Requests from unbound ids, other addresses or out-of-range ids get no
 * answer and change nothing. */
static void test_policy_before_first_join_kept(void **state)
{
    fx *f = *state;
    uint32_t e;

    /* Set through the control socket before any worker joined: the first
     * JOIN's new nonce resets the job and must not drop it. */
    sr_pipe_job_params jp;
    sr_pipe_job_params_init(&jp);
    jp.n_workers = 2;
    jp.elems_per_pkt = 4;
    jp.store_words = 8;
    assert_int_equal(sr_pipe_job_add(f->p, 5, &jp), 0);
    assert_int_equal(sr_pipe_set_policy(f->p, 5, SR_SYNC_SSP, 3, 0, &e), 0);
    assert_int_equal(e, 0);
    join(f, 5, 0, 9000, 77);
    join(f, 5, 1, 9001, 77);
    assert_int_equal(jc(f, 5).resets, 1);
    clk(f, 5, 2, 0, 0, PROCEED(LOW0, 0, SR_SYNC_SSP, 3, 0));
    clk(f, 5, 2, 0, 2, PROCEED(LOW0, 2, SR_SYNC_SSP, 3, 0)); /* 2 - (-1) <= 3 */
    clk(f, 5, 2, 0, 3, HOLD(LOW0, 3, SR_SYNC_SSP, 3, 0));    /* 3 - (-1) > 3 */
}

static void test_unbound_dropped(void **state)
{
    fx *f = *state;
    sr_pipe_job_params jp;
    sr_peer spoof = {peer_of(3, 0).ip, 1};
    sr_hdr reqs[3] = {push_hdr(3, 1, 0, 1), pull_hdr(3, 1, 0, 1), mk(SR_OP_CLOCK, 3, 0, 0, 0)};

    sr_pipe_job_params_init(&jp);
    jp.n_workers = 2;
    jp.elems_per_pkt = 4;
    jp.store_words = 8;
    assert_int_equal(sr_pipe_job_add(f->p, 3, &jp), 0);
    join(f, 3, 0, 1, 0);
    for (unsigned i = 0; i < 3; i++) {
        ar(f, &reqs[i], 1, V(100)); /* worker 1 never joined */
        expect_nothing(f);
        reqs[i].worker = 0;
        feed(f, &spoof, &reqs[i], V(100)); /* worker 0 from another port */
        expect_nothing(f);
        ar(f, &reqs[i], 2, V(100)); /* no such worker */
        expect_nothing(f);
        reqs[i].offset = 999; /* isolation comes before the range check */
        ar(f, &reqs[i], 1, V(100));
        expect_nothing(f);
    }
    assert_int_equal(jc(f, 3).dropped_unbound, 12);
    assert_int_equal(jc(f, 3).errors_sent + jc(f, 3).clocks + jc(f, 3).pushes, 0);
    assert_int_equal(sync_of(f, 3).high, LOW0);
    pull(f, 3, 0, 1, 0, 1, (const uint32_t[1]){0});
}

static void test_jobs_isolated(void **state)
{
    fx *f = *state;
    sr_peer a0 = peer_of(1, 0);
    sr_hdr h = push_hdr(2, 1, 0, 1);

    ssp_job(f, 1, 2, 4, 8, 64, SR_SYNC_BSP, 0);
    ssp_job(f, 2, 2, 4, 8, 64, SR_SYNC_BSP, 0);
    push(f, 1, 0, 1, 0, 1, V(11), 1);
    /* Job 1's worker 0 posing as job 2's worker 0: push, pull, clock. */
    feed(f, &a0, &h, V(500));
    expect_nothing(f);
    h = pull_hdr(2, 1, 0, 1);
    feed(f, &a0, &h, NULL);
    expect_nothing(f);
    h = mk(SR_OP_CLOCK, 2, 0, 0, 0);
    feed(f, &a0, &h, NULL);
    expect_nothing(f);
    assert_int_equal(jc(f, 2).dropped_unbound, 3);
    pull(f, 2, 0, 1, 0, 1, (const uint32_t[1]){0});
    pull(f, 1, 1, 1, 0, 1, (const uint32_t[1]){11});
    /* Each job's barrier is its own. */
    clk(f, 1, 2, 0, 0, HOLD(LOW0, 0, SR_SYNC_BSP, 0, 0));
    clk(f, 2, 2, 1, 0, HOLD(LOW0, 0, SR_SYNC_BSP, 0, 0));
    clk(f, 1, 2, 1, 0, PROCEED(0, 0, SR_SYNC_BSP, 0, 1));
    assert_int_equal(sync_of(f, 2).low, LOW0);
    assert_int_equal(sr_pipe_set_policy(f->p, 1, SR_SYNC_ASP, 0, 0, NULL), 0);
    assert_int_equal(sync_of(f, 2).n_rules, 1);
}

/* ---- the control commands ---------------------------------------------------------- */

static void ctl(fx *f, const char *cmd, const char *want)
{
    char out[SR_CTL_REPLY_MAX];
    size_t n = sr_ctl_exec(f->p, cmd, out, sizeof out);

    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
}

/* A reply that starts with want. */
static void ctl_starts(fx *f, const char *cmd, const char *want)
{
    char out[SR_CTL_REPLY_MAX];

    sr_ctl_exec(f->p, cmd, out, sizeof out);
    if (strncmp(out, want, strlen(want)))
        fail_msg("'%s' -> '%s', expected '%s...'", cmd, out, want);
}

static void test_control_commands(void **state)
{
    fx *f = *state;
    char small[12];
    char long_cmd[400];

    ctl(f, "jobs", "ok");
    ssp_job(f, 7, 2, 4, 8, 64, SR_SYNC_BSP, 0);
    ssp_job(f, 1, 1, 4, 16, 8, SR_SYNC_SSP, 3);
    ctl(f, "jobs\n", "ok 1 7");
    ctl(f, "  JOBS \r\n", "ok 1 7");
    ctl_starts(f, "status 7",
        "ok job=7 workers=2 low=4294967295 high=4294967295 mode=bsp s=0 rules=0-inf:bsp:0 "
        "clocks=0 holds=0 proceeds=0 advances=0 pushes=0 push_dups=0 pulls=0 bound=2 nonce=0 "
        "ring=64 store=8 clock_ahead=0 range_errors=0 leaves=0 in_use_refused=0 "
        "live=2 lapsed=0 denied=0 bytes=");
    ctl(f, "policy 7 ssp 3", "ok job=7 effective=0");
    clk(f, 7, 2, 0, 0, PROCEED(LOW0, 0, SR_SYNC_SSP, 3, 0));
    clk(f, 7, 2, 1, 0, PROCEED(0, 0, SR_SYNC_SSP, 3, 1));
    clk(f, 7, 2, 0, 1, PROCEED(0, 1, SR_SYNC_SSP, 3, 0));
    push(f, 7, 0, 1, 0, 1, V(1), 1);
    push(f, 7, 0, 1, 0, 1, V(1), 0);
    pull(f, 7, 1, 1, 0, 1, (const uint32_t[1]){1});
    ctl(f, "policy 7 bsp from 100", "ok job=7 effective=100");
    ctl(f, "policy 7 asp 5 from 1", "ok job=7 effective=2"); /* > high; supersedes 100 */
    ctl_starts(f, "status 7",
        "ok job=7 workers=2 low=0 high=1 mode=asp s=62 rules=0-2:ssp:3,2-inf:asp:62 "
        "clocks=3 holds=0 proceeds=3 advances=1 pushes=1 push_dups=1 pulls=1 bound=2 nonce=0 "
        "ring=64 store=8 clock_ahead=0 range_errors=0 leaves=0 in_use_refused=0 "
        "live=2 lapsed=0 denied=0 bytes=");
    ctl(f, "policy 1 ssp 6", "ok job=1 effective=0"); /* ring 8: s <= 6 */
    ctl(f, "policy 1 SSP 7", "error s 7 is above 6, the most job 1's ring of 8 allows");
    ctl(f, "policy 1 ssp", "error ssp needs S (policy JOB ssp S [from CLOCK])");
    ctl(f, "policy 1 ssp from 3", "error ssp needs S (policy JOB ssp S [from CLOCK])");
    ctl(f, "policy 1 bsp from", "error 'from' needs a clock (0..4294967295)");
    ctl(f, "policy 1 bsp from -1", "error 'from' needs a clock (0..4294967295)");
    ctl(f, "policy 1 bsp from 1073741823", "ok job=1 effective=1073741823"); /* low + 2^30 */
    ctl(f, "policy 1 bsp from 1073741824",
        "error from 1073741824 is more than 2^30 clocks past low 4294967295");
    ctl(f, "policy 1 bsp 0 from 5 now",
        "error unexpected 'now' (usage: policy JOB bsp|asp|ssp [S] [from CLOCK])");
    ctl(f, "policy 1 ssp x", "error bad s 'x' (a number in 0..4294967295)");
    ctl(f, "policy 1 fast", "error bad mode 'fast' (bsp, asp or ssp)");
    ctl(f, "policy 1", "error usage: policy JOB bsp|asp|ssp [S] [from CLOCK]");
    ctl(f, "policy 9 bsp", "error unknown job 9");
    ctl(f, "status 9", "error unknown job 9");
    ctl(f, "status 65536", "error bad job id '65536' (0..65535)");
    ctl(f, "status +1", "error bad job id '+1' (0..65535)");
    ctl(f, "status", "error usage: status JOB");
    ctl(f, "status 1 2", "error usage: status JOB");
    ctl(f, "jobs now", "error usage: jobs");
    ctl(f, "", "error empty command (try 'help')");
    ctl(f, " \t\n", "error empty command (try 'help')");
    ctl(f, "reboot 1", "error unknown command 'reboot' (try 'help')");
    ctl(f, "a b c d e f g h i", "error too many words");
    ctl(f, "jobs\x01", "error control characters in the command");
    ctl_starts(f, "help", "ok commands: jobs | status JOB | reset JOB | policy JOB");
    memset(long_cmd, 'x', sizeof long_cmd - 1);
    long_cmd[sizeof long_cmd - 1] = '\0';
    ctl(f, long_cmd, "error command longer than 255 bytes");
    /* A short buffer gets a truncated, terminated reply. */
    assert_int_equal(sr_ctl_exec(f->p, "jobs", small, 4), 3);
    assert_string_equal(small, "ok ");
    /* The rules list at its longest fits a reply. */
    for (uint32_t k = 0; k < SR_BARRIER_MAX_RULES - 1; k++) {
        char cmd[64];

        snprintf(cmd, sizeof cmd, "policy 1 %s from %u", k & 1 ? "bsp" : "asp",
                 1000000000u + k);
        ctl_starts(f, cmd, "ok job=1 effective=");
    }
    ctl(f, "policy 1 ssp 2 from 1073741000",
        "error job 1 has 32 policy rules pending already; retry after low advances");
    ctl_starts(f, "status 1", "ok job=1 workers=1 low=4294967295 high=4294967295 mode=ssp s=6 "
                              "rules=0-1000000000:ssp:6,1000000000-1000000001:asp:6,");
    assert_int_equal(sync_of(f, 1).n_rules, SR_BARRIER_MAX_RULES);
}

/* job add and job remove: the --job syntax, the live-worker rule, the
 * memory reported and freed. */
static void test_control_jobs(void **state)
{
    fx *f = *state;

    ctl_starts(f, "job add 3:2:4:2,store=8,ring=8,policy=ssp:2,token=ab",
               "ok job=3 added workers=2 elems=4 slots=2 store=8 ring=8 mode=ssp s=2 "
               "token=set bytes=");
    ctl(f, "jobs", "ok 3");
    ctl_starts(f, "status 3", "ok job=3 workers=2 low=4294967295 high=4294967295 mode=ssp s=2");
    ctl(f, "job add 3:1", "error job 3 exists already (job remove 3 first)");
    ctl(f, "job add 4:1,token=env:HOME",
        "error token=env: in '4:1,token=env:HOME' is for the command line; give the hex digits");
    ctl(f, "job add 4:65", "error N '65' in '4:65' is not in 1..64");
    ctl(f, "job add 4:1,ring=8,policy=ssp:7",
        "error policy ssp:7 in '4:1,ring=8,policy=ssp:7' needs ring >= 9 (s + 2; ring is 8)");
    ctl(f, "job add 4:1,color=red",
        "error unknown option 'color' in '4:1,color=red' (store=, ring=, policy=, token=, "
        "local=, up=, upjob=, member=, fallback=, prio=, rows= or model=)");
    ctl_starts(f, "job add", "error usage: job add ID:N");
    ctl_starts(f, "job", "error usage: job add ID:N");
    ctl(f, "job remove", "error usage: job remove JOB [force]");
    ctl(f, "job remove 3 now", "error usage: job remove JOB [force]");
    ctl(f, "job remove 9", "error unknown job 9");
    ssp_job(f, 7, 2, 4, 8, 64, SR_SYNC_BSP, 0); /* both workers joined: live */
    ctl(f, "job remove 7",
        "error job 7 has 2 live workers (bound, not left, lease not lapsed): wait for its run "
        "to end or its lease to lapse, or 'job remove 7 force'");
    ctl_starts(f, "job remove 7 FORCE", "ok job=7 removed freed=");
    ctl(f, "status 7", "error unknown job 7");
    ctl_starts(f, "job remove 3", "ok job=3 removed freed=");
    ctl(f, "jobs", "ok");
    ctl_starts(f, "job add 3:1", "ok job=3 added workers=1 elems=");
    ctl_starts(f, "help", "ok commands: jobs | status JOB | reset JOB | policy JOB");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_push_pull_exact),
        T(test_push_wraps),
        T(test_push_duplicate),
        T(test_push_order_and_wrap),
        T(test_store_range),
        T(test_store_whole_rows),
        T(test_no_store),
        T(test_pull_every_row),
        T(test_clock_bsp),
        T(test_clock_ssp),
        T(test_clock_asp_and_ahead),
        T(test_release_to_all),
        T(test_policy_change),
        T(test_new_nonce_resets),
        T(test_policy_before_first_join_kept),
        T(test_unbound_dropped),
        T(test_jobs_isolated),
        T(test_control_commands),
        T(test_control_jobs),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
