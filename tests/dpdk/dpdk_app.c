/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpdk_app.c - a DPDK application that uses Serene, for the dpdk suite.
 *
 *   dpdk_app app-eal EAL_ARGS PORT
 *       One rank (under serene-run: SERENE_RANK and friends set). The
 *       application starts EAL itself with EAL_ARGS ("%r" = rank) before
 *       creating a context, whose dpdk_eal_args is then deliberately
 *       invalid: it must be ignored because EAL is already up (EALREADY).
 *       Two contexts in turn on the same port (jobs SERENE_JOB and
 *       SERENE_JOB + 1): each runs allreduces whose sums are exact (small
 *       integers) and is destroyed; after each destroy, EAL and the port
 *       still work for the application, which cleans EAL up at the end.
 *   dpdk_app join-only PORT_SPEC
 *       One context whose port is a virtual device with arguments, probed
 *       by the library (e.g. net_pcap with a tx_pcap file): with nobody
 *       answering, serene_ctx_create must end with SERENE_ERR_TIMEOUT by
 *       its deadline, and the device must be gone afterwards.
 *
 * Exit status: 0 all checks passed; 1 a check failed; 2 bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_ethdev.h>

#include "serene/serene.h"
#include "timing.h"
#include "worker.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "dpdk_app: FAIL: " __VA_ARGS__);                                           \
        fputc('\n', stderr);                                                                       \
        return 1;                                                                                  \
    } while (0)

/* Sizes that cover one element, a packet boundary and many packets. */
static const size_t sizes[] = {1, 255, 257, 300000};

/* Allreduce on one context: rank r contributes (i % 97) - 48 + r, so the
 * sum over N ranks is N * ((i % 97) - 48) + N(N-1)/2, exact in float. */
static int run_ctx(const serene_config *cfg, const char *what)
{
    serene_ctx *ctx = NULL;
    int rc = serene_ctx_create(&ctx, cfg);
    if (rc)
        FAIL("%s: serene_ctx_create: %s", what, serene_strerror(rc));
    int n = cfg->world_size, r = cfg->rank;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t count = sizes[s];
        float *buf = malloc(count * sizeof *buf);
        if (!buf)
            FAIL("out of memory");
        for (size_t i = 0; i < count; i++)
            buf[i] = (float)((int)(i % 97) - 48 + r);
        rc = serene_allreduce(ctx, buf, buf, count, SERENE_SUM);
        if (rc) {
            free(buf);
            serene_ctx_destroy(&ctx);
            FAIL("%s: allreduce of %zu: %s", what, count, serene_strerror(rc));
        }
        for (size_t i = 0; i < count; i++) {
            float want = (float)(n * ((int)(i % 97) - 48) + n * (n - 1) / 2);
            if (buf[i] != want) {
                float got = buf[i];
                free(buf);
                serene_ctx_destroy(&ctx);
                FAIL("%s: element %zu of %zu is %g, want %g", what, i, count, got, want);
            }
        }
        free(buf);
    }
    serene_stats st;
    serene_get_stats(ctx, &st);
    printf("%s: rank %d: %zu allreduces exact; sent %llu recv %llu retrans %llu\n", what, r,
           sizeof sizes / sizeof sizes[0], (unsigned long long)st.pkts_sent,
           (unsigned long long)st.pkts_recv, (unsigned long long)st.retransmissions);
    serene_ctx_destroy(&ctx);
    return 0;
}

/* Split args (rank substituted for %r) into argv for rte_eal_init. */
static int app_eal_init(const char *args, int rank)
{
    static char buf[4096];
    char *argv[64];
    int argc = 0, o = 0;
    for (const char *p = args; *p && o < (int)sizeof buf - 16; p++) {
        if (p[0] == '%' && p[1] == 'r') {
            o += snprintf(buf + o, sizeof buf - (size_t)o, "%d", rank);
            p++;
        } else {
            buf[o++] = *p;
        }
    }
    buf[o] = '\0';
    argv[argc++] = "dpdk_app";
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 63;
         t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    argv[argc] = NULL;
    return rte_eal_init(argc, argv);
}

static int app_eal(const char *eal_args, const char *port)
{
    serene_config cfg;
    if (tc_config_from_env(&cfg))
        FAIL("bad SERENE_* environment");
    if (app_eal_init(eal_args, cfg.rank) < 0)
        FAIL("the application's rte_eal_init failed: %s", rte_strerror(rte_errno));
    printf("rank %d: application started EAL: %u ports\n", cfg.rank,
           (unsigned)rte_eth_dev_count_avail());
    snprintf(cfg.transport, sizeof cfg.transport, "dpdk");
    /* Would make rte_eal_init fail if the library used it. */
    cfg.dpdk_eal_args = "--this-is-not-an-eal-option";
    cfg.dpdk_port = port;
    for (int round = 0; round < 2; round++) {
        char what[32];
        snprintf(what, sizeof what, "context %d", round + 1);
        if (run_ctx(&cfg, what))
            return 1;
        /* The library must have left EAL and the port to the application. */
        uint16_t id;
        if (rte_eth_dev_get_port_by_name(port, &id) != 0)
            FAIL("port %s gone after serene_ctx_destroy", port);
        if (rte_lcore_count() < 1)
            FAIL("EAL looks cleaned up after serene_ctx_destroy");
        cfg.job_id++;
    }
    int rc = rte_eal_cleanup();
    if (rc)
        FAIL("the application's rte_eal_cleanup: %s", rte_strerror(-rc));
    printf("rank %d: app-owned EAL: PASS\n", cfg.rank);
    return 0;
}

static int join_only(const char *spec)
{
    serene_config cfg;
    if (tc_config_from_env(&cfg))
        FAIL("bad SERENE_* environment");
    snprintf(cfg.transport, sizeof cfg.transport, "dpdk");
    cfg.dpdk_port = spec;
    serene_ctx *ctx = NULL;
    double t0 = tc_now_ms();
    int rc = serene_ctx_create(&ctx, &cfg);
    double ms = tc_now_ms() - t0;
    if (rc != SERENE_ERR_TIMEOUT)
        FAIL("serene_ctx_create returned %s, want SERENE_ERR_TIMEOUT", serene_err_name(rc));
    if (ms > cfg.timeout_ms + 1000.0)
        FAIL("serene_ctx_create took %.0f ms, deadline %d ms", ms, cfg.timeout_ms);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(spec, ","), spec);
    uint16_t id;
    if (rte_eth_dev_get_port_by_name(name, &id) == 0)
        FAIL("device %s still present after the failed create", name);
    printf("join-only: SERENE_ERR_TIMEOUT after %.0f ms (deadline %d ms); %s removed: PASS\n", ms,
           cfg.timeout_ms, name);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "app-eal"))
        return app_eal(argv[2], argv[3]);
    if (argc == 3 && !strcmp(argv[1], "join-only"))
        return join_only(argv[2]);
    fprintf(stderr, "usage: dpdk_app app-eal EAL_ARGS PORT | join-only PORT_SPEC\n");
    return 2;
}
