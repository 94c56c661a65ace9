/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config.c - serene_config_from_env's syntax: every integer variable
 * is plain decimal (leading zeros are not octal; no sign, blank, 0x or
 * exponent), range-checked; SERENE_SWITCH and SERENE_BIND take a strict
 * decimal port and no blanks; a refused value leaves its field alone and
 * the error, logged through the config's log_fn, names the variable.
 *
 * Rank and world size come from SERENE_* first, then torchrun, Open MPI,
 * Slurm, a pair never mixed across families (test_launcher_precedence).
 *
 * Each test starts and ends with every SERENE_* variable it knows unset,
 * so the developer's own environment cannot change the verdicts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "serene/serene.h"

static const char *const all_vars[] = {
    "SERENE_RANK",        "SERENE_WORLD_SIZE", "SERENE_JOB",          "SERENE_JOB_NONCE",
    "SERENE_TIMEOUT_MS",  "SERENE_RTO_US",     "SERENE_RTO_MAX_US",   "SERENE_RETRY_LIMIT",
    "SERENE_WINDOW",      "SERENE_CPU_MASK",   "SERENE_STORE_FRAC_BITS", "SERENE_LOG_LEVEL",
    "SERENE_SWITCH",      "SERENE_BIND",       "SERENE_TRANSPORT",    "SERENE_PCAP",
    "SERENE_DPDK_EAL_ARGS", "SERENE_DPDK_PORT", "SERENE_DPDK_MAC",     "SERENE_DPDK_PEER_MAC",
    "SERENE_UDP_GSO",
    /* The launchers' (torchrun, Open MPI, Slurm) that fill rank and world size. */
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "SLURM_PROCID", "SLURM_NTASKS",
};

/* The int fields and the range each variable documents. */
static const struct {
    const char *name;
    size_t off;
    long long lo, hi;
} int_vars[] = {
    {"SERENE_RANK", offsetof(serene_config, rank), 0, 63},
    {"SERENE_WORLD_SIZE", offsetof(serene_config, world_size), 1, 64},
    {"SERENE_JOB", offsetof(serene_config, job_id), 0, 65535},
    {"SERENE_TIMEOUT_MS", offsetof(serene_config, timeout_ms), 1, 2147483647},
    {"SERENE_RTO_US", offsetof(serene_config, rto_us), 1, 2147483647},
    {"SERENE_RTO_MAX_US", offsetof(serene_config, rto_max_us), 1, 2147483647},
    {"SERENE_RETRY_LIMIT", offsetof(serene_config, retry_limit), 0, 2147483647},
    {"SERENE_WINDOW", offsetof(serene_config, window), 0, 32768},
    {"SERENE_STORE_FRAC_BITS", offsetof(serene_config, store_frac_bits), 0, 30},
};

/* Everything the library logged during one serene_config_from_env. */
static char logged[4096];

static void capture(void *cookie, serene_log_level level, const char *msg)
{
    (void)cookie;
    (void)level;
    size_t len = strlen(logged);
    snprintf(logged + len, sizeof logged - len, "%s\n", msg);
}

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++)
        unsetenv(all_vars[i]);
    return 0;
}

/* serene_config_from_env on defaults with only NAME=VAL set. */
static int from_env1(const char *name, const char *val, serene_config *cfg)
{
    serene_config_init(cfg);
    cfg->log_fn = capture;
    logged[0] = '\0';
    setenv(name, val, 1);
    int rc = serene_config_from_env(cfg);
    unsetenv(name);
    return rc;
}

static int int_field(const serene_config *cfg, size_t off)
{
    int v;
    memcpy(&v, (const char *)cfg + off, sizeof v);
    return v;
}

/* NAME=VAL is refused: SERENE_ERR_CONFIG, the config untouched, and a
 * message that quotes the variable, not the field it fills. */
