/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api.c - the public API's contract against a real serene-switch
 * (started here from $SERENE_SWITCH_BIN on an ephemeral loopback port):
 * error codes and messages, configuration and environment, argument
 * checks, deadlines, the non-blocking form, NaN/Inf propagation, and
 * several contexts in one process (no global state).
 */
#include <errno.h>
#include <math.h>
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

/* Jobs: 1 (N=2), 2 (N=1), 3 (N=2, 16 values per packet, 4 slots), 4 (N=1,
 * 8 values per packet, no slots: the Tofino program's JOIN_ACK). */
static int start_switch(void **state)
{
    (void)state;
    static const char *const args[] = {"--job", "1:2", "--job", "2:1", "--job", "3:2:16:4", "--job", "4:1:8:0",
                                        NULL};
    return sw_start(&sw, NULL, args);
}

static int stop_switch(void **state)
{
    (void)state;
    sw_cleanup(&sw);
    return 0;
}

static void base_cfg(serene_config *cfg, int job, int rank, int n)
{
    sw_worker_config(&sw, cfg, job, rank, n);
    cfg->timeout_ms = 5000;
    cfg->log_fn = sw_quiet_log;
}

/* The last error message logged, for the cases that check what it says. */
static char last_err[512];
static void capture_log(void *cookie, serene_log_level level, const char *msg)
{
    (void)cookie;
    if (level == SERENE_LOG_ERROR)
        snprintf(last_err, sizeof last_err, "%s", msg);
}

/* Does this host list no RDMA device? (What libibverbs reads.) */
static int no_rdma_devices(void)
{
    FILE *f = popen("ls /sys/class/infiniband 2>/dev/null | wc -l", "r");
    int n = -1;
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        pclose(f);
    }
    return n == 0;
}

/* The rdma transport refuses cleanly, naming why: no RDMA device on this
 * host, or none of the name asked for. Not built, it is UNSUPPORTED. */
static void test_rdma_refusal(void **state)
{
    (void)state;
    serene_config cfg;
    serene_ctx *ctx = (serene_ctx *)&cfg;
    base_cfg(&cfg, 1, 0, 2);
    cfg.log_fn = capture_log;
    snprintf(cfg.transport, sizeof cfg.transport, "rdma:sr-nodev9");
    last_err[0] = '\0';
#ifdef SERENE_HAVE_RDMA
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_NODEV);
    assert_null(ctx);
    print_message("rdma:sr-nodev9: %s\n", last_err);
    assert_true(strstr(last_err, "no RDMA device found") ||
                strstr(last_err, "RDMA device \"sr-nodev9\" not found"));
    if (no_rdma_devices()) {
        snprintf(cfg.transport, sizeof cfg.transport, "rdma");
        last_err[0] = '\0';
        assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_NODEV);
        print_message("rdma: %s\n", last_err);
        assert_non_null(strstr(last_err, "rdma: no RDMA device found"));
    }
    assert_string_equal(serene_err_name(SERENE_ERR_NODEV), "SERENE_ERR_NODEV");
#else
    (void)no_rdma_devices;
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_UNSUPPORTED);
    assert_non_null(strstr(last_err, "is not built into this libserene"));
#endif
}

