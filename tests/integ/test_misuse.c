/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_misuse.c - the public API misused as a new user would, against a
 * real serene-switch: workers that disagree on an allreduce's count, an op
 * handle waited for twice or after its descriptor was reused, two threads
 * on one context, calls through a destroyed context. Every case must end
 * promptly with a clear error: none may hang until its deadline, and none
 * may mix data; an allreduce that expires behind another op breaks the
 * context as any timed-out allreduce does. Ranks are threads here, each with its own context (the
 * library has no global state).
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "serene/serene.h"
#include "switch_proc.h"
#include "timing.h"

static sw_proc sw;
static uint32_t next_nonce = 100; /* a new incarnation per case */

/* Jobs: 1 (N=2), 2 (N=3), 3 (N=1). */
static int start_switch(void **state)
{
    (void)state;
    static const char *const args[] = {"--job", "1:2", "--job", "2:3", "--job", "3:1", NULL};
    return sw_start(&sw, NULL, args);
}

static int stop_switch(void **state)
{
    (void)state;
    sw_cleanup(&sw);
    return 0;
}

static void base_cfg(serene_config *cfg, int job, int rank, int n, uint32_t nonce)
{
    sw_worker_config(&sw, cfg, job, rank, n);
    cfg->job_nonce = nonce;
    cfg->timeout_ms = 30000; /* long: a case that ends by its deadline fails below */
    cfg->log_fn = sw_quiet_log;
}

/* Create the n contexts of a job's new incarnation. Each JOIN is answered
 * at once, so this runs them one after the other. */
static void create_job(serene_ctx **ctx, int job, int n)
{
    uint32_t nonce = next_nonce++;
    for (int r = 0; r < n; r++) {
        serene_config cfg;
        base_cfg(&cfg, job, r, n, nonce);
        assert_int_equal(serene_ctx_create(&ctx[r], &cfg), 0);
    }
}

static void destroy_job(serene_ctx **ctx, int n)
{
    for (int r = 0; r < n; r++) {
        serene_ctx_destroy(&ctx[r]);
        assert_null(ctx[r]);
    }
}

/* One rank's allreduce, run on its own thread. */
typedef struct rank_call {
    serene_ctx *ctx;
    size_t count;
    float *x, *y;
    int rc;
    double ms;
} rank_call;

static void *call_main(void *arg)
{
    rank_call *c = arg;
    double t0 = tc_now_ms();
    c->rc = serene_allreduce(c->ctx, c->x, c->y, c->count, SERENE_SUM);
    c->ms = tc_now_ms() - t0;
    return NULL;
}

/* All n ranks call at once with their counts; return each rc and the
 * slowest call's time. */
static double run_ranks(serene_ctx **ctx, const size_t *counts, int n, int *rc)
{
    rank_call c[8];
    pthread_t th[8];
    double worst = 0;
    for (int r = 0; r < n; r++) {
        c[r] = (rank_call){.ctx = ctx[r], .count = counts[r]};
        c[r].x = calloc(counts[r] + 1, sizeof(float));
        c[r].y = calloc(counts[r] + 1, sizeof(float));
        for (size_t i = 0; i < counts[r]; i++)
            c[r].x[i] = (float)(r + 1);
        assert_int_equal(pthread_create(&th[r], NULL, call_main, &c[r]), 0);
    }
    for (int r = 0; r < n; r++) {
        pthread_join(th[r], NULL);
        rc[r] = c[r].rc;
        worst = c[r].ms > worst ? c[r].ms : worst;
        for (size_t i = 0; rc[r] == 0 && i < counts[r]; i++)
            assert_true(c[r].y[i] == (float)(n * (n + 1) / 2));
        free(c[r].x);
        free(c[r].y);
    }
    return worst;
}

/* Counts that differ anywhere: every rank gets MISMATCH within a few
 * seconds (not the 30 s deadline), the context then refuses allreduce as
 * documented, and a new run of the job works. */