static void expect_refused(const char *name, const char *val)
{
    serene_config cfg, def;
    serene_config_init(&def);
    def.log_fn = capture;
    char want[64];
    snprintf(want, sizeof want, "%s=\"", name);
    int rc = from_env1(name, val, &cfg);
    if (rc != SERENE_ERR_CONFIG || memcmp(&cfg, &def, sizeof cfg) || !strstr(logged, want))
        fail_msg("%s=\"%s\": rc %d (want %d), config %s, logged \"%s\"", name, val, rc,
                 SERENE_ERR_CONFIG, memcmp(&cfg, &def, sizeof cfg) ? "changed" : "untouched",
                 logged);
}

static void test_int_decimal(void **state)
{
    (void)state;
    serene_config cfg;
    for (size_t i = 0; i < sizeof int_vars / sizeof int_vars[0]; i++) {
        const char *name = int_vars[i].name;
        /* Leading zeros are decimal: "010" is ten, not eight; "08" is eight. */
        static const struct {
            const char *s;
            int v;
        } ok[] = {{"010", 10}, {"08", 8}, {"0009", 9}, {"10", 10}};
        for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
            if (ok[k].v < int_vars[i].lo || ok[k].v > int_vars[i].hi)
                continue;
            int rc = from_env1(name, ok[k].s, &cfg);
            if (rc != 0 || int_field(&cfg, int_vars[i].off) != ok[k].v)
                fail_msg("%s=\"%s\": rc %d, value %d, want %d (log: %s)", name, ok[k].s, rc,
                         int_field(&cfg, int_vars[i].off), ok[k].v, logged);
        }
        char edge[32];
        snprintf(edge, sizeof edge, "%lld", int_vars[i].hi);
        assert_int_equal(from_env1(name, edge, &cfg), 0);
        assert_int_equal(int_field(&cfg, int_vars[i].off), (int)int_vars[i].hi);
        snprintf(edge, sizeof edge, "%lld", int_vars[i].lo);
        assert_int_equal(from_env1(name, edge, &cfg), 0);
        assert_int_equal(int_field(&cfg, int_vars[i].off), (int)int_vars[i].lo);
    }
    assert_int_equal(from_env1("SERENE_JOB_NONCE", "010", &cfg), 0);
    assert_int_equal(cfg.job_nonce, 10);
    assert_int_equal(from_env1("SERENE_JOB_NONCE", "4294967295", &cfg), 0);
    assert_true(cfg.job_nonce == 4294967295u);
    assert_int_equal(from_env1("SERENE_CPU_MASK", "3", &cfg), 0);
    assert_int_equal(cfg.cpu_mask, 3);
    assert_int_equal(from_env1("SERENE_CPU_MASK", "01", &cfg), 0);
    assert_int_equal(cfg.cpu_mask, 1);
    assert_int_equal(from_env1("SERENE_LOG_LEVEL", "03", &cfg), 0);
    assert_int_equal(cfg.log_level, SERENE_LOG_DEBUG);
    assert_int_equal(from_env1("SERENE_LOG_LEVEL", "info", &cfg), 0);
    assert_int_equal(cfg.log_level, SERENE_LOG_INFO);
    assert_int_equal(cfg.udp_gso_off, 0);
    assert_int_equal(from_env1("SERENE_UDP_GSO", "0", &cfg), 0);
    assert_int_equal(cfg.udp_gso_off, 1);
    assert_int_equal(from_env1("SERENE_UDP_GSO", "1", &cfg), 0);
    assert_int_equal(cfg.udp_gso_off, 0);
}

/* Not decimal digits, or out of range: the same rule for every variable. */
static const char *const bad_ints[] = {
    " 1", "1 ", "100 ", "+1", "-1", "-0", "0x8", "0X8", "1e3", "", "1.0", "1 0", "\t1", "1\n",
    "x", "1x", "2147483648", "4294967296", "99999999999999999999999999",
};