static void test_errors_and_version(void **state)
{
    (void)state;
    int codes[] = {SERENE_ERR_INVAL,    SERENE_ERR_NOMEM,       SERENE_ERR_TIMEOUT,
                   SERENE_ERR_NONFINITE, SERENE_ERR_CONFIG,     SERENE_ERR_TRANSPORT,
                   SERENE_ERR_UNSUPPORTED, SERENE_ERR_NOJOB,    SERENE_ERR_NOTMEMBER,
                   SERENE_ERR_PROTO,    SERENE_ERR_MISMATCH,    SERENE_ERR_BROKEN,
                   SERENE_ERR_BUSY,     SERENE_ERR_AGAIN,       SERENE_ERR_STALE,
                   SERENE_ERR_RANGE,    SERENE_ERR_SHUTDOWN,    SERENE_ERR_JOB_IN_USE,
                   SERENE_ERR_CONCURRENT, SERENE_ERR_DENIED,    SERENE_ERR_NODEV};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        assert_true(codes[i] <= SERENE_ERR_BASE_);
        assert_string_not_equal(serene_strerror(codes[i]), "unknown error");
        assert_memory_equal(serene_err_name(codes[i]), "SERENE_ERR_", 11);
        for (size_t k = 0; k < i; k++)
            assert_int_not_equal(codes[i], codes[k]);
    }
    assert_string_equal(serene_err_name(SERENE_ERR_TIMEOUT), "SERENE_ERR_TIMEOUT");
    assert_string_equal(serene_err_name(0), "SERENE_OK");
    assert_string_equal(serene_err_name(-ENOMEM), "ENOMEM");
    assert_string_equal(serene_strerror(-EINVAL), strerror(EINVAL));
    assert_string_equal(serene_err_name(-5000), "SERENE_ERR_UNKNOWN");
    assert_string_equal(serene_version(), SERENE_VERSION_STRING);
    assert_int_equal(serene_version_int(), (unsigned)(SERENE_VERSION_MAJOR << 16 |
                                                      SERENE_VERSION_MINOR << 8 |
                                                      SERENE_VERSION_PATCH));
}

static void test_config_env(void **state)
{
    (void)state;
    serene_config cfg;
    serene_config_init(&cfg);
    assert_int_equal(cfg.world_size, 1);
    assert_int_equal(cfg.timeout_ms, 30000);
    assert_string_equal(cfg.switch_addr, "127.0.0.1:48200");
    assert_string_equal(cfg.transport, "udp");
    setenv("SERENE_RANK", "2", 1);
    setenv("SERENE_WORLD_SIZE", "4", 1);
    setenv("SERENE_JOB_NONCE", "3735928559", 1); /* decimal only: 0xdeadbeef */
    setenv("SERENE_LOG_LEVEL", "debug", 1);
    setenv("SERENE_SWITCH", "10.1.2.3:9", 1);
    assert_int_equal(serene_config_from_env(&cfg), 0);
    assert_int_equal(cfg.rank, 2);
    assert_int_equal(cfg.world_size, 4);
    assert_int_equal(cfg.job_nonce, 0xdeadbeefu);
    assert_int_equal(cfg.log_level, SERENE_LOG_DEBUG);
    assert_string_equal(cfg.switch_addr, "10.1.2.3:9");
    char buf[1024];
    int len = serene_config_dump(&cfg, buf, sizeof buf);
    assert_true(len > 0 && len < (int)sizeof buf);
    assert_non_null(strstr(buf, "world_size = 4\n"));
    assert_non_null(strstr(buf, "switch_addr = 10.1.2.3:9\n"));
    /* Malformed values are refused, each with SERENE_ERR_CONFIG. */
    const char *bad[][2] = {{"SERENE_RANK", "x"},          {"SERENE_WORLD_SIZE", "0"},
                            {"SERENE_WORLD_SIZE", "65"},   {"SERENE_JOB", "70000"},
                            {"SERENE_TIMEOUT_MS", "-1"},   {"SERENE_LOG_LEVEL", "loud"},
                            {"SERENE_CPU_MASK", "12abc"},  {"SERENE_RTO_US", ""}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        serene_config c2;
        serene_config_init(&c2);
        c2.log_fn = sw_quiet_log;
        setenv(bad[i][0], bad[i][1], 1);
        assert_int_equal(serene_config_from_env(&c2), SERENE_ERR_CONFIG);
        unsetenv(bad[i][0]);
    }
    unsetenv("SERENE_RANK");
    unsetenv("SERENE_WORLD_SIZE");
    unsetenv("SERENE_JOB_NONCE");
    unsetenv("SERENE_LOG_LEVEL");
    unsetenv("SERENE_SWITCH");
}

static void test_create_errors(void **state)
{
    (void)state;
    serene_config cfg;
    serene_config_init(&cfg);
    serene_ctx *ctx = (serene_ctx *)&cfg; /* must be reset to NULL on error */
    assert_int_equal(serene_ctx_create(NULL, &cfg), SERENE_ERR_INVAL);
    assert_int_equal(serene_ctx_create(&ctx, NULL), SERENE_ERR_INVAL);
    assert_null(ctx);
    base_cfg(&cfg, 1, 2, 2); /* rank outside 0..1 */
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_CONFIG);
    base_cfg(&cfg, 1, 0, 2);