static void test_count_mismatch(void **state)
{
    (void)state;
    static const size_t cases[][3] = {
        {1000, 1001, 0}, /* the last packet differs by one value */
        {256, 10000, 0}, /* the first packet is the same on both */
        {0, 5, 0},       /* a call of 0 values is a call too */
        {7, 0, 0},
        {100, 100, 101}, /* three ranks, one differs */
        {300, 299, 300},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int n = cases[k][2] || k >= 4 ? 3 : 2, job = n == 3 ? 2 : 1, rc[3];
        serene_ctx *ctx[3] = {0};
        create_job(ctx, job, n);
        double ms = run_ranks(ctx, cases[k], n, rc);
        printf("# counts %zu/%zu/%zu: %s %s %s in %.0f ms\n", cases[k][0], cases[k][1],
               n == 3 ? cases[k][2] : 0, serene_err_name(rc[0]), serene_err_name(rc[1]),
               n == 3 ? serene_err_name(rc[2]) : "-", ms);
        for (int r = 0; r < n; r++)
            assert_int_equal(rc[r], SERENE_ERR_MISMATCH);
        assert_true(ms < 5000);
        float v = 1;
        assert_int_equal(serene_allreduce(ctx[0], &v, &v, 1, SERENE_SUM), SERENE_ERR_BROKEN);
        destroy_job(ctx, n);
        /* The job's next run agrees on its counts and is exact. */
        size_t same[3] = {cases[k][0] + 3, cases[k][0] + 3, cases[k][0] + 3};
        create_job(ctx, job, n);
        run_ranks(ctx, same, n, rc);
        for (int r = 0; r < n; r++)
            assert_int_equal(rc[r], 0);
        destroy_job(ctx, n);
    }
}

/* A handle waited for twice, tested after its wait, or kept while its
 * descriptor served later ops: INVAL at once, never a hang or another
 * op's result. */
static void test_stale_op_handle(void **state)
{
    (void)state;
    serene_ctx *ctx[1];
    float x[300], y[300];
    for (int i = 0; i < 300; i++)
        x[i] = (float)i;
    create_job(ctx, 3, 1);
    serene_op *op, *copy;
    assert_int_equal(serene_allreduce_start(ctx[0], x, y, 300, SERENE_SUM, &op), 0);
    copy = op;
    assert_int_equal(serene_op_wait(&op), 0);
    assert_null(op);
    double t0 = tc_now_ms();
    assert_int_equal(serene_op_wait(&copy), SERENE_ERR_INVAL);
    assert_null(copy);
    copy = NULL;
    /* Reuse every descriptor (max_ops 16 by default) a few times over. */
    serene_op *old;
    assert_int_equal(serene_allreduce_start(ctx[0], x, y, 300, SERENE_SUM, &old), 0);
    copy = old;
    assert_int_equal(serene_op_wait(&old), 0);
    assert_int_equal(serene_op_test(copy), SERENE_ERR_INVAL);
    for (int i = 0; i < 40; i++) {
        serene_op *a, *b;
        assert_int_equal(serene_allreduce_start(ctx[0], x, y, 300, SERENE_SUM, &a), 0);
        assert_int_equal(serene_allreduce_start(ctx[0], x, y, 300, SERENE_SUM, &b), 0);
        /* b is in flight (or done): the stale handle must not reach it. */
        serene_op *stale = copy;
        assert_int_equal(serene_op_test(stale), SERENE_ERR_INVAL);
        assert_int_equal(serene_op_wait(&stale), SERENE_ERR_INVAL);
        assert_int_equal(serene_op_wait(&a), 0);
        assert_int_equal(serene_op_wait(&b), 0);
    }
    assert_true(tc_now_ms() - t0 < 10000);
    for (int i = 0; i < 300; i++)
        assert_true(y[i] == x[i]);
    destroy_job(ctx, 1);
}

/* Two threads inside calls on one context: the second is refused with
 * CONCURRENT at once, and the first call's sum is exact. */