static void test_int_refused(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof int_vars / sizeof int_vars[0]; i++) {
        for (size_t k = 0; k < sizeof bad_ints / sizeof bad_ints[0]; k++)
            expect_refused(int_vars[i].name, bad_ints[k]);
        char over[32];
        snprintf(over, sizeof over, "%lld", int_vars[i].hi + 1);
        expect_refused(int_vars[i].name, over);
        if (int_vars[i].lo > 0)
            expect_refused(int_vars[i].name, "0");
    }
    const char *const unsigned_vars[] = {"SERENE_JOB_NONCE", "SERENE_CPU_MASK"};
    for (size_t i = 0; i < 2; i++)
        for (size_t k = 0; k < sizeof bad_ints / sizeof bad_ints[0]; k++)
            if (strcmp(bad_ints[k], "2147483648"))
                expect_refused(unsigned_vars[i], bad_ints[k]);
    /* The 0x form the mask was once documented with. */
    expect_refused("SERENE_CPU_MASK", "0x3");
    expect_refused("SERENE_UDP_GSO", "2");
    expect_refused("SERENE_UDP_GSO", "off");
    expect_refused("SERENE_JOB_NONCE", "0xdeadbeef");
    expect_refused("SERENE_LOG_LEVEL", "+1");
    expect_refused("SERENE_LOG_LEVEL", " 1");
    expect_refused("SERENE_LOG_LEVEL", "0x1");
    expect_refused("SERENE_LOG_LEVEL", "4");
}

/* The message says what was wrong with which variable, and what it wants. */
static void test_message_names_variable(void **state)
{
    (void)state;
    serene_config cfg;
    assert_int_equal(from_env1("SERENE_RANK", "+1", &cfg), SERENE_ERR_CONFIG);
    assert_non_null(strstr(logged, "SERENE_RANK=\"+1\""));
    assert_non_null(strstr(logged, "0..63"));
    assert_int_equal(from_env1("SERENE_TIMEOUT_MS", "99999999999", &cfg), SERENE_ERR_CONFIG);
    assert_non_null(strstr(logged, "SERENE_TIMEOUT_MS=\"99999999999\""));
    assert_non_null(strstr(logged, "out of range"));
    assert_int_equal(from_env1("SERENE_SWITCH", "127.0.0.1:65536", &cfg), SERENE_ERR_CONFIG);
    assert_non_null(strstr(logged, "SERENE_SWITCH=\"127.0.0.1:65536\""));
    assert_null(strstr(logged, "switch_addr"));
    assert_int_equal(from_env1("SERENE_BIND", "127.0.0.1: 5", &cfg), SERENE_ERR_CONFIG);
    assert_non_null(strstr(logged, "SERENE_BIND=\"127.0.0.1: 5\""));
    assert_null(strstr(logged, "bind_addr"));
}