#ifndef SERENE_HAVE_RDMA
    snprintf(cfg.transport, sizeof cfg.transport, "rdma"); /* known, not built */
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_UNSUPPORTED);
#endif
    snprintf(cfg.transport, sizeof cfg.transport, "carrier-pigeon");
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_CONFIG);
    base_cfg(&cfg, 1, 0, 2);
    snprintf(cfg.switch_addr, sizeof cfg.switch_addr, "127.0.0.1:notaport");
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_CONFIG);
    /* Set in code, the port follows the environment's rule: decimal only. */
    const char *loose[] = {"127.0.0.1: 9", "127.0.0.1:+9", "127.0.0.1:0x10", "127.0.0.1:9 ",
                           "127.0.0.1:65536", "127.0.0.1:99999999999999999999"};
    for (size_t i = 0; i < sizeof loose / sizeof loose[0]; i++) {
        snprintf(cfg.switch_addr, sizeof cfg.switch_addr, "%s", loose[i]);
        assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_CONFIG);
    }
    base_cfg(&cfg, 1, 0, 2);
    cfg.reserved_[sizeof cfg.reserved_ - 1] = 1;
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_CONFIG);
    base_cfg(&cfg, 1, 0, 2);
    cfg.udp_gso_off = 2;
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_CONFIG);
    /* The switch's answers. */
    base_cfg(&cfg, 9, 0, 2);
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_NOJOB);
    base_cfg(&cfg, 1, 0, 3); /* job 1 has 2 workers */
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_CONFIG);
    base_cfg(&cfg, 3, 0, 2);
    cfg.window = 5; /* job 3 has 4 slots */
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_CONFIG);
    /* Nobody listening: a timeout within the deadline, not a hang. */
    base_cfg(&cfg, 1, 0, 2);
    snprintf(cfg.switch_addr, sizeof cfg.switch_addr, "127.0.0.1:9");
    cfg.timeout_ms = 300;
    double t0 = tc_now_ms();
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_TIMEOUT);
    assert_true(tc_now_ms() - t0 < 300 + 2000); /* slack for a loaded host */
    assert_null(ctx);
    serene_ctx_destroy(&ctx); /* NULL is fine */
    serene_ctx_destroy(NULL);
}

static void test_single_worker_and_args(void **state)
{
    (void)state;
    serene_config cfg;
    base_cfg(&cfg, 2, 0, 1);
    cfg.job_nonce = 77;
    serene_ctx *ctx;
    assert_int_equal(serene_ctx_create(&ctx, &cfg), 0);
    serene_config eff;
    assert_int_equal(serene_ctx_config(ctx, &eff), 0);
    assert_int_equal(eff.window, 128);
    float x[600], y[600];
    for (int i = 0; i < 600; i++)
        x[i] = (float)i - 300.5f;
    assert_int_equal(serene_allreduce(ctx, x, y, 600, SERENE_SUM), 0);
    for (int i = 0; i < 600; i++)
        assert_true(y[i] == x[i]); /* N = 1: exact to the bit at these magnitudes */
    /* Arguments. */
    serene_op *op = (serene_op *)x;
    assert_int_equal(serene_allreduce(NULL, x, y, 1, SERENE_SUM), SERENE_ERR_INVAL);
    assert_int_equal(serene_allreduce(ctx, NULL, y, 1, SERENE_SUM), SERENE_ERR_INVAL);
    assert_int_equal(serene_allreduce(ctx, x, y, 1, (serene_reduce_op)7), SERENE_ERR_INVAL);
    assert_int_equal(serene_allreduce(ctx, x, x + 1, 10, SERENE_SUM), SERENE_ERR_INVAL);
    assert_int_equal(serene_allreduce_start(ctx, x, y, 1, SERENE_SUM, NULL), SERENE_ERR_INVAL);
    assert_int_equal(serene_op_wait(NULL), SERENE_ERR_INVAL);
    assert_int_equal(serene_op_test(NULL), SERENE_ERR_INVAL);
    /* 0 values: still a call, paired with the other workers' at the switch. */
    assert_int_equal(serene_allreduce_start(ctx, NULL, NULL, 0, SERENE_SUM, &op), 0);
    for (int i = 0; i < 500 && serene_op_test(op) == SERENE_ERR_AGAIN; i++) /* bounded: 5 s */
        usleep(10000);
    assert_int_equal(serene_op_test(op), 0);
    assert_int_equal(serene_op_wait(&op), 0);
    assert_null(op);
    /* A second context claiming the bound worker id: refused as stale. */
    serene_ctx *again;
    assert_int_equal(serene_ctx_create(&again, &cfg), SERENE_ERR_STALE);
    /* NaN in the input: the call completes with NONFINITE and NaN results,
     * and the context stays usable. */
    x[300] = NAN;
    assert_int_equal(serene_allreduce(ctx, x, y, 600, SERENE_SUM), SERENE_ERR_NONFINITE);
    assert_true(isnan(y[300]));
    x[300] = 1.0f;
    assert_int_equal(serene_allreduce(ctx, x, y, 600, SERENE_AVG), 0);
    assert_true(y[300] == 1.0f);
    serene_stats st;
    assert_int_equal(serene_get_stats(ctx, &st), 0);
    assert_true(st.pkts_sent > 0 && st.pkts_recv > 0);
    /* join, two sums and the call of 0 values; the NaN call is not a success */
    assert_int_equal(st.ops_completed, 4);
    serene_ctx_destroy(&ctx);
    assert_null(ctx);
}