static void test_two_threads_one_context(void **state)
{
    (void)state;
    serene_ctx *ctx[2];
    create_job(ctx, 1, 2);
    enum { N = 5000 };
    static float x0[N], y0[N], x1[N], y1[N], z[N];
    for (int i = 0; i < N; i++) {
        x0[i] = (float)i;
        x1[i] = 2.0f * (float)i;
    }
    rank_call c0 = {.ctx = ctx[0], .count = N, .x = x0, .y = y0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, call_main, &c0), 0);
    /* Rank 0's first thread is inside its call (rank 1 has not called):
     * wait until its packets went out, bounded. */
    serene_stats st = {0};
    for (int i = 0; i < 500 && st.pkts_sent <= 1; i++) { /* bounded: 5 s */
        usleep(10000);
        serene_get_stats(ctx[0], &st);
    }
    assert_true(st.pkts_sent > 1);
    double t0 = tc_now_ms();
    assert_int_equal(serene_allreduce(ctx[0], x0, z, N, SERENE_SUM), SERENE_ERR_CONCURRENT);
    serene_op *op = (serene_op *)&st;
    assert_int_equal(serene_push_start(ctx[0], 0, x0, 1, &op), SERENE_ERR_CONCURRENT);
    assert_null(op);
    assert_int_equal(serene_clock(ctx[0]), SERENE_ERR_CONCURRENT);
    serene_ctx *keep = ctx[0];
    serene_ctx_destroy(&keep); /* refused: the other thread is inside */
    assert_non_null(keep);
    assert_true(tc_now_ms() - t0 < 2000);
    assert_int_equal(serene_allreduce(ctx[1], x1, y1, N, SERENE_SUM), 0);
    pthread_join(th, NULL);
    assert_int_equal(c0.rc, 0);
    for (int i = 0; i < N; i++)
        assert_true(y0[i] == 3.0f * (float)i && y1[i] == y0[i]);
    destroy_job(ctx, 2);
}

/* Calls through a stale copy of a destroyed context's handle, and its op
 * handles: INVAL at once; destroying it again is a no-op. */
static void test_destroyed_context(void **state)
{
    (void)state;
    serene_ctx *ctx[1];
    float x[10] = {1}, y[10];
    create_job(ctx, 3, 1);
    serene_ctx *copy = ctx[0], *copy2 = ctx[0];
    serene_op *op, *op_copy;
    assert_int_equal(serene_allreduce_start(ctx[0], x, y, 10, SERENE_SUM, &op), 0);
    op_copy = op;
    assert_int_equal(serene_op_wait(&op), 0);
    assert_int_equal(serene_allreduce_start(ctx[0], x, y, 10, SERENE_SUM, &op), 0);
    serene_ctx_destroy(&ctx[0]); /* op abandoned */
    double t0 = tc_now_ms();
    assert_int_equal(serene_allreduce(copy, x, y, 10, SERENE_SUM), SERENE_ERR_INVAL);
    assert_int_equal(serene_push(copy, 0, x, 1), SERENE_ERR_INVAL);
    assert_int_equal(serene_clock(copy), SERENE_ERR_INVAL);
    serene_stats st;
    assert_int_equal(serene_get_stats(copy, &st), SERENE_ERR_INVAL);
    serene_clock_info ci;
    assert_int_equal(serene_get_clock_info(copy, &ci), SERENE_ERR_INVAL);
    assert_int_equal(serene_store_capacity(copy), 0);
    assert_int_equal(serene_op_test(op), SERENE_ERR_INVAL);
    assert_int_equal(serene_op_wait(&op), SERENE_ERR_INVAL);
    assert_int_equal(serene_op_wait(&op_copy), SERENE_ERR_INVAL);
    serene_ctx_destroy(&copy); /* no double free */
    assert_null(copy);
    assert_true(tc_now_ms() - t0 < 2000);
    /* A new context never answers to the old handle. */
    serene_ctx *fresh[1];
    create_job(fresh, 3, 1);
    assert_ptr_not_equal(fresh[0], copy2);
    assert_int_equal(serene_allreduce(copy2, x, y, 10, SERENE_SUM), SERENE_ERR_INVAL);
    serene_ctx_destroy(&copy2);
    assert_int_equal(serene_allreduce(fresh[0], x, y, 10, SERENE_SUM), 0);
    destroy_job(fresh, 1);
}