static void test_switch_addr(void **state)
{
    (void)state;
    serene_config cfg;
    const char *const ok[] = {"127.0.0.1:48200", "localhost:9", "10.1.2.3:1", "sw-1.lab_2:65535",
                              "127.0.0.1:010"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        if (from_env1("SERENE_SWITCH", ok[i], &cfg) != 0)
            fail_msg("SERENE_SWITCH=\"%s\" refused: %s", ok[i], logged);
        assert_string_equal(cfg.switch_addr, ok[i]);
    }
    const char *const bad[] = {
        "127.0.0.1: 48200", ":+5", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:5 ",
        " 127.0.0.1:5", "127.0.0.1 :5", "127.0.0.1:+5", "127.0.0.1:-5", "127.0.0.1:0x10",
        "127.0.0.1:0", "127.0.0.1", ":5", "", ":", "a:b:5", "127.0.0.1:99999999999999999999",
        "local host:5", "127.0.0.1:5\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_refused("SERENE_SWITCH", bad[i]);
}

static void test_bind_addr(void **state)
{
    (void)state;
    serene_config cfg;
    const char *const ok[] = {"", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:40000", ":5",
                              "localhost:65535", "0.0.0.0"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        if (from_env1("SERENE_BIND", ok[i], &cfg) != 0)
            fail_msg("SERENE_BIND=\"%s\" refused: %s", ok[i], logged);
        assert_string_equal(cfg.bind_addr, ok[i]);
    }
    const char *const bad[] = {
        "127.0.0.1: 5", " 127.0.0.1", "127.0.0.1 ", "127.0.0.1:", ":", "127.0.0.1:65536",
        ":+5", "127.0.0.1:5 ", "a b", "127.0.0.1:0x10", "a:b:5", " ",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_refused("SERENE_BIND", bad[i]);
}

/* Set "NAME=VAL" pairs (NULL-terminated), run serene_config_from_env on
 * defaults, unset them again. */
static int from_env_list(const char *const *vars, serene_config *cfg)
{
    serene_config_init(cfg);
    cfg->log_fn = capture;
    logged[0] = '\0';
    for (const char *const *v = vars; *v; v++) {
        char name[64];
        const char *eq = strchr(*v, '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - *v), *v);
        setenv(name, eq + 1, 1);
    }
    int rc = serene_config_from_env(cfg);
    clear_env(NULL);
    return rc;
}

static void test_launcher_precedence(void **state)
{
    (void)state;
    static const struct {
        const char *vars[8];
        int rc, rank, size; /* rc 0: rank and size expected */
        const char *says;   /* in the log when refused */
    } cases[] = {
        {{"RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", NULL}, 0, 1, 4, NULL},
        {{"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=3", NULL}, 0, 2, 3, NULL},
        {{"SLURM_PROCID=5", "SLURM_NTASKS=8", NULL}, 0, 5, 8, NULL},
        /* SERENE_* first: the launchers' pairs are then ignored, even if bad. */
        {{"SERENE_RANK=3", "SERENE_WORLD_SIZE=6", "RANK=1", "WORLD_SIZE=2", NULL}, 0, 3, 6, NULL},
        {{"SERENE_RANK=2", "RANK=x", "OMPI_COMM_WORLD_RANK=1", NULL}, 0, 2, 1, NULL},
        /* torchrun before Open MPI before Slurm. */
        {{"RANK=1", "WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=3",
          "SLURM_PROCID=4", "SLURM_NTASKS=5", NULL}, 0, 1, 2, NULL},
        {{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=3", "SLURM_PROCID=4",
          "SLURM_NTASKS=5", NULL}, 0, 0, 3, NULL},
        /* A half pair is refused, never completed from the next family. */
        {{"RANK=1", "OMPI_COMM_WORLD_SIZE=3", NULL}, SERENE_ERR_CONFIG, 0, 0,
         "RANK is set but WORLD_SIZE is not"},
        {{"OMPI_COMM_WORLD_SIZE=3", "SLURM_PROCID=1", "SLURM_NTASKS=2", NULL}, SERENE_ERR_CONFIG,
         0, 0, "OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not"},
        {{"SLURM_PROCID=1", NULL}, SERENE_ERR_CONFIG, 0, 0, "SLURM_PROCID is set but"},
        /* Their values obey SERENE_*'s syntax and ranges, named as typed. */
        {{"RANK=01", "WORLD_SIZE=+2", NULL}, SERENE_ERR_CONFIG, 0, 0, "WORLD_SIZE=\"+2\""},
        {{"SLURM_PROCID=64", "SLURM_NTASKS=65", NULL}, SERENE_ERR_CONFIG, 0, 0,
         "SLURM_PROCID=\"64\" is out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        serene_config cfg;
        int rc = from_env_list(cases[i].vars, &cfg);
        if (rc != cases[i].rc)
            fail_msg("case %zu (%s ...): rc %d, want %d; logged \"%s\"", i, cases[i].vars[0], rc,
                     cases[i].rc, logged);
        if (!rc && (cfg.rank != cases[i].rank || cfg.world_size != cases[i].size))
            fail_msg("case %zu (%s ...): rank %d size %d, want %d %d", i, cases[i].vars[0],
                     cfg.rank, cfg.world_size, cases[i].rank, cases[i].size);
        if (rc && !strstr(logged, cases[i].says))
            fail_msg("case %zu: logged \"%s\", not \"%s\"", i, logged, cases[i].says);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_int_decimal, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_int_refused, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_message_names_variable, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_switch_addr, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_bind_addr, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_launcher_precedence, clear_env, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