/* A switch with no allreduce slots (pool 0): the worker joins, push, pull,
 * clock and step work with the default window, and allreduce is refused
 * with UNSUPPORTED and a message that says why, without breaking the
 * context. */
static void test_no_slots(void **state)
{
    (void)state;
    serene_config cfg;
    base_cfg(&cfg, 4, 0, 1);
    cfg.log_fn = capture_log;
    serene_ctx *ctx;
    assert_int_equal(serene_ctx_create(&ctx, &cfg), 0);
    serene_config eff;
    assert_int_equal(serene_ctx_config(ctx, &eff), 0);
    assert_int_equal(eff.window, 128);
    float x[100], y[100];
    for (int i = 0; i < 100; i++)
        x[i] = (float)i;
    serene_op *op = NULL;
    last_err[0] = '\0';
    assert_int_equal(serene_allreduce(ctx, x, y, 100, SERENE_SUM), SERENE_ERR_UNSUPPORTED);
    assert_non_null(strstr(last_err, "no allreduce slots"));
    assert_int_equal(serene_allreduce(ctx, NULL, NULL, 0, SERENE_SUM), SERENE_ERR_UNSUPPORTED);
    assert_int_equal(serene_allreduce_start(ctx, x, y, 100, SERENE_AVG, &op),
                     SERENE_ERR_UNSUPPORTED);
    assert_null(op);
    for (int c = 0; c < 3; c++) {
        assert_int_equal(serene_push(ctx, 5, x, 100), 0);
        assert_int_equal(serene_clock(ctx), 0);
    }
    assert_int_equal(serene_pull(ctx, 5, y, 100, 0), 0);
    for (int i = 0; i < 100; i++)
        assert_true(fabsf(y[i] - 3.0f * x[i]) <= 1e-3f);
    serene_ctx_destroy(&ctx);
    /* A window larger than the default is taken as asked. */
    base_cfg(&cfg, 4, 0, 1);
    cfg.window = 300;
    cfg.job_nonce = 4321;
    assert_int_equal(serene_ctx_create(&ctx, &cfg), 0);
    assert_int_equal(serene_ctx_config(ctx, &eff), 0);
    assert_int_equal(eff.window, 300);
    assert_int_equal(serene_push(ctx, 0, x, 100), 0);
    serene_ctx_destroy(&ctx);
}