/* The typed allreduce and the stream mode misused: bad dtype, flags and
 * counts refused at once; 16-bit and 32-bit workers in one call get
 * MISMATCH; the stream mode's bound asked for a clock not started, or
 * mixed with serene_clock, refused; a destroyed context's stream calls
 * INVAL. */
static void test_typed_and_stream(void **state)
{
    (void)state;
    serene_ctx *ctx[2];
    float x[64], y[64];
    uint16_t hx[64], hy[64];
    serene_op *op = NULL;
    serene_sync_mode mode;
    uint32_t s;
    for (int i = 0; i < 64; i++) {
        x[i] = 1.0f;
        hx[i] = 0x3c00; /* 1.0 in float16 */
    }
    create_job(ctx, 3, 1);
    serene_ctx *c = ctx[0];
    assert_int_equal(serene_allreduce_typed(c, x, y, 64, (serene_dtype)3, SERENE_SUM, 0),
                     SERENE_ERR_INVAL);
    assert_int_equal(serene_allreduce_typed(c, x, y, 64, SERENE_FLOAT32, SERENE_SUM,
                                            SERENE_WIRE16 | SERENE_WIRE32), SERENE_ERR_INVAL);
    assert_int_equal(serene_allreduce_typed(c, x, y, 64, SERENE_FLOAT32, SERENE_SUM, 0x4u),
                     SERENE_ERR_INVAL);
    assert_int_equal(serene_allreduce_typed(c, x, y, (size_t)1 << 31, SERENE_FLOAT32, SERENE_SUM, 0),
                     SERENE_ERR_INVAL);
    assert_int_equal(serene_allreduce_typed(c, NULL, y, 64, SERENE_FLOAT16, SERENE_SUM, 0),
                     SERENE_ERR_INVAL);
    /* float16 in, partly overlapping out (by a byte): refused. */
    assert_int_equal(serene_allreduce_typed(c, hx, (uint8_t *)hx + 1, 64, SERENE_FLOAT16,
                                            SERENE_SUM, 0), SERENE_ERR_INVAL);
    assert_int_equal(serene_allreduce_typed(c, hx, hy, 64, SERENE_FLOAT16, SERENE_AVG, 0), 0);
    assert_int_equal(hy[63], 0x3c00);
    assert_int_equal(serene_allreduce_typed_start(c, x, y, 64, SERENE_FLOAT32, SERENE_SUM,
                                                  SERENE_WIRE16, NULL), SERENE_ERR_INVAL);
    /* Refused calls fix no mode: a step beyond the store, a stream call
     * without a buffer; the stream mode is still open below. */
    assert_int_equal(serene_step(c, (size_t)1 << 40, x, y, 64, 0), SERENE_ERR_RANGE);
    assert_int_equal(serene_stale_start(c, NULL, y, 64, SERENE_FLOAT32, SERENE_SUM, 0, &op),
                     SERENE_ERR_INVAL);
    assert_null(op);
    /* The stream mode: no clock started yet. */
    assert_int_equal(serene_stale_bound(c, 0, &mode, &s), SERENE_ERR_INVAL);
    assert_int_equal(serene_stale_start(c, x, y, 64, SERENE_FLOAT32, SERENE_SUM, 0, &op), 0);
    assert_int_equal(serene_stale_bound(c, 0, &mode, NULL), SERENE_ERR_INVAL);
    assert_int_equal(serene_stale_bound(c, 0, &mode, &s), 0);
    assert_int_equal(mode, SERENE_SYNC_BSP);
    assert_int_equal(s, 0);
    assert_int_equal(serene_stale_bound(c, 1, &mode, &s), SERENE_ERR_INVAL); /* not started */
    assert_int_equal(serene_op_wait(&op), 0);
    assert_true(y[0] == 1.0f);
    assert_int_equal(serene_clock(c), SERENE_ERR_INVAL); /* the stream mode has it */
    destroy_job(ctx, 1);
    /* serene_clock first: the stream mode is refused. */
    create_job(ctx, 3, 1);
    assert_int_equal(serene_stale_start(ctx[0], x, y, 0, (serene_dtype)9, SERENE_SUM, 0, &op),
                     SERENE_ERR_INVAL); /* refused: the classic calls stay open */
    assert_int_equal(serene_clock(ctx[0]), 0);
    assert_int_equal(serene_stale_start(ctx[0], x, y, 64, SERENE_FLOAT32, SERENE_SUM, 0, &op),
                     SERENE_ERR_INVAL);
    assert_null(op);
    serene_ctx *copy = ctx[0];
    destroy_job(ctx, 1);
    assert_int_equal(serene_stale_start(copy, x, y, 64, SERENE_FLOAT32, SERENE_SUM, 0, &op),
                     SERENE_ERR_INVAL);
    assert_int_equal(serene_stale_bound(copy, 0, &mode, &s), SERENE_ERR_INVAL);
    /* Two workers, one on 16 bits and one on 32: MISMATCH for both. */
    create_job(ctx, 1, 2);
    serene_op *a = NULL, *b = NULL;
    assert_int_equal(serene_allreduce_typed_start(ctx[0], x, y, 64, SERENE_FLOAT32, SERENE_SUM,
                                                  SERENE_WIRE16, &a), 0);
    float y2[64];
    assert_int_equal(serene_allreduce_typed_start(ctx[1], x, y2, 64, SERENE_FLOAT32, SERENE_SUM,
                                                  SERENE_WIRE32, &b), 0);
    double t0 = tc_now_ms();
    assert_int_equal(serene_op_wait(&a), SERENE_ERR_MISMATCH);
    assert_int_equal(serene_op_wait(&b), SERENE_ERR_MISMATCH);
    assert_true(tc_now_ms() - t0 < 5000);
    destroy_job(ctx, 2);
}