/* Two contexts in one process, one per rank of a 2-worker job. */
static void test_two_contexts_nonfinite_and_busy(void **state)
{
    (void)state;
    serene_config c0, c1;
    base_cfg(&c0, 3, 0, 2);
    base_cfg(&c1, 3, 1, 2);
    c0.job_nonce = c1.job_nonce = 5;
    c0.max_ops = c1.max_ops = 2;
    serene_ctx *a, *b;
    assert_int_equal(serene_ctx_create(&a, &c0), 0);
    assert_int_equal(serene_ctx_create(&b, &c1), 0);
    enum { N = 1000 };
    static float xa[N], xb[N], ya[N], yb[N];
    for (int i = 0; i < N; i++) {
        xa[i] = (float)i;
        xb[i] = 0.5f * (float)i;
    }
    xb[40] = INFINITY; /* packet [32, 48) of 16 values */
    serene_op *oa, *ob;
    assert_int_equal(serene_allreduce_start(a, xa, ya, N, SERENE_SUM, &oa), 0);
    assert_int_equal(serene_allreduce_start(b, xb, yb, N, SERENE_SUM, &ob), 0);
    assert_int_equal(serene_op_wait(&oa), SERENE_ERR_NONFINITE);
    assert_int_equal(serene_op_wait(&ob), SERENE_ERR_NONFINITE);
    for (int i = 0; i < N; i++) {
        if (i >= 32 && i < 48) {
            assert_true(isnan(ya[i]) && isnan(yb[i]));
        } else {
            assert_true(ya[i] == 1.5f * (float)i && yb[i] == ya[i]);
        }
    }
    xb[40] = 1.0f;
    /* Both contexts still in step: two ops in flight each, then BUSY. */
    serene_op *a1, *a2, *a3, *b1, *b2;
    assert_int_equal(serene_allreduce_start(a, xa, ya, N, SERENE_SUM, &a1), 0);
    assert_int_equal(serene_allreduce_start(a, xa, xa, N, SERENE_SUM, &a2), 0);
    assert_int_equal(serene_allreduce_start(a, xa, ya, N, SERENE_SUM, &a3), SERENE_ERR_BUSY);
    assert_null(a3);
    assert_int_equal(serene_allreduce_start(b, xb, yb, N, SERENE_SUM, &b1), 0);
    assert_int_equal(serene_allreduce_start(b, xb, xb, N, SERENE_SUM, &b2), 0);
    assert_int_equal(serene_op_wait(&a2), 0); /* out of order waits are fine */
    assert_int_equal(serene_op_wait(&a1), 0);
    assert_int_equal(serene_op_wait(&b1), 0);
    assert_int_equal(serene_op_wait(&b2), 0);
    assert_true(ya[40] == 41.0f && yb[40] == 41.0f && xa[40] == 41.0f && xb[40] == 41.0f);
    /* Only one rank calls: a timeout by the deadline, then BROKEN. */
    serene_ctx_destroy(&b);
    serene_ctx_destroy(&a);
    c0.job_nonce = c1.job_nonce = 6; /* a new incarnation resets the job */
    c0.timeout_ms = 2000; /* the join's deadline too: 400 ms was short on a busy host */
    assert_int_equal(serene_ctx_create(&a, &c0), 0);
    double t0 = tc_now_ms();
    assert_int_equal(serene_allreduce(a, xa, ya, N, SERENE_SUM), SERENE_ERR_TIMEOUT);
    double ms = tc_now_ms() - t0;
    assert_true(ms >= 1950 && ms < 2000 + 2000); /* never early; late only by scheduling */
    assert_int_equal(serene_allreduce(a, xa, ya, N, SERENE_SUM), SERENE_ERR_BROKEN);
    serene_stats st;
    serene_get_stats(a, &st);
    assert_int_equal(st.timeouts, 1);
    /* It waited for its peer: it probed, and the switch held its packets. */
    assert_true(st.probes > 0 && st.held > 0);
    serene_ctx_destroy(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors_and_version),
        cmocka_unit_test(test_config_env),
        cmocka_unit_test(test_create_errors),
        cmocka_unit_test(test_rdma_refusal),
        cmocka_unit_test(test_single_worker_and_args),
        cmocka_unit_test(test_two_contexts_nonfinite_and_busy),
        cmocka_unit_test(test_no_slots),
    };
    return cmocka_run_group_tests_name("api", tests, start_switch, stop_switch);
}