/* An allreduce whose deadline passes while it waits behind another op
 * (a clock held by the barrier for a worker that never clocks) never goes
 * out, and the other workers make that call without this one: like any
 * allreduce that times out, it breaks the context, so the next allreduce
 * is refused at once instead of pairing with the others' earlier call. */
static void test_expired_in_queue(void **state)
{
    (void)state;
    serene_ctx *ctx[2];
    uint32_t nonce = next_nonce++;
    for (int r = 0; r < 2; r++) {
        serene_config cfg;
        base_cfg(&cfg, 1, r, 2, nonce);
        cfg.timeout_ms = 400;
        assert_int_equal(serene_ctx_create(&ctx[r], &cfg), 0);
    }
    float x[64] = {1}, y[64];
    serene_op *clk, *ar;
    /* Back to back: the allreduce's deadline is microseconds after the
     * clock's, and it begins only once the clock has timed out. */
    assert_int_equal(serene_clock_start(ctx[0], &clk), 0);
    assert_int_equal(serene_allreduce_start(ctx[0], x, y, 64, SERENE_SUM, &ar), 0);
    double t0 = tc_now_ms();
    assert_int_equal(serene_op_wait(&clk), SERENE_ERR_TIMEOUT);
    assert_int_equal(serene_op_wait(&ar), SERENE_ERR_TIMEOUT);
    assert_int_equal(serene_allreduce(ctx[0], x, y, 64, SERENE_SUM), SERENE_ERR_BROKEN);
    assert_true(tc_now_ms() - t0 < 5000);
    destroy_job(ctx, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_mismatch),
        cmocka_unit_test(test_stale_op_handle),
        cmocka_unit_test(test_two_threads_one_context),
        cmocka_unit_test(test_destroyed_context),
        cmocka_unit_test(test_typed_and_stream),
        cmocka_unit_test(test_expired_in_queue),
    };
    return cmocka_run_group_tests_name("misuse", tests, start_switch, stop_switch);
}
